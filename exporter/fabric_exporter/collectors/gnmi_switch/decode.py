"""gnmi_switch's decoding: SubscribeResponse notifications -> a switch's latest values (pure: no
I/O). SONiC's JSON blobs of COUNTERS_DB entries (``SonicState``); OpenConfig typed leaves, each
path's shape worked out once (``OcShapes``) and its latest value kept under a small slot
(``OcState``). What the values become is ``emit``'s part."""

from __future__ import annotations

import json
from typing import Any, Callable

from ...parsers import gnmi as p
from .dialects import QUEUE_CAST


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


def _key(elems) -> tuple:
    return tuple((name, tuple(sorted(keys.items()))) for name, keys in elems)


def _flatten(elems, value: dict):
    for k, v in value.items():
        name = k.split(":", 1)[-1]  # JSON_IETF module prefixes
        if isinstance(v, dict):
            yield from _flatten(elems + ((name, {}),), v)
        else:
            yield elems + ((name, {}),), v
