"""Probe reports folded into cumulative latency histograms (seconds, the catalog's buckets)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...catalog.latency import LATENCY_BUCKETS
from ...parsers.perftest import LatencyReport
from ...samples import le_labels

BUCKET_LABELS = le_labels(LATENCY_BUCKETS)


@dataclass
class Histogram:
    buckets: list[int] = field(default_factory=lambda: [0] * len(LATENCY_BUCKETS))
    count: int = 0
    total: float = 0.0

    def add(self, report: LatencyReport) -> None:
        n = report.iterations
        for i, le in enumerate(LATENCY_BUCKETS):
            self.buckets[i] += round(n * cdf(report, le))
        self.count += n
        self.total += seconds(report.avg_us) * n


def seconds(us: float) -> float:
    # Scale the decimal, not the binary float: perftest printed 1.62 µs, we publish 1.62e-06 exactly
    # (1.62 / 1e6 is 1.6200000000000002e-06).
    return float(f"{us!r}e-6")


def cdf(r: LatencyReport, x: float) -> float:
    """Fraction of the probe's exchanges at or below ``x`` seconds: piecewise linear through
    (t_min, 0), (t_typical, .5), (99%, .99), (99.9%, .999), (t_max, 1)."""
    pts = ((seconds(r.min_us), 0.0), (seconds(r.typical_us), 0.5), (seconds(r.p99_us), 0.99),
           (seconds(r.p999_us), 0.999), (seconds(r.max_us), 1.0))
    if x < pts[0][0]:
        return 0.0
    if x >= pts[-1][0]:
        return 1.0
    frac = 0.0
    for (x0, f0), (x1, f1) in zip(pts, pts[1:]):
        if x >= x1:
            frac = f1
            continue
        if x >= x0 and x1 > x0:
            frac = f0 + (f1 - f0) * (x - x0) / (x1 - x0)
        break
    return frac
