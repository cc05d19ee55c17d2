"""Tail-latency rules: RDMA latency quantiles, their baselines, regressions and probe loss.

One builder per recording group and per alert name, like ``roce.py``; the example series the promtool
scenarios write are made once in ``LatencySeries``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ...samples import le_labels
from .base import EXAMPLE, LAT_GROUP_PAIR, WARNING, AlertRule, Ctx, Recording, Scenario, _strip, fmt, labels_text, minutes


LAT_BY = "fabric, source_group, destination_group, tool, message_bytes"
QUANTILES = (("p50", 0.5), ("p99", 0.99), ("p999", 0.999))


@dataclass(frozen=True)
class LatencySeries:
    """The example series (text for promtool) and label sets, shared by recordings and alerts: a group
    pair's p99, and one client host's probes and failures."""
    pair: dict
    p99: str
    probe_failures: str
    probes: str
    host_role: dict

    @classmethod
    def of(cls, c: Ctx) -> LatencySeries:
        pair = {k: EXAMPLE[k] for k in LAT_GROUP_PAIR}
        probe_failures, host_role = c.series("fabric_rdma_latency_probe_failures_total", ("fabric", "host"),
                                             host_group="rack-1", role="client", reason="timeout")
        return cls(
            pair=pair, p99=f"fabric:rdma_latency_seconds:p99{labels_text(pair)}", probe_failures=probe_failures,
            probes=c.series("fabric_rdma_latency_probes_total", ("fabric", "host"), host_group="rack-1",
                            role="client")[0],
            host_role=_strip(host_role, "reason"))


def quantile_recordings(c: Ctx, s: LatencySeries) -> list[Recording]:
    """p50, p99 and p99.9 per group pair, tool and message size from the probe histogram."""
    w, sel = c.w, c.sel
    # 100 exchanges/s all within (2 us, 2.5 us]: every quantile interpolates inside that bucket.
    bucket_series = []
    from ...catalog import CATALOG  # local: the catalog is the only source of the bucket bounds
    bounds = CATALOG["fabric_rdma_latency_seconds"].buckets + (math.inf,)
    for le, label in zip(bounds, le_labels(bounds)):
        per_min = 0 if le < 2.5e-06 else 6000
        name, _ = c.series("fabric_rdma_latency_seconds_bucket", LAT_GROUP_PAIR, le=label)
        bucket_series.append((name, f"0+{per_min}x20"))
    return [Recording(
        f"fabric:rdma_latency_seconds:{qname}",
        f"histogram_quantile({q}, sum by (le, {LAT_BY}) (rate(fabric_rdma_latency_seconds_bucket{sel()}[{w}])))",
        tuple(bucket_series), 10, ((s.pair, 2e-06 + (2.5e-06 - 2e-06) * q),)) for qname, q in QUANTILES]


def baseline_recordings(c: Ctx, s: LatencySeries) -> list[Recording]:
    """The p99's baselines the regression alert compares with: its 7-day median and yesterday's."""
    return [
        # A 5m-resolution subquery: the median of ~2000 points per series instead of every 30s sample
        # of a week, evaluated every minute. At 10m the points are 0m, 5m (3 us) and 10m (5 us).
        Recording(
            "fabric:rdma_latency_seconds:p99_median_7d",
            "quantile_over_time(0.5, fabric:rdma_latency_seconds:p99[7d:5m])",
            ((s.p99, "0.000003x9 0.000005x20"),), 10, ((s.pair, 0.000003),)),
        Recording(
            "fabric:rdma_latency_seconds:p99_1d_ago",
            "fabric:rdma_latency_seconds:p99 offset 1d",
            # hourly steps: a day of 1m evaluations would make promtool slow for nothing
            ((s.p99, "0.000004x2 0.000006x30"),), 26, ((s.pair, 0.000004),), test_step=60),
    ]


def probe_failure_ratio(c: Ctx, s: LatencySeries) -> list[Recording]:
    """Failed probes over all probes per host and role (0 for a host whose probes all answer)."""
    w, sel = c.w, c.sel
    s_pt2, host_role2 = c.series("fabric_rdma_latency_probes_total", ("fabric",), host="gpu-02",
                                 host_group="rack-1", role="server")
    return [Recording(
        "fabric:rdma_latency_probe_failures:ratio",
        f"(sum without (reason) (rate(fabric_rdma_latency_probe_failures_total{sel()}[{w}]))"
        f" or 0 * rate(fabric_rdma_latency_probes_total{sel()}[{w}]))"
        f" / rate(fabric_rdma_latency_probes_total{sel()}[{w}])",
        ((s.probe_failures, "0+3x20"), (s.probes, "0+60x20"), (s_pt2, "0+60x20")), 10,
        ((s.host_role, 0.05), (host_role2, 0.0)))]


def p99_high(c: Ctx, s: LatencySeries) -> list[AlertRule]:
    n = "FabricLatencyP99High"
    thr = c.s["thresholds.latency_p99_seconds"]
    high = thr * 2
    return [c.alert(
        n, WARNING, f"fabric:rdma_latency_seconds:p99 > {fmt(thr)}",
        "RDMA tail latency is above its SLO.",
        "fabric {{ $labels.fabric }}: p99 latency of {{ $labels.tool }} ({{ $labels.message_bytes }} B) from "
        "{{ $labels.source_group }} to {{ $labels.destination_group }} is above " + f"{fmt(thr * 1e6)} us over {c.w}, "
        f"for {c.s.for_(n)}.",
        Scenario(((s.p99, f"{fmt(thr / 2)}x9 {fmt(high)}x{minutes(c.s.for_(n)) + 10}"),), 10, s.pair))]


def p99_regression(c: Ctx, s: LatencySeries) -> list[AlertRule]:
    n = "FabricLatencyP99Regression"
    factor = c.s["thresholds.latency_regression_factor"]
    baseline = ("fabric:rdma_latency_seconds:p99_median_7d" if c.s["latency_baseline"] == "median_7d"
                else "fabric:rdma_latency_seconds:p99_1d_ago")
    baseline_text = "its 7-day median" if c.s["latency_baseline"] == "median_7d" else "the same time yesterday"
    base_value, bad = 0.000004, 0.000004 * factor * 2
    if c.s["latency_baseline"] == "median_7d":
        # 2h of normal p99, then a jump: the median stays at the normal value for hours.
        series = ((s.p99, f"{fmt(base_value)}x119 {fmt(bad)}x{minutes(c.s.for_(n)) + 10}"),)
        onset = 120
    else:
        # hourly steps: the p99 is normal for a day, then regresses at hour 25
        series = ((s.p99, f"{fmt(base_value)}x24 {fmt(bad)}x{math.ceil(minutes(c.s.for_(n)) / 60) + 5}"),)
        onset = 25
    return [c.alert(
        n, WARNING, f"fabric:rdma_latency_seconds:p99 > {fmt(factor)} * {baseline}",
        "RDMA tail latency regressed against its own baseline.",
        "fabric {{ $labels.fabric }}: p99 latency of {{ $labels.tool }} ({{ $labels.message_bytes }} B) from "
        "{{ $labels.source_group }} to {{ $labels.destination_group }} is more than " + f"{fmt(factor)}x "
        f"{baseline_text}, for {c.s.for_(n)}.",
        Scenario(series, onset, s.pair, step=1 if c.s["latency_baseline"] == "median_7d" else 60))]


def probe_loss(c: Ctx, s: LatencySeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricLatencyProbeLoss", "probe_loss_ratio", cap=1.0)
    return [r.alert(
        WARNING, f"fabric:rdma_latency_probe_failures:ratio{c.sel()}", "Latency probes are failing.",
        "fabric {{ $labels.fabric }}: more than " + r.percent + " of the latency probes of {{ $labels.host }} "
        "(as {{ $labels.role }}, group {{ $labels.host_group }})" + f" gave no result {r.window}: the host is "
        "unreachable over RDMA, or its probes time out.",
        Scenario(((s.probe_failures, r.counter(600)), (s.probes, f"0+600x{r.length}")), r.onset, s.host_role))]


# In the order the rule groups list them.
RECORDING_BUILDERS: tuple[Callable[[Ctx, LatencySeries], list[Recording]], ...] = (
    quantile_recordings, baseline_recordings, probe_failure_ratio)
ALERT_BUILDERS: tuple[Callable[[Ctx, LatencySeries], list[AlertRule]], ...] = (p99_high, p99_regression, probe_loss)


def latency_rules(c: Ctx) -> tuple[list[Recording], list[AlertRule]]:
    s = LatencySeries.of(c)
    return ([rule for build in RECORDING_BUILDERS for rule in build(c, s)],
            [rule for build in ALERT_BUILDERS for rule in build(c, s)])

