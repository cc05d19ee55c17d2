"""The exporter health dashboard: is every target polled on time?"""

from __future__ import annotations

from ..panels import Query as Q
from ..panels import query_variable, row, stat, table, timeseries
from ..settings import Settings
from .common import TARGET, board, rate


def exporter(s: Settings) -> dict:
    t = s.sel('fabric=~"$fabric",group=~"$group",collector=~"$collector"')
    panels = [
        row("Targets"),
        stat("Targets up", [Q(f"sum(fabric_up{t})")], "short", width=6),
        stat("Targets down", [Q(f"count(fabric_up{t} == 0) or vector(0)")], "short", width=6, thresholds=[1]),
        stat("Targets stale", [Q(f"sum(fabric_target_stale{t})")], "short", width=6, thresholds=[1]),
        stat("Config reload OK", [Q(f"min(fabric_config_last_reload_successful{s.sel()})")], "bool", width=6),
        table("Target status", [Q(f"fabric_up{t}")], "short", width=24,
              description="1 = last poll succeeded and fresh."),
        row("Polls"),
        timeseries("Poll duration over interval", [
            Q(f"fabric:poll_duration_over_interval:ratio{t}", TARGET)],
            "percentunit", thresholds=[s["thresholds.poll_slow_ratio"]],
            description="Average poll time as a share of the poll interval; near 100% times out."),
        timeseries("Poll duration", [Q(f"fabric_poll_duration_seconds{t}", TARGET)], "s"),
        timeseries("Poll errors by reason", [
            Q(f"sum by (group, reason) ({rate('fabric_poll_errors_total', t)})", "{{group}} {{reason}}")],
            "ops", description="Failed (and partial) polls per second by reason."),
        timeseries("Failed poll share", [Q(f"fabric:poll_failures:ratio{t}", TARGET)],
                   "percentunit", max_one=True, thresholds=[s["thresholds.poll_error_ratio"]]),
        timeseries("Age of last successful poll", [
            Q(f"time() - fabric_last_success_timestamp_seconds{t}", TARGET)], "s"),
        timeseries("Backoff", [Q(f"fabric_poll_backoff_seconds{t}", TARGET)], "s",
                   description="Extra delay after consecutive failures (0 when healthy)."),
        timeseries("Samples per target", [Q(f"fabric_samples{t}", TARGET)], "short"),
        timeseries("Skipped unknown lines", [
            Q(f"sum by (collector, source) ({rate('fabric_parse_skipped_lines_total', t)})",
              "{{collector}} {{source}}")], "ops",
            description="Lines of tool output a parser did not know and skipped (values on them are not "
                        "published): a tool, firmware or driver printing something new. The exporter's debug "
                        "log shows each distinct line once."),
        timeseries("Event loop behind", [
            Q(rate("fabric_event_loop_lag_seconds_sum", s.sel()), "{{instance}}")],
            "percentunit", max_one=True, thresholds=[s["thresholds.event_loop_behind_ratio"]],
            description="Share of time the daemon's event loop woke its timers late: near 100% its polls "
                        "queue and miss deadlines (split it with --shard, docs/sizing.md)."),
        timeseries("Event loop lag p99", [
            Q(f"histogram_quantile(0.99, sum by (instance, le) "
              f"({rate('fabric_event_loop_lag_seconds_bucket', s.sel())}))", "{{instance}}")], "s",
            description="How long the loop was held, at the 99th percentile of its 0.1 s probes: a scrape or "
                        "an SNMP answer arriving then waits as long."),
        timeseries("Targets by collector", [Q(f"fabric_targets{s.sel()}", "{{collector}}")], "short"),
        table("Build", [Q(f"fabric_build_info{s.sel()}")], "short", width=24),
    ]
    f = s.sel('fabric=~"$fabric"')
    variables = [
        query_variable("group", "Target group", f"label_values(fabric_up{f}, group)"),
        query_variable("collector", "Collector", f"label_values(fabric_up{f}, collector)"),
    ]
    return board(s, "exporter", "Fabric / Exporter health",
                 "Is fabric-exporter polling every target on time? Status, durations, errors, staleness.",
                 panels, variables)
