"""snmp_switch's row mapping (series kept across polls, columns and samples handed out again while
nothing moved) against the reference mapping that maps every varbind afresh every poll
(snmp_mapping_reference.py): over random sequences of polls of every module's tables -- values
that move, stay, wrap past 2^32 or reset, rows that come and go, interfaces renamed or filtered,
kinds that change, varbinds of a wrong width or type, failed walks, agent restarts -- both publish
the same samples, in the same order, and report the same problems and ifIndexes."""

from __future__ import annotations

import contextlib
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric_exporter.collectors import PollContext
from fabric_exporter.collectors.snmp_modules import MODULES
from fabric_exporter.collectors.snmp_switch import SnmpSwitchCollector
from fabric_exporter.collectors.snmp_switch import rows as snmp_rows
from fabric_exporter.config.loader import parse_config
from fabric_exporter.errors import PollError
from fabric_exporter.samples import LabelSet
from fabric_exporter.transport.snmp import COUNTER32, COUNTER64, GAUGE, INTEGER, STRING, Varbind

from tests.harness import snmp_mapping_reference as ref

COMPONENT_VALUES = {"ifindex": (1, 2, 3, 4), "priority": (0, 3, 7), "queue": (0, 1, 2), "cast": (0, 1, 3),
                    "direction": (1, 2), "stat": (1, 2, 5, 9)}


def collector(tmp_path) -> SnmpSwitchCollector:
    from fabric_exporter.collectors import registry
    from fabric_exporter.transport.factory import Transports

    cfg = parse_config({"credentials": {"c": {"type": "snmp", "version": "2c", "community": "x"}},
                        "targets": [{"name": "g", "fabric": "f", "collector": "snmp_switch", "transport": "snmp",
                                     "credentials": "c", "hosts": [{"name": "sw1", "address": "127.0.0.1"}],
                                     "options": {"modules": list(MODULES)}}]},
                       base_dir=tmp_path, options_parsers=registry())
    group = cfg.targets[0]
    return SnmpSwitchCollector(PollContext(group, group.hosts[0], Transports()))


def rows_of(table) -> list[tuple[int, ...]]:
    rows = [()]
    for component in table.index:
        rows = [r + (v,) for r in rows for v in COMPONENT_VALUES[component]]
    return rows


def next_value(rng: random.Random, last: int | None) -> int:
    roll = rng.random()
    if last is not None and roll < 0.5:
        return last  # did not move
    if last is not None and roll < 0.7:
        return last + rng.randint(1, 1000)
    if roll < 0.8:
        return (1 << 32) - rng.randint(1, 50)  # about to wrap
    if last is not None and roll < 0.9:
        return rng.randint(0, 50)  # wrapped past 2^32, or cleared
    return rng.randint(0, 1 << 40)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_kept_series_publish_what_the_reference_mapping_does(tmp_path, seed):
    rng = random.Random(seed)
    c = collector(tmp_path)
    wraps: dict = {}
    names = {i: f"Ethernet{i}" for i in COMPONENT_VALUES["ifindex"]}
    last: dict[tuple[int, ...], list[Varbind]] = {}
    for _poll in range(rng.randint(2, 6)):
        if rng.random() < 0.15:  # the agent restarted
            wraps.clear()
            c.rows.forget_counters()
        if rng.random() < 0.3:
            names[rng.choice(list(names))] = f"Ethernet{rng.randint(1, 9)}"
        wanted = {i: n for i, n in names.items() if rng.random() < 0.85}
        by_column: dict = {}
        for table in c.tables:
            rows = rows_of(table)
            for col in table.columns:
                prev = last.get(col.oid)
                if prev is not None and rng.random() < 0.5:  # the very same walk as last time
                    by_column[col.oid] = prev if rng.random() < 0.5 else [Varbind(tuple(vb.oid), vb.kind, vb.value)
                                                                           for vb in prev]
                    continue
                if rng.random() < 0.05:
                    by_column[col.oid] = PollError("walk failed", reason="partial")
                    continue
                old = {vb.oid: vb for vb in prev or []}
                kept_rows = rows if rng.random() < 0.7 else sorted(rng.sample(rows, rng.randint(0, len(rows))))
                vbs = []
                for index in kept_rows:
                    oid = col.oid + index
                    was = old.get(oid)
                    kind = was.kind if was is not None and rng.random() < 0.9 else rng.choice(
                        (COUNTER32, COUNTER32, COUNTER64, GAUGE, INTEGER))
                    vbs.append(Varbind(oid, kind, next_value(rng, was.value if was and isinstance(was.value, int)
                                                             else None)))
                if rng.random() < 0.1:
                    vbs.append(Varbind(col.oid + (9,) * (len(table.index) + 1), COUNTER32, 5))  # wrong width
                if vbs and rng.random() < 0.1:
                    vbs[0] = Varbind(vbs[0].oid, STRING, b"text")  # wrong type
                by_column[col.oid] = vbs
        last = {oid: r for oid, r in by_column.items() if isinstance(r, list)}

        check_poll(c, wraps, by_column, wanted)


