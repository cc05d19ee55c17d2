"""gnmi_switch: RoCE switch counters over gNMI (SONiC COUNTERS_DB; OpenConfig and NVIDIA Cumulus paths).

gRPC through ``grpcio`` and the published gNMI stubs ``gnmi-pb`` (optional extra ``[gnmi]``), on
``grpc.aio``: no thread, no blocking call. Only ``Subscribe`` is used (Cumulus has no Get):

* ``mode: poll`` (the default for SONiC, whose SAMPLE streams have stalled in releases: sonic-net/
  sonic-buildimage#22201, #28586): each poll is one Subscribe ONCE of the dialect's paths, read up
  to its ``sync_response`` within the poll's deadline.
* ``mode: stream``: one long-lived Subscribe STREAM per switch, SAMPLE at ``sample_interval``
  (>= 1 s: SONiC refuses less) and ON_CHANGE for oper status. A background task keeps the latest
  value of every path; a poll turns those values into samples (no I/O), so the scheduler, the store
  and /metrics work as for every other collector: a scrape joins pre-rendered bytes. A watchdog
  restarts the subscription when no update came within 3 sample intervals, and until the new
  subscription has synced the target's polls fail, so its series go stale instead of freezing.

Dialects are a table (``DIALECTS``): the paths a switch OS serves and how their values become the
catalog's samples. Names and labels are those of ``snmp_switch`` and ``switch_cli`` for the same
meaning (``interface`` = the SONiC port name / ifName; queues ``UC<n>``/``MC<n>``), so dashboards
and rules work unchanged, and one switch must take each series from one source only (``tables``).

Security: TLS verified against ``ca_file`` (or the system's roots) by default; ``insecure: true``
only when said. Username and password come from files and travel as gRPC metadata, as SONiC and
Cumulus expect. gRPC status codes become the exporter's reasons: UNAVAILABLE connect (a failed TLS
handshake: auth), UNAUTHENTICATED / PERMISSION_DENIED auth, DEADLINE_EXCEEDED timeout,
INVALID_ARGUMENT / NOT_FOUND / UNIMPLEMENTED config.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

from ..errors import AuthError, ConnectError, ParseError, PollError, PollTimeoutError, TargetConfigError
from ..parsers import gnmi as p
from ..parsers.skipped import sources_of
from ..samples import KeptSample, PollResult, Sample
from .base import Collector, ErrorSink
from .options import OptionReader

DEFAULT_PORT = 9339  # IANA's gNMI port (Cumulus' default)
MIN_SAMPLE_INTERVAL = 1.0  # SONiC's MinSampleInterval (sonic_data_client/db_client.go)
WATCHDOG_INTERVALS = 3
PAUSE_US = 1e-6

# -- SONiC COUNTERS_DB fields -> catalog (sonic-gnmi testdata/COUNTERS:*, SAI stat names) ---------------

SONIC_PORT_FIELDS = {
    "SAI_PORT_STAT_IF_IN_OCTETS": "fabric_roce_rx_bytes_total",
    "SAI_PORT_STAT_IF_OUT_OCTETS": "fabric_roce_tx_bytes_total",
    "SAI_PORT_STAT_IF_IN_DISCARDS": "fabric_roce_rx_discards_total",
    "SAI_PORT_STAT_IF_OUT_DISCARDS": "fabric_roce_tx_discards_total",
    "SAI_PORT_STAT_IF_IN_ERRORS": "fabric_roce_switch_if_rx_errors_total",
    "SAI_PORT_STAT_IF_OUT_ERRORS": "fabric_roce_switch_if_tx_errors_total",
}
# the same sums SONiC's snmpagent gives ifHCIn/Out{Ucast,Multicast,Broadcast}Pkts (published only whole)
SONIC_PORT_SUMS = {
    "fabric_roce_rx_packets_total": ("SAI_PORT_STAT_IF_IN_UCAST_PKTS", "SAI_PORT_STAT_IF_IN_MULTICAST_PKTS",
                                     "SAI_PORT_STAT_IF_IN_BROADCAST_PKTS"),
    "fabric_roce_tx_packets_total": ("SAI_PORT_STAT_IF_OUT_UCAST_PKTS", "SAI_PORT_STAT_IF_OUT_MULTICAST_PKTS",
                                     "SAI_PORT_STAT_IF_OUT_BROADCAST_PKTS"),
}
SONIC_PFC_FIELDS = {f"SAI_PORT_STAT_PFC_{prio}_{d.upper()}_PKTS": (f"fabric_roce_pfc_{d}_pause_frames_total", str(prio))
                    for prio in range(8) for d in ("rx", "tx")}
SONIC_QUEUE_FIELDS = {
    "SAI_QUEUE_STAT_PACKETS": "fabric_roce_switch_queue_tx_packets_total",
    "SAI_QUEUE_STAT_BYTES": "fabric_roce_switch_queue_tx_bytes_total",
    "SAI_QUEUE_STAT_DROPPED_PACKETS": "fabric_roce_switch_queue_dropped_packets_total",
    "SAI_QUEUE_STAT_DROPPED_BYTES": "fabric_roce_switch_queue_dropped_bytes_total",
    "SAI_QUEUE_STAT_WRED_DROPPED_PACKETS": "fabric_roce_switch_queue_wred_dropped_packets_total",
    "SAI_QUEUE_STAT_WRED_DROPPED_BYTES": "fabric_roce_switch_queue_wred_dropped_bytes_total",
    "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": "fabric_roce_ecn_marked_packets_total",
    "SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES": "fabric_roce_switch_queue_ecn_marked_bytes_total",
}
SONIC_PFCWD_FIELDS = {
    "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED": "fabric_roce_switch_pfcwd_storms_detected_total",
    "PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED": "fabric_roce_switch_pfcwd_storms_restored_total",
    "PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS": "fabric_roce_switch_pfcwd_tx_dropped_packets_total",
    "PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS": "fabric_roce_switch_pfcwd_rx_dropped_packets_total",
}
PFCWD_STATUS = {"operational": 0.0, "stormed": 1.0}
SONIC_PG_FIELDS = {
    "SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES": "shared",
    "SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES": "headroom",
}
QUEUE_CAST = {"SAI_QUEUE_TYPE_UNICAST": "UC", "SAI_QUEUE_TYPE_MULTICAST": "MC", "SAI_QUEUE_TYPE_ALL": "ALL"}

# -- OpenConfig leaves -> catalog ------------------------------------------------------------------------

OC_INTERFACE = {
    "counters/in-octets": "fabric_roce_rx_bytes_total",
    "counters/out-octets": "fabric_roce_tx_bytes_total",
    "counters/in-discards": "fabric_roce_rx_discards_total",
    "counters/out-discards": "fabric_roce_tx_discards_total",
    "counters/in-errors": "fabric_roce_switch_if_rx_errors_total",
    "counters/out-errors": "fabric_roce_switch_if_tx_errors_total",
}
OC_INTERFACE_SUMS = {
    "fabric_roce_rx_packets_total": ("counters/in-unicast-pkts", "counters/in-multicast-pkts",
                                     "counters/in-broadcast-pkts"),
    "fabric_roce_tx_packets_total": ("counters/out-unicast-pkts", "counters/out-multicast-pkts",
                                     "counters/out-broadcast-pkts"),
}
# openconfig-interfaces oper-status enum == IF-MIB ifOperStatus codes
OPER_STATUS = {"UP": 1, "DOWN": 2, "TESTING": 3, "UNKNOWN": 4, "DORMANT": 5, "NOT_PRESENT": 6, "LOWER_LAYER_DOWN": 7}
OC_QUEUE = {
    "transmit-pkts": ("fabric_roce_switch_queue_tx_packets_total", 1.0),
    "transmit-octets": ("fabric_roce_switch_queue_tx_bytes_total", 1.0),
    "dropped-pkts": ("fabric_roce_switch_queue_dropped_packets_total", 1.0),
    "wred-dropped-pkts": ("fabric_roce_switch_queue_wred_dropped_packets_total", 1.0),
    "ecn-marked-pkts": ("fabric_roce_ecn_marked_packets_total", 1.0),
}
# Cumulus: its tail drop is no-buffer-uc-dropped-pkts (no standard dropped-pkts leaf), plus NVIDIA leaves
CUMULUS_QUEUE = {**{k: v for k, v in OC_QUEUE.items() if k != "dropped-pkts"},
                 "no-buffer-uc-dropped-pkts": ("fabric_roce_switch_queue_dropped_packets_total", 1.0),
                 "instant-queue-len": ("fabric_roce_switch_queue_occupancy_bytes", 1.0)}
CUMULUS_INTERFACE_EXTRA = {"counters/tx-wait": "fabric_roce_switch_if_tx_wait_byte_times_total"}
CUMULUS_PRIORITY = {
    "counters/in-pause-pkts": ("fabric_roce_pfc_rx_pause_frames_total", 1.0),
    "counters/out-pause-pkts": ("fabric_roce_pfc_tx_pause_frames_total", 1.0),
    "in-pause-duration": ("fabric_roce_switch_pfc_rx_pause_seconds_total", PAUSE_US),
    "out-pause-duration": ("fabric_roce_switch_pfc_tx_pause_seconds_total", PAUSE_US),
}
WATERMARK_LEAF = "shared-buffer/data/max-occupancy-since-last-sample"


# -- the dialect table ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class GnmiPath:
    """One subscribed path: ``xpath`` below ``target`` (the prefix's target, SONiC's DB name)."""
    target: str
    xpath: str
    on_change: bool = False  # ON_CHANGE in stream mode (oper status), else SAMPLE


@dataclass(frozen=True)
class Dialect:
    name: str
    paths: dict[str, GnmiPath]  # the ``tables`` option's words -> path
    default_mode: str
    source: str  # what its decoding reports skipped values under
    interface_leaves: dict[str, str] = None  # type: ignore[assignment]
    queue_leaves: dict[str, tuple[str, float]] = None  # type: ignore[assignment]
    priority_leaves: dict[str, tuple[str, float]] = None  # type: ignore[assignment]


SONIC_PATHS = {
    "ports": GnmiPath("COUNTERS_DB", "COUNTERS/Ethernet*"),
    "queues": GnmiPath("COUNTERS_DB", "COUNTERS/Ethernet*/Queues"),
    "pfcwd": GnmiPath("COUNTERS_DB", "COUNTERS/Ethernet*/Pfcwd"),
    "pg_watermarks": GnmiPath("COUNTERS_DB", "PERIODIC_WATERMARKS/Ethernet*/PriorityGroups"),
}
# read once (and again when a key is unknown): port aliases and queue types
SONIC_NAME_MAPS = (GnmiPath("CONFIG_DB", "PORT"), GnmiPath("COUNTERS_DB", "COUNTERS_QUEUE_NAME_MAP"),
                   GnmiPath("COUNTERS_DB", "COUNTERS_QUEUE_TYPE_MAP"))
OC_PATHS = {
    "interfaces": GnmiPath("", "/interfaces/interface[name=*]/state/counters"),
    "oper_status": GnmiPath("", "/interfaces/interface[name=*]/state/oper-status", on_change=True),
    "queues": GnmiPath("", "/qos/interfaces/interface[interface-id=*]/output/queues/queue[name=*]/state"),
}
CUMULUS_PATHS = {
    **OC_PATHS,
    "priorities": GnmiPath("", "/qos/interfaces/interface[interface-id=*]/switch-priority[priority=*]/state"),
    "pg_watermarks": GnmiPath("", "/qos/interfaces/interface[interface-id=*]/input/priority-group[pg-id=*]/state/"
                                  + WATERMARK_LEAF),
}

DIALECTS: dict[str, Dialect] = {
    "sonic": Dialect("sonic", SONIC_PATHS, "poll", p.SOURCE_SONIC),
    "openconfig": Dialect("openconfig", OC_PATHS, "stream", p.SOURCE_OPENCONFIG, OC_INTERFACE, OC_QUEUE, {}),
    "cumulus": Dialect("cumulus", CUMULUS_PATHS, "stream", p.SOURCE_OPENCONFIG,
                       {**OC_INTERFACE, **CUMULUS_INTERFACE_EXTRA}, CUMULUS_QUEUE, CUMULUS_PRIORITY),
}


@dataclass(frozen=True)
class GnmiSwitchOptions:
    dialect: str = "sonic"
    mode: str = "poll"
    tables: tuple[str, ...] = tuple(SONIC_PATHS)
    sample_interval: float | None = None  # None: the target's interval
    port: int = DEFAULT_PORT
    insecure: bool = False
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    tls_server_name: str | None = None
    username_file: str | None = None
    password_file: str | None = None
    interface_include: re.Pattern | None = None
    interface_exclude: re.Pattern | None = None


# -- gRPC status -> reasons --------------------------------------------------------------------------------

_TLS_WORDS = ("ssl", "handshake", "certificate", "tls")
# grpc-python's own details when a request write lost the race with the target's status (grpc/grpc#36066)
CORE_WRITE_RACE = "Internal error from Core"


def error_from_status(code_name: str, details: str, where: str) -> PollError:
    """A gRPC status (by name: ``UNAVAILABLE`` ...) as the exporter's PollError with its reason."""
    msg = f"{where}: gNMI {code_name}: {(details or '').strip()[:300]}"
    if code_name == "UNAVAILABLE":
        if any(w in (details or "").lower() for w in _TLS_WORDS):
            return AuthError(msg)  # the TLS handshake failed: a trust problem, not an unreachable switch
        return ConnectError(msg)
    if code_name in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
        return AuthError(msg)
    if code_name == "DEADLINE_EXCEEDED":
        return PollTimeoutError(msg)
    if code_name in ("INVALID_ARGUMENT", "NOT_FOUND", "UNIMPLEMENTED", "FAILED_PRECONDITION"):
        return TargetConfigError(msg)
    return PollError(msg, reason="command_failed")


