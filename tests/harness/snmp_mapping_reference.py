"""snmp_switch's row mapping as it was before it kept series across polls (collectors/snmp_switch.py
up to the commit "snmp_switch: rows mapped through series kept across polls"): every varbind
mapped afresh, every poll. Kept verbatim as the reference the collector's mapping must agree with
(test_snmp_mapping.py); the only change is that its Counter32 state is a dict handed in."""

from __future__ import annotations

from typing import Any

from fabric_exporter.collectors.snmp_modules import Column, Table
from fabric_exporter.samples import Sample
from fabric_exporter.transport.snmp import COUNTER32, Varbind

WRAP32 = 1 << 32


def ifindexes_in(tables: list[Table], by_column: dict[tuple[int, ...], Any]) -> set[int]:
    seen: set[int] = set()
    for table in tables:
        pos = table.index.index("ifindex")
        for col in table.columns:
            vbs = by_column.get(col.oid)
            if isinstance(vbs, list):
                n = len(col.oid)
                seen.update(vb.oid[n + pos] for vb in vbs if len(vb.oid) == n + len(table.index))
    return seen


def value_of(wraps: dict, col: Column, vb: Varbind, index: tuple[int, ...]) -> float:
    value = vb.value
    if vb.kind == COUNTER32:
        key = (col.oid, index)
        prev = wraps.get(key)
        offset = 0
        if prev is not None:
            last_raw, offset = prev
            if value < last_raw:
                if value + WRAP32 - last_raw < WRAP32 // 2:
                    offset += WRAP32  # a wrap: keep counting up
                else:
                    offset = 0  # a real reset (counters cleared): let it show as one
        wraps[key] = (value, offset)
        value += offset
    return value * col.scale if col.scale != 1.0 else float(value)


def table_samples(wraps: dict, table: Table, results: dict[tuple[int, ...], list[Varbind]],
                  wanted: dict[int, str], switch: str, problems: list[str]) -> list[Sample]:
    width = len(table.index)
    pos = {name: i for i, name in enumerate(table.index)}
    rows_by_column: dict[tuple[int, ...], dict[tuple[int, ...], Varbind]] = {}
    bad_index = 0
    for col in table.columns:
        n = len(col.oid)
        rows = {}
        for vb in results[col.oid]:
            index = vb.oid[n:]
            if len(index) != width or not isinstance(vb.value, int):
                bad_index += 1
                continue
            rows[index] = vb
        rows_by_column[col.oid] = rows
    if bad_index:
        problems.append(f"table {table.name}: {bad_index} varbinds with an unexpected index or type skipped")
    all_rows = set().union(*(r.keys() for r in rows_by_column.values())) if rows_by_column else set()
    if len(table.columns) > 1:
        short = [(c.object, len(rows_by_column[c.oid])) for c in table.columns
                 if len(rows_by_column[c.oid]) != len(all_rows)]
        if short:
            problems.append(f"table {table.name} incomplete: {len(all_rows)} rows, but "
                            + ", ".join(f"{name} has {n}" for name, n in short))

    samples: list[Sample] = []
    sums: dict[tuple[str, tuple[tuple[str, str], ...]], list[float]] = {}
    parts_per_metric: dict[str, int] = {}
    for col in table.columns:
        if col.metric:
            parts_per_metric[col.metric] = parts_per_metric.get(col.metric, 0) + 1
    for col in table.columns:
        for index, vb in rows_by_column[col.oid].items():
            if any(index[pos[k]] != v for k, v in table.where.items()):
                continue
            ifname = wanted.get(index[pos["ifindex"]])
            if ifname is None:
                continue
            metric, cast = col.metric, None
            if col.split is not None:
                component, choices = col.split
                choice = choices.get(index[pos[component]])
                if choice is None:
                    continue
                metric, cast = choice
            if table.cast is not None:
                cast = table.cast[1].get(index[pos[table.cast[0]]])
                if cast is None:
                    continue
            labels = {"switch": switch, "interface": ifname}
            if "priority" in pos:
                labels["priority"] = str(index[pos["priority"]])
            if "queue" in pos:
                labels["queue"] = f"{cast or 'Q'}{index[pos['queue']] - table.queue_base}"
            value = value_of(wraps, col, vb, index)
            assert metric is not None
            if parts_per_metric.get(metric, 1) > 1:
                key = (metric, tuple(labels.items()))
                acc = sums.setdefault(key, [0.0, 0])
                acc[0] += value
                acc[1] += 1
            else:
                samples.append(Sample(metric, labels, value))
    for (metric, label_items), (total, seen) in sums.items():
        if seen == parts_per_metric[metric]:
            samples.append(Sample(metric, dict(label_items), total))
    return samples
