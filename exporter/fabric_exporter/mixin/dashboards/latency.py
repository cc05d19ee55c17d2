"""The tail latency dashboard, one builder per row. ``g`` matches the selected group pairs, tool and
message size (the recording rules already carry the exporter's selector); ``gs`` is it with that
selector, for the raw series."""

from __future__ import annotations

from .. import job_views as J
from ..panels import Query as Q
from ..panels import heatmap, query_variable, row, table, timeseries
from ..settings import Settings
from .common import GROUP_PAIR, board, link, rate

SELECTED_PAIRS = ('fabric=~"$fabric",source_group=~"$source_group",destination_group=~"$destination_group",'
                  'tool=~"$tool",message_bytes=~"$message_bytes"')


def latency(s: Settings) -> dict:
    lv = s.sel('fabric=~"$fabric"')
    panels = [*_quantiles(s, SELECTED_PAIRS), *_who_is_slow(s, SELECTED_PAIRS, lv)]
    variables = [
        query_variable("source_group", "Source group",
                       f"label_values(fabric_rdma_latency_seconds_count{lv}, source_group)"),
        query_variable("destination_group", "Destination group",
                       f"label_values(fabric_rdma_latency_seconds_count{lv}, destination_group)"),
        query_variable("tool", "Tool", f"label_values(fabric_rdma_latency_seconds_count{lv}, tool)"),
        query_variable("message_bytes", "Message size",
                       f"label_values(fabric_rdma_latency_seconds_count{lv}, message_bytes)"),
    ]
    return board(s, "latency", "Fabric / Tail latency",
                 "RDMA probe latency: quantiles against their baseline, distribution, group matrix, worst pairs.",
                 panels, variables)


def _quantiles(s: Settings, g: str) -> list:
    """Quantiles per group pair against the baseline the regression alert uses, and their spread."""
    gs = s.sel(g)
    baseline = ("fabric:rdma_latency_seconds:p99_median_7d" if s["latency_baseline"] == "median_7d"
                else "fabric:rdma_latency_seconds:p99_1d_ago")
    return [
        row("Quantiles against baseline"),
        timeseries("p50 / p99 / p99.9 and the p99 baseline", [
            Q(f"fabric:rdma_latency_seconds:p50{{{g}}}", GROUP_PAIR + " p50"),
            Q(f"fabric:rdma_latency_seconds:p99{{{g}}}", GROUP_PAIR + " p99"),
            Q(f"fabric:rdma_latency_seconds:p999{{{g}}}", GROUP_PAIR + " p99.9"),
            Q(f"{baseline}{{{g}}}", GROUP_PAIR + " p99 baseline"),
            Q(f"{s['thresholds.latency_regression_factor']} * {baseline}{{{g}}}",
              GROUP_PAIR + " regression threshold")],
            "s", width=24, height=10, thresholds=[s["thresholds.latency_p99_seconds"]],
            description="Quantiles from the probe histogram per group pair; the baseline is what the regression "
                        "alert compares with."),
        heatmap("Latency distribution", Q(
            f"sum by (le) ({rate('fabric_rdma_latency_seconds_bucket', gs)})"), "s",
            description="All probe exchanges of the selected group pairs, by latency bucket."),
        timeseries("p99 against the same time yesterday", [
            Q(f"fabric:rdma_latency_seconds:p99{{{g}}}", GROUP_PAIR + " now"),
            Q(f"fabric:rdma_latency_seconds:p99_1d_ago{{{g}}}", GROUP_PAIR + " yesterday")],
            "s", description="Day-over-day view of the p99."),
    ]


def _who_is_slow(s: Settings, g: str, lv: str) -> list:
    """The group matrix, the worst group and host pairs, and the probe failures."""
    n = s["top_n"]
    gs = s.sel(g)
    pair_link = link(s, "latency", "var-fabric=${__data.fields.fabric}"
                                   "&var-source_group=${__data.fields.source_group}"
                                   "&var-destination_group=${__data.fields.destination_group}")
    return [
        row("Who is slow"),
        table("p99 by source group (rows) and destination group (columns)", [
            Q(f"fabric:rdma_latency_seconds:p99{{{g}}}")], "s", width=12,
            transformations=[{"id": "groupingToMatrix", "options": {
                "columnField": "destination_group", "rowField": "source_group", "valueField": "Value"}}],
            description="Group-to-group matrix of the p99 now."),
        table(f"Worst {n} group pairs by p99", [
            Q(f"topk({n}, fabric:rdma_latency_seconds:p99{{{g}}})")], "s", width=12,
            link_field="source_group", links=[("Select this pair", pair_link)],
            description="Group pairs with the highest p99 now."),
        table(f"Worst {n} host pairs by last probe p99", [
            Q(f"topk({n}, {J.host_pairs(J.series('fabric_rdma_latency_p99_seconds'), gs)})")], "s", width=12,
            description="From each pair's last probe (per-pair series must be on in the probe config); with a "
                        "job selected, the pairs with one end on its hosts."),
        timeseries("Probe failures", [
            Q(J.hosts(J.series("fabric:rdma_latency_probe_failures:ratio"), lv),
              "{{host}} {{role}}")],
            "percentunit", max_one=True, thresholds=[s["thresholds.probe_loss_ratio"]],
            description="Share of probes with no latency result, per host and role."),
    ]