def check_poll(c: SnmpSwitchCollector, wraps: dict, by_column: dict, wanted: dict[int, str]) -> list:
    """One poll's tables through the collector and through the reference; they must agree."""
    seen: set[int] = set()
    mapped = [c.rows.map_table(table, by_column, seen) for table in c.tables]
    samples, problems = [], []
    failed = c.rows.tables_samples(mapped, by_column, dict(wanted), "sw1", samples, problems)

    ref_problems: list[str] = []
    ref_samples = []
    ref_failed = 0
    for table in c.tables:
        failure = next((by_column[col.oid] for col in table.columns
                        if isinstance(by_column[col.oid], BaseException)), None)
        if failure is not None:
            ref_failed += 1
            ref_problems.append(f"table {table.name} not published: {failure}")
            continue
        ref_samples += ref.table_samples(wraps, table, by_column, wanted, "sw1", ref_problems)
    assert seen == ref.ifindexes_in(c.tables, by_column)
    assert failed == ref_failed
    assert problems == ref_problems
    assert [tuple(s) for s in samples] == [tuple(s) for s in ref_samples]
    # the renderer keys lines on labels objects: each one immutable and interned, never a plain dict
    assert all(type(s.labels) is LabelSet for s in samples)
    return samples


def test_a_kind_change_with_the_same_raw_value_is_mapped_again(tmp_path):
    """A Counter32 that wrapped (offset 2^32), then the same raw value as a Counter64: no offset."""
    c = collector(tmp_path)
    wraps: dict = {}
    wanted = {i: f"Ethernet{i}" for i in COMPONENT_VALUES["ifindex"]}

    def walk(kind, value):
        return {col.oid: [Varbind(col.oid + r, kind, value) for r in rows_of(table)]
                for table in c.tables for col in table.columns}

    check_poll(c, wraps, walk(COUNTER32, (1 << 32) - 5), wanted)
    wrapped = check_poll(c, wraps, walk(COUNTER32, 7), wanted)
    assert ("fabric_roce_rx_discards_total", {"switch": "sw1", "interface": "Ethernet1"}, (1 << 32) + 7.0) \
        in [tuple(s) for s in wrapped]
    as_64 = check_poll(c, wraps, walk(COUNTER64, 7), wanted)
    assert ("fabric_roce_rx_discards_total", {"switch": "sw1", "interface": "Ethernet1"}, 7.0) \
        in [tuple(s) for s in as_64]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_busy_columns_mapped_whole_publish_what_the_reference_does(tmp_path, seed):
    """A busy switch: every row there poll after poll, each column of one kind, most values moving.
    Columns then map whole from their last poll (``moved_column``, ``moved_counter32_column``: both
    must run, or this test proves nothing) -- also across an agent restart, a rename, an interface filtered out and back, a
    column turning Counter32 (extended, so mapped series by series) and back, a column unchanged."""
    rng = random.Random(seed)
    c = collector(tmp_path)
    moved_calls = {"moved_column": 0, "moved_counter32_column": 0}

    def counting(name):
        function = getattr(snmp_rows, name)

        def count(*args):
            moved_calls[name] += 1
            return function(*args)
        return count

    with contextlib.ExitStack() as restore:
        for name in moved_calls:
            restore.callback(setattr, snmp_rows, name, getattr(snmp_rows, name))
            setattr(snmp_rows, name, counting(name))
        busy_polls(c, rng, moved_calls)


def busy_polls(c: SnmpSwitchCollector, rng: random.Random, moved_calls: dict[str, int]) -> None:
    wraps: dict = {}
    names = {i: f"Ethernet{i}" for i in COMPONENT_VALUES["ifindex"]}
    kinds = {col.oid: rng.choice((COUNTER64, COUNTER64, GAUGE, INTEGER, COUNTER32))
             for table in c.tables for col in table.columns}
    kinds[c.tables[0].columns[0].oid] = COUNTER64
    plain = next(col for table in c.tables for col in table.columns  # neither summed nor split
                 if col.split is None and col.metric not in table.summed and table.cast is None and not table.where
                 and col is not c.tables[0].columns[0])
    kinds[plain.oid] = COUNTER32
    values: dict[tuple[int, ...], int] = {}
    polls = rng.randint(3, 7)
    for poll in range(polls):
        # two plain polls first and two last: the second of each pair maps whole, whatever came between
        plain_poll = poll < 2 or poll >= polls - 2
        event = 1.0 if plain_poll else rng.random()
        if event < 0.1:
            wraps.clear()
            c.rows.forget_counters()
        elif event < 0.2:
            names[rng.choice(list(names))] = f"Ethernet{rng.randint(1, 9)}"
        elif event < 0.3:
            oid = rng.choice([oid for oid in kinds if oid != plain.oid])  # plain stays Counter32
            kinds[oid] = COUNTER32 if kinds[oid] != COUNTER32 else COUNTER64
        wanted = dict(names) if plain_poll or rng.random() < 0.85 else {i: n for i, n in names.items() if i != 1}
        by_column: dict = {}
        for table in c.tables:
            for col in table.columns:
                vbs = []
                still = rng.random() < 0.1 and not (poll == polls - 1 and col is plain)  # all values stayed
                for row, index in enumerate(rows_of(table)):
                    oid = col.oid + index
                    if oid not in values or (not still and rng.random() < 0.9):
                        values[oid] = next_value(rng, values.get(oid))
                    if row == 0 and poll == polls - 1 and col is plain:
                        # a row of plain moves in the last poll (next_value may keep every row as it
                        # was: 1 seed in ~80): its whole Counter32 path runs in every example
                        values[oid] = (values[oid] + 1) % (1 << 32)
                    vbs.append(Varbind(oid, kinds[col.oid], values[oid]))
                by_column[col.oid] = vbs
        check_poll(c, wraps, by_column, wanted)
    assert moved_calls["moved_column"] > 0 and moved_calls["moved_counter32_column"] > 0, moved_calls
