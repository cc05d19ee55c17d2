"""latency_probe collector: options, histogram maths, cardinality switches (local transport + fake perftest)."""

import asyncio
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fabric_exporter.catalog.latency import LATENCY_BUCKETS
from fabric_exporter.collectors import PollContext
from fabric_exporter.collectors.latency_probe import LatencyProbeCollector
from fabric_exporter.collectors.latency_probe.histogram import Histogram, cdf
from fabric_exporter.config import ConfigError

from tests.harness import paths
from tests.harness.configs import parse_config
from tests.harness.lanes import starts_processes
from fabric_exporter.lab.perftest import install_programs
from fabric_exporter.parsers.perftest import LatencyReport
from fabric_exporter.transport.factory import Transports

REPO = paths.ROOT


def target(options, hosts=("a", "b", "c"), transport="local", **extra):
    return {"name": "lat", "fabric": "f", "collector": "latency_probe", "transport": transport,
            "hosts": [{"name": h, "address": "127.0.0.1"} for h in hosts], "interval": "30s", "timeout": "20s",
            "options": options, **extra}


def problems(options):
    with pytest.raises(ConfigError) as e:
        parse_config({"targets": [target(options)]})
    return "\n".join(e.value.problems)


def test_option_errors_name_their_key_paths():
    text = problems({"iterations": 1000, "tool": "ib_write_bw", "extra_args": ["-n", "5"],
                     "host_groups": {"r1": ["a", "b"], "r2": ["b"]}, "budget": {"max_probes_per_host": 0, "x": 1},
                     "port_range": [80, 90], "plan": {"full_mesh": False}, "probe_timeout": "1s",
                     "server_start_wait": "2s", "bogus": True})
    for expected in ["options.iterations: expected an integer between 10000 and", "options.tool: must be one of",
                     "options.extra_args[0]: -n is set by the collector", "options.host_groups.r2[0]: host 'b' is already",
                     "options.budget.max_probes_per_host", "options.budget.x: unknown option",
                     "options.port_range: expected [low, high]", "options.plan: plans nothing",
                     "options.server_start_wait: must be shorter", "options.bogus: unknown option"]:
        assert expected in text, expected
    assert "capturing group" in problems({"host_group_pattern": "^gpu"})
    assert "plan.pairs[0]" in problems({"plan": {"pairs": [["a", "a"]]}})


def test_example_config_is_valid(tmp_path):
    raw = yaml.safe_load((REPO / "examples" / "latency-probes.yaml").read_text())
    key = tmp_path / "id_ed25519"
    key.write_text("not read by parse_config\n")
    for cred in raw.get("credentials", {}).values():
        cred["private_key_file"] = str(key)
        cred.pop("known_hosts_file", None)
    cfg = parse_config(raw, base_dir=tmp_path)
    (group,) = cfg.targets
    assert group.collector == "latency_probe" and group.options.sampled_peers == 2
    col = LatencyProbeCollector(PollContext(group, None, Transports()))
    assert not col.plan_problems
    assert set(col.group_of.values()) == {"r01", "r02"}


stat_lists = st.lists(st.integers(1, 2_000_000), min_size=5, max_size=5).map(sorted)


@settings(max_examples=200, deadline=None)
@given(v=stat_lists, iters=st.integers(10000, 10**7))
def test_histogram_is_cumulative_and_its_quantiles_land_near_the_probe(v, iters):
    mn, typ, p99, p999, mx = (x / 100 for x in v)
    r = LatencyReport(2, iters, mn, mx, typ, min(max(typ, mn), mx), 0.1, p99, p999)
    h = Histogram()
    h.add(r)
    assert h.count == iters and all(0 <= a <= b <= iters for a, b in zip(h.buckets, h.buckets[1:]))
    assert h.total == pytest.approx(r.avg_us / 1e6 * iters)
    # below t_min nothing, from t_max on everything
    for le, n in zip(LATENCY_BUCKETS, h.buckets):
        if le < mn / 1e6:
            assert n == 0
        if le >= mx / 1e6:
            assert n == iters
    # the bucket holding the median straddles t_typical (what histogram_quantile(0.5) interpolates in)
    bounds = (0.0,) + LATENCY_BUCKETS + (float("inf"),)
    counts = [0] + h.buckets + [iters]
    i = next(i for i, c in enumerate(counts) if c >= iters / 2)
    # counts are rounded to whole exchanges: half an exchange moves the median by up to
    # (t_typical - t_min) / iters, at most 1e-4 of t_typical (iters >= 10,000)
    slack = 2e-4 * typ / 1e6 + 1e-12
    assert bounds[i - 1] <= typ / 1e6 + slack and typ / 1e6 <= bounds[i] + slack or mn == typ


