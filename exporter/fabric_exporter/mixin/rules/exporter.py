"""Rules on the exporter's own health: failing, slow or stale polls, config reloads, absence.

One builder per recording and per alert name, like ``roce.py``; the example series the promtool
scenarios write are made once in ``ExporterSeries``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .base import CRITICAL, TARGET, WARNING, AlertRule, Ctx, Recording, Scenario, fmt, pct


# Where an alert's description says the series is, from its labels.
TARGET_WHERE = ("fabric {{ $labels.fabric }}: the {{ $labels.collector }} poll of {{ $labels.host }} "
                "(target group {{ $labels.group }})")


@dataclass(frozen=True)
class ExporterSeries:
    """The example target's series (text for promtool) and labels, shared by recordings and alerts."""
    target: dict
    polls: str
    timeouts: str
    duration: str
    interval: str

    @classmethod
    def of(cls, c: Ctx) -> ExporterSeries:
        polls, target = c.series("fabric_polls_total", TARGET)
        return cls(target=target, polls=polls,
                   timeouts=c.series("fabric_poll_errors_total", TARGET, reason="timeout")[0],
                   duration=c.series("fabric_poll_duration_seconds", TARGET)[0],
                   interval=c.series("fabric_poll_interval_seconds", TARGET)[0])


def poll_failures_ratio(c: Ctx, s: ExporterSeries) -> Recording:
    w, sel = c.w, c.sel
    not_partial = sel('reason!="partial"')
    s_err_p, _ = c.series("fabric_poll_errors_total", TARGET, reason="partial")
    s_polls2, target2 = c.series("fabric_polls_total", TARGET, host="sm-2")
    # A target that never failed has no error series at all: "or 0 * polls" makes its ratio 0, not absent.
    return Recording(
        "fabric:poll_failures:ratio",
        f"(sum without (reason) (rate(fabric_poll_errors_total{not_partial}[{w}]))"
        f" or 0 * rate(fabric_polls_total{sel()}[{w}]))"
        f" / rate(fabric_polls_total{sel()}[{w}])",
        # 60 polls/min, 15 timeouts/min, 30 partial/min (partial data is not a failure): 0.25;
        # a second target that never failed: 0
        ((s.polls, "0+60x20"), (s.timeouts, "0+15x20"), (s_err_p, "0+30x20"), (s_polls2, "0+60x20")), 10,
        ((s.target, 0.25), (target2, 0.0)))


def poll_duration_over_interval(c: Ctx, s: ExporterSeries) -> Recording:
    return Recording(
        "fabric:poll_duration_over_interval:ratio",
        f"avg_over_time(fabric_poll_duration_seconds{c.sel()}[{c.w}]) / fabric_poll_interval_seconds{c.sel()}",
        ((s.duration, "4x20"), (s.interval, "10x20")), 10, ((s.target, 0.4),))


def target_down(c: Ctx, s: ExporterSeries) -> list[AlertRule]:
    n = "FabricTargetDown"
    s_up, labels = c.series("fabric_up", TARGET)
    return [c.alert(
        n, WARNING, f"fabric_up{c.sel()} == 0",
        "A fabric target's polls are failing.",
        TARGET_WHERE + f" has failed or been stale for more than {c.s.for_(n)}; "
        "its fabric metrics are missing. fabric_poll_errors_total{reason} says why.",
        c.step(n, s_up, "1", "0", labels))]


