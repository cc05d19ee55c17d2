"""gnmi_switch's catalog mapping: a switch's latest values (``decode``'s states) -> samples with the
names and labels of ``snmp_switch`` and ``switch_cli`` for the same meaning."""

from __future__ import annotations

from typing import Any, Callable

from ...parsers import gnmi as p
from ...samples import KeptSample, LabelSet, Sample
from .decode import OcState, SonicState
from .dialects import DIALECTS, DIRECT, ENUM, SUM, Dialect

_new = tuple.__new__  # a NamedTuple built from a tuple without its Python-level __new__ (per leaf)
SONIC_TABLES = DIALECTS["sonic"].tables
# table word -> its compiled rows, unpacked once per entry in the loop below
_SONIC_LOOPS = {word: (t.direct, t.scaled, t.sums, t.enums) for word, t in SONIC_TABLES.items()}
# table word -> each group's extra labels as a dict; None when the table has only the entry's own labels
_SONIC_EXTRAS = {word: None if t.extras in ((), ((),)) else tuple(dict(e) for e in t.extras)
                 for word, t in SONIC_TABLES.items()}


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
        # ``cached``: this entry's labels for each group of its table's values (ContainerTable.extras)
        direct, scaled, sums, enums = _SONIC_LOOPS[entry[0]]
        for field, metric, group in direct:
            v = nums.get(field)
            if v is not None:
                append(_new(Sample, (metric, cached[group], float(v))))
        for field, metric, scale, group in scaled:
            v = nums.get(field)
            if v is not None:
                append(_new(Sample, (metric, cached[group], float(v) * scale)))
        for metric, parts, group in sums:
            if all(f in nums for f in parts):
                append(_new(Sample, (metric, cached[group], float(sum(nums[f] for f in parts)))))
        for field, metric, enum, group in enums:
            status = enum.get(text.get(field, ""))
            if status is not None:
                append(Sample(metric, cached[group], status))
    return out


def _sonic_labels(state: SonicState, entry: tuple[str, str], switch: str, wanted: Callable[[str], bool]) -> Any:
    """The labels of one COUNTERS_DB entry's samples, one dict per group of its table (the entry's
    keys plus the group's extra labels), worked out once per entry (False: not published, a port left
    out by the interface filters; None: a key without its index)."""
    word, key = entry
    if word == "ports":
        port = state.port(key)
        if not wanted(port):
            return False
        labels = {"switch": switch, "interface": port}
    else:
        split = p.split_indexed(key)
        if split is None:
            state.unknown_keys += 1
            return None
        port, index = state.port(split[0]), split[1]
        if not wanted(port):
            return False
        if word == "queues":
            labels = {"switch": switch, "interface": port, "queue": state.queue_label(port, index)}
        elif word == "pfcwd":
            labels = {"switch": switch, "interface": port, "queue": f"UC{index}"}
        elif word == "pg_watermarks":
            labels = {"switch": switch, "interface": port, "pg": str(index)}
        else:
            return False
    extras = _SONIC_EXTRAS[word]
    return (labels,) if extras is None else tuple([{**labels, **extra} if extra else labels for extra in extras])


def _queue_label(name: str) -> str:
    return f"UC{name}" if name.isdigit() else name


def _oc_labels(kind: str, switch: str, intf: str, index: str, extra: tuple) -> LabelSet:
    """A leaf's labels: its record's keys (by kind) and its row's extra labels (kept by OcEmit
    across polls: immutable)."""
    labels = {"switch": switch, "interface": intf}
    if kind == "queue":
        labels["queue"] = _queue_label(index)
    elif kind == "priority":
        labels["priority"] = index
    elif kind == "pg":
        labels["pg"] = index
    labels.update(extra)
    return LabelSet(labels)


