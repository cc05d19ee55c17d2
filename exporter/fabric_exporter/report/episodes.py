"""Congestion episodes and recovery times from sampled series, and counters counted exactly.

Pure functions over ``[(timestamp, value), ...]`` lists as Prometheus's ``query_range`` returns them
(one sample per step where the series existed; missing steps are gaps). The definitions, with
their limits, are in docs/poc.md; in short:

- a sample is *congested* when the fabric's congestion severity (worst port's signal over its
  threshold, the ``fabric:fabric_congestion:severity`` recording rule) is above 1;
- an *episode* is a run of congested samples; congested samples closer than ``bridge_gap`` (with
  quiet samples or no data between them) belong to one episode;
- it *starts* at its first congested sample and *ends* at the first quiet sample after its last
  congested one: that instant stands for the end of the load (the signal is a rate over the rule's
  window, so it falls below the threshold after the load stops, within one rate window);
- it has *recovered* at the first sample from its end on where the severity is within
  ``margin`` (in threshold units) of its baseline and the p99 within ``margin`` (relative) of its
  baseline, both holding for ``hold`` consecutive samples; recovery time = recovered - end;
- baselines: the medians of severity and p99 over the samples outside every episode.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

Samples = Sequence[tuple[float, float]]


@dataclass(frozen=True)
class Episode:
    start: float
    end: float  # first quiet sample after the episode (or the last sample + step when data stops)
    peak_severity: float
    end_observed: bool  # False: the data stopped or the window ended while congested
    recovered_at: float | None = None

    @property
    def duration_seconds(self) -> float:
        return self.end - self.start

    @property
    def recovery_seconds(self) -> float | None:
        return None if self.recovered_at is None else self.recovered_at - self.end


def _clean(samples: Samples) -> list[tuple[float, float]]:
    return sorted((float(t), float(v)) for t, v in samples if not math.isnan(float(v)))


def find_episodes(severity: Samples, step: float, bridge_gap: float, threshold: float = 1.0) -> list[Episode]:
    """Episodes in a severity series sampled every ``step`` seconds (gaps allowed)."""
    points = _clean(severity)
    episodes: list[Episode] = []
    current: dict | None = None
    for i, (t, v) in enumerate(points):
        if v > threshold:
            # consecutive samples, or quiet/missing time between them of at most bridge_gap
            if current is not None and t - current["last"] <= bridge_gap + step * 1.5:
                current["last"], current["peak"] = t, max(current["peak"], v)
            else:
                if current is not None:
                    episodes.append(_close(current, points, step))
                current = {"start": t, "last": t, "peak": v, "index": i}
            current["index"] = i
    if current is not None:
        episodes.append(_close(current, points, step))
    return episodes


def _close(ep: dict, points: list[tuple[float, float]], step: float) -> Episode:
    after = points[ep["index"] + 1] if ep["index"] + 1 < len(points) else None
    # The end is observed only when the very next step has a quiet sample; after a gap the end
    # lies somewhere in the gap, and the episode is cut at its last congested sample + one step.
    if after is not None and after[0] - ep["last"] <= step * 1.5:
        return Episode(ep["start"], after[0], ep["peak"], True)
    return Episode(ep["start"], ep["last"] + step, ep["peak"], False)


def _inside(t: float, episodes: Sequence[Episode]) -> bool:
    return any(e.start <= t < e.end for e in episodes)


def baseline(samples: Samples, episodes: Sequence[Episode]) -> float | None:
    """Median of the samples outside every episode (None without any)."""
    values = [v for t, v in _clean(samples) if not _inside(t, episodes)]
    return statistics.median(values) if values else None


def _value_at(points: list[tuple[float, float]], t: float, step: float) -> float | None:
    """The sample at ``t`` (within half a step), or None in a gap."""
    lo, hi = 0, len(points)
    while lo < hi:
        mid = (lo + hi) // 2
        if points[mid][0] < t - step / 2:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(points) and abs(points[lo][0] - t) <= step / 2:
        return points[lo][1]
    return None


def with_recovery(episodes: Sequence[Episode], severity: Samples, p99: Samples, step: float, margin: float,
                  hold: int = 2, severity_baseline: float | None = None,
                  p99_baseline: float | None = None) -> list[Episode]:
    """Each episode with its recovery instant (None if not recovered before the next episode starts
    or the data ends). Without any p99 data, recovery is judged on the severity alone."""
    sev = _clean(severity)
    lat = _clean(p99)
    sev_base = severity_baseline if severity_baseline is not None else baseline(sev, episodes)
    lat_base = p99_baseline if p99_baseline is not None else baseline(lat, episodes)
    out = []
    for i, ep in enumerate(episodes):
        limit = episodes[i + 1].start if i + 1 < len(episodes) else math.inf
        recovered_at, run_start, run, prev_t = None, 0.0, 0, -math.inf
        for t, v in sev:
            if t < ep.end or t >= limit:
                continue
            ok = sev_base is not None and v <= sev_base + margin
            if ok and lat and lat_base is not None:
                p = _value_at(lat, t, step)
                ok = p is not None and p <= lat_base * (1 + margin)
            if not ok or t - prev_t > step * 1.5:  # a bad sample or a gap breaks the run
                run = 0
            prev_t = t
            if ok:
                run_start = t if run == 0 else run_start
                run += 1
                if run >= hold:
                    recovered_at = run_start
                    break
        out.append(Episode(ep.start, ep.end, ep.peak_severity, ep.end_observed, recovered_at))
    return out


def counter_increase(samples: Samples) -> float:
    """How much a counter grew over the samples, exactly: a drop is a reset (the counter restarted
    from 0, so its new value is all growth), gaps are spanned by the next sample."""
    points = _clean(samples)
    total = 0.0
    for (_, before), (_, after) in zip(points, points[1:]):
        total += after - before if after >= before else after
    return total


def state_changes(samples: Samples, up: float = 1.0) -> int:
    """Transitions from ``up`` to anything else (link went down), as sampled."""
    points = _clean(samples)
    return sum(1 for (_, a), (_, b) in zip(points, points[1:]) if a == up and b != up)


def fresh_ratio(samples: Samples, start: float, end: float, step: float) -> float:
    """Share of the window's steps at which a target was up and fresh (``fabric_up`` = 1); a step
    without a sample counts as not fresh."""
    expected = int(math.floor((end - start) / step + 1e-9)) + 1
    good = sum(1 for t, v in _clean(samples) if start - step / 2 <= t <= end + step / 2 and v == 1)
    return min(1.0, good / expected) if expected > 0 else 0.0
