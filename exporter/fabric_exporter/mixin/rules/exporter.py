"""Rules on the exporter's own health: failing, slow or stale polls, config reloads, absence."""

from __future__ import annotations

from .base import CRITICAL, TARGET, WARNING, AlertRule, Ctx, Recording, Scenario, fmt, pct


# Where an alert's description says the series is, from its labels.
TARGET_WHERE = ("fabric {{ $labels.fabric }}: the {{ $labels.collector }} poll of {{ $labels.host }} "
                "(target group {{ $labels.group }})")


def exporter_rules(c: Ctx) -> tuple[list[Recording], list[AlertRule]]:
    w, sel = c.w, c.sel
    rec = []
    not_partial = sel('reason!="partial"')
    not_probes = sel('collector!="latency_probe"')
    s_polls, target = c.series("fabric_polls_total", TARGET)
    s_err_t, _ = c.series("fabric_poll_errors_total", TARGET, reason="timeout")
    s_err_p, _ = c.series("fabric_poll_errors_total", TARGET, reason="partial")
    s_polls2, target2 = c.series("fabric_polls_total", TARGET, host="sm-2")
    # A target that never failed has no error series at all: "or 0 * polls" makes its ratio 0, not absent.
    rec.append(Recording(
        "fabric:poll_failures:ratio",
        f"(sum without (reason) (rate(fabric_poll_errors_total{not_partial}[{w}]))"
        f" or 0 * rate(fabric_polls_total{sel()}[{w}]))"
        f" / rate(fabric_polls_total{sel()}[{w}])",
        # 60 polls/min, 15 timeouts/min, 30 partial/min (partial data is not a failure): 0.25;
        # a second target that never failed: 0
        ((s_polls, "0+60x20"), (s_err_t, "0+15x20"), (s_err_p, "0+30x20"), (s_polls2, "0+60x20")), 10,
        ((target, 0.25), (target2, 0.0))))
    s_dur, _ = c.series("fabric_poll_duration_seconds", TARGET)
    s_int, _ = c.series("fabric_poll_interval_seconds", TARGET)
    rec.append(Recording(
        "fabric:poll_duration_over_interval:ratio",
        f"avg_over_time(fabric_poll_duration_seconds{sel()}[{w}]) / fabric_poll_interval_seconds{sel()}",
        ((s_dur, "4x20"), (s_int, "10x20")), 10, ((target, 0.4),)))

    alerts = []
    n = "FabricTargetDown"
    s_up, labels = c.series("fabric_up", TARGET)
    alerts.append(c.alert(
        n, WARNING, f"fabric_up{sel()} == 0",
        "A fabric target's polls are failing.",
        TARGET_WHERE + f" has failed or been stale for more than {c.s.for_(n)}; "
        "its fabric metrics are missing. fabric_poll_errors_total{reason} says why.",
        c.step(n, s_up, "1", "0", labels)))

    r = c.ramp_alert("FabricPollsFailing", "poll_error_ratio", cap=1.0)
    alerts.append(r.alert(
        WARNING, f"fabric:poll_failures:ratio{sel()}", "Many polls of a fabric target fail.",
        TARGET_WHERE + f": more than {r.percent} of polls failed {r.window}; the target publishes partial or "
        "old data.",
        Scenario(((s_polls, f"0+60x{r.length}"), (s_err_t, r.counter(60))), r.onset, target)))

    n = "FabricPollsSlow"
    thr = c.s["thresholds.poll_slow_ratio"]
    alerts.append(c.alert(
        # latency probe rounds spend their deadline by design (probes carry over); not a symptom there
        n, WARNING, f"fabric:poll_duration_over_interval:ratio{not_probes} > {fmt(thr)}",
        "Polls of a fabric target take nearly their whole interval.",
        TARGET_WHERE + f" takes more than {pct(thr)} of its poll interval on average over {w}; "
        "it is about to hit its deadline and time out.",
        # Interval 10 s; the duration jumps from 1 s to 10 s at minute 10: the average over w minutes
        # passes thr once (k+1) of its w+1 samples are slow.
        _slow_scenario(c, n, s_dur, s_int, target, thr)))

    n = "FabricTargetStale"
    s_stale, labels = c.series("fabric_target_stale", TARGET)
    alerts.append(c.alert(
        n, WARNING, f"fabric_target_stale{sel()} == 1",
        "A fabric target's data is stale and withheld.",
        TARGET_WHERE + " has not succeeded within its stale_after; the exporter withholds the target's "
        f"series, so its dashboards are empty (for {c.s.for_(n)}).",
        c.step(n, s_stale, "0", "1", labels)))

    n = "FabricExporterConfigReloadFailed"
    s_cfg, labels = c.series("fabric_config_last_reload_successful", ())
    alerts.append(c.alert(
        n, WARNING, f"fabric_config_last_reload_successful{sel()} == 0",
        "The fabric exporter failed to load its configuration.",
        "The fabric-exporter at {{ $labels.instance }} failed to (re)load its configuration and keeps running "
        "the previous one; its log (and fabric-exporter check-config) says which key is wrong.",
        c.step(n, s_cfg, "1", "0", labels)))

    n = "FabricExporterAbsent"
    s_build, _ = c.series("fabric_build_info", (), version="0.1.0", python_version="3.11.7")
    absent_labels = {k: v for k, v in c.base.items() if k != "instance" and f'{k}="' in c.s["selector"]}
    alerts.append(c.alert(
        n, CRITICAL, f"absent(fabric_build_info{sel()})",
        "The fabric exporter has disappeared from Prometheus.",
        f"No fabric-exporter series matching {{{c.s['selector']}}} have been scraped for {c.s.for_(n)}: "
        "fabric congestion, link and latency monitoring is blind.",
        Scenario(((s_build, "1x10 stale"),), 11, absent_labels)))
    return rec, alerts


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