def _pb():
    try:
        import grpc
        from gnmi_pb import gnmi_pb2, gnmi_pb2_grpc
    except ModuleNotFoundError as e:  # the [gnmi] extra is not installed
        raise PollError(f"gnmi_switch needs grpcio and gnmi-pb (pip install 'fabric-exporter[gnmi]'): {e}",
                        reason="internal") from None
    return grpc, gnmi_pb2, gnmi_pb2_grpc


def to_path(gnmi_pb2: Any, xpath: str, target: str = "") -> Any:
    elems = [gnmi_pb2.PathElem(name=name, key=keys) for name, keys in p.parse_xpath(xpath)]
    return gnmi_pb2.Path(elem=elems, target=target)


def typed_value(tv: Any) -> Any:
    """A gNMI TypedValue as a Python scalar (JSON values decoded); None for kinds we do not read."""
    kind = tv.WhichOneof("value")
    if kind in ("uint_val", "int_val", "string_val", "double_val", "float_val", "bool_val"):
        return getattr(tv, kind)
    if kind in ("json_ietf_val", "json_val"):
        try:
            return json.loads(getattr(tv, kind))
        except ValueError:
            return None
    if kind == "decimal_val":
        return tv.decimal_val.digits / (10 ** tv.decimal_val.precision)
    return None


