"""The NIC's use of the mapping engine: the catalog's ``ethtool`` and ``hw_counters`` rows
(catalog/roce_nic.py, catalog/roce.py) run on one NIC's counter table, plans cached per set of names."""

from __future__ import annotations

from itertools import repeat

from ...catalog.roce_nic import ETHTOOL, HW_COUNTERS
from ...mapping import RawTable, Step
from ...samples import LabelSet, Sample

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
        names = tuple(counters)
        compiled = self._compiled.get((names, family))
        if compiled is None:
            compiled = _Compiled(*self.plan(names, family))
            if len(self._compiled) < 4096:
                self._compiled[(names, family)] = compiled
        if unmapped is not None:
            unmapped.extend(compiled.unknown)
        if labels_of is None:
            labels_of = {}
        slots = [base]  # slot 0: no extra labels
        for extra in compiled.extras:
            labels = labels_of.get(extra)
            if labels is None:
                labels = labels_of[extra] = base.merged(dict(extra))
            slots.append(labels)
        # ~700 samples a host poll: built by map() and zip() in C, not a Python loop per sample
        values = list(map(counters.__getitem__, compiled.names))
        for i, scale in compiled.scaled:
            values[i] = values[i] * scale
        labels = repeat(base) if not compiled.extras else map(slots.__getitem__, compiled.slots)
        return list(map(_new, repeat(Sample), zip(compiled.metrics, labels, values)))


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
