"""The lab's gNMI target: the simulated switch state that backs the lab's SNMP agent (``lab.snmp``)
and SONiC CLI (``lab.sonic_cli``), served over gNMI (grpc.aio + gnmi-pb) in two dialects.

* ``sonic``: target ``COUNTERS_DB`` as sonic-net/sonic-gnmi serves it -- ``COUNTERS/Ethernet*``,
  ``COUNTERS/Ethernet*/Queues``, ``COUNTERS/Ethernet*/Pfcwd``, ``PERIODIC_WATERMARKS/Ethernet*/
  PriorityGroups`` as JSON objects of decimal strings in ``json_ietf_val``, the name maps
  (``COUNTERS_PORT_NAME_MAP``, ``COUNTERS_QUEUE_NAME_MAP``, ``COUNTERS_QUEUE_TYPE_MAP``) and
  ``CONFIG_DB/PORT`` (aliases). With ``vendor_aliases`` ports are keyed by alias (``etp<n>``), as
  sonic-gnmi does when its alias mode is on.
* ``cumulus`` / ``openconfig``: one typed leaf per update under the OpenConfig and NVIDIA paths
  Cumulus 5.x documents (interfaces, qos queues, switch-priority pause counters and durations).
  How leaves are grouped into notifications (``oc_grouping``) decides the client's cost, since
  grpc-python pays ~50-75 us per message whatever it holds. Published captures show both bounds:
  ``container`` (the default) -- one notification per keyed container, its prefix the container
  and one update per leaf, as NVIDIA NVOS answers (``"prefix": "interfaces/interface[name=sw1p1]"``,
  NVOS user manual, gNMI Streaming) and the most Arista cEOS 4.34.1F packs (1 to 9 counters under
  ``interfaces/interface[name=Management1]/state/counters``, each batch as the agent wrote it:
  UchihaItachiSama/openconfig_labs demos/gNMI-demo/README.md); ``leaf`` -- one notification per leaf, no prefix,
  the full path in the update, as Arista EOS sent ``/interfaces/interface/state/counters`` in
  aristanetworks/openmgmt docs/examples/gnmi-clients/gnmic/outputs/interface_state.json (2021):
  the worst case. No capture shows a target packing several interfaces into one notification.
* ``replay``: serve fixed payloads (sonic-gnmi's ``testdata/`` files) for given paths instead.

Subscribe only (Cumulus has no Get): ONCE, POLL and STREAM (SAMPLE, ON_CHANGE); a sample
interval below ``min_sample_interval`` (1 s, as SONiC) is refused with INVALID_ARGUMENT.
``stall()`` keeps a stream open but stops its updates (the SONiC bug the watchdog is for);
username/password metadata and TLS are checked when configured.

Runs inside a process on its own thread and event loop (``GnmiTarget.start()``), or as a process
(``python -m fabric_exporter.lab.gnmi_target``; SIGUSR1 toggles the stall) for kill tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from .ports import free_tcp_port
from .snmp import SimulatedSwitch

MIN_SAMPLE_INTERVAL = 1.0
PFC_QUANTUM_US = 3  # the lab's pause duration per pause frame (simulated)


# -- the simulated switch as SONiC COUNTERS_DB ------------------------------------------------------

def sonic_port_fields(intf) -> dict[str, str]:
    c = intf.counters
    f = {"SAI_PORT_STAT_IF_IN_OCTETS": c["ifHCInOctets"], "SAI_PORT_STAT_IF_IN_UCAST_PKTS": c["ifHCInUcastPkts"],
         "SAI_PORT_STAT_IF_IN_MULTICAST_PKTS": c["ifHCInMulticastPkts"],
         "SAI_PORT_STAT_IF_IN_BROADCAST_PKTS": c["ifHCInBroadcastPkts"],
         "SAI_PORT_STAT_IF_IN_NON_UCAST_PKTS": c["ifHCInMulticastPkts"] + c["ifHCInBroadcastPkts"],
         "SAI_PORT_STAT_IF_OUT_OCTETS": c["ifHCOutOctets"], "SAI_PORT_STAT_IF_OUT_UCAST_PKTS": c["ifHCOutUcastPkts"],
         "SAI_PORT_STAT_IF_OUT_MULTICAST_PKTS": c["ifHCOutMulticastPkts"],
         "SAI_PORT_STAT_IF_OUT_BROADCAST_PKTS": c["ifHCOutBroadcastPkts"],
         "SAI_PORT_STAT_IF_IN_DISCARDS": c["ifInDiscards"], "SAI_PORT_STAT_IF_IN_ERRORS": c["ifInErrors"],
         "SAI_PORT_STAT_IF_OUT_DISCARDS": c["ifOutDiscards"], "SAI_PORT_STAT_IF_OUT_ERRORS": c["ifOutErrors"]}
    for prio in range(8):  # SimInterface.pfc[p] = [sent (tx), received (rx)]
        f[f"SAI_PORT_STAT_PFC_{prio}_TX_PKTS"] = intf.pfc[prio][0]
        f[f"SAI_PORT_STAT_PFC_{prio}_RX_PKTS"] = intf.pfc[prio][1]
    return {k: str(v) for k, v in f.items()}


def sonic_queue_fields(intf, q: int, cast: str) -> dict[str, str]:
    s = intf.queues[q]
    f = {"SAI_QUEUE_STAT_PACKETS": s[f"{cast}_pkts"], "SAI_QUEUE_STAT_BYTES": s[f"{cast}_bytes"],
         "SAI_QUEUE_STAT_DROPPED_PACKETS": s[f"{cast}_drop_pkts"],
         "SAI_QUEUE_STAT_DROPPED_BYTES": s[f"{cast}_drop_bytes"]}
    if cast == "uc":  # WRED/ECN on unicast queues only (the CLI shows N/A for multicast)
        f.update({"SAI_QUEUE_STAT_WRED_DROPPED_PACKETS": s["wred_drop_pkts"],
                  "SAI_QUEUE_STAT_WRED_DROPPED_BYTES": s["wred_drop_bytes"],
                  "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": s["ecn_pkts"],
                  "SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES": s["ecn_bytes"]})
    return {k: str(v) for k, v in f.items()}


def sonic_pfcwd_fields(wd: dict) -> dict[str, str]:
    return {"PFC_WD_ACTION": "drop", "PFC_WD_DETECTION_TIME": "200000", "PFC_WD_RESTORATION_TIME": "200000",
            "PFC_WD_STATUS": wd["status"], "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED": str(wd["detected"]),
            "PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED": str(wd["restored"]),
            "PFC_WD_QUEUE_STATS_TX_PACKETS": str(wd["tx_ok"]),
            "PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS": str(wd["tx_drop"]),
            "PFC_WD_QUEUE_STATS_RX_PACKETS": str(wd["rx_ok"]),
            "PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS": str(wd["rx_drop"])}


def pg_watermarks(intf, pg: int) -> dict[str, int]:
    """The lab's (simulated) peak priority-group occupancy: derived from the port's PFC activity."""
    rx = intf.pfc[pg][1]
    return {"shared": (rx % 97) * 1024, "headroom": (rx % 13) * 256}


class SonicView:
    def __init__(self, sw: SimulatedSwitch, vendor_aliases: bool = False):
        self.sw = sw
        self.aliases = {i.name: f"etp{n + 1}" for n, i in enumerate(sw.interfaces)} if vendor_aliases else {}

    def key(self, name: str) -> str:
        return self.aliases.get(name, name)

    def _ports(self, pattern: str):
        for i in self.sw.interfaces:
            if pattern.endswith("*") and i.name.startswith(pattern[:-1]) or self.key(i.name) == pattern:
                yield i

    def value(self, target: str, names: list[str]) -> dict | None:
        """The JSON object sonic-gnmi answers for ``target``/``names``; None when it serves no such path."""
        sw = self.sw
        if target == "CONFIG_DB" and names == ["PORT"]:
            return {i.name: {"alias": self.key(i.name), "speed": "400000"} for i in sw.interfaces}
        if target != "COUNTERS_DB":
            return None
        if names == ["COUNTERS_PORT_NAME_MAP"]:
            return {i.name: f"oid:0x1000000{i.ifindex:06x}" for i in sw.interfaces}
        if names in (["COUNTERS_QUEUE_NAME_MAP"], ["COUNTERS_QUEUE_TYPE_MAP"]):
            names_map, types = {}, {}
            for i in sw.interfaces:
                n = len(i.queues)
                for q in i.queues:
                    for cast, idx in (("UNICAST", q), ("MULTICAST", n + q)):
                        oid = f"oid:0x15{i.ifindex:06x}{idx:04x}"
                        names_map[f"{i.name}:{idx}"] = oid
                        types[oid] = f"SAI_QUEUE_TYPE_{cast}"
            return names_map if names[0] == "COUNTERS_QUEUE_NAME_MAP" else types
        if len(names) == 2 and names[0] == "COUNTERS":
            ports = list(self._ports(names[1]))
            if not ports:
                return None
            if not names[1].endswith("*"):
                return sonic_port_fields(ports[0])
            return {self.key(i.name): sonic_port_fields(i) for i in ports}
        if len(names) == 3 and names[0] == "COUNTERS" and names[2] in ("Queues", "Pfcwd"):
            out = {}
            for i in self._ports(names[1]):
                n = len(i.queues)
                if names[2] == "Queues":
                    for q in sorted(i.queues):
                        out[f"{self.key(i.name)}:{q}"] = sonic_queue_fields(i, q, "uc")
                    for q in sorted(i.queues):
                        out[f"{self.key(i.name)}:{n + q}"] = sonic_queue_fields(i, q, "mc")
                else:
                    for q, wd in sorted(i.pfcwd.items()):
                        out[f"{self.key(i.name)}:{q}"] = sonic_pfcwd_fields(wd)
            return out or None
        if len(names) == 3 and names[0] == "PERIODIC_WATERMARKS" and names[2] == "PriorityGroups":
            out = {}
            for i in self._ports(names[1]):
                for pg in range(8):
                    wm = pg_watermarks(i, pg)
                    out[f"{self.key(i.name)}:{pg}"] = {
                        "SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES": str(wm["shared"]),
                        "SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES": str(wm["headroom"])}
            return out or None
        return None


# -- the simulated switch as OpenConfig leaves -------------------------------------------------------

Elem = tuple[str, dict[str, str]]
OC_GROUPINGS = ("container", "leaf")
OPER = {1: "UP", 2: "DOWN", 3: "TESTING", 4: "UNKNOWN", 5: "DORMANT", 6: "NOT_PRESENT", 7: "LOWER_LAYER_DOWN"}
OC_COUNTERS = {"in-octets": "ifHCInOctets", "in-unicast-pkts": "ifHCInUcastPkts",
               "in-multicast-pkts": "ifHCInMulticastPkts", "in-broadcast-pkts": "ifHCInBroadcastPkts",
               "out-octets": "ifHCOutOctets", "out-unicast-pkts": "ifHCOutUcastPkts",
               "out-multicast-pkts": "ifHCOutMulticastPkts", "out-broadcast-pkts": "ifHCOutBroadcastPkts",
               "in-discards": "ifInDiscards", "in-errors": "ifInErrors", "out-discards": "ifOutDiscards",
               "out-errors": "ifOutErrors"}


def oc_leaves(sw: SimulatedSwitch, dialect: str) -> Iterator[tuple[tuple[Elem, ...], Any]]:
    """Every leaf the target serves: (path elements, value)."""
    for i in sw.interfaces:
        base: tuple[Elem, ...] = (("interfaces", {}), ("interface", {"name": i.name}), ("state", {}))
        for leaf, cname in OC_COUNTERS.items():
            yield base + (("counters", {}), (leaf, {})), i.counters[cname]
        if dialect == "cumulus":  # simulated: a stall of 1% of the bytes sent
            yield base + (("counters", {}), ("tx-wait", {})), i.counters["ifHCOutOctets"] // 100
        yield base + (("oper-status", {}),), OPER.get(i.oper_status, "UNKNOWN")
        qos: tuple[Elem, ...] = (("qos", {}), ("interfaces", {}), ("interface", {"interface-id": i.name}))
        for q, s in sorted(i.queues.items()):
            qbase = qos + (("output", {}), ("queues", {}), ("queue", {"name": str(q)}), ("state", {}))
            values = {"transmit-pkts": s["uc_pkts"], "transmit-octets": s["uc_bytes"],
                      "wred-dropped-pkts": s["wred_drop_pkts"], "ecn-marked-pkts": s["ecn_pkts"]}
            if dialect == "cumulus":
                values["no-buffer-uc-dropped-pkts"] = s["uc_drop_pkts"]
                values["instant-queue-len"] = (s["uc_pkts"] % 50) * 1024
            else:
                values["dropped-pkts"] = s["uc_drop_pkts"]
            for leaf, v in values.items():
                yield qbase + ((leaf, {}),), v
            if dialect == "cumulus":
                yield qbase + (("shared-buffer", {}), ("data", {}), ("max-occupancy-since-last-sample", {})), \
                    (s["uc_pkts"] % 97) * 2048
        if dialect == "cumulus":
            for prio in range(8):
                pbase = qos + (("switch-priority", {"priority": str(prio)}), ("state", {}))
                sent, received = i.pfc[prio]
                yield pbase + (("counters", {}), ("in-pause-pkts", {})), received
                yield pbase + (("counters", {}), ("out-pause-pkts", {})), sent
                yield pbase + (("in-pause-duration", {}),), received * PFC_QUANTUM_US
                yield pbase + (("out-pause-duration", {}),), sent * PFC_QUANTUM_US
            for pg in range(8):
                yield qos + (("input", {}), ("priority-group", {"pg-id": str(pg)}), ("state", {}),
                             ("shared-buffer", {}), ("data", {}), ("max-occupancy-since-last-sample", {})), \
                    pg_watermarks(i, pg)["shared"]


def matches(pattern: tuple[Elem, ...], elems: tuple[Elem, ...]) -> bool:
    """Is ``elems`` at or below ``pattern`` (key value ``*`` and a name ending in ``*`` match any)?"""
    if len(elems) < len(pattern):
        return False
    for (pname, pkeys), (name, keys) in zip(pattern, elems):
        if pname != name and not (pname.endswith("*") and name.startswith(pname[:-1])):
            return False
        for k, v in pkeys.items():
            if v != "*" and keys.get(k) != v:
                return False
    return True


# -- the gRPC service ------------------------------------------------------------------------------------

class GnmiTarget:
    """A gNMI target on 127.0.0.1 serving ``switch`` in ``dialect`` (sonic | cumulus | openconfig),
    or, with ``replay``, fixed JSON payloads: {(target, "A/B/C"): bytes}."""

    def __init__(self, switch: SimulatedSwitch | None, dialect: str = "sonic", *, port: int | None = None,
                 tls: tuple[str, str] | None = None, credentials: tuple[str, str] | None = None,
                 min_sample_interval: float = MIN_SAMPLE_INTERVAL, vendor_aliases: bool = False,
                 replay: dict[tuple[str, str], bytes] | None = None, advance_each_sample: bool = False,
                 advance_every: float | None = None, notification_per_key: bool = False,
                 oc_grouping: str = "container"):
        self.switch = switch
        self.dialect = dialect
        self.port = port or free_tcp_port()
        self.tls = tls
        self.credentials = credentials
        self.min_sample_interval = min_sample_interval
        self.sonic = SonicView(switch, vendor_aliases) if switch is not None and dialect == "sonic" else None
        self.replay = replay or {}
        # sonic: one notification per COUNTERS_DB entry ({key: fields}) instead of one object of all
        # of them per path; what sonic-gnmi's dbTableKeySubscribe sends for an ON_CHANGE subscription
        # (its SAMPLE sends the merged object)
        self.notification_per_key = notification_per_key
        if oc_grouping not in OC_GROUPINGS:
            raise ValueError(f"oc_grouping must be one of {OC_GROUPINGS}")
        self.oc_grouping = oc_grouping  # openconfig/cumulus: a notification per container or per leaf
        self.advance_each_sample = advance_each_sample
        # advance the switch on a timer of its own and stamp every notification with the state's
        # version instead of the time, so two clients' notifications of one state can be matched
        self.advance_every = advance_every
        self.version = 1
        self.stalled = False
        self.hang_new = False  # with stalled: new subscriptions get nothing either (a wedged agent)
        self.sample_ticks = 0
        self.subscribes = 0
        self.lock = threading.Lock()  # guards the switch state between the test thread and the server
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: Any = None
        self._started = threading.Event()

    # -- state --

    def stall(self, on: bool = True, hang_new: bool = False) -> None:
        """Stop sending SAMPLE updates on open streams (the connection stays up); with ``hang_new``
        new subscriptions get no data either, until the stall ends."""
        self.stalled = on
        self.hang_new = on and hang_new

    def _notifications(self, g: Any, prefix_target: str, sub_path: Any, ts: int) -> list:
        names = [e.name for e in sub_path.elem]
        elems = tuple((e.name, dict(e.key)) for e in sub_path.elem)
        if self.replay or self.sonic is not None:
            raw = self.replay.get((prefix_target, "/".join(names)))
            blobs = [raw] if raw is not None else []
            if raw is None and self.sonic is not None:
                value = self.sonic.value(prefix_target, names)
                if value is not None and self.notification_per_key and prefix_target == "COUNTERS_DB" \
                        and all(isinstance(v, dict) for v in value.values()):
                    blobs = [json.dumps({k: v}).encode() for k, v in value.items()]
                elif value is not None:
                    blobs = [json.dumps(value).encode()]
            return [g.Notification(timestamp=ts, prefix=g.Path(target=prefix_target) if prefix_target else None,
                                   update=[g.Update(path=sub_path, val=g.TypedValue(json_ietf_val=raw))])
                    for raw in blobs]
        out = []
        by_parent: dict[tuple, tuple] = {}
        for leaf_elems, value in oc_leaves(self.switch, self.dialect):
            if matches(elems, leaf_elems):
                parent = leaf_elems[:-1]
                hashable = tuple((n, tuple(k.items())) for n, k in parent)
                by_parent.setdefault(hashable, (parent, []))[1].append((leaf_elems[-1], value))
        for parent, leaves in by_parent.values():
            parent_elems = [g.PathElem(name=n, key=k) for n, k in parent]
            updates = []
            for (name, _), value in leaves:
                tv = g.TypedValue(string_val=value) if isinstance(value, str) else g.TypedValue(uint_val=int(value))
                if self.oc_grouping == "leaf":  # Arista's 2021 shape: no prefix, the whole path per leaf
                    path = g.Path(elem=[*parent_elems, g.PathElem(name=name)])
                    out.append(g.Notification(timestamp=ts, update=[g.Update(path=path, val=tv)]))
                else:
                    updates.append(g.Update(path=g.Path(elem=[g.PathElem(name=name)]), val=tv))
            if updates:
                out.append(g.Notification(timestamp=ts, prefix=g.Path(elem=parent_elems), update=updates))
        return out

    def _all(self, g: Any, sl: Any, subs: list, ts: int) -> list:
        target = sl.prefix.target if sl.HasField("prefix") else ""
        with self.lock:
            if self.advance_every and ts:
                ts = self.version
            return [n for s in subs for n in self._notifications(g, target, s.path, ts)]

    # -- the servicer --

    def _servicer(self):
        import grpc
        from gnmi_pb import gnmi_pb2 as g
        from gnmi_pb import gnmi_pb2_grpc as gg

        target = self

        class Servicer(gg.gNMIServicer):
            async def Capabilities(self, request, context):
                await target._check_auth(context, grpc)
                return g.CapabilityResponse(supported_encodings=[g.JSON_IETF], gNMI_version="0.10.0")

            async def Subscribe(self, request_iterator, context):
                await target._check_auth(context, grpc)
                target.subscribes += 1
                while target.hang_new:
                    await asyncio.sleep(0.05)
                first = await request_iterator.__anext__()
                if not first.HasField("subscribe"):
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "first request must be a subscribe")
                sl = first.subscribe
                subs = list(sl.subscription)
                if not subs:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no subscription")
                initial = target._all(g, sl, subs, time.time_ns())
                if not initial:
                    await context.abort(grpc.StatusCode.NOT_FOUND, "no data for the subscribed paths")
                if sl.mode == g.SubscriptionList.STREAM:
                    intervals = []
                    for s in subs:
                        if s.mode == g.ON_CHANGE:
                            continue
                        ns = s.sample_interval
                        if ns and ns < target.min_sample_interval * 1e9:
                            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                                f"invalid interval: {ns}ns. It cannot be less than "
                                                f"{target.min_sample_interval:g}s")
                        intervals.append(ns / 1e9 if ns else target.min_sample_interval)
                for n in initial:
                    yield g.SubscribeResponse(update=n)
                yield g.SubscribeResponse(sync_response=True)
                if sl.mode == g.SubscriptionList.ONCE:
                    return
                if sl.mode == g.SubscriptionList.POLL:
                    async for req in request_iterator:
                        if req.HasField("poll"):
                            for n in target._all(g, sl, subs, time.time_ns()):
                                yield g.SubscribeResponse(update=n)
                            yield g.SubscribeResponse(sync_response=True)
                    return
                sample = [s for s in subs if s.mode != g.ON_CHANGE]
                on_change = [s for s in subs if s.mode == g.ON_CHANGE]
                last = {n.SerializeToString(deterministic=True) for n in
                        target._all(g, sl, on_change, 0)} if on_change else set()
                period = min(intervals) if intervals else target.min_sample_interval
                next_at = time.monotonic() + period
                while True:
                    await asyncio.sleep(max(0.0, next_at - time.monotonic()))
                    next_at += period
                    if target.stalled:
                        continue
                    if target.advance_each_sample and target.switch is not None:
                        with target.lock:
                            target.switch.advance()
                    target.sample_ticks += 1
                    ts = time.time_ns()
                    for n in target._all(g, sl, sample, ts) if sample else []:
                        yield g.SubscribeResponse(update=n)
                    if on_change:
                        now = target._all(g, sl, on_change, 0)
                        for n in now:
                            key = n.SerializeToString(deterministic=True)
                            if key not in last:
                                n.timestamp = ts
                                yield g.SubscribeResponse(update=n)
                        last = {n.SerializeToString(deterministic=True) for n in now}

        return Servicer(), gg

    async def _check_auth(self, context, grpc) -> None:
        if self.credentials is None:
            return
        md = dict(context.invocation_metadata())
        if (md.get("username"), md.get("password")) != self.credentials:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "bad username or password")

    # -- lifecycle --

    async def serve(self) -> None:
        import grpc

        servicer, gg = self._servicer()
        self._server = grpc.aio.server()
        gg.add_gNMIServicer_to_server(servicer, self._server)
        address = f"127.0.0.1:{self.port}"
        if self.tls:
            cert, key = (Path(x).read_bytes() for x in self.tls)
            self._server.add_secure_port(address, grpc.ssl_server_credentials([(key, cert)]))
        else:
            self._server.add_insecure_port(address)
        await self._server.start()
        if self.advance_every and self.switch is not None:
            self._ticker = asyncio.get_running_loop().create_task(self._advance_forever())

    async def _advance_forever(self) -> None:
        while True:
            await asyncio.sleep(self.advance_every)
            with self.lock:
                self.switch.advance()
                self.version += 1

    async def close(self) -> None:
        """Stop a target served with ``serve()`` in the caller's loop (``start()``'s: ``stop()``)."""
        ticker = getattr(self, "_ticker", None)
        if ticker is not None:
            ticker.cancel()
        if self._server is not None:
            await self._server.stop(0)

    def start(self, timeout: float = 10.0) -> GnmiTarget:
        """Serve on a thread with its own event loop; returns once listening."""
        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self.serve())
            self._started.set()
            self._loop.run_forever()
            ticker = getattr(self, "_ticker", None)
            if ticker is not None:
                ticker.cancel()
            self._loop.run_until_complete(self._server.stop(0))
            self._loop.close()

        self._thread = threading.Thread(target=run, name=f"gnmi-target-{self.port}", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise TimeoutError("gNMI target did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> GnmiTarget:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="fabric-exporter lab gNMI target (simulated switch)")
    ap.add_argument("--dialect", default="sonic", choices=("sonic", "cumulus", "openconfig"))
    ap.add_argument("--name", default="leaf1")
    ap.add_argument("--ports", type=int, default=32)
    ap.add_argument("--queues", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--advance-each-sample", action="store_true")
    ap.add_argument("--advance-every", type=float)
    ap.add_argument("--oc-grouping", default="container", choices=OC_GROUPINGS)
    args = ap.parse_args(argv)
    sw = SimulatedSwitch(args.name, "sonic", ports=args.ports, queues=args.queues, seed=args.seed)
    target = GnmiTarget(sw, args.dialect, port=args.port,
                        tls=(args.tls_cert, args.tls_key) if args.tls_cert else None,
                        advance_each_sample=args.advance_each_sample, advance_every=args.advance_every,
                        oc_grouping=args.oc_grouping)

    async def run() -> None:
        await target.serve()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, lambda: target.stall(not target.stalled))
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        print(f"listening 127.0.0.1:{target.port}", flush=True)
        await stop.wait()
        await target._server.stop(0)

    asyncio.run(run())


if __name__ == "__main__":
    sys.exit(main())