def test_cdf_through_the_reported_points():
    r = LatencyReport(2, 10000, 1.0, 10.0, 2.0, 2.2, 0.1, 3.0, 5.0)
    assert cdf(r, 0.5e-6) == 0 and cdf(r, 1e-6) == 0
    assert cdf(r, 2e-6) == pytest.approx(0.5) and cdf(r, 3e-6) == pytest.approx(0.99)
    assert cdf(r, 5e-6) == pytest.approx(0.999) and cdf(r, 10e-6) == 1
    assert cdf(r, 2.5e-6) == pytest.approx(0.745)


@pytest.fixture
@starts_processes  # the collector runs the fake perftest through the local transport
def fake_perftest_on_path(tmp_path, monkeypatch):
    install_programs(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:" + __import__("os").environ["PATH"])
    monkeypatch.delenv("SSH_CONNECTION", raising=False)
    monkeypatch.setenv("FABRIC_LAB_PERFTEST_STATE", str(tmp_path))


def run_collector(options, rounds=1):
    cfg = parse_config({"targets": [target(options)]})
    group = cfg.targets[0]

    async def main():
        transports = Transports()
        col = LatencyProbeCollector(PollContext(group, None, transports))
        try:
            results = [await col.poll() for _ in range(rounds)]
        finally:
            await col.close()
            await transports.close()
        return col, results

    return asyncio.run(main())


def names(result):
    return {s.name for s in result.samples}


def test_per_pair_series_off_above_the_pair_limit(fake_perftest_on_path):
    col, (res,) = run_collector({"per_pair_series_max_pairs": 5, "probe_timeout": "5s"})
    assert not res.problems and col.per_pair is False
    assert "fabric_rdma_latency_pair_seconds_count" not in names(res)
    assert "fabric_rdma_latency_p99_seconds" not in names(res)
    assert {"fabric_rdma_latency_seconds_count", "fabric_rdma_latency_source_seconds_count"} <= names(res)
    # the group-pair histogram holds all 6 probes; the per-source ones 2 each
    counts = {tuple(sorted(s.labels.items())): s.value for s in res.samples
              if s.name == "fabric_rdma_latency_source_seconds_count"}
    assert sorted(counts.values()) == [20000, 20000, 20000]


def test_histograms_only_grow_and_old_pair_results_are_withheld(fake_perftest_on_path):
    col, (first, second) = run_collector({"probe_timeout": "5s", "budget": {"max_probes_per_round": 3}}, rounds=2)
    total = lambda res: sum(s.value for s in res.samples if s.name == "fabric_rdma_latency_seconds_count")
    assert total(first) == 3 * 10000 and total(second) == 6 * 10000
    import time
    later = time.time() + (col.plan.cover_rounds + 2) * col.group.interval
    stale = col._samples(later, 0, 0, 0)
    assert not [s for s in stale if s.name == "fabric_rdma_latency_median_seconds"]
    assert [s for s in stale if s.name == "fabric_rdma_latency_seconds_count"]  # counters/histograms stay


def test_port_pool_hands_out_each_port_once_and_holds_back_abandoned_ones():
    from fabric_exporter.collectors.latency_probe.ports import PortPool
    pool = PortPool(20000, 20002)
    a, b, c = pool.acquire(0.0), pool.acquire(0.0), pool.acquire(0.0)
    assert sorted((a, b, c)) == [20000, 20001, 20002] and pool.acquire(0.0) is None
    pool.release(a)
    pool.release(b, free_at=10.0)  # a server we stopped waiting for: its timeout kills it by t=10
    assert pool.acquire(5.0) == a and pool.acquire(5.0) is None
    assert pool.acquire(10.0) == b


def test_round_deadline_leaves_probes_out_and_carries_them_over(fake_perftest_on_path, tmp_path, monkeypatch):
    import json
    fixture = tmp_path / "fixture.json"
    fixture.write_text(json.dumps({"default": {"seconds": 0.8}}))  # each probe takes ~1 s
    monkeypatch.setenv("FABRIC_LAB_PERFTEST_FIXTURE", str(fixture))
    cfg = parse_config({"targets": [target({"probe_timeout": "5s"}, timeout="3s")]})
    group = cfg.targets[0]

    async def main():
        transports = Transports()
        col = LatencyProbeCollector(PollContext(group, None, transports))
        try:
            first = await col.poll()
            carried = list(col._carry)
            second = await col.poll()
        finally:
            await col.close()
            await transports.close()
        return first, carried, second

    first, carried, second = asyncio.run(main())
    rounds = lambda res: {s.labels["outcome"]: s.value for s in res.samples if s.name == "fabric_rdma_latency_round_probes"}
    r1, r2 = rounds(first), rounds(second)
    # 3 hosts, full mesh: 6 probes, one at a time (every probe involves 2 of the 3 hosts), ~1 s each, 2.5 s round
    assert r1["ok"] >= 1 and r1["not_run"] >= 3 and r1["ok"] + r1["not_run"] == 6 and r1["failed"] == 0
    assert any("not run before the round deadline" in p for p in first.problems)
    assert len(carried) == r1["not_run"]
    done_first = {(s.labels["source"], s.labels["destination"]) for s in first.samples
                  if s.name == "fabric_rdma_latency_median_seconds"}
    done_second = {(s.labels["source"], s.labels["destination"]) for s in second.samples
                   if s.name == "fabric_rdma_latency_median_seconds"} - done_first
    # the second round starts with what the first left out
    assert done_second and done_second <= {(p.source, p.destination) for p in carried}


def test_real_perftest_without_an_rdma_device_fails_every_probe_clearly(local_commands):
    """The real ib_write_lat (Debian perftest) on this machine, which has no RDMA device: the server
    exits at once with perftest's own message; every probe fails as server_failed and the poll fails."""
    import shutil

    from fabric_exporter.errors import PollError
    if shutil.which("ib_write_lat") is None:
        pytest.skip("perftest not installed")
    if Path("/sys/class/infiniband").exists():
        pytest.skip("this machine has RDMA devices; the test needs one without")
    cfg = parse_config({"targets": [target({"probe_timeout": "5s", "server_start_wait": "300ms"},
                                           hosts=("a", "b"))]})

    async def main():
        transports = Transports()
        col = LatencyProbeCollector(PollContext(cfg.targets[0], None, transports))
        try:
            with pytest.raises(PollError) as e:
                await col.poll()
            return col, e.value
        finally:
            await col.close()
            await transports.close()

    col, error = asyncio.run(main())
    assert error.reason == "command_failed"
    assert "Unable to find the Infiniband/RoCE device" in str(error)
    assert col._failures == {("b", "server", "server_failed"): 1, ("a", "server", "server_failed"): 1}


def test_older_perftest_without_percentiles_publishes_what_it_printed(fake_perftest_on_path, tmp_path, monkeypatch):
    import json
    fixture = tmp_path / "fixture.json"
    # local transport: every host is 127.0.0.1 to the fake, so the default spec applies to all
    fixture.write_text(json.dumps({"default": {"behaviour": "three_columns", "min": 1.5, "typical": 2.25,
                                               "max": 9.75}}))
    monkeypatch.setenv("FABRIC_LAB_PERFTEST_FIXTURE", str(fixture))
    col, (res,) = run_collector({"probe_timeout": "5s", "plan": {"full_mesh": False, "pairs": [["a", "b"]]}})
    labels = {"source": "a", "destination": "b"}
    got = {s.name: s.value for s in res.samples if all(s.labels.get(k) == v for k, v in labels.items())}
    assert got["fabric_rdma_latency_median_seconds"] == 2.25e-6
    assert got["fabric_rdma_latency_min_seconds"] == 1.5e-6 and got["fabric_rdma_latency_max_seconds"] == 9.75e-6
    assert "fabric_rdma_latency_p99_seconds" not in got and "fabric_rdma_latency_avg_seconds" not in got
    # not a guessed histogram either, and the status page says why p99 is missing
    assert not [s for s in res.samples if s.name == "fabric_rdma_latency_seconds_count" and s.value]
    assert any("prints no percentiles" in p and "a>b" in p for p in res.problems), res.problems
