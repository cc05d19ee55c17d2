"""snmp_switch's per-row state across polls: a series (one row of one column), a column's last
poll, and the whole-column fast paths that map a column from its last poll without a step per series.

Counter32 columns are extended to 64 bits across polls (``extend32``): a wrap adds 2^32 while the
agent stays up; a decrease that cannot be a wrap is passed through as the reset it is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ...samples import KeptSample, LabelSet, Sample
from ...transport.snmp import COUNTER32, Varbind
from ..snmp_modules import Column

WRAP32 = 1 << 32
NO_WRAP: tuple[int | None, int] = (None, 0)  # a Counter32 series' wrap state before its first value
_new = tuple.__new__  # a NamedTuple built from a tuple without its Python-level __new__ (per series)


def extend32(series, raw: int) -> int:
    """A Counter32 reading extended past 2**32 (``series.wrap`` = last raw value, offset so far): a
    drop of less than half the range is a wrap and keeps counting up; a larger one is a real reset
    (counters cleared) and shows as one. Both mapping paths (series by series, whole column) use it."""
    last_raw, offset = series.wrap
    if last_raw is not None and raw < last_raw:
        offset = offset + WRAP32 if raw + WRAP32 - last_raw < WRAP32 // 2 else 0
    series.wrap = (raw, offset)
    return raw + offset


def add_parts(sums: dict[tuple, list], part_keys: list[tuple[tuple, Any]], part_values: list[float]) -> None:
    """Add a column's parts of summed metrics to ``sums`` ((metric, labels key) -> [sum, parts
    seen, labels]), one for one and in order: every mapping path (a column as it was, moved whole,
    mapped series by series) adds the same way, so a sum's float additions come in one order."""
    for (key, labels), value in zip(part_keys, part_values):
        acc = sums.get(key)
        if acc is None:
            sums[key] = [0.0 + value, 1, labels]
        else:
            acc[0] += value
            acc[1] += 1


def moved_column(state: ColumnState, values: list, scale: float, sums: dict[tuple, list]) -> list[Sample]:
    """A column that maps whole (every varbind one published sample or one part of a sum, last
    poll as now, under the same selection and kinds, no Counter32 to extend): its samples from
    the last poll's, one for one -- the very sample where the raw value stayed, a new one with
    the last one's metric and labels where it moved -- without a step through each series.

    The series' own last raw value and sample are left as they were: without Counter32 state a
    sample is a function of its raw value (and labels, which a new selection resets), so a later
    poll mapped series by series still pairs each kept raw value with the right sample."""
    old = state.values
    if state.part_keys:
        part_values = [v * scale for v in values] if scale != 1.0 else list(map(float, values))
        add_parts(sums, state.part_keys, part_values)
        state.values, state.part_values = values, part_values
        return []
    if scale != 1.0:
        col_samples = [s if v == o else _new(KeptSample, (s[0], s[1], v * scale))
                       for s, v, o in zip(state.samples, values, old)]
    else:
        col_samples = [s if v == o else _new(KeptSample, (s[0], s[1], float(v)))
                       for s, v, o in zip(state.samples, values, old)]
    state.values, state.samples = values, col_samples
    return col_samples

def moved_counter32_column(state: ColumnState, values: list, scale: float) -> list[Sample]:
    """A column that maps whole (as ``_moved_column``), all Counter32, none of it summed: each
    series extended past 2^32 as series by series, without the checks that whole mapping made
    once (published, same interface, not summed). Its series' wrap state, last raw value and
    sample stay theirs, as when mapped series by series."""
    col_samples: list[Sample] = []
    append = col_samples.append
    for series, raw in zip(state.series, values):
        sample = series.sample
        if sample is None or raw != series.raw or series.kind is not COUNTER32:
            value = extend32(series, raw)
            series.raw, series.kind = raw, COUNTER32
            sample = series.sample = _new(KeptSample, (
                series.metric, series.labels, value * scale if scale != 1.0 else float(value)))
        append(sample)
    state.values, state.samples = values, col_samples
    return col_samples


class Mapped(NamedTuple):
    """A walked column of a table this poll: its series and their varbinds, one for one, and the
    column's state kept for the next poll (None: a varbind of it was no row)."""

    col: Column
    series: list[Series]
    vbs: list[Varbind]
    state: ColumnState | None


@dataclass(eq=False, slots=True)
class ColumnState:
    """A column's last poll: its OIDs and their series, and the samples it made from which raw
    values and kinds under which interface selection (``wanted``: the collector's, by identity)."""

    oids: list[tuple[int, ...]]
    series: list[Series]
    ifindexes: frozenset[int]
    indexes: frozenset[tuple[int, ...]]
    values: list | None = None
    kinds: list | None = None
    wanted: dict[int, str] | None = None
    samples: list[Sample] = field(default_factory=list)
    #: (sum key, labels) and value of each part the column added to summed metrics, one for one
    part_keys: list[tuple[tuple, dict[str, str]]] = field(default_factory=list)
    part_values: list[float] = field(default_factory=list)
    #: every varbind made one sample (``samples``) or one part of a sum, in order
    whole: bool = False


@dataclass(eq=False, slots=True)
class Series:
    """One row of one column across polls: its index and static mapping (metric None: a row the
    table's where/split/cast leaves out), the labels it was last published under, the Counter32
    wrap state ((last raw, 2^32 wraps added) while the agent stays up), its last raw value and sample."""

    index: tuple[int, ...]
    ifindex: int
    metric: str | None
    extra: tuple[tuple[str, str], ...]
    ifname: str | None = None
    labels: LabelSet | None = None
    wrap: tuple[int | None, int] = NO_WRAP
    raw: Any = None
    kind: str | None = None
    sample: Sample | None = None
    key: tuple | None = None  # (metric, interface, extra labels): where a summed metric adds it