def elems_of(path: Any) -> tuple[p.Elem, ...]:
    return tuple((e.name, dict(e.key)) for e in path.elem)


# -- decoding: notifications -> the target's latest values ------------------------------------------------

class SonicState:
    """The latest SONiC blobs by (table, entry key), and the name maps to read them."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], tuple[dict, dict]] = {}
        self.alias_to_name: dict[str, str] = {}
        self.queue_oid: dict[str, str] = {}  # "Ethernet0:3" -> oid
        self.queue_type: dict[str, str] = {}  # oid -> SAI_QUEUE_TYPE_*
        self.unknown_keys = 0
        # (table, entry key) -> its samples' labels (sonic_samples); kept with the name maps, which
        # they are made from, and emptied when one of them is replaced
        self.labels: dict = {}

    def table_of(self, elems: tuple[p.Elem, ...]) -> tuple[str, str] | None:
        """(table word, single entry key or "") for an update path, or None when it is not one of ours."""
        names = [e[0] for e in elems]
        if len(names) == 2 and names[0] == "COUNTERS":
            return "ports", ("" if names[1].endswith("*") else names[1])
        if len(names) == 3 and names[0] == "COUNTERS" and names[2] in ("Queues", "Pfcwd"):
            return names[2].lower(), ""
        if len(names) == 3 and names[0] == "PERIODIC_WATERMARKS" and names[2] == "PriorityGroups":
            return "pg_watermarks", ""
        return None

    def apply(self, prefix_elems, update, skipped: list) -> None:
        elems = prefix_elems + elems_of(update.path)
        kind = update.val.WhichOneof("value")
        raw = getattr(update.val, kind) if kind in ("json_ietf_val", "json_val") else None
        names = [e[0] for e in elems]
        if raw is not None and names == ["PORT"]:
            self.alias_to_name = p.parse_sonic_port_aliases(raw)
            return
        if raw is not None and names == ["COUNTERS_QUEUE_NAME_MAP"]:
            self.queue_oid = p.parse_sonic_name_map(raw)
            return
        if raw is not None and names == ["COUNTERS_QUEUE_TYPE_MAP"]:
            self.queue_type = p.parse_sonic_name_map(raw)
            return
        table = self.table_of(elems)
        if table is None or raw is None:
            p.note(skipped, p.SOURCE_SONIC, 0, f"unexpected update {'/'.join(names)[:120]} ({kind})")
            return
        word, key = table
        blob = p.parse_sonic_blob(raw, key, skipped=skipped)
        for k, nums in blob.numbers.items():
            self.entries[(word, k)] = (nums, blob.text.get(k, {}))

    def port(self, key: str) -> str:
        return self.alias_to_name.get(key, key)

    def queue_label(self, port: str, index: int) -> str:
        oid = self.queue_oid.get(f"{port}:{index}")
        cast = QUEUE_CAST.get(self.queue_type.get(oid, "")) if oid else None
        return f"{cast or 'Q'}{index}"  # Q<n>: the target did not say unicast or multicast


def sonic_samples(state: SonicState, switch: str, wanted: Callable[[str], bool]) -> list[Sample]:
    out: list[Sample] = []
    append = out.append
    labels_of = state.labels
    made_from = (switch, state.alias_to_name, state.queue_oid, state.queue_type)
    was = labels_of.get(None)
    if was is None or was[0] != switch or any(a is not b for a, b in zip(was[1:], made_from[1:])):
        labels_of.clear()  # another switch name, or a name map read again (maps are replaced, not changed)
        labels_of[None] = made_from
    for entry, (nums, text) in state.entries.items():
        cached = labels_of.get(entry)
        if cached is None:
            cached = _sonic_labels(state, entry, switch, wanted)
            if cached is None:  # a key without its index: counted every poll (the maps are read again)
                continue
            labels_of[entry] = cached
        if cached is False:
            continue
        word = entry[0]
        if word == "ports":
            labels, by_priority = cached
            for field, metric in SONIC_PORT_FIELDS.items():
                v = nums.get(field)
                if v is not None:
                    append(_new(Sample, (metric, labels, float(v))))
            for metric, parts in SONIC_PORT_SUMS.items():
                if all(f in nums for f in parts):
                    append(_new(Sample, (metric, labels, float(sum(nums[f] for f in parts)))))
            for field, (metric, prio) in SONIC_PFC_FIELDS.items():
                v = nums.get(field)
                if v is not None:
                    append(_new(Sample, (metric, by_priority[prio], float(v))))
        elif word == "queues":
            for field, metric in SONIC_QUEUE_FIELDS.items():
                v = nums.get(field)
                if v is not None:
                    append(_new(Sample, (metric, cached, float(v))))
        elif word == "pfcwd":
            for field, metric in SONIC_PFCWD_FIELDS.items():
                v = nums.get(field)
                if v is not None:
                    append(_new(Sample, (metric, cached, float(v))))
            status = PFCWD_STATUS.get(text.get("PFC_WD_STATUS", ""))
            if status is not None:
                append(Sample("fabric_roce_switch_pfcwd_storm_active", cached, status))
        elif word == "pg_watermarks":
            for field, region in SONIC_PG_FIELDS.items():
                v = nums.get(field)
                if v is not None:
                    append(_new(Sample, ("fabric_roce_switch_pg_watermark_bytes", cached[region], float(v))))
    return out


def _sonic_labels(state: SonicState, entry: tuple[str, str], switch: str, wanted: Callable[[str], bool]) -> Any:
    """The labels of one COUNTERS_DB entry's samples, worked out once per entry (False: not
    published, a port left out by the interface filters; None: a key without its index)."""
    word, key = entry
    if word == "ports":
        port = state.port(key)
        if not wanted(port):
            return False
        labels = {"switch": switch, "interface": port}
        return labels, {str(prio): {**labels, "priority": str(prio)} for prio in range(8)}
    split = p.split_indexed(key)
    if split is None:
        state.unknown_keys += 1
        return None
    port, index = state.port(split[0]), split[1]
    if not wanted(port):
        return False
    if word == "queues":
        return {"switch": switch, "interface": port, "queue": state.queue_label(port, index)}
    if word == "pfcwd":
        return {"switch": switch, "interface": port, "queue": f"UC{index}"}
    if word == "pg_watermarks":
        return {region: {"switch": switch, "interface": port, "pg": str(index), "region": region}
                for region in SONIC_PG_FIELDS.values()}
    return False


class OcShapes:
    """What each OpenConfig path a switch sends is, worked out once and kept by its collector.

    A target sends the same shapes every sample (one keyed container, the same leaf names under
    it). A (container, leaf path) pair -- both as their protobuf bytes, serialized in C -- gets a
    shape on first sight: ``(slot, key, record fields, text allowed, emit)``; ``slot`` is a small
    int a state keeps the leaf's latest value under, ``emit`` what the value becomes (``compile``,
    the collector's catalog mapping; None without one). Later updates only take their value."""

    MAX_SHAPES = 1 << 20  # more distinct paths than any switch has: start over rather than grow

    def __init__(self, compile: Callable[[tuple], Any] | None = None) -> None:
        self.by_prefix: dict[bytes, dict[bytes, tuple | None]] = {}
        self.by_slot: dict[int, tuple] = {}
        self.by_key: dict[tuple, tuple] = {}
        self.compile = compile
        self._next = 0
        self._count = 0

    def shape(self, elems: tuple) -> tuple | None:
        """The shape of a leaf at ``elems`` (None: not a leaf we read)."""
        key = _key(elems)
        got = self.by_key.get(key)
        if got is not None:
            return got
        recs = p.oc_records([(elems, 0)])  # the record's fields, with a stand-in value
        if not recs:
            return None
        if len(self.by_key) >= self.MAX_SHAPES:
            self.by_prefix.clear()
            self.by_key.clear()
            self.by_slot.clear()  # slots are never reused: a state's old slots are then skipped
            self._count = 0
        fields = tuple(recs[0][:4])
        shape = (self._next, key, fields, fields[3].rsplit("/", 1)[-1] in p.OC_TEXT_LEAVES,
                 self.compile(fields) if self.compile is not None else None)
        self._next += 1
        self.by_key[key] = self.by_slot[shape[0]] = shape
        return shape

    def remember(self, pbytes: bytes, path_bytes: bytes, shape: tuple | None) -> None:
        if self._count >= self.MAX_SHAPES:
            self.by_prefix.clear()
            self._count = 0
        self.by_prefix.setdefault(pbytes, {})[path_bytes] = shape
        self._count += 1


