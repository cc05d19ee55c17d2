"""Values a gNMI target sends, decoded into records: SONiC COUNTERS_DB JSON blobs and OpenConfig leaves.

Pure functions: bytes or decoded values in, records out; no gRPC, no clock (the gNMI stubs are not
imported here: an OpenConfig notification arrives as ``(path elements, value)`` pairs the
collector takes out of the protobuf message).

* SONiC (sonic-net/sonic-gnmi, target ``COUNTERS_DB``): each update's ``json_ietf_val`` is a JSON
  object. A path naming one port (``COUNTERS/Ethernet68``) gives ``{"SAI_PORT_STAT_...": "0", ...}``;
  a wildcard (``COUNTERS/Ethernet*``) gives one such object per port, keyed by port name (or vendor
  alias when the target runs with aliases); ``.../Queues``, ``.../Pfcwd`` and
  ``PERIODIC_WATERMARKS/.../PriorityGroups`` key each object by ``<port>:<index>``. Every counter
  is a decimal STRING (Redis hash fields): parsed here. A value that is not a number is skipped and
  counted, except the few documented text fields (``PFC_WD_STATUS`` ...) kept as text.
* OpenConfig / Cumulus: one leaf per update, e.g.
  ``/qos/interfaces/interface[interface-id=swp1]/switch-priority[priority=3]/state/in-pause-duration``.
  ``oc_record`` names what a leaf is about (interface, queue, priority, priority group) and its
  value; the collector's dialect table decides which records become which catalog series.

Skip-and-count: an entry that is not an object, a counter that is not a number, a leaf of a kind
this module does not know: skipped and counted under ``gnmi_sonic`` / ``gnmi_openconfig``. A blob
that is not JSON, or not an object at the top, fails (ParseError).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import ParseError
from .guard import load_json, parser_entry
from .skipped import SkippedLine, note

SOURCE_SONIC = "gnmi_sonic"
SOURCE_OPENCONFIG = "gnmi_openconfig"
SOURCES = (SOURCE_SONIC, SOURCE_OPENCONFIG)  # skipped lines are counted under these (skipped.sources_of)
MAX_COUNTER = (1 << 64) - 1
# SONiC fields whose value is text by design (sonic-gnmi testdata COUNTERS:*:Pfcwd, Queues):
# published through their own meaning (PFC_WD_STATUS), never counted as skipped numbers.
SONIC_TEXT_FIELDS = frozenset({"PFC_WD_STATUS", "PFC_WD_ACTION", "SAI_QUEUE_ATTR_PAUSE_STATUS",
                               "SAI_QUEUE_ATTR_PAUSE_STATUS_last"})


class SonicBlob(NamedTuple):
    """One ``json_ietf_val``: key (port, ``port:index``, or the path's own key) -> field -> value."""
    numbers: dict[str, dict[str, int | float]]
    text: dict[str, dict[str, str]]


def _number(v: str) -> int | float | None:
    """A SONiC counter string as a number; None when it is not one (``N/A``, ``""``, ``"1e"``)."""
    if not v.isascii():  # str.isdigit() and float() accept other scripts' digits ('²', '٣')
        return None
    if v.isdigit():  # the common case: a plain decimal counter
        n = int(v)
        return n if n <= MAX_COUNTER else None
    try:
        f = float(v)
    except ValueError:
        return None
    return f if f == f and f not in (float("inf"), float("-inf")) else None


def _fields(key: str, obj: dict, numbers: dict, text: dict, skipped: list[SkippedLine] | None) -> None:
    nums: dict[str, int | float] = {}
    txt: dict[str, str] = {}
    for field, value in obj.items():
        # the common case first, inline (a blob holds ~100 of these per port): a plain ASCII decimal
        if value.__class__ is str and value.isdigit() and value.isascii() and field not in SONIC_TEXT_FIELDS:
            n = int(value)
            if n <= MAX_COUNTER:
                nums[field] = n
                continue
        if field in SONIC_TEXT_FIELDS and isinstance(value, str):
            txt[field] = value
            continue
        n = _number(value) if isinstance(value, str) else (
            value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNTER else None)
        if n is None:
            note(skipped, SOURCE_SONIC, 0, f"{key} {field}={str(value)[:60]}")
        else:
            nums[field] = n
    numbers[key] = nums
    if txt:
        text[key] = txt


@parser_entry
def parse_sonic_blob(data: bytes | str, key: str = "", *, skipped: list[SkippedLine] | None = None) -> SonicBlob:
    """One ``json_ietf_val`` of a SONiC COUNTERS_DB path. ``key`` names the entry when the blob is a
    single object of fields (a path to one port): ``{"SAI_...": "1"}`` -> ``{key: {...}}``."""
    text_in = data.decode("utf-8", errors="replace") if isinstance(data, (bytes, bytearray)) else data
    top = load_json(text_in, "gnmi json_ietf_val")
    if not isinstance(top, dict):
        raise ParseError(f"gnmi json_ietf_val: expected a JSON object, got {type(top).__name__}")
    numbers: dict[str, dict[str, int | float]] = {}
    text: dict[str, dict[str, str]] = {}
    if top and all(not isinstance(v, dict) for v in top.values()):  # one entry's fields
        _fields(key, top, numbers, text, skipped)
        return SonicBlob(numbers, text)
    for k, obj in top.items():
        if isinstance(obj, dict):
            _fields(k, obj, numbers, text, skipped)
        else:
            note(skipped, SOURCE_SONIC, 0, f"{k}={str(obj)[:60]}")
    return SonicBlob(numbers, text)


@parser_entry
def parse_sonic_name_map(data: bytes | str) -> dict[str, str]:
    """A COUNTERS_DB name map (``COUNTERS_PORT_NAME_MAP``, ``COUNTERS_QUEUE_NAME_MAP``,
    ``COUNTERS_QUEUE_TYPE_MAP``): a flat JSON object of strings. Non-string entries are left out."""
    text_in = data.decode("utf-8", errors="replace") if isinstance(data, (bytes, bytearray)) else data
    top = load_json(text_in, "gnmi name map")
    if not isinstance(top, dict):
        raise ParseError("gnmi name map: expected a JSON object")
    return {str(k): v for k, v in top.items() if isinstance(v, str)}


def split_indexed(key: str) -> tuple[str, int] | None:
    """``"Ethernet68/1:3"`` -> ``("Ethernet68/1", 3)``; None when the key has no numeric index."""
    port, sep, index = key.rpartition(":")
    if not sep or not port or not index.isdigit():
        return None
    return port, int(index)


# -- OpenConfig ------------------------------------------------------------------------------------

Elem = tuple[str, dict[str, str]]  # one path element: name and keys


class OcRecord(NamedTuple):
    """One OpenConfig leaf: what it is about and its value.

    kind       "interface" | "queue" | "priority" | "pg" | "lldp"
    interface  the interface name (``name`` or ``interface-id`` key)
    index      the queue name, switch priority or priority-group id ("" for interface leaves)
    leaf       the path below the keyed list, e.g. ``counters/in-pause-pkts``,
               ``shared-buffer/data/max-occupancy-since-last-sample``, ``oper-status``
    value      a number, or text for enumerations (``UP``) and LLDP facts
    """
    kind: str
    interface: str
    index: str
    leaf: str
    value: int | float | str


@parser_entry
def parse_xpath(path: str) -> tuple[Elem, ...]:
    """``/a/b[k=v][k2=v2]/c`` -> ``(("a", {}), ("b", {"k": "v", "k2": "v2"}), ("c", {}))``.
    Key values may contain ``/`` (``swp1s0``, ``Ethernet0/1``); a ``]`` inside a value is not supported."""
    elems: list[Elem] = []
    i, n = 0, len(path)
    if path.startswith("/"):
        i = 1
    while i < n:
        j = i
        while j < n and path[j] not in "/[":
            j += 1
        name, keys = path[i:j], {}
        while j < n and path[j] == "[":
            end = path.find("]", j)
            if end < 0:
                raise ParseError(f"gnmi path: unclosed '[' in {path[:80]!r}")
            k, eq, v = path[j + 1:end].partition("=")
            if not eq:
                raise ParseError(f"gnmi path: key without '=' in {path[:80]!r}")
            keys[k] = v
            j = end + 1
        if name:
            elems.append((name, keys))
        i = j + 1
    return tuple(elems)


def scalar(value: Any) -> int | float | str | None:
    """A leaf value as a number (numeric strings too: some targets send uint64 as a JSON string) or
    text; None for what is neither (bools, containers, NaN)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, str):
        n = _number(value)
        return n if n is not None else value
    return None


# leaves whose value is text by meaning; any other text value is skipped and counted
OC_TEXT_LEAVES = frozenset({"oper-status", "admin-status", "system-name", "port-id", "port-description",
                            "chassis-id"})


def _record(elems: tuple[Elem, ...], value: int | float | str) -> OcRecord | None:
    names = [e[0] for e in elems]
    if len(elems) >= 4 and names[0] == "interfaces" and names[1] == "interface" and names[2] == "state":
        return OcRecord("interface", elems[1][1].get("name", ""), "", "/".join(names[3:]), value)
    if len(elems) >= 3 and names[0] == "qos" and names[1] == "interfaces" and names[2] == "interface":
        intf = elems[2][1].get("interface-id") or elems[2][1].get("name", "")
        rest, rest_elems = names[3:], elems[3:]
        # .../output/queues/queue[name=Q]/state/<leaf>
        if rest[:3] == ["output", "queues", "queue"] and len(rest) >= 5 and rest[3] == "state":
            return OcRecord("queue", intf, rest_elems[2][1].get("name", ""), "/".join(rest[4:]), value)
        # .../switch-priority[priority=P]/state/<leaf>
        if rest[:1] == ["switch-priority"] and len(rest) >= 3 and rest[1] == "state":
            return OcRecord("priority", intf, rest_elems[0][1].get("priority", ""), "/".join(rest[2:]), value)
        # .../input/priority-group[pg-id=G]/state/<leaf>
        if rest[:2] == ["input", "priority-group"] and len(rest) >= 4 and rest[2] == "state":
            return OcRecord("pg", intf, rest_elems[1][1].get("pg-id", ""), "/".join(rest[3:]), value)
        return None
    # /lldp/interfaces/interface[name]/neighbors/neighbor[id]/state/<leaf>
    if len(elems) >= 7 and names[:3] == ["lldp", "interfaces", "interface"] and names[3:6] == [
            "neighbors", "neighbor", "state"]:
        return OcRecord("lldp", elems[2][1].get("name", ""), elems[4][1].get("id", ""), "/".join(names[6:]), value)
    return None


@parser_entry
def oc_records(leaves, *, skipped: list[SkippedLine] | None = None) -> list[OcRecord]:
    """OpenConfig leaves ``(path elements or xpath string, value)`` -> records. A leaf of an unknown
    shape, an interface leaf without its key, or a value that is neither a number nor a text leaf's
    text is skipped and counted."""
    out: list[OcRecord] = []
    for path, value in leaves:
        elems = parse_xpath(path) if isinstance(path, str) else path
        v = scalar(value)
        rec = _record(elems, v) if v is not None else None
        if rec is None or not rec.interface or (isinstance(v, str) and rec.leaf.rsplit("/", 1)[-1]
                                                 not in OC_TEXT_LEAVES):
            shown = path if isinstance(path, str) else "/" + "/".join(
                e[0] + "".join(f"[{k}={x}]" for k, x in e[1].items()) for e in elems)
            note(skipped, SOURCE_OPENCONFIG, 0, f"{shown}={str(value)[:60]}")
            continue
        out.append(rec)
    return out


__all__ = ["SOURCE_SONIC", "SOURCE_OPENCONFIG", "SONIC_TEXT_FIELDS", "SonicBlob", "OcRecord", "parse_sonic_port_aliases",
           "parse_sonic_blob", "parse_sonic_name_map", "split_indexed", "parse_xpath", "oc_records"]


@parser_entry
def parse_sonic_port_aliases(data: bytes | str) -> dict[str, str]:
    """CONFIG_DB ``PORT`` as a gNMI JSON blob (``{"Ethernet0": {"alias": "Ethernet0/1", ...}}``) ->
    vendor alias -> SONiC name. Ports without an alias are left out."""
    text_in = data.decode("utf-8", errors="replace") if isinstance(data, (bytes, bytearray)) else data
    top = load_json(text_in, "gnmi CONFIG_DB PORT")
    if not isinstance(top, dict):
        raise ParseError("gnmi CONFIG_DB PORT: expected a JSON object")
    out = {}
    for name, fields in top.items():
        alias = fields.get("alias") if isinstance(fields, dict) else None
        if isinstance(alias, str) and alias:
            out[alias] = name.split("|", 1)[1] if name.startswith("PORT|") else name
    return out


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse_sonic_blob": ("switch/gnmi/sonic/COUNTERS+Ethernet68+Queues_alias.txt",
                         "switch/gnmi/sonic/COUNTERS+Ethernet68.txt",
                         "switch/gnmi/sonic/PERIODIC_WATERMARKS+Ethernet16+PriorityGroups.txt"),
    "parse_sonic_name_map": ("switch/gnmi/sonic/COUNTERS_PORT_NAME_MAP.txt",),
}
