"""The lab's ``microburst`` scenario seen by the roce_nic burst sampler, end to end: the lab's GPU hosts
run the real burst probe (streamed over the lab's SSH) on counter files the traffic model rewrites in
place every 50 ms; rack 1's NICs are paused 100 % for 150-400 ms now and then, ~2 % on average.

What the feature is for: the 30 s pause fraction stays low while the sampler's peak is ~1 and its
burst counter climbs, on the bursting rack's hosts only."""

from __future__ import annotations

import re
import time

import pytest

from tests.harness.lab_process import running_lab

BURSTING = ("gpu-001", "gpu-002")  # rack 1 (two hosts per rack)
QUIET = ("gpu-003", "gpu-004")
# the signals a PFC pause burst moves (CNP/ECN/discard windows are not what this scenario drives)
PAUSE_SIGNALS = ("pfc_rx_pause_time", "pfc_rx_pause")

_LINE = re.compile(r'^(\w+)\{([^}]*)\} (\S+)$')


def series(text: str, name: str) -> dict[tuple, float]:
    """{(host, device, signal-or-priority): value} of one metric family."""
    out = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m or m.group(1) != name:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        out[(labels.get("host"), labels.get("device"), labels.get("signal", labels.get("priority")))] = float(m.group(3))
    return out


def sampler_running(lab) -> bool:
    ticks = series(lab.metrics(), "fabric_burst_sampler_ticks_total")
    return len(ticks) == 4 and all(v > 0 for v in ticks.values())


@pytest.mark.slow
def test_microbursts_show_in_the_peak_and_burst_count_not_in_the_rate(tmp_path):
    with running_lab(tmp_path, "--no-ib", "--no-slurm", "--no-prometheus", "--racks", "2", "--hosts-per-rack", "2",
                     "--interval", "2", "--scenario", "microburst", ready=sampler_running, up_within=120) as lab:
        first = lab.metrics()
        t0 = time.monotonic()
        peaks: dict[tuple, float] = {}
        bursts = series(first, "fabric_roce_nic_bursts_total")
        # the peak gauge covers one poll interval (2 s): watch it poll by poll until each bursting
        # port has had a couple of bursts (gaps are 8-20 s), at most 90 s
        while time.monotonic() - t0 < 90:
            time.sleep(1)
            text = lab.metrics()
            for key, v in series(text, "fabric_roce_nic_burst_peak_ratio").items():
                peaks[key] = max(peaks.get(key, 0.0), v)
            bursts = series(text, "fabric_roce_nic_bursts_total")
            if time.monotonic() - t0 >= 30 and all(
                    bursts.get((h, d, "pfc_rx_pause_time"), 0) - series(first, "fabric_roce_nic_bursts_total").get(
                        (h, d, "pfc_rx_pause_time"), 0) >= 2 for h in BURSTING for d in ("mlx5_0", "mlx5_1")):
                break
        last = text
        elapsed = time.monotonic() - t0
        log = lab.log()

    before, after = series(first, "fabric_roce_nic_bursts_total"), series(last, "fabric_roce_nic_bursts_total")
    grew = {k: after[k] - before.get(k, 0) for k in after}
    ports = [(h, d) for h in BURSTING + QUIET for d in ("mlx5_0", "mlx5_1")]
    report = {f"{h}/{d}": (grew.get((h, d, "pfc_rx_pause_time")), round(peaks.get((h, d, "pfc_rx_pause_time"), 0), 3))
              for h, d in ports}
    p0, p1 = (series(t, "fabric_roce_nic_pfc_rx_pause_seconds_total") for t in (first, last))
    print(f"\nover {elapsed:.0f} s, per port: (pfc_rx_pause_time bursts, highest peak ratio, paused fraction):",
          {k: (*v, round((p1[(*k.split('/'), '3')] - p0[(*k.split('/'), '3')]) / elapsed, 4)) for k, v in report.items()},
          "\nother signals' bursts:", {f"{h}/{d}/{sig}": n for (h, d, sig), n in grew.items()
                                      if n and sig not in PAUSE_SIGNALS})
    for h in BURSTING:
        for d in ("mlx5_0", "mlx5_1"):
            assert grew[(h, d, "pfc_rx_pause_time")] >= 1, (report, log[-3000:])
            assert grew[(h, d, "pfc_rx_pause")] >= 1, report
            # a window inside a burst is (nearly) all paused
            assert peaks[(h, d, "pfc_rx_pause_time")] >= 0.8, report
    for h in QUIET:
        for d in ("mlx5_0", "mlx5_1"):
            for signal in PAUSE_SIGNALS:
                assert grew[(h, d, signal)] == 0, (signal, report)
            assert peaks[(h, d, "pfc_rx_pause_time")] < 0.1, report

    # ...while the rate over the same time (what a 30 s dashboard shows) stays low: a few % paused
    for h in BURSTING:
        for d in ("mlx5_0", "mlx5_1"):
            fraction = (p1[(h, d, "3")] - p0[(h, d, "3")]) / elapsed
            assert 0.003 < fraction < 0.10, (h, d, fraction, elapsed)
    for h in QUIET:
        for d in ("mlx5_0", "mlx5_1"):
            assert (p1[(h, d, "3")] - p0[(h, d, "3")]) / elapsed < 0.003  # the healthy 0.2 %