class OcState:
    """The latest OpenConfig leaves: slot (see OcShapes) -> value, in the order first seen."""

    def __init__(self, shapes: OcShapes | None = None) -> None:
        self.values: dict[int, int | float | str] = {}
        # shared by the states of one collector (a poll's state is new, the switch's shapes are not)
        self.shapes = OcShapes() if shapes is None else shapes

    @property
    def leaves(self) -> dict[tuple, p.OcRecord]:
        """The leaves as records, by their full path (for checks and the generic ``oc_samples``)."""
        by_slot = self.shapes.by_slot
        out = {}
        for slot, v in self.values.items():
            shape = by_slot.get(slot)
            if shape is not None:
                out[shape[1]] = p.OcRecord(*shape[2], v)
        return out

    def apply_notification(self, prefix: Any, updates: Any, skipped: list) -> None:
        table = self.shapes
        pbytes = prefix.SerializeToString()  # the container's identity, computed in C
        known = table.by_prefix.get(pbytes) or {}
        prefix_elems: tuple | None = None
        values = self.values
        for u in updates:
            val = u.val
            if val.WhichOneof("value") == "uint_val":  # uint64: most counters
                value = val.uint_val
            else:
                value = typed_value(val)
                if value.__class__ is dict:
                    if prefix_elems is None:
                        prefix_elems = elems_of(prefix)
                    self.apply(prefix_elems, u, skipped)
                    continue
            path_bytes = u.path.SerializeToString()
            shape = known.get(path_bytes, _UNSEEN)
            if shape is _UNSEEN:
                if prefix_elems is None:
                    prefix_elems = elems_of(prefix)
                shape = table.shape(prefix_elems + elems_of(u.path))
                table.remember(pbytes, path_bytes, shape)
                known = table.by_prefix[pbytes]
            v = value if value.__class__ is int else p.scalar(value)
            if shape is None or v is None or (v.__class__ is str and not shape[3]):
                if prefix_elems is None:
                    prefix_elems = elems_of(prefix)
                shown = "/".join(e[0] for e in prefix_elems + elems_of(u.path))
                p.note(skipped, p.SOURCE_OPENCONFIG, 0, f"{shown}={str(value)[:60]}")
                continue
            values[shape[0]] = v

    def apply(self, prefix_elems, update, skipped: list) -> None:
        elems = prefix_elems + elems_of(update.path)
        value = typed_value(update.val)
        if isinstance(value, dict):  # a JSON subtree (some targets): one leaf per scalar inside
            leaves = list(_flatten(elems, value))
        else:
            leaves = [(elems, value)]
        for rec_elems, v in leaves:
            recs = p.oc_records([(rec_elems, v)], skipped=skipped)
            if recs:
                shape = self.shapes.shape(rec_elems)
                if shape is not None:
                    self.values[shape[0]] = recs[0].value

    def delete(self, prefix_elems, path) -> None:
        gone = _key(prefix_elems + elems_of(path))
        by_slot = self.shapes.by_slot
        for slot in [s for s in self.values if s not in by_slot or by_slot[s][1][:len(gone)] == gone]:
            del self.values[slot]


