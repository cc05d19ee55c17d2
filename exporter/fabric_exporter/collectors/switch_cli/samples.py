"""switch_cli's parsed records to catalog samples (pure): the catalog's rows of each command
(catalog/switch_commands.py) as lookup tables, one function per record type. ``wanted`` is the
interface filter."""

from __future__ import annotations

import functools
from typing import Callable

from ...catalog import CATALOG
from ...catalog import switch_commands as cmd
from ...parsers import eos_cli, nvue
from ...parsers import sonic_cli as p
from ...parsers import sonic_watermark as wm
from ...samples import LabelSet, Sample
from ...mapping import RawTable, exact_metrics
from .. import lldp


# Raw counter -> metric: the catalog's rows of each command (catalog/switch_commands.py), one table per
# record type (a record's counters keep the names the switch printed; text and JSON spellings differ).
QUEUE_METRICS = exact_metrics(RawTable.for_source(cmd.SONIC_QUEUE, cmd.SONIC_QUEUE_JSON))
WRED_METRICS = exact_metrics(RawTable.for_source(cmd.SONIC_WRED, cmd.SONIC_WRED_JSON))
PFCWD_METRICS = exact_metrics(RawTable.for_source(cmd.SONIC_PFCWD))
EOS_QUEUE_METRICS = exact_metrics(RawTable.for_source(cmd.EOS_QUEUE, cmd.EOS_VOQ))
EOS_DISCARD_METRICS = exact_metrics(RawTable.for_source(cmd.EOS_DISCARDS))
# EOS counts PFC frames per interface, every priority together: the same meaning as IEEE8021-PFC-MIB's
EOS_PFC_METRICS = exact_metrics(RawTable.for_source(cmd.EOS_PFC))
CUMULUS_METRICS = RawTable.for_source(cmd.CUMULUS_ETHTOOL)  # with captures: HwIfInPfc{p}Pkt, HwIfOutQ{q}WredDrops
NVUE_ROCE_METRICS = RawTable.for_source(cmd.NVUE_ROCE)
# PFC{p} columns of the Port Rx and Port Tx tables (pfc_samples' direction 0 and 1)
PFC_METRICS = (RawTable.for_source(cmd.SONIC_PFC_RX), RawTable.for_source(cmd.SONIC_PFC_TX))
PFC_HISTORY_METRICS = RawTable.for_source(cmd.SONIC_PFC_HISTORY)
QUEUE_WATERMARK_METRICS = RawTable.for_source(cmd.SONIC_QUEUE_WATERMARK)  # UC{w}, MC{w}, ALL{w} columns
PG_WATERMARK_METRICS = RawTable.for_source(cmd.SONIC_PG_WATERMARK)  # PG{g} columns


def _one_metric(source: str) -> str:
    """The metric the rows of ``source`` feed, for a command whose records hold one value each (a
    pool's Bytes, an EOS tx-queue's ECN count); an error at import when the rows feed none or several."""
    metrics = {metric for metric, _row in RawTable.for_source(source).rows}
    if len(metrics) != 1:
        raise ValueError(f"catalog: {source}: rows feed {sorted(metrics)}, expected one metric")
    return metrics.pop()


EOS_ECN_METRIC = _one_metric(cmd.EOS_ECN)


def _scaled(value: int, scale: float) -> float:
    """``value`` in the metric's unit: a scale below 1 divides by its reciprocal (1e-6: / 1e6), the
    float a division gives, as the published values always were."""
    if scale == 1:
        return float(value)
    return value / (1 / scale) if scale < 1 else value * scale


# -- parsed records -> samples (pure; ``wanted`` is the interface filter) ------------------------------

Wanted = Callable[[str], bool]

# (switch, label names) -> (their values -> the LabelSet a row's samples share), kept across polls:
# the renderer keys lines on labels objects (a LabelSet cannot change under one), and a poll looks a
# row's labels up rather than building them (a LabelSet costs ~1 us more than a dict; the hot loops
# look up inline). Kept per switch so that the bound is one switch's rows (64 ports x 16 queues is
# ~1,000 label sets), not the whole fleet's: a fleet-wide bound that 800 switches' queues pass
# would be cleared, and every label set built again, on every poll cycle. Cleared when full:
# LabelSets are interned, so the ones made again are the objects the snapshots hold.
_ROW_LABELS: dict[tuple[str, tuple[str, ...]], dict[tuple[str, ...], LabelSet]] = {}
_ROW_LABELS_MAX = 65536  # label sets kept per (switch, label names)
_KEPT_MAX = 65536  # (switch, label names) kept: switches retired by a reload go when it is full


