"""switch_cli's parsed records to catalog samples: the catalog's rows of each command
(catalog/switch_commands.py) as lookup tables, one function per record type. ``sw`` is the switch's
``SwitchLabels`` (its collector keeps them across polls), ``wanted`` the interface filter."""

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

class SwitchLabels:
    """The LabelSets one switch's rows share, kept across polls by that switch's collector.

    The renderer keys lines on labels objects (a LabelSet cannot change under one), and a poll looks
    a row's labels up rather than building them (a LabelSet costs ~1 us more than a dict; the hot
    loops look up inline). One per switch, so the bound is one switch's rows (64 ports x 16 queues
    is ~1,000 label sets) and a retired switch's go with its collector. Cleared when full: LabelSets
    are interned, so the ones made again are the objects the snapshots hold."""

    __slots__ = ("switch", "_kept")
    MAX = 65536  # label sets kept per label-name tuple

    def __init__(self, switch: str):
        self.switch = switch
        self._kept: dict[tuple[str, ...], dict[tuple[str, ...], LabelSet]] = {}

    def kept(self, names: tuple[str, ...]) -> dict[tuple[str, ...], LabelSet]:
        """values -> LabelSet of the rows labelled ``names`` (they start with "switch")."""
        kept = self._kept.get(names)
        if kept is None:
            kept = self._kept[names] = {}
        return kept

    def of(self, names: tuple[str, ...], values: tuple[str, ...]) -> LabelSet:
        """The LabelSet of ``names`` = ``values`` (values start with this switch's name)."""
        kept = self.kept(names)
        labels = kept.get(values)
        return _made(kept, names, values) if labels is None else labels


def _made(kept: dict[tuple[str, ...], LabelSet], names: tuple[str, ...], values: tuple[str, ...]) -> LabelSet:
    if len(kept) >= SwitchLabels.MAX:
        kept.clear()
    labels = kept[values] = LabelSet(dict(zip(names, values)))
    return labels


_QUEUE = ("switch", "interface", "queue")
_PORT = ("switch", "interface")
_PRIORITY = ("switch", "interface", "priority")


@functools.lru_cache(maxsize=256)  # a switch prints the same columns for every port, poll after poll
def _pfc_plan(direction: int, columns: tuple[str, ...]) -> tuple[tuple[str, str, str, str], ...]:
    """(column, metric, label, priority) for the PFC{p} columns one port printed, by priority."""
    found = [(column, metric, label, priority) for column in columns
             for _order, metric, _row, ((label, priority),) in PFC_METRICS[direction].matches(column)]
    return tuple(sorted(found, key=lambda f: int(f[3])))


def pfc_samples(sw: SwitchLabels, counters: p.PfcCounters, wanted: Wanted) -> list[Sample]:
    out: list[Sample] = []
    kept = sw.kept(_PRIORITY)
    for direction, table in enumerate((counters.rx, counters.tx)):
        for port, columns in table.items():
            if wanted(port):
                for column, metric, label, priority in _pfc_plan(direction, tuple(columns)):
                    values = (sw.switch, port, priority)
                    labels = kept.get(values) if label == "priority" else None  # the rows' capture, always so far
                    if labels is None:
                        labels = sw.of((*_PORT, label), values)
                    out.append(Sample(metric, labels, float(columns[column])))
    return out


Metrics = dict[str, tuple[str, ...]]  # raw name -> metrics (mapping.exact_metrics)


def _mapped(metrics: Metrics, values: dict[str, int], labels: LabelSet) -> list[Sample]:
    """One sample per counter of ``values`` a row of ``metrics`` reads."""
    return [Sample(metric, labels, float(value)) for name, value in values.items() for metric in metrics.get(name, ())]


def queue_samples(metrics: Metrics, sw: SwitchLabels, rows: list[p.QueueCounters], wanted: Wanted) -> list[Sample]:
    out: list[Sample] = []
    append = out.append
    kept = sw.kept(_QUEUE)
    for row in rows:
        if wanted(row.port):
            values = (sw.switch, row.port, row.queue)
            labels = kept.get(values)
            if labels is None:
                labels = _made(kept, _QUEUE, values)
            for name, value in row.values.items():
                for metric in metrics.get(name, ()):
                    append(Sample(metric, labels, float(value)))
    return out


def pfcwd_samples(sw: SwitchLabels, rows: list[p.PfcwdStats], wanted: Wanted) -> list[Sample]:
    out: list[Sample] = []
    kept = sw.kept(_QUEUE)
    for row in rows:
        if not wanted(row.port):
            continue
        # the watchdog guards lossless (unicast) queues: same label as 'show queue counters'
        values = (sw.switch, row.port, f"UC{row.queue}")
        labels = kept.get(values)
        if labels is None:
            labels = _made(kept, _QUEUE, values)
        out += _mapped(PFCWD_METRICS, row.values, labels)
        if row.status is not None:
            out.append(Sample("fabric_roce_switch_pfcwd_storm_active", labels,
                              1.0 if row.status == "stormed" else 0.0))
    return out