_UNSEEN = object()
_new = tuple.__new__  # a NamedTuple built from a tuple without its Python-level __new__ (per leaf)


def _key(elems) -> tuple:
    return tuple((name, tuple(sorted(keys.items()))) for name, keys in elems)


def _flatten(elems, value: dict):
    for k, v in value.items():
        name = k.split(":", 1)[-1]  # JSON_IETF module prefixes
        if isinstance(v, dict):
            yield from _flatten(elems + ((name, {}),), v)
        else:
            yield elems + ((name, {}),), v


def _queue_label(name: str) -> str:
    return f"UC{name}" if name.isdigit() else name


def oc_samples(dialect: Dialect, leaves: list[p.OcRecord], switch: str, wanted: Callable[[str], bool]) -> list[Sample]:
    out: list[Sample] = []
    append = out.append
    sums: dict[str, dict[str, float]] = {}
    labels_of: dict[tuple, dict[str, str]] = {}  # one labels dict per series identity (formatted once)
    passes: dict[str, bool] = {}
    interface_leaves, queue_leaves, priority_leaves = (dialect.interface_leaves, dialect.queue_leaves,
                                                       dialect.priority_leaves)
    for kind, intf, index, leaf, value in leaves:
        ok = passes.get(intf)
        if ok is None:
            ok = passes[intf] = wanted(intf)
        if not ok:
            continue
        text = value.__class__ is str
        if kind == "interface":
            labels = labels_of.get((intf,))
            if labels is None:
                labels = labels_of[(intf,)] = {"switch": switch, "interface": intf}
            if leaf == "oper-status":
                code = OPER_STATUS.get(str(value))
                if code is not None:
                    append(Sample("fabric_roce_switch_if_oper_status", labels, float(code)))
                continue
            if text:
                continue
            metric = interface_leaves.get(leaf)
            if metric is not None:
                append(_new(Sample, (metric, labels, float(value))))
            else:
                sums.setdefault(intf, {})[leaf] = float(value)
        elif text:
            continue
        elif kind == "queue":
            labels = labels_of.get((intf, "q", index))
            if labels is None:
                labels = labels_of[(intf, "q", index)] = {"switch": switch, "interface": intf,
                                                         "queue": _queue_label(index)}
            if leaf == WATERMARK_LEAF:
                append(Sample("fabric_roce_switch_queue_watermark_bytes", {**labels, "kind": "periodic"},
                              float(value)))
                continue
            hit = queue_leaves.get(leaf)
            if hit is not None:
                append(_new(Sample, (hit[0], labels, float(value) * hit[1])))
        elif kind == "priority":
            hit = priority_leaves.get(leaf)
            if hit is not None:
                labels = labels_of.get((intf, "p", index))
                if labels is None:
                    labels = labels_of[(intf, "p", index)] = {"switch": switch, "interface": intf, "priority": index}
                append(_new(Sample, (hit[0], labels, float(value) * hit[1])))
        elif kind == "pg" and leaf == WATERMARK_LEAF:
            append(Sample("fabric_roce_switch_pg_watermark_bytes",
                          {"switch": switch, "interface": intf, "pg": index, "region": "shared"}, float(value)))
    for intf, values in sums.items():
        for metric, parts in OC_INTERFACE_SUMS.items():
            if all(x in values for x in parts):
                append(Sample(metric, labels_of[(intf,)], sum(values[x] for x in parts)))
    return out


_DIRECT, _OPER, _SUM = 0, 1, 2
_SUM_PARTS = frozenset(x for parts in OC_INTERFACE_SUMS.values() for x in parts)


