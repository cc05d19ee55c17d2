"""gnmi_switch's catalog mapping: a switch's latest values (``decode``'s states) -> samples with the
names and labels of ``snmp_switch`` and ``switch_cli`` for the same meaning."""

from __future__ import annotations

from typing import Any, Callable

from ...parsers import gnmi as p
from ...samples import KeptSample, Sample
from .decode import OcState, SonicState
from .dialects import (OC_INTERFACE_SUMS, OPER_STATUS, PFCWD_STATUS, SONIC_PFC_FIELDS, SONIC_PFCWD_FIELDS,
                       SONIC_PG_FIELDS, SONIC_PORT_FIELDS, SONIC_PORT_SUMS, SONIC_QUEUE_FIELDS, WATERMARK_LEAF,
                       Dialect)

_new = tuple.__new__  # a NamedTuple built from a tuple without its Python-level __new__ (per leaf)


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
    the two agree on every leaf (tests/unit/parsers/test_gnmi.py)."""

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
