"""The exporter's own metrics, built with prometheus_client from scheduler state at scrape time.

``collect()`` only reads in-memory state (no I/O), as house rule 1 requires.
"""

from __future__ import annotations

import platform
import time

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import CollectorRegistry

from . import __version__
from .catalog import CATALOG
from .errors import REASONS

TARGET_LABELS = ["group", "host", "collector", "fabric"]


class ReloadStatus:
    def __init__(self) -> None:
        self.successful = False
        self.last_success: float = 0.0

    def record(self, ok: bool) -> None:
        self.successful = ok
        if ok:
            self.last_success = time.time()


def _gauge(name: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, CATALOG[name].help, labels=labels)


def _counter(name: str, labels: list[str]) -> CounterMetricFamily:
    return CounterMetricFamily(name.removesuffix("_total"), CATALOG[name].help, labels=labels)


class SelfCollector:
    def __init__(self, scheduler, store, reload_status: ReloadStatus):
        self.scheduler = scheduler
        self.store = store
        self.reload = reload_status

    def collect(self):
        states = sorted(self.scheduler.states.values(), key=lambda s: s.key)
        up = _gauge("fabric_up", TARGET_LABELS)
        duration = _gauge("fabric_poll_duration_seconds", TARGET_LABELS)
        last_poll = _gauge("fabric_last_poll_timestamp_seconds", TARGET_LABELS)
        last_ok = _gauge("fabric_last_success_timestamp_seconds", TARGET_LABELS)
        polls = _counter("fabric_polls_total", TARGET_LABELS)
        errors = _counter("fabric_poll_errors_total", TARGET_LABELS + ["reason"])
        samples = _gauge("fabric_samples", TARGET_LABELS)
        interval = _gauge("fabric_poll_interval_seconds", TARGET_LABELS)
        backoff = _gauge("fabric_poll_backoff_seconds", TARGET_LABELS)
        stale = _gauge("fabric_target_stale", TARGET_LABELS)
        skipped = _counter("fabric_parse_skipped_lines_total", TARGET_LABELS + ["source"])
        by_collector: dict[str, int] = {}
        for s in states:
            lv = [s.group, s.host, s.collector, s.fabric]
            fresh = self.store.is_fresh(s.key)
            up.add_metric(lv, 1.0 if s.state in ("ok", "partial") and fresh else 0.0)
            if s.last_duration is not None:
                duration.add_metric(lv, s.last_duration)
                last_poll.add_metric(lv, s.last_poll_end)
            if s.last_success is not None:
                last_ok.add_metric(lv, s.last_success)
            polls.add_metric(lv, s.polls)
            # Every reason is published from the start, so rate() sees the first error.
            for reason in REASONS:
                errors.add_metric(lv + [reason], s.errors.get(reason, 0))
            samples.add_metric(lv, s.samples if fresh else 0)
            interval.add_metric(lv, s.interval)
            backoff.add_metric(lv, s.backoff)
            stale.add_metric(lv, 0.0 if fresh or not s.tried else 1.0)
            for source, n in sorted(s.skipped_lines.items()):
                skipped.add_metric(lv + [source], n)
            by_collector[s.collector] = by_collector.get(s.collector, 0) + 1
        yield from (up, duration, last_poll, last_ok, polls, errors, samples, interval, backoff, stale, skipped)

        targets = _gauge("fabric_targets", ["collector"])
        for name, n in sorted(by_collector.items()):
            targets.add_metric([name], n)
        yield targets
        build = _gauge("fabric_build_info", ["version", "python_version"])
        build.add_metric([__version__, platform.python_version()], 1.0)
        yield build
        ok = _gauge("fabric_config_last_reload_successful", [])
        ok.add_metric([], 1.0 if self.reload.successful else 0.0)
        yield ok
        ts = _gauge("fabric_config_last_reload_success_timestamp_seconds", [])
        ts.add_metric([], self.reload.last_success)
        yield ts


def self_registry(scheduler, store, reload_status: ReloadStatus) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SelfCollector(scheduler, store, reload_status))
    return registry
