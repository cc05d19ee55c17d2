"""Self-metrics are rendered when a target's state changes and served as cached bytes: they must be
byte-identical to what prometheus_client renders from the same state at scrape time (the old way,
kept here as the reference), in both freshness variants, and their gzip members must decode to
the same text."""

import collections
import gzip
import platform

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString
from prometheus_client.registry import CollectorRegistry

from fabric_exporter import __version__
from fabric_exporter.catalog import CATALOG
from fabric_exporter.errors import REASONS
from fabric_exporter.looplag import LoopLag
from fabric_exporter.samples import Sample
from fabric_exporter.scheduler import TargetState
from fabric_exporter.serving.selfmetrics import ReloadStatus, SelfMetrics
from fabric_exporter.serving.store import SnapshotStore, build_snapshot
from fabric_exporter.transport import snmp_dropped
from fabric_exporter.transport.snmp_dropped import DROPPED as SNMP_DROPPED

TARGET_LABELS = ["group", "host", "collector", "fabric"]


def reference(states, fresh_keys, reload: ReloadStatus, lag: list[float] | None = None) -> bytes:
    """prometheus_client rendering of the self-metrics, computed from state at scrape time."""

    def gauge(name, labels):
        return GaugeMetricFamily(name, CATALOG[name].help, labels=labels)

    def counter(name, labels):
        return CounterMetricFamily(name.removesuffix("_total"), CATALOG[name].help, labels=labels)

    class Reference:
        def collect(self):
            up = gauge("fabric_up", TARGET_LABELS)
            duration = gauge("fabric_poll_duration_seconds", TARGET_LABELS)
            last_poll = gauge("fabric_last_poll_timestamp_seconds", TARGET_LABELS)
            last_ok = gauge("fabric_last_success_timestamp_seconds", TARGET_LABELS)
            polls = counter("fabric_polls_total", TARGET_LABELS)
            errors = counter("fabric_poll_errors_total", TARGET_LABELS + ["reason"])
            samples = gauge("fabric_samples", TARGET_LABELS)
            interval = gauge("fabric_poll_interval_seconds", TARGET_LABELS)
            backoff = gauge("fabric_poll_backoff_seconds", TARGET_LABELS)
            stale = gauge("fabric_target_stale", TARGET_LABELS)
            skipped = counter("fabric_parse_skipped_lines_total", TARGET_LABELS + ["source"])
            by_collector = collections.Counter()
            for s in sorted(states, key=lambda s: s.key):
                lv = [s.group, s.host, s.collector, s.fabric]
                fresh = s.key in fresh_keys
                up.add_metric(lv, 1.0 if s.state in ("ok", "partial") and fresh else 0.0)
                if s.last_duration is not None:
                    duration.add_metric(lv, s.last_duration)
                    last_poll.add_metric(lv, s.last_poll_end)
                if s.last_success is not None:
                    last_ok.add_metric(lv, s.last_success)
                polls.add_metric(lv, s.polls)
                for reason in REASONS:
                    errors.add_metric(lv + [reason], s.errors.get(reason, 0))
                samples.add_metric(lv, s.samples if fresh else 0)
                interval.add_metric(lv, s.interval)
                backoff.add_metric(lv, s.backoff)
                stale.add_metric(lv, 0.0 if fresh or not s.tried else 1.0)
                for source, n in sorted(s.skipped_lines.items()):
                    skipped.add_metric(lv + [source], n)
                by_collector[s.collector] += 1
            yield from (up, duration, last_poll, last_ok, polls, errors, samples, interval, backoff, stale, skipped)
            dropped = counter("fabric_snmp_datagrams_dropped_total", ["reason"])
            for reason, n in SNMP_DROPPED.items():
                dropped.add_metric([reason], n)
            yield dropped
            targets = gauge("fabric_targets", ["collector"])
            for name, n in sorted(by_collector.items()):
                targets.add_metric([name], n)
            yield targets
            build = gauge("fabric_build_info", ["version", "python_version"])
            build.add_metric([__version__, platform.python_version()], 1.0)
            yield build
            ok = gauge("fabric_config_last_reload_successful", [])
            ok.add_metric([], 1.0 if reload.successful else 0.0)
            yield ok
            ts = gauge("fabric_config_last_reload_success_timestamp_seconds", [])
            ts.add_metric([], reload.last_success)
            yield ts
            name = "fabric_event_loop_lag_seconds"
            histogram = HistogramMetricFamily(name, CATALOG[name].help)
            if lag is not None:
                bounds = CATALOG[name].buckets
                histogram.add_metric([], [(floatToGoString(b), sum(1 for x in lag if x <= b)) for b in bounds]
                                     + [("+Inf", len(lag))], sum(lag))
            yield histogram

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Reference())
    return generate_latest(registry)


names = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
times = st.one_of(st.none(), st.floats(min_value=0, max_value=2e9, allow_nan=False))


@st.composite
def target_states(draw):
    state = TargetState(draw(names), draw(names), draw(st.sampled_from(["roce_nic", "infiniband", "x"])),
                        draw(names), "ssh", draw(st.sampled_from([1.0, 30.0, 0.25])), 60.0)
    state.state = draw(st.sampled_from(["pending", "ok", "partial", "failed"]))
    state.polls = draw(st.integers(0, 10**9))
    state.errors = collections.Counter({r: draw(st.integers(0, 10**7)) for r in draw(st.sets(st.sampled_from(REASONS)))})
    state.last_duration = draw(times)
    state.last_poll_end = None if state.last_duration is None else draw(st.floats(1e9, 2e9))
    state.last_success = draw(times)
    state.backoff = draw(st.sampled_from([0.0, 2.5, 3600.0]))
    state.samples = draw(st.integers(0, 10**6))
    state.skipped_lines = collections.Counter(
        {source: draw(st.integers(1, 10**6)) for source in draw(st.sets(st.sampled_from(["ethtool", "pm", "x"])))})
    return state


@settings(max_examples=150, deadline=None)
@given(st.lists(target_states(), max_size=6, unique_by=lambda s: s.key), st.data())
def test_cached_self_metrics_are_byte_identical_to_prometheus_client(states, data):
    reload = ReloadStatus()
    if data.draw(st.booleans()):
        reload.record(True)
    lag = data.draw(st.none() | st.lists(st.floats(0, 20, allow_nan=False), max_size=30))
    loop_lag = None
    if lag is not None:
        loop_lag = LoopLag()
        for late in lag:
            loop_lag.observe(late)
    metrics = SelfMetrics(reload, loop_lag)
    fresh_until = {s.key: data.draw(st.sampled_from([None, 10.0, 100.0])) for s in states}
    for s in states:
        metrics.target_changed(s, fresh_until[s.key])
    for now in (5.0, 50.0, 500.0):  # before, between and after the deadlines: each target picks its variant
        fresh = {k for k, until in fresh_until.items() if until is not None and now <= until}
        expected = reference(states, fresh, reload, lag)
        assert metrics.render(now) == expected
        assert gzip.decompress(b"".join(metrics.parts(now, gzip=True))) == expected


def test_a_target_that_changes_after_a_scrape_is_served_anew_in_both_variants():
    """The per-family columns are joined once and reused by every scrape until a slot changes."""
    metrics = SelfMetrics(ReloadStatus())
    a = TargetState("g", "a", "roce_nic", "f", "ssh", 30.0, 60.0)
    b = TargetState("g", "b", "infiniband", "f", "local", 30.0, 60.0)
    metrics.target_changed(a, None)
    metrics.target_changed(b, None)
    before = metrics.render(0)
    assert gzip.decompress(b"".join(metrics.parts(0, gzip=True))) == before
    b.state, b.polls, b.samples = "failed", 7, 123
    metrics.target_changed(b, None)
    after = metrics.render(0)
    assert after != before and after == reference([a, b], set(), metrics.reload)
    assert gzip.decompress(b"".join(metrics.parts(0, gzip=True))) == after
    assert len(metrics.parts(0)) < 60  # one piece per family, not one per target and family


def test_a_removed_target_and_a_reload_change_the_served_bytes():
    reload = ReloadStatus()
    metrics = SelfMetrics(reload)
    a = TargetState("g", "a", "roce_nic", "f", "ssh", 30.0, 60.0)
    b = TargetState("g", "b", "infiniband", "f", "local", 30.0, 60.0)
    metrics.target_changed(a, None)
    metrics.target_changed(b, None)
    assert metrics.render(0) == reference([a, b], set(), reload)
    reload.record(True)
    metrics.target_removed(b.key)
    text = metrics.render(0)
    assert text == reference([a], set(), reload)
    assert b'fabric_targets{collector="infiniband"}' not in text and b"fabric_config_last_reload_successful 1.0" in text


