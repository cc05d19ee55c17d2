"""One mapping engine: raw counter names (or SNMP column OIDs) of one source -> catalog metrics.

Every source's raw names are declared once, as ``RawCounter`` rows on the catalog's specs. A
collector asks for the table of its source (``RawTable.for_source("ethtool")``) and matches the
names its tool printed; captures in a row's name (a ``{p}`` priority, a ``{q}`` queue) become labels.
Rows keep catalog order, so within one metric the first declared row is the preferred one (a
collector that sees several names for one metric and label set uses the earliest: ``plan``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .catalog import CATALOG
from .catalog.spec import RawCounter

#: one match: (row order, metric name, the row, captured labels as sorted (name, value) pairs)
Match = tuple[int, str, RawCounter, tuple[tuple[str, str], ...]]
#: one step of a plan: (raw name, metric name, captured labels, scale)
Step = tuple[str, str, tuple[tuple[str, str], ...], float]


def rows_of(*sources: str) -> list[tuple[str, RawCounter]]:
    """(metric name, row) for every catalog row of these sources, in catalog order."""
    return [(spec.name, raw) for spec in CATALOG.values() for raw in spec.raw if raw.source in sources]


class RawTable:
    """The rows of one or more sources, compiled for lookups: exact names by dictionary, names with
    captures by regex, each distinct name matched once per process (names repeat on every poll)."""

    def __init__(self, rows: Iterable[tuple[str, RawCounter]]):
        self.rows: tuple[tuple[str, RawCounter], ...] = tuple(rows)
        self._exact: dict[str, list[tuple[int, str, RawCounter]]] = {}
        self._patterns: list[tuple[int, str, RawCounter, re.Pattern]] = []
        self.by_oid: dict[tuple[int, ...], tuple[str, RawCounter]] = {}
        for order, (metric, row) in enumerate(self.rows):
            if row.is_pattern:
                self._patterns.append((order, metric, row, re.compile(row.regex())))
            else:
                self._exact.setdefault(row.name, []).append((order, metric, row))
            if row.oid is not None:
                self.by_oid[row.oid] = (metric, row)
        self._cache: dict[str, tuple[Match, ...]] = {}
        self._plans: dict[tuple, tuple[tuple[Step, ...], tuple[str, ...]]] = {}

    @classmethod
    def for_source(cls, *sources: str) -> RawTable:
        return cls(rows_of(*sources))

    def matches(self, name: str) -> tuple[Match, ...]:
        """Every row that reads ``name``, in declaration order."""
        found = self._cache.get(name)
        if found is None:
            hits: list[Match] = [(order, metric, row, ()) for order, metric, row in self._exact.get(name, ())]
            for order, metric, row, rx in self._patterns:
                m = rx.fullmatch(name)
                if m:
                    hits.append((order, metric, row, tuple(sorted(m.groupdict().items()))))
            found = tuple(sorted(hits, key=lambda h: h[0]))
            if len(self._cache) < 100_000:  # bounded: names come from the remote side
                self._cache[name] = found
        return found

    def names(self) -> list[str]:
        """Every raw name (patterns as declared), once, in declaration order."""
        return list(dict.fromkeys(row.name for _metric, row in self.rows))

    def plan(self, names: tuple[str, ...], family: str | None = None) -> tuple[tuple[Step, ...], tuple[str, ...]]:
        """For the names one device printed: which name feeds each (metric, captured labels) -- the
        earliest declared row among those the device has, rows of other driver ``families`` left
        out -- in the order the names came, and the names no row reads. Cached per (names,
        family): a device prints the same names on every poll."""
        key = (names, family)
        found = self._plans.get(key)
        if found is not None:
            return found
        chosen: dict[tuple[str, tuple], tuple[int, RawCounter, str]] = {}
        unmapped = []
        for name in names:
            known = False
            for order, metric, row, captures in self.matches(name):
                if row.families is not None and family not in row.families:
                    continue
                known = True
                slot = (metric, captures)
                if slot not in chosen or chosen[slot][0] > order:
                    chosen[slot] = (order, row, name)
            if not known:
                unmapped.append(name)
        steps = tuple((name, metric, captures, row.scale) for (metric, captures), (_, row, name) in chosen.items())
        found = (steps, tuple(unmapped))
        if len(self._plans) < 4096:  # bounded: name sets come from the remote side
            self._plans[key] = found
        return found


# --- SNMP columns and CLI fields: lookups by raw name (snmp_switch, lldp, switch_cli) ---------------

def oid_of(source: str, name: str) -> tuple[int, ...]:
    """The OID of the one catalog row ``name`` of ``source`` (a column a collector walks for itself,
    such as ifName or lldpRemSysName); an error at import when the catalog has not exactly one."""
    oids = {row.oid for _metric, row in rows_of(source) if row.name == name and row.oid is not None}
    if len(oids) != 1:
        raise ValueError(f"catalog: {source} {name}: {len(oids)} rows with an OID, expected one")
    return oids.pop()


def exact_metrics(table: RawTable) -> dict[str, tuple[str, ...]]:
    """Raw name -> the metrics it feeds, for a table whose rows have no captures: a plain dictionary
    for per-poll loops that map every record's counters (switch_cli), as cheap as a hand-written one."""
    if any(row.is_pattern for _metric, row in table.rows):
        raise ValueError("exact_metrics: the table has rows with captures; use RawTable.matches")
    out: dict[str, tuple[str, ...]] = {}
    for metric, row in table.rows:
        out[row.name] = out.get(row.name, ()) + (metric,)
    return out
