"""Tail-latency rules: RDMA latency quantiles, their baselines, regressions and probe loss."""

from __future__ import annotations

import math

from .base import EXAMPLE, LAT_GROUP_PAIR, WARNING, AlertRule, Ctx, Recording, Scenario, _strip, fmt, labels_text, minutes


LAT_BY = "fabric, source_group, destination_group, tool, message_bytes"
QUANTILES = (("p50", 0.5), ("p99", 0.99), ("p999", 0.999))


def latency_rules(c: Ctx) -> tuple[list[Recording], list[AlertRule]]:
    w, sel = c.w, c.sel
    rec = []
    grp = {k: EXAMPLE[k] for k in LAT_GROUP_PAIR}
    # 100 exchanges/s all within (2 us, 2.5 us]: every quantile interpolates inside that bucket.
    bucket_series = []
    from ...catalog import CATALOG  # local: the catalog is the only source of the bucket bounds
    for le in CATALOG["fabric_rdma_latency_seconds"].buckets + (math.inf,):
        per_min = 0 if le < 2.5e-06 else 6000
        name, _ = c.series("fabric_rdma_latency_seconds_bucket", LAT_GROUP_PAIR, le=_le(le))
        bucket_series.append((name, f"0+{per_min}x20"))
    for qname, q in QUANTILES:
        rec.append(Recording(
            f"fabric:rdma_latency_seconds:{qname}",
            f"histogram_quantile({q}, sum by (le, {LAT_BY}) (rate(fabric_rdma_latency_seconds_bucket{sel()}[{w}])))",
            tuple(bucket_series), 10, ((grp, 2e-06 + (2.5e-06 - 2e-06) * q),)))
    s_p99 = f"fabric:rdma_latency_seconds:p99{labels_text(grp)}"
    # A 5m-resolution subquery: the median of ~2000 points per series instead of every 30s sample
    # of a week, evaluated every minute. At 10m the points are 0m, 5m (3 us) and 10m (5 us).
    rec.append(Recording(
        "fabric:rdma_latency_seconds:p99_median_7d",
        "quantile_over_time(0.5, fabric:rdma_latency_seconds:p99[7d:5m])",
        ((s_p99, "0.000003x9 0.000005x20"),), 10, ((grp, 0.000003),)))
    rec.append(Recording(
        "fabric:rdma_latency_seconds:p99_1d_ago",
        "fabric:rdma_latency_seconds:p99 offset 1d",
        # hourly steps: a day of 1m evaluations would make promtool slow for nothing
        ((s_p99, "0.000004x2 0.000006x30"),), 26, ((grp, 0.000004),), test_step=60))
    s_pf, host_role = c.series("fabric_rdma_latency_probe_failures_total", ("fabric", "host"),
                               host_group="rack-1", role="client", reason="timeout")
    s_pt, _ = c.series("fabric_rdma_latency_probes_total", ("fabric", "host"), host_group="rack-1", role="client")
    host_role = _strip(host_role, "reason")
    s_pt2, host_role2 = c.series("fabric_rdma_latency_probes_total", ("fabric",), host="gpu-02",
                                 host_group="rack-1", role="server")
    rec.append(Recording(
        "fabric:rdma_latency_probe_failures:ratio",
        f"(sum without (reason) (rate(fabric_rdma_latency_probe_failures_total{sel()}[{w}]))"
        f" or 0 * rate(fabric_rdma_latency_probes_total{sel()}[{w}]))"
        f" / rate(fabric_rdma_latency_probes_total{sel()}[{w}])",
        ((s_pf, "0+3x20"), (s_pt, "0+60x20"), (s_pt2, "0+60x20")), 10, ((host_role, 0.05), (host_role2, 0.0))))

    alerts = []
    n = "FabricLatencyP99High"
    thr = c.s["thresholds.latency_p99_seconds"]
    high = thr * 2
    alerts.append(c.alert(
        n, WARNING, f"fabric:rdma_latency_seconds:p99 > {fmt(thr)}",
        "RDMA tail latency is above its SLO.",
        "fabric {{ $labels.fabric }}: p99 latency of {{ $labels.tool }} ({{ $labels.message_bytes }} B) from "
        "{{ $labels.source_group }} to {{ $labels.destination_group }} is above " + f"{fmt(thr * 1e6)} us over {w}, "
        f"for {c.s.for_(n)}.",
        Scenario(((s_p99, f"{fmt(thr / 2)}x9 {fmt(high)}x{minutes(c.s.for_(n)) + 10}"),), 10, grp)))

    n = "FabricLatencyP99Regression"
    factor = c.s["thresholds.latency_regression_factor"]
    baseline = ("fabric:rdma_latency_seconds:p99_median_7d" if c.s["latency_baseline"] == "median_7d"
                else "fabric:rdma_latency_seconds:p99_1d_ago")
    baseline_text = "its 7-day median" if c.s["latency_baseline"] == "median_7d" else "the same time yesterday"
    base_value, bad = 0.000004, 0.000004 * factor * 2
    if c.s["latency_baseline"] == "median_7d":
        # 2h of normal p99, then a jump: the median stays at the normal value for hours.
        series = ((s_p99, f"{fmt(base_value)}x119 {fmt(bad)}x{minutes(c.s.for_(n)) + 10}"),)
        onset = 120
    else:
        # hourly steps: the p99 is normal for a day, then regresses at hour 25
        series = ((s_p99, f"{fmt(base_value)}x24 {fmt(bad)}x{math.ceil(minutes(c.s.for_(n)) / 60) + 5}"),)
        onset = 25
    alerts.append(c.alert(
        n, WARNING, f"fabric:rdma_latency_seconds:p99 > {fmt(factor)} * {baseline}",
        "RDMA tail latency regressed against its own baseline.",
        "fabric {{ $labels.fabric }}: p99 latency of {{ $labels.tool }} ({{ $labels.message_bytes }} B) from "
        "{{ $labels.source_group }} to {{ $labels.destination_group }} is more than " + f"{fmt(factor)}x "
        f"{baseline_text}, for {c.s.for_(n)}.",
        Scenario(series, onset, grp, step=1 if c.s["latency_baseline"] == "median_7d" else 60)))

    r = c.ramp_alert("FabricLatencyProbeLoss", "probe_loss_ratio", cap=1.0)
    alerts.append(r.alert(
        WARNING, f"fabric:rdma_latency_probe_failures:ratio{sel()}", "Latency probes are failing.",
        "fabric {{ $labels.fabric }}: more than " + r.percent + " of the latency probes of {{ $labels.host }} "
        "(as {{ $labels.role }}, group {{ $labels.host_group }})" + f" gave no result {r.window}: the host is "
        "unreachable over RDMA, or its probes time out.",
        Scenario(((s_pf, r.counter(600)), (s_pt, f"0+600x{r.length}")), r.onset, host_role)))
    return rec, alerts


def _le(value: float) -> str:
    return "+Inf" if math.isinf(value) else repr(value)