def polls_failing(c: Ctx, s: ExporterSeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricPollsFailing", "poll_error_ratio", cap=1.0)
    return [r.alert(
        WARNING, f"fabric:poll_failures:ratio{c.sel()}", "Many polls of a fabric target fail.",
        TARGET_WHERE + f": more than {r.percent} of polls failed {r.window}; the target publishes partial or "
        "old data.",
        Scenario(((s.polls, f"0+60x{r.length}"), (s.timeouts, r.counter(60))), r.onset, s.target))]


def polls_slow(c: Ctx, s: ExporterSeries) -> list[AlertRule]:
    n = "FabricPollsSlow"
    thr = c.s["thresholds.poll_slow_ratio"]
    not_probes = c.sel('collector!="latency_probe"')
    return [c.alert(
        # latency probe rounds spend their deadline by design (probes carry over); not a symptom there
        n, WARNING, f"fabric:poll_duration_over_interval:ratio{not_probes} > {fmt(thr)}",
        "Polls of a fabric target take nearly their whole interval.",
        TARGET_WHERE + f" takes more than {pct(thr)} of its poll interval on average over {c.w}; "
        "it is about to hit its deadline and time out.",
        # Interval 10 s; the duration jumps from 1 s to 10 s at minute 10: the average over w minutes
        # passes thr once (k+1) of its w+1 samples are slow.
        _slow_scenario(c, n, s.duration, s.interval, s.target, thr))]


def target_stale(c: Ctx, s: ExporterSeries) -> list[AlertRule]:
    n = "FabricTargetStale"
    s_stale, labels = c.series("fabric_target_stale", TARGET)
    return [c.alert(
        n, WARNING, f"fabric_target_stale{c.sel()} == 1",
        "A fabric target's data is stale and withheld.",
        TARGET_WHERE + " has not succeeded within its stale_after; the exporter withholds the target's "
        f"series, so its dashboards are empty (for {c.s.for_(n)}).",
        c.step(n, s_stale, "0", "1", labels))]


def config_reload_failed(c: Ctx, s: ExporterSeries) -> list[AlertRule]:
    n = "FabricExporterConfigReloadFailed"
    s_cfg, labels = c.series("fabric_config_last_reload_successful", ())
    return [c.alert(
        n, WARNING, f"fabric_config_last_reload_successful{c.sel()} == 0",
        "The fabric exporter failed to load its configuration.",
        "The fabric-exporter at {{ $labels.instance }} failed to (re)load its configuration and keeps running "
        "the previous one; its log (and fabric-exporter check-config) says which key is wrong.",
        c.step(n, s_cfg, "1", "0", labels))]


def exporter_absent(c: Ctx, s: ExporterSeries) -> list[AlertRule]:
    n = "FabricExporterAbsent"
    s_build, _ = c.series("fabric_build_info", (), version="0.1.0", python_version="3.11.7")
    absent_labels = {k: v for k, v in c.base.items() if k != "instance" and f'{k}="' in c.s["selector"]}
    return [c.alert(
        n, CRITICAL, f"absent(fabric_build_info{c.sel()})",
        "The fabric exporter has disappeared from Prometheus.",
        f"No fabric-exporter series matching {{{c.s['selector']}}} have been scraped for {c.s.for_(n)}: "
        "fabric congestion, link and latency monitoring is blind.",
        Scenario(((s_build, "1x10 stale"),), 11, absent_labels))]


def event_loop_behind(c: Ctx, s: ExporterSeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricExporterEventLoopBehind", "event_loop_behind_ratio", cap=1.0)
    s_lag, labels = c.series("fabric_event_loop_lag_seconds_sum", ())
    return [r.alert(
        WARNING, f"rate(fabric_event_loop_lag_seconds_sum{c.sel()}[{c.w}])",
        "The fabric exporter's event loop is saturated.",
        "The fabric-exporter at {{ $labels.instance }} woke its event loop's timers late more than "
        f"{r.percent} of the time {r.window}: its polls queue and start missing their deadlines, and "
        "scrapes wait for the loop. Spread its targets over more daemons (--shard) or poll less often.",
        r.per_second(s_lag, labels))]


# In the order the rule groups list them.
RECORDING_BUILDERS: tuple[Callable[[Ctx, ExporterSeries], Recording], ...] = (
    poll_failures_ratio, poll_duration_over_interval)
ALERT_BUILDERS: tuple[Callable[[Ctx, ExporterSeries], list[AlertRule]], ...] = (
    target_down, polls_failing, polls_slow, target_stale, config_reload_failed, exporter_absent, event_loop_behind)


def exporter_rules(c: Ctx) -> tuple[list[Recording], list[AlertRule]]:
    s = ExporterSeries.of(c)
    return [build(c, s) for build in RECORDING_BUILDERS], [rule for build in ALERT_BUILDERS for rule in build(c, s)]


def _slow_scenario(c: Ctx, n: str, s_dur: str, s_int: str, labels: dict, thr: float) -> Scenario:
    w = c.window_steps()
    start = 10
    interval = 10.0
    # A poll as long as its interval (or longer, for thresholds >= 1) against instant polls.
    slow, fast = interval * (1.0 if thr < 1 else thr * 1.5), 0.0
    onset = None
    for k in range(w + 1):
        samples = [slow] * (k + 1) + [fast] * (w - k)  # w+1 samples in a closed window of w minutes
        ratio = sum(samples) / len(samples) / interval
        if abs(ratio - thr) < 1e-9:
            raise ValueError("slow scenario hits the threshold exactly")
        if ratio > thr:
            onset = start + k
            break
    if onset is None:
        raise ValueError("slow scenario never exceeds the threshold")
    length = c.length(n, onset)
    return Scenario(((s_dur, f"{fmt(fast)}x{start - 1} {fmt(slow)}x{length}"), (s_int, f"{fmt(interval)}x{length + start}")),
                    onset, labels)
