"""The NIC's use of the mapping engine: the catalog's ``ethtool`` and ``hw_counters`` rows
(catalog/roce_nic.py, catalog/roce.py) run on one NIC's counter table, plans cached per set of names."""

from __future__ import annotations

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
        # map()'s form of a plan: steps with the index of their labels dict, the extra label sets
        self._compiled: dict[tuple, tuple[tuple, tuple, tuple[str, ...]]] = {}

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
            steps, unknown = self.plan(names, family)
            extras = tuple(dict.fromkeys(extra for _n, _m, extra, _s in steps if extra))
            slot_of = {extra: i for i, extra in enumerate(extras, 1)}
            compiled = (tuple((name, metric, slot_of.get(extra, 0), scale) for name, metric, extra, scale in steps),
                        extras, unknown)
            if len(self._compiled) < 4096:
                self._compiled[(names, family)] = compiled
        steps, extras, unknown = compiled
        if unmapped is not None:
            unmapped.extend(unknown)
        if labels_of is None:
            labels_of = {}
        slots = [base]  # slot 0: no extra labels
        for extra in extras:
            labels = labels_of.get(extra)
            if labels is None:
                labels = labels_of[extra] = base.merged(dict(extra))
            slots.append(labels)
        value = counters.__getitem__
        return [_new(Sample, (metric, slots[slot], value(name) if scale == 1.0 else value(name) * scale))
                for name, metric, slot, scale in steps]


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