class OcEmit:
    """One switch's OpenConfig catalog mapping, compiled per leaf shape: what ``oc_samples`` works
    out for every record every poll (the leaf's metric, scale and labels; the interface filters),
    worked out once per shape (``compile``, handed to OcShapes). ``samples`` then turns a state's
    values into samples, and hands out the very same KeptSample again while a value has not moved,
    so that the store renders only the lines that changed. ``oc_samples`` stays the reference:
    the two agree on every leaf (tests/switch/test_gnmi_parsers.py)."""

    def __init__(self, dialect: Dialect, switch: str, wanted: Callable[[str], bool]) -> None:
        self.dialect, self.switch, self.wanted = dialect, switch, wanted
        self._labels: dict[tuple, dict[str, str]] = {}  # one labels dict per series identity

    def _label(self, ident: tuple, make: Callable[[], dict[str, str]]) -> dict[str, str]:
        got = self._labels.get(ident)
        if got is None:
            got = self._labels[ident] = make()
        return got

    def compile(self, fields: tuple) -> list | None:
        """A mutable emit spec for one leaf shape: [_DIRECT, metric, labels, scale, last value, its
        sample], [_OPER, labels, last value, its sample], [_SUM, interface, leaf]; None: unpublished."""
        kind, intf, index, leaf = fields
        if not self.wanted(intf):
            return None
        sw, d = self.switch, self.dialect
        intf_labels = self._label((intf,), lambda: {"switch": sw, "interface": intf})
        if kind == "interface":
            if leaf == "oper-status":
                return [_OPER, intf_labels, None, None]
            metric = d.interface_leaves.get(leaf)
            if metric is not None:
                return [_DIRECT, metric, intf_labels, 1.0, None, None]
            return [_SUM, intf, leaf] if leaf in _SUM_PARTS else None
        if kind == "queue":
            labels = self._label((intf, "q", index), lambda: {"switch": sw, "interface": intf,
                                                               "queue": _queue_label(index)})
            if leaf == WATERMARK_LEAF:
                return [_DIRECT, "fabric_roce_switch_queue_watermark_bytes",
                        self._label((intf, "qw", index), lambda: {**labels, "kind": "periodic"}), 1.0, None, None]
            hit = d.queue_leaves.get(leaf)
            return [_DIRECT, hit[0], labels, hit[1], None, None] if hit is not None else None
        if kind == "priority":
            hit = d.priority_leaves.get(leaf)
            if hit is None:
                return None
            labels = self._label((intf, "p", index), lambda: {"switch": sw, "interface": intf, "priority": index})
            return [_DIRECT, hit[0], labels, hit[1], None, None]
        if kind == "pg" and leaf == WATERMARK_LEAF:
            labels = self._label((intf, "pg", index), lambda: {"switch": sw, "interface": intf, "pg": index,
                                                                "region": "shared"})
            return [_DIRECT, "fabric_roce_switch_pg_watermark_bytes", labels, 1.0, None, None]
        return None

    def samples(self, state: OcState) -> list[Sample]:
        out: list[Sample] = []
        append = out.append
        by_slot = state.shapes.by_slot
        sums: dict[str, dict[str, float]] = {}
        for slot, v in state.values.items():
            shape = by_slot.get(slot)
            e = shape[4] if shape is not None else None
            if e is None:
                continue
            how = e[0]
            if how == _DIRECT:
                if v.__class__ is str:
                    continue
                if v != e[4] or e[5] is None:
                    e[4] = v
                    e[5] = _new(KeptSample, (e[1], e[2], float(v) * e[3]))
                append(e[5])
            elif how == _OPER:
                if v != e[2] or e[3] is None:
                    code = OPER_STATUS.get(str(v))
                    e[2] = v
                    e[3] = None if code is None else _new(KeptSample, ("fabric_roce_switch_if_oper_status", e[1],
                                                                       float(code)))
                    if e[3] is None:
                        continue
                append(e[3])
            elif v.__class__ is not str:
                sums.setdefault(e[1], {})[e[2]] = float(v)
        for intf, values in sums.items():
            for metric, parts in OC_INTERFACE_SUMS.items():
                if all(x in values for x in parts):
                    append(Sample(metric, self._labels[(intf,)], sum(values[x] for x in parts)))
        return out


# -- the collector --------------------------------------------------------------------------------------------

