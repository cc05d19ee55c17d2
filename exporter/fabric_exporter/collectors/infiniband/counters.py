"""The raw counter -> metric tables, built from the catalog (catalog/infiniband.py declares each
pairing once, in ``MetricSpec.raw``), and the latch rules that use their widths."""

from __future__ import annotations

from ...catalog import infiniband as ib_catalog
from ...catalog.spec import MetricSpec, RawCounter
from ...parsers import ib_queryerrors


def _raw_counters(source: str) -> dict[str, tuple[MetricSpec, RawCounter]]:
    return {raw.name: (spec, raw) for spec in ib_catalog.METRICS for raw in spec.raw if raw.source == source}


# Raw name (as the tools print it) -> (metric, width in bits of its PortCounters field).
DATA_COUNTERS = {name: (spec.name, raw.width) for name, (spec, raw) in _raw_counters(ib_catalog.COUNTER_SWEEP).items()}
# Error counters (IBA 1.3 PortCounters widths; they latch at all-ones) and PortXmitWait.
ERROR_COUNTERS = {name: (spec.name, raw.width) for name, (spec, raw) in _raw_counters(ib_catalog.ERROR_SWEEP).items()}
QP1_DROPPED = next((spec.name, raw.width) for spec, raw in _raw_counters(ib_catalog.PERFQUERY).values())
# PortCounters CounterSelect bits (perfquery -R reset mask); PortXmitWait is bit 16 (CounterSelect2).
RESET_BITS = {raw.name: raw.reset_bit for spec in ib_catalog.METRICS for raw in spec.raw
              if raw.reset_bit is not None and raw.source in (ib_catalog.COUNTER_SWEEP, ib_catalog.ERROR_SWEEP)}
# Per-sample lookups, prepared once: raw name -> (metric, multiplier); error counters in catalog order.
DATA_METRICS = {name: (spec.name, raw.scale) for name, (spec, raw) in _raw_counters(ib_catalog.COUNTER_SWEEP).items()}
ERROR_METRICS = tuple((raw, metric) for raw, (metric, _w) in ERROR_COUNTERS.items())
ERROR_NAMES = frozenset(ERROR_COUNTERS)
# The counters only PortCountersExtended has (64 bits wide): a port printing one has extended counters.
EXTENDED_ONLY = tuple(name for name, (_metric, width) in DATA_COUNTERS.items() if width == 64)
_EXTENDED_MARK = EXTENDED_ONLY[0]  # one of them, for the per-port fast path (the sweep prints all or none)
_ALL_ONES_32 = (1 << 32) - 1


def data_counters_64bit(entry: ib_queryerrors.PortCounters) -> bool:
    """--counters prints 8 fields from PortCountersExtended (IETF counters), else 4 fields: 32-bit
    PortCounters, or the 64-bit "NOIETF" extended set, told apart only by a value above 32 bits.
    (A 64-bit counter sitting exactly at 2^32-1 is then taken as latched: unlikely and harmless.)"""
    counters = entry.counters
    if any(name in counters for name in EXTENDED_ONLY):
        return True
    return any(v > _ALL_ONES_32 for v in counters.values())


def error_counters(counters: dict[str, int]) -> dict[str, int]:
    """The error-sweep counters the catalog maps (the sweep may print others)."""
    return {k: v for k, v in counters.items() if k in ERROR_NAMES}


def latched_counters(data: ib_queryerrors.PortCounters, errors: dict[str, int] | None,
                     errors_extended: frozenset[str],
                     qp1_dropped: int | None) -> list[str]:
    """Counters of a port read from fixed-width PortCounters fields sitting at all-ones."""
    out = []
    if not data_counters_64bit(data):
        out += [name for name, value in data.counters.items() if name in DATA_COUNTERS and value == _ALL_ONES_32]
    for name, value in (errors or {}).items():
        width = ERROR_COUNTERS[name][1]
        if name not in errors_extended and value == (1 << width) - 1:
            out.append(name)
    if qp1_dropped == (1 << QP1_DROPPED[1]) - 1:
        out.append(ib_catalog.QP1_DROPPED.name)
    return out


def latched_ports(ports: dict) -> dict:
    """{port key: its latched counters} for the ports of a sweep (SweptPort by key) that have one:
    few, most polls none. A port with 64-bit data counters (the 8-field set), no non-zero error
    counter and no QP1Dropped read has none: that check is made without a call."""
    out = {}
    for key, p in ports.items():
        if not p.errors and p.qp1_dropped is None and _EXTENDED_MARK in p.entry.counters:
            continue
        names = latched_counters(p.entry, p.errors, p.errors_extended, p.qp1_dropped)
        if names:
            out[key] = names
    return out


def reset_mask(names: list[str]) -> int:
    """The perfquery -R CounterSelect mask that resets these counters (0: none of them can be)."""
    mask = 0
    for name in names:
        if name in RESET_BITS:
            mask |= 1 << RESET_BITS[name]
    return mask
