"""Catalog entries for the roce_nic collector(s); filled in by that collector's issue."""

from .spec import MetricSpec

METRICS: list[MetricSpec] = []