def _kept_labels(switch: str, names: tuple[str, ...]) -> dict[tuple[str, ...], LabelSet]:
    key = (switch, names)
    kept = _ROW_LABELS.get(key)
    if kept is None:
        if len(_ROW_LABELS) >= _KEPT_MAX:
            _ROW_LABELS.clear()
        kept = _ROW_LABELS[key] = {}
    return kept


def _made(kept: dict[tuple[str, ...], LabelSet], names: tuple[str, ...], values: tuple[str, ...]) -> LabelSet:
    if len(kept) >= _ROW_LABELS_MAX:
        kept.clear()
    labels = kept[values] = LabelSet(dict(zip(names, values)))
    return labels


def _row_labels(names: tuple[str, ...], values: tuple[str, ...]) -> LabelSet:
    """The LabelSet of ``names`` = ``values`` (names start with "switch", values with its name)."""
    kept = _kept_labels(values[0], names)
    labels = kept.get(values)
    return _made(kept, names, values) if labels is None else labels


_QUEUE = ("switch", "interface", "queue")
_PORT = ("switch", "interface")
_PRIORITY = ("switch", "interface", "priority")


@functools.lru_cache(maxsize=256)  # a switch prints the same columns for every port, poll after poll
def _pfc_plan(direction: int, columns: tuple[str, ...]) -> tuple[tuple[str, str, str, str], ...]:
    """(column, metric, label, priority) for the PFC{p} columns one port printed, by priority."""
    found = [(column, metric, label, priority) for column in columns
             for _order, metric, _row, ((label, priority),) in PFC_METRICS[direction].matches(column)]
    return tuple(sorted(found, key=lambda f: int(f[3])))


def pfc_samples(switch: str, counters: p.PfcCounters, wanted: Wanted) -> list[Sample]:
    out: list[Sample] = []
    kept = _kept_labels(switch, _PRIORITY)
    for direction, table in enumerate((counters.rx, counters.tx)):
        for port, columns in table.items():
            if wanted(port):
                for column, metric, label, priority in _pfc_plan(direction, tuple(columns)):
                    values = (switch, port, priority)
                    labels = kept.get(values) if label == "priority" else None  # the rows' capture, always so far
                    if labels is None:
                        labels = _row_labels((*_PORT, label), values)
                    out.append(Sample(metric, labels, float(columns[column])))
    return out


Metrics = dict[str, tuple[str, ...]]  # raw name -> metrics (mapping.exact_metrics)


def _mapped(metrics: Metrics, values: dict[str, int], labels: LabelSet) -> list[Sample]:
    """One sample per counter of ``values`` a row of ``metrics`` reads."""
    return [Sample(metric, labels, float(value)) for name, value in values.items() for metric in metrics.get(name, ())]


def queue_samples(metrics: Metrics, switch: str, rows: list[p.QueueCounters], wanted: Wanted) -> list[Sample]:
    out: list[Sample] = []
    append = out.append
    kept = _kept_labels(switch, _QUEUE)
    for row in rows:
        if wanted(row.port):
            values = (switch, row.port, row.queue)
            labels = kept.get(values)
            if labels is None:
                labels = _made(kept, _QUEUE, values)
            for name, value in row.values.items():
                for metric in metrics.get(name, ()):
                    append(Sample(metric, labels, float(value)))
    return out


def pfcwd_samples(switch: str, rows: list[p.PfcwdStats], wanted: Wanted) -> list[Sample]:
    out: list[Sample] = []
    kept = _kept_labels(switch, _QUEUE)
    for row in rows:
        if not wanted(row.port):
            continue
        # the watchdog guards lossless (unicast) queues: same label as 'show queue counters'
        values = (switch, row.port, f"UC{row.queue}")
        labels = kept.get(values)
        if labels is None:
            labels = _made(kept, _QUEUE, values)
        out += _mapped(PFCWD_METRICS, row.values, labels)
        if row.status is not None:
            out.append(Sample("fabric_roce_switch_pfcwd_storm_active", labels,
                              1.0 if row.status == "stormed" else 0.0))
    return out


