"""Catalog entries for the latency collector(s); filled in by that collector's issue."""

from .spec import MetricSpec

METRICS: list[MetricSpec] = []