def test_a_loop_lag_observation_renders_only_the_lag_family_again():
    """The lag changes ten times a second; the other process-wide families stay cached (the very
    same pieces), and each scrape still shows the lag as it is at that moment."""
    loop_lag = LoopLag()
    metrics = SelfMetrics(ReloadStatus(), loop_lag)
    metrics.target_changed(TargetState("g", "a", "roce_nic", "f", "ssh", 30.0, 60.0), None)
    for gzipped in (False, True):
        before = metrics._global_parts(gzipped)
        loop_lag.observe(0.3)
        after = metrics._global_parts(gzipped)
        assert all(a is b for a, b in zip(after[:-1], before[:-1])) and after[-1] is not before[-1]
    text = metrics.render(0)
    assert b'fabric_event_loop_lag_seconds_bucket{le="0.5"} 2.0' in text
    assert b"fabric_event_loop_lag_seconds_count 2.0" in text
    assert gzip.decompress(b"".join(metrics.parts(0, gzip=True))) == text
    metrics.reload.record(True)  # a still family's change is seen too
    assert b"fabric_config_last_reload_successful 1.0" in metrics.render(0)


def test_dropped_snmp_datagrams_are_counted_by_reason_from_zero():
    metrics = SelfMetrics(ReloadStatus())
    before = dict(SNMP_DROPPED)  # process-wide: other tests may have dropped some already
    text = metrics.render(0)
    for reason in snmp_dropped.REASONS:
        assert f'fabric_snmp_datagrams_dropped_total{{reason="{reason}"}} {float(before[reason])}'.encode() in text
    assert b"# TYPE fabric_snmp_datagrams_dropped_total counter" in text
    snmp_dropped.count("wrong_source")
    snmp_dropped.count("wrong_source")
    snmp_dropped.count("rejected")
    text = metrics.render(0)
    assert f'fabric_snmp_datagrams_dropped_total{{reason="wrong_source"}} {before["wrong_source"] + 2.0}'.encode() in text
    assert f'fabric_snmp_datagrams_dropped_total{{reason="rejected"}} {before["rejected"] + 1.0}'.encode() in text


def test_store_gzip_members_decode_to_the_plain_exposition():
    store = SnapshotStore()
    for i in range(5):
        labels = {"host": f"h{i}", "device": "mlx5_0", "port": "1", "netdev": "eth0"}
        store.put(("g", f"h{i}"), build_snapshot("f", [Sample("fabric_roce_rx_bytes_total", labels, i),
                                                      Sample("fabric_roce_tx_bytes_total", labels, 2 * i)],
                                                 10 + i, now_mono=0))
    for now in (0, 12, 100):  # all fresh, some stale, none
        plain = b"".join(store.parts(now))
        assert gzip.decompress(b"".join(store.parts(now, gzip=True))) == plain
    assert store.render(100) == b""


def test_the_joined_gzip_body_is_reused_until_a_put_a_drop_or_a_snapshot_going_stale():
    store = SnapshotStore()

    def put(i: int, value: float, stale_after: float) -> None:
        labels = {"host": f"h{i}", "device": "mlx5_0", "port": "1", "netdev": "eth0"}
        store.put(("g", f"h{i}"), build_snapshot("f", [Sample("fabric_roce_rx_bytes_total", labels, value)],
                                                 stale_after, now_mono=0))

    def served(now: float) -> bytes:
        body = gzip.decompress(b"".join(store.parts(now, gzip=True)))
        assert body == b"".join(store.parts(now))  # always what the plain text says
        return body

    for i in range(3):
        put(i, i, 10 + i)
    first = store.parts(1, gzip=True)
    assert all(a is b for a, b in zip(store.parts(2, gzip=True)[:-1], first))  # the same pieces, joined once
    assert len(first) == 3  # the gzip header, the family's column joined, the trailer
    assert b'host="h0"' in served(5) and b'host="h0"' not in served(10.5)  # h0 went stale at 10
    assert b'host="h0"' in served(5)  # an earlier time (a test's clock) is not served from the cache
    put(1, 99, 50)
    assert b'host="h1",netdev="eth0",port="1"} 99.0' in served(5)
    store.drop(("g", "h2"))
    assert b'host="h2"' not in served(5)