def queue_watermark_samples(kind: str, switch: str, rows: list[wm.QueueWatermark], wanted: Wanted) -> list[Sample]:
    # the queue label is the column as printed (UC0, MC8, ALL20): the row's capture only finds the metric
    return [Sample(metric, _row_labels((*_QUEUE, "kind"), (switch, r.port, r.queue, kind)), float(r.bytes))
            for r in rows if wanted(r.port) for _o, metric, _row, _c in QUEUE_WATERMARK_METRICS.matches(r.queue)]


def pg_watermark_samples(region: str, switch: str, rows: list[wm.PgWatermark], wanted: Wanted) -> list[Sample]:
    return [Sample(metric, _row_labels((*_PORT, "pg", "region"), (switch, r.port, str(r.pg), region)), float(r.bytes))
            for r in rows if wanted(r.port) for _o, metric, _row, _c in PG_WATERMARK_METRICS.matches(r.column)]


def pool_watermark_samples(metric: str, switch: str, rows: list[wm.PoolWatermark], wanted: Wanted) -> list[Sample]:
    # a multi-ASIC switch has one pool of each name per ASIC: the namespace keeps them apart
    return [Sample(metric, _row_labels(("switch", "pool"), (switch, f"{r.namespace}/{r.pool}" if r.namespace else r.pool)),
                   float(r.bytes)) for r in rows]


def lldp_samples(switch: str, rows: list[p.LldpNeighbor], wanted: Wanted) -> list[Sample]:
    """The neighbours as the switch names them (the collector maps the hosts by ``neighbor_name``)."""
    return lldp.neighbor_samples(switch, lldp.neighbors_from_cli(rows), wanted, None)


def pfc_history_samples(switch: str, rows: list[p.PfcHistory], wanted: Wanted) -> list[Sample]:
    out = []
    kept = _kept_labels(switch, _PRIORITY)
    for r in rows:
        if not wanted(r.port):
            continue
        values = (switch, r.port, str(r.priority))
        labels = kept.get(values)
        if labels is None:
            labels = _made(kept, _PRIORITY, values)
        for metric, row in PFC_HISTORY_METRICS.rows:  # catalog order
            if row.name in r.values:
                out.append(Sample(metric, labels, _scaled(r.values[row.name], row.scale)))
    return out


def cumulus_samples(switch: str, interface: str, c: p.CumulusPortCounters) -> list[Sample]:
    """switchd's counters of one interface: drops, PFC frames per priority, WRED drops per (unicast) queue."""
    base = _row_labels(_PORT, (switch, interface))
    found = []
    for name, value in c.raw.items():
        for order, metric, _row, captures in CUMULUS_METRICS.matches(name):
            labels, number = base, -1
            if captures:
                (label, text), = captures
                number = int(text)
                labels = _row_labels((*_PORT, label), (switch, interface, f"UC{number}" if label == "queue" else str(number)))
            found.append((order, number, Sample(metric, labels, float(value))))
    found.sort(key=lambda f: f[:2])  # catalog order, then priority/queue number
    return [sample for _order, _number, sample in found]


def nvue_roce_samples(switch: str, interface: str, c: nvue.RoceCounters) -> list[Sample]:
    out = []
    for metric, row in NVUE_ROCE_METRICS.rows:
        if row.name in c.values:
            if "traffic" in CATALOG[metric].label_sets[0]:
                labels = _row_labels((*_PORT, "traffic"), (switch, interface, cmd.nvue_traffic(row.name)))
            else:
                labels = _row_labels(_PORT, (switch, interface))
            out.append(Sample(metric, labels, float(c.values[row.name])))
    return out


def eos_queue_samples(switch: str, rows: list[eos_cli.QueueCounters], wanted: Wanted) -> list[Sample]:
    return queue_samples(EOS_QUEUE_METRICS, switch, rows, wanted)  # type: ignore[arg-type]  # same fields


def eos_port_samples(metrics: Metrics, switch: str, rows: list[eos_cli.Discards | eos_cli.PfcFrames],
                     wanted: Wanted) -> list[Sample]:
    """One sample per interface and counter of ``metrics`` (the discards and PFC tables)."""
    out: list[Sample] = []
    for row in rows:
        if wanted(row.port):
            out += _mapped(metrics, row.values, _row_labels(_PORT, (switch, row.port)))
    return out


def eos_ecn_samples(switch: str, rows: list[eos_cli.EcnMarked], wanted: Wanted) -> list[Sample]:
    return [Sample(EOS_ECN_METRIC, _row_labels(_QUEUE, (switch, r.port, r.queue)),
                   float(r.packets)) for r in rows if wanted(r.port)]