class GnmiSwitchCollector(Collector):
    name: ClassVar[str] = "gnmi_switch"
    transports: ClassVar[tuple[str, ...]] = ("gnmi",)
    parse_sources: ClassVar[tuple[str, ...]] = sources_of(p)

    @classmethod
    def sources_for(cls, options: GnmiSwitchOptions) -> tuple[str, ...]:
        return (DIALECTS[options.dialect].source,)

    @classmethod
    def parse_options(cls, raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> GnmiSwitchOptions:
        r = OptionReader(raw, path, err, base_dir)
        dialect = r.string("dialect", "sonic", choices=tuple(DIALECTS)) or "sonic"
        d = DIALECTS.get(dialect, DIALECTS["sonic"])
        mode = r.string("mode", d.default_mode, choices=("poll", "stream")) or d.default_mode
        every = tuple(dict.fromkeys(n for x in DIALECTS.values() for n in x.paths))
        tables = r.string_list("tables", tuple(d.paths), choices=every)
        for i, t in enumerate(tables):
            if t in every and t not in d.paths:
                err(f"{path}.tables[{i}]", f"{t!r} is not a table of the {dialect} dialect (known: {', '.join(d.paths)})")
        sample_interval = r.duration("sample_interval", None)
        if sample_interval is not None and sample_interval < MIN_SAMPLE_INTERVAL:
            err(f"{path}.sample_interval", f"at least {MIN_SAMPLE_INTERVAL:g}s (SONiC refuses less)")
            sample_interval = None
        opts = GnmiSwitchOptions(
            dialect=dialect, mode=mode, tables=tables, sample_interval=sample_interval,
            port=r.integer("port", DEFAULT_PORT, minimum=1, maximum=65535),
            insecure=r.boolean("insecure", False),
            ca_file=r.path("ca_file"), cert_file=r.path("cert_file"), key_file=r.path("key_file"),
            tls_server_name=r.string("tls_server_name"),
            username_file=r.path("username_file"), password_file=r.path("password_file"),
            interface_include=r.regex("interface_include"), interface_exclude=r.regex("interface_exclude"),
        )
        r.done()
        if not tables:
            err(f"{path}.tables", "needs at least one table")
        if opts.insecure and (opts.ca_file or opts.cert_file or opts.key_file):
            err(path, "insecure: true sends plaintext; ca_file/cert_file/key_file need TLS")
        if bool(opts.cert_file) != bool(opts.key_file):
            err(path, "cert_file and key_file go together (mutual TLS)")
        if bool(opts.username_file) != bool(opts.password_file):
            err(path, "username_file and password_file go together")
        return opts

    def __init__(self, ctx: Any):
        super().__init__(ctx)
        self.options: GnmiSwitchOptions = self.options or GnmiSwitchOptions()
        self.dialect = DIALECTS[self.options.dialect]
        self.switch = self.host.name if self.host else ""
        self.sample_interval = max(MIN_SAMPLE_INTERVAL, self.options.sample_interval or self.group.interval)
        self._channel: Any = None
        self._channel_loop: asyncio.AbstractEventLoop | None = None
        self._maps_loaded = False
        self._oc_emit = OcEmit(self.dialect, self.switch, self._wanted)
        self._oc_shapes = OcShapes(self._oc_emit.compile)
        # stream mode
        self._task: asyncio.Task | None = None
        self._synced = asyncio.Event()
        self._stream_error: PollError | None = None
        self._state: SonicState | OcState | None = None
        self._skipped: list = []
        self.updates = 0
        self.resubscribes = 0
        self.last_update = 0.0

    # -- connection ------------------------------------------------------------------------------------

    def _wanted(self, port: str) -> bool:
        inc, exc = self.options.interface_include, self.options.interface_exclude
        return (inc is None or bool(inc.fullmatch(port))) and (exc is None or not exc.fullmatch(port))

    @property
    def where(self) -> str:
        host = self.host
        return f"{host.address}:{host.port or self.options.port}" if host else "?"

    def _get_channel(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._channel is not None and self._channel_loop is loop:
            return self._channel
        grpc, _, _ = _pb()
        o = self.options
        address = self.where
        channel_options = [("grpc.max_receive_message_length", 64 << 20)]
        if o.insecure:
            self._channel = grpc.aio.insecure_channel(address, options=channel_options)
        else:
            try:
                root = Path(o.ca_file).read_bytes() if o.ca_file else None
                key = Path(o.key_file).read_bytes() if o.key_file else None
                chain = Path(o.cert_file).read_bytes() if o.cert_file else None
            except OSError as e:
                raise AuthError(f"{address}: cannot read a TLS file: {e}") from None
            if o.tls_server_name:
                channel_options.append(("grpc.ssl_target_name_override", o.tls_server_name))
            creds = grpc.ssl_channel_credentials(root_certificates=root, private_key=key, certificate_chain=chain)
            self._channel = grpc.aio.secure_channel(address, creds, options=channel_options)
        self._channel_loop = loop
        return self._channel

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        o = self.options
        if not o.username_file:
            return ()
        try:
            user = Path(o.username_file).read_text().strip()
            password = Path(o.password_file or "").read_text().strip()
        except OSError as e:
            raise AuthError(f"{self.where}: cannot read the gNMI credentials: {e}") from None
        return (("username", user), ("password", password))

    def _request(self, target: str, paths: list[GnmiPath], mode: str) -> Any:
        _, g, _ = _pb()
        subs = []
        for gp in paths:
            sub_mode = g.ON_CHANGE if (gp.on_change and mode == "stream") else g.SAMPLE
            subs.append(g.Subscription(path=to_path(g, gp.xpath), mode=sub_mode,
                                       sample_interval=int(self.sample_interval * 1e9) if sub_mode == g.SAMPLE else 0))
        list_mode = {"once": g.SubscriptionList.ONCE, "stream": g.SubscriptionList.STREAM}[mode]
        prefix = g.Path(target=target) if target else None
        return g.SubscribeRequest(subscribe=g.SubscriptionList(prefix=prefix, subscription=subs, mode=list_mode,
                                                               encoding=g.JSON_IETF))

    async def _status_error(self, e: Any) -> PollError:
        code, details = e.code().name, e.details() or ""
        if code == "INTERNAL" and details == CORE_WRITE_RACE:
            code, details = await self._real_status(code, details)
        return error_from_status(code, details, self.where)

    async def _real_status(self, code: str, details: str) -> tuple[str, str]:
        """The status a target sent when grpc-python's aio client replaced it with its own INTERNAL.

        A target that ends a Subscribe before reading the request (as gNMI servers do on a bad
        password) races the client's write of that request; when the write loses, grpc-python reports
        ``INTERNAL: Internal error from Core`` instead of the target's status (grpc/grpc#36066). A
        unary Capabilities call with the same credentials has no request stream to race and gets the
        target's own answer; only a failure there replaces the INTERNAL."""
        grpc, g, g_grpc = _pb()
        try:
            await g_grpc.gNMIStub(self._get_channel()).Capabilities(
                g.CapabilityRequest(), metadata=self._metadata(), timeout=max(0.5, min(5.0, self.ctx.remaining())))
        except grpc.aio.AioRpcError as e:
            return e.code().name, e.details() or ""
        return code, details

    def _groups(self, paths: list[GnmiPath]) -> dict[str, list[GnmiPath]]:
        by_target: dict[str, list[GnmiPath]] = {}
        for gp in paths:
            by_target.setdefault(gp.target, []).append(gp)
        return by_target

    def _new_state(self) -> SonicState | OcState:
        if self.dialect.name == "sonic":
            s = SonicState()
            old = self._state
            if isinstance(old, SonicState):  # name maps outlive the values
                s.alias_to_name, s.queue_oid, s.queue_type = old.alias_to_name, old.queue_oid, old.queue_type
                s.labels = old.labels
            return s
        return OcState(self._oc_shapes)

    def _apply(self, state: SonicState | OcState, response: Any, skipped: list) -> None:
        n = response.update
        if isinstance(state, OcState):
            state.apply_notification(n.prefix, n.update, skipped)
            if n.delete:
                prefix = elems_of(n.prefix)
                for d in n.delete:
                    state.delete(prefix, d)
            return
        prefix = elems_of(n.prefix) if n.HasField("prefix") else ()
        for u in n.update:
            state.apply(prefix, u, skipped)

    async def _once(self, state: SonicState | OcState, target: str, paths: list[GnmiPath], skipped: list,
                    timeout: float | None = None) -> None:
        grpc, _, g_grpc = _pb()
        stub = g_grpc.gNMIStub(self._get_channel())
        call = stub.Subscribe(iter([self._request(target, paths, "once")]), metadata=self._metadata(),
                              timeout=timeout or self.ctx.remaining())
        try:
            async for response in call:
                if response.sync_response:
                    break
                if response.HasField("update"):
                    self._apply(state, response, skipped)
        except grpc.aio.AioRpcError as e:
            raise await self._status_error(e) from None
        finally:
            call.cancel()

    # -- poll ----------------------------------------------------------------------------------------------

    def _paths(self) -> list[GnmiPath]:
        return [self.dialect.paths[t] for t in self.options.tables]

    async def _load_maps(self, state: SonicState, skipped: list, timeout: float | None = None) -> None:
        for target, paths in self._groups(list(SONIC_NAME_MAPS)).items():
            try:
                await self._once(state, target, paths, skipped, timeout)
            except TargetConfigError:
                pass  # a map this release does not serve: ports by their keys, queues as Q<n>
        self._maps_loaded = True

    def _samples(self, state: SonicState | OcState) -> list[Sample]:
        if isinstance(state, SonicState):
            return sonic_samples(state, self.switch, self._wanted)
        return self._oc_emit.samples(state)

    async def poll(self) -> PollResult:
        if self.options.mode == "stream":
            return await self._poll_stream()
        skipped: list = []
        state = self._new_state()
        if isinstance(state, SonicState) and not self._maps_loaded:
            await self._load_maps(state, skipped)
        for target, paths in self._groups(self._paths()).items():
            await self._once(state, target, paths, skipped)
        if isinstance(state, SonicState) and state.unknown_keys:
            self._maps_loaded = False  # a key we could not read: read the maps again next poll
        self._state = state
        return PollResult(self._samples(state), [], skipped)

    # -- stream ----------------------------------------------------------------------------------------------

    async def _poll_stream(self) -> PollResult:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._stream_forever(), name=f"gnmi-{self.switch}")
        if not self._synced.is_set():
            try:
                await asyncio.wait_for(self._synced.wait(), timeout=self.ctx.remaining())
            except TimeoutError:
                raise (self._stream_error or PollTimeoutError(
                    f"{self.where}: gNMI stream: no sync_response within the poll's deadline")) from None
        state = self._state
        loop = asyncio.get_running_loop()
        if state is None or not self._synced.is_set():
            raise self._stream_error or PollTimeoutError(f"{self.where}: gNMI stream restarting")
        if self._sampled() and loop.time() - self.last_update > WATCHDOG_INTERVALS * self.sample_interval:
            raise PollTimeoutError(f"{self.where}: gNMI stream stalled: no update in "
                                   f"{WATCHDOG_INTERVALS} x {self.sample_interval:g}s")
        skipped, self._skipped = self._skipped, []
        samples = self._samples(state)
        labels = {"switch": self.switch}
        samples.append(Sample("fabric_roce_switch_gnmi_stream_updates", labels, float(self.updates)))
        samples.append(Sample("fabric_roce_switch_gnmi_resubscribes_total", labels, float(self.resubscribes)))
        return PollResult(samples, [], skipped)

    def _sampled(self) -> bool:
        """Does the stream carry a SAMPLE path? Only then is silence a stall (ON_CHANGE paths may
        rightly say nothing for hours)."""
        return any(not gp.on_change for gp in self._paths())

    def _mark_stale(self, error: PollError) -> None:
        self._synced.clear()
        self._stream_error = error
        self._state = None

    async def _stream_forever(self) -> None:
        failures = 0
        while True:
            try:
                await self._stream_once()
                failures = 0
            except asyncio.CancelledError:
                raise
            except PollTimeoutError as e:  # the watchdog: resubscribe at once
                self._mark_stale(e)
                self.resubscribes += 1
                failures = 0
                continue
            except PollError as e:
                self._mark_stale(e)
                failures += 1
            except Exception as e:  # a bug here must not end the stream for good
                self._mark_stale(PollError(f"{self.where}: gNMI stream: {type(e).__name__}: {e}", reason="internal"))
                failures += 1
            self.resubscribes += 1
            # backoff: 0.5 s, 1 s, 2 s ... never more than one sample interval
            await asyncio.sleep(min(self.sample_interval, 0.5 * (2 ** max(0, failures - 1))) if failures else 0)

    async def _stream_once(self) -> None:
        grpc, _, g_grpc = _pb()
        loop = asyncio.get_running_loop()
        state = self._new_state()
        skipped: list = []
        if isinstance(state, SonicState) and not self._maps_loaded:
            await self._load_maps(state, skipped, timeout=max(5.0, 2 * self.sample_interval))
        groups = self._groups(self._paths())
        if len(groups) != 1:
            raise TargetConfigError(f"{self.where}: a stream subscribes under one target")
        target, paths = next(iter(groups.items()))
        stub = g_grpc.gNMIStub(self._get_channel())
        call = stub.Subscribe(metadata=self._metadata())
        watchdog = WATCHDOG_INTERVALS * self.sample_interval if self._sampled() else None
        self.updates = 0
        # The watchdog is one timer, moved on lazily: it fires at the deadline it was last set to and
        # then looks at when the last update came (an asyncio.wait_for per read cost a task per
        # notification, a third of the stream's own CPU). A stall cancels the call, which ends the read.
        stalled = False
        timer: asyncio.TimerHandle | None = None

        def check() -> None:
            nonlocal stalled, timer
            if loop.time() - self.last_update >= watchdog:
                stalled = True
                call.cancel()
            else:
                timer = loop.call_at(self.last_update + watchdog, check)

        self.last_update = loop.time()
        if watchdog is not None:
            timer = loop.call_at(self.last_update + watchdog, check)
        try:
            await call.write(self._request(target, paths, "stream"))
            while True:
                response = await call.read()
                if response is grpc.aio.EOF:
                    raise ConnectError(f"{self.where}: gNMI stream ended by the target")
                self.last_update = loop.time()
                if response.sync_response:
                    self._state = state
                    self._stream_error = None
                    self._synced.set()
                    continue
                if response.HasField("update"):
                    try:
                        self._apply(state, response, skipped)
                    except ParseError as e:
                        p.note(skipped, self.dialect.source, 0, str(e))
                    self.updates += 1
                    if len(skipped) and len(self._skipped) < 1000:
                        self._skipped.extend(skipped)
                    skipped.clear()
        except (asyncio.CancelledError, grpc.aio.AioRpcError) as e:
            task = asyncio.current_task()
            if stalled and not (task is not None and task.cancelling()):
                raise PollTimeoutError(f"{self.where}: gNMI stream stalled: no update in "
                                       f"{WATCHDOG_INTERVALS} x {self.sample_interval:g}s; resubscribing") from None
            if isinstance(e, asyncio.CancelledError):
                raise
            raise await self._status_error(e) from None
        finally:
            if timer is not None:
                timer.cancel()
            call.cancel()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
        if self._channel is not None:
            try:
                await self._channel.close()
            except Exception:
                pass
            self._channel = None


__all__ = ["GnmiSwitchCollector", "GnmiSwitchOptions", "DIALECTS", "error_from_status", "sonic_samples",
           "oc_samples", "SonicState", "OcState", "OcShapes", "OcEmit"]
