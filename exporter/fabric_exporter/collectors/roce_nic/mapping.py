"""The NIC's use of the mapping engine: the catalog's ``ethtool`` and ``hw_counters`` rows
(catalog/roce_nic.py, catalog/roce.py) run on one NIC's counter table, plans cached per set of names."""

from __future__ import annotations

from itertools import repeat
from operator import getitem, itemgetter, ne

from ...catalog.roce_nic import ETHTOOL, HW_COUNTERS
from ...mapping import RawTable, Step
from ...samples import KeptSample, LabelSet, Sample

_new = tuple.__new__  # Sample(...) without the NamedTuple's Python-level __new__ (~700 per host poll)


class CounterMapper:
    """One source's rows (a ``RawTable``) applied to a NIC's counters: ``plan`` says which raw name
    feeds which (metric, captured labels), ``map`` makes the samples. Each distinct raw name is
    matched once per process and each set of names planned once (names repeat on every poll and
    every NIC), so a poll costs dictionary lookups, not regex scans."""

    def __init__(self, table: RawTable):
        self.table = table
        self._compiled: dict[tuple, _Compiled] = {}

    def plan(self, names: tuple[str, ...], family: str | None) -> tuple[tuple[Step, ...], tuple[str, ...]]:
        """(name, metric, extra labels, scale) per mapped slot, and the names no row knows."""
        return self.table.plan(names, family)

    def map(self, counters: dict[str, int], family: str | None, base: LabelSet,
            unmapped: list[str] | None, labels_of: dict[tuple, LabelSet] | None = None) -> list[Sample]:
        """Samples for ``counters``; names no rule knows are appended to ``unmapped`` if given.

        Samples with the same extra labels share one LabelSet (``base`` itself when there are
        none), kept in ``labels_of`` (extra labels -> LabelSet; the port's, when given): the renderer
        formats each one's text once, and nothing can change it under the line it keyed on."""
        compiled = self._compile(counters, family, unmapped)
        values = compiled.values(counters)
        return list(map(_new, repeat(Sample), zip(compiled.metrics, compiled.labels(base, labels_of), values)))

    def map_kept(self, counters: dict[str, int], family: str | None, base: LabelSet, unmapped: list[str] | None,
                 labels_of: dict[tuple, LabelSet], last: Kept | None) -> Kept:
        """``map``'s samples as KeptSamples, and what the next poll of this port's source compares
        with: a counter whose value is that of ``last`` (the port's previous poll of the same
        names) hands out ``last``'s very sample again, whose rendered line the store keeps; a moved
        one is a new KeptSample under the same labels. The samples are the kept state: their values
        are what the next poll compares with (nothing else is held per counter)."""
        compiled = self._compile(counters, family, unmapped)
        values = compiled.values(counters)
        fresh = map(_new, repeat(KeptSample), zip(compiled.metrics, compiled.labels(base, labels_of), values))
        if last is None or last.compiled is not compiled:
            return Kept(compiled, list(fresh))
        moved = list(map(ne, values, map(_VALUE, last.samples)))
        if not any(moved):
            return last
        # per counter, (its last sample, a new one)[moved]: picked in C, no Python code per sample
        return Kept(compiled, list(map(getitem, zip(last.samples, fresh), moved)))

    def _compile(self, counters: dict[str, int], family: str | None, unmapped: list[str] | None) -> _Compiled:
        names = tuple(counters)
        compiled = self._compiled.get((names, family))
        if compiled is None:
            compiled = _Compiled(*self.plan(names, family))
            if len(self._compiled) < 4096:
                self._compiled[(names, family)] = compiled
        if unmapped is not None:
            unmapped.extend(compiled.unknown)
        return compiled


_VALUE = itemgetter(2)


class Kept:
    """One port's samples of one source from its last poll (``CounterMapper.map_kept``), and the
    plan they were made by: the next poll reuses them only under the very same plan (the same
    names in the same order, the same driver family), so a sample never outlives its labels."""

    __slots__ = ("compiled", "samples")

    def __init__(self, compiled: _Compiled, samples: list[Sample]):
        self.compiled = compiled
        self.samples = samples


class _Compiled:
    """``map``'s form of a plan: the steps as columns (raw name, metric, index of the labels in
    ``map``'s slots, which values to scale), the extra label sets in slot order, the unknown names."""

    __slots__ = ("names", "metrics", "slots", "scaled", "extras", "unknown")

    def __init__(self, steps: tuple[Step, ...], unknown: tuple[str, ...]):
        self.extras = tuple(dict.fromkeys(extra for _n, _m, extra, _s in steps if extra))
        slot_of = {extra: i for i, extra in enumerate(self.extras, 1)}
        self.names = tuple(name for name, _m, _e, _s in steps)
        self.metrics = tuple(metric for _n, metric, _e, _s in steps)
        self.slots = tuple(slot_of.get(extra, 0) for _n, _m, extra, _s in steps)
        self.scaled = tuple((i, scale) for i, (_n, _m, _e, scale) in enumerate(steps) if scale != 1.0)
        self.unknown = unknown

    def values(self, counters: dict[str, int]) -> list:
        """The mapped values in step order, scaled (~700 a host poll: read by map() in C)."""
        values = list(map(counters.__getitem__, self.names))
        for i, scale in self.scaled:
            values[i] = values[i] * scale
        return values

    def labels_list(self, base: LabelSet, labels_of: dict[tuple, LabelSet] | None) -> list[LabelSet]:
        """The label sets by slot: ``base`` (slot 0: no extra labels), then each extra's, kept in
        ``labels_of`` (extra labels -> LabelSet) so the renderer formats each one's text once."""
        slots = [base]
        for extra in self.extras:
            labels = labels_of.get(extra) if labels_of is not None else None
            if labels is None:
                labels = base.merged(dict(extra))
                if labels_of is not None:
                    labels_of[extra] = labels
            slots.append(labels)
        return slots

    def labels(self, base: LabelSet, labels_of: dict[tuple, LabelSet] | None):
        """Each step's label set, as an iterator."""
        if not self.extras:
            return repeat(base)
        return map(self.labels_list(base, labels_of).__getitem__, self.slots)


ETHTOOL_MAPPER = CounterMapper(RawTable.for_source(ETHTOOL))
HW_MAPPER = CounterMapper(RawTable.for_source(HW_COUNTERS))


def driver_family(driver: str | None, device: str) -> str | None:
    """mlx5 | bnxt | intel from the PCI driver, else from the RDMA device name the driver chose."""
    probe = driver or device
    for prefix, family in (("mlx5", "mlx5"), ("bnxt", "bnxt"), ("ice", "intel"), ("irdma", "intel"),
                           ("i40", "intel")):
        if probe.startswith(prefix):
            return family
    return None