def oc_samples(dialect: Dialect, leaves: list[p.OcRecord], switch: str, wanted: Callable[[str], bool]) -> list[Sample]:
    """The reference mapping of OpenConfig records (``OcEmit`` is the compiled one the collector uses)."""
    out: list[Sample] = []
    append = out.append
    # (kind, interface, index, group) -> [labels, the group's sums, the parts' values]
    sums: dict[tuple, list] = {}
    labels_of: dict[tuple, LabelSet] = {}  # one per series identity (formatted once)
    passes: dict[str, bool] = {}
    tables = dialect.tables
    for kind, intf, index, leaf, value in leaves:
        ok = passes.get(intf)
        if ok is None:
            ok = passes[intf] = wanted(intf)
        if not ok:
            continue
        table = tables.get(kind)
        use = table.by_name.get(leaf) if table is not None else None
        if use is None:
            continue
        how, metric, extra, arg, group = use
        labels = labels_of.get((kind, intf, index, extra))
        if labels is None:
            labels = labels_of[(kind, intf, index, extra)] = _oc_labels(kind, switch, intf, index, extra)
        if how == ENUM:
            code = arg.get(str(value))
            if code is not None:
                append(Sample(metric, labels, float(code)))
        elif value.__class__ is str:
            continue
        elif how == DIRECT:
            append(_new(Sample, (metric, labels, float(value) * arg)))
        else:
            slot = sums.get((kind, intf, index, group))
            if slot is None:
                slot = sums[(kind, intf, index, group)] = [labels, table.sums_of(group), {}]
            slot[2][leaf] = float(value)
    for labels, group_sums, values in sums.values():
        for metric, parts in group_sums:
            if all(x in values for x in parts):
                append(Sample(metric, labels, sum(values[x] for x in parts)))
    return out



class OcEmit:
    """One switch's OpenConfig catalog mapping, compiled per leaf shape: what ``oc_samples`` works
    out for every record every poll (the leaf's metric, scale and labels; the interface filters),
    worked out once per shape (``compile``, handed to OcShapes). ``samples`` then turns a state's
    values into samples, and hands out the very same KeptSample again while a value has not moved,
    so that the store renders only the lines that changed. ``oc_samples`` stays the reference:
    the two agree on every leaf (tests/unit/parsers/test_gnmi.py)."""

    def __init__(self, dialect: Dialect, switch: str, wanted: Callable[[str], bool]) -> None:
        self.dialect, self.switch, self.wanted = dialect, switch, wanted
        self._labels: dict[tuple, LabelSet] = {}  # one per series identity

    def compile(self, fields: tuple) -> list | None:
        """A mutable emit spec for one leaf shape: [DIRECT, metric, labels, scale, last value, its
        sample], [ENUM, metric, labels, enumeration, last value, its sample], [SUM, series identity,
        leaf, labels, the group's sums]; None: unpublished."""
        kind, intf, index, leaf = fields
        if not self.wanted(intf):
            return None
        table = self.dialect.tables.get(kind)
        use = table.by_name.get(leaf) if table is not None else None
        if use is None:
            return None
        how, metric, extra, arg, group = use
        ident = (kind, intf, index, extra)
        labels = self._labels.get(ident)
        if labels is None:
            labels = self._labels[ident] = _oc_labels(kind, self.switch, intf, index, extra)
        if how == ENUM:
            return [ENUM, metric, labels, arg, None, None]
        if how == DIRECT:
            return [DIRECT, metric, labels, arg, None, None]
        return [SUM, (kind, intf, index, group), leaf, labels, table.sums_of(group)]

    def samples(self, state: OcState) -> list[Sample]:
        out: list[Sample] = []
        append = out.append
        by_slot = state.shapes.by_slot
        sums: dict[tuple, list] = {}
        for slot, v in state.values.items():
            shape = by_slot.get(slot)
            e = shape[4] if shape is not None else None
            if e is None:
                continue
            how = e[0]
            if how == DIRECT:
                if v.__class__ is str:
                    continue
                if v != e[4] or e[5] is None:
                    e[4] = v
                    e[5] = _new(KeptSample, (e[1], e[2], float(v) * e[3]))
                append(e[5])
            elif how == ENUM:
                if v != e[4] or e[5] is None:
                    code = e[3].get(str(v))
                    e[4] = v
                    e[5] = None if code is None else _new(KeptSample, (e[1], e[2], float(code)))
                    if e[5] is None:
                        continue
                append(e[5])
            elif v.__class__ is not str:
                got = sums.get(e[1])
                if got is None:
                    got = sums[e[1]] = [e[3], e[4], {}]
                got[2][e[2]] = float(v)
        for labels, group_sums, values in sums.values():
            for metric, parts in group_sums:
                if all(x in values for x in parts):
                    append(Sample(metric, labels, sum(values[x] for x in parts)))
        return out