def queue_watermark_samples(kind: str, sw: SwitchLabels, rows: list[wm.QueueWatermark], wanted: Wanted) -> list[Sample]:
    # the queue label is the column as printed (UC0, MC8, ALL20): the row's capture only finds the metric
    return [Sample(metric, sw.of((*_QUEUE, "kind"), (sw.switch, r.port, r.queue, kind)), float(r.bytes))
            for r in rows if wanted(r.port) for _o, metric, _row, _c in QUEUE_WATERMARK_METRICS.matches(r.queue)]


def pg_watermark_samples(region: str, sw: SwitchLabels, rows: list[wm.PgWatermark], wanted: Wanted) -> list[Sample]:
    return [Sample(metric, sw.of((*_PORT, "pg", "region"), (sw.switch, r.port, str(r.pg), region)), float(r.bytes))
            for r in rows if wanted(r.port) for _o, metric, _row, _c in PG_WATERMARK_METRICS.matches(r.column)]


def pool_watermark_samples(metric: str, sw: SwitchLabels, rows: list[wm.PoolWatermark], wanted: Wanted) -> list[Sample]:
    # a multi-ASIC switch has one pool of each name per ASIC: the namespace keeps them apart
    return [Sample(metric, sw.of(("switch", "pool"), (sw.switch, f"{r.namespace}/{r.pool}" if r.namespace else r.pool)),
                   float(r.bytes)) for r in rows]


def lldp_samples(sw: SwitchLabels, rows: list[p.LldpNeighbor], wanted: Wanted) -> list[Sample]:
    """The neighbours as the switch names them (the collector maps the hosts by ``neighbor_name``)."""
    return lldp.neighbor_samples(sw.switch, lldp.neighbors_from_cli(rows), wanted, None)


def pfc_history_samples(sw: SwitchLabels, rows: list[p.PfcHistory], wanted: Wanted) -> list[Sample]:
    out = []
    kept = sw.kept(_PRIORITY)
    for r in rows:
        if not wanted(r.port):
            continue
        values = (sw.switch, r.port, str(r.priority))
        labels = kept.get(values)
        if labels is None:
            labels = _made(kept, _PRIORITY, values)
        for metric, row in PFC_HISTORY_METRICS.rows:  # catalog order
            if row.name in r.values:
                out.append(Sample(metric, labels, _scaled(r.values[row.name], row.scale)))
    return out


def cumulus_samples(sw: SwitchLabels, interface: str, c: p.CumulusPortCounters) -> list[Sample]:
    """switchd's counters of one interface: drops, PFC frames per priority, WRED drops per (unicast) queue."""
    base = sw.of(_PORT, (sw.switch, interface))
    found = []
    for name, value in c.raw.items():
        for order, metric, _row, captures in CUMULUS_METRICS.matches(name):
            labels, number = base, -1
            if captures:
                (label, text), = captures
                number = int(text)
                labels = sw.of((*_PORT, label), (sw.switch, interface, f"UC{number}" if label == "queue" else str(number)))
            found.append((order, number, Sample(metric, labels, float(value))))
    found.sort(key=lambda f: f[:2])  # catalog order, then priority/queue number
    return [sample for _order, _number, sample in found]


def nvue_roce_samples(sw: SwitchLabels, interface: str, c: nvue.RoceCounters) -> list[Sample]:
    out = []
    for metric, row in NVUE_ROCE_METRICS.rows:
        if row.name in c.values:
            if "traffic" in CATALOG[metric].label_sets[0]:
                labels = sw.of((*_PORT, "traffic"), (sw.switch, interface, cmd.nvue_traffic(row.name)))
            else:
                labels = sw.of(_PORT, (sw.switch, interface))
            out.append(Sample(metric, labels, float(c.values[row.name])))
    return out


def eos_queue_samples(sw: SwitchLabels, rows: list[eos_cli.QueueCounters], wanted: Wanted) -> list[Sample]:
    return queue_samples(EOS_QUEUE_METRICS, sw, rows, wanted)  # type: ignore[arg-type]  # same fields


def eos_port_samples(metrics: Metrics, sw: SwitchLabels, rows: list[eos_cli.Discards | eos_cli.PfcFrames],
                     wanted: Wanted) -> list[Sample]:
    """One sample per interface and counter of ``metrics`` (the discards and PFC tables)."""
    out: list[Sample] = []
    for row in rows:
        if wanted(row.port):
            out += _mapped(metrics, row.values, sw.of(_PORT, (sw.switch, row.port)))
    return out


def eos_ecn_samples(sw: SwitchLabels, rows: list[eos_cli.EcnMarked], wanted: Wanted) -> list[Sample]:
    return [Sample(EOS_ECN_METRIC, sw.of(_QUEUE, (sw.switch, r.port, r.queue)),
                   float(r.packets)) for r in rows if wanted(r.port)]


