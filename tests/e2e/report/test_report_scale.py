"""The report over many ports (issue 27 item 4): aggregates over every port are read at a coarser
step once ports x points passes the budget, and the report still finds what was planted.

A real Prometheus holds half a day of a small cluster-shaped fabric (tests/harness/cluster_week.py,
backfilled with ``promtool tsdb create-blocks-from openmetrics``): congestion episodes, IB and RoCE
link flaps, a port flapping twice. The report runs once at its own budget and once with a budget
small enough that every per-port aggregate takes the coarse path; both find the planted events, the
coarse one's mean transmit is the fine one's (the coarser rate windows tile the window), and every
target is fresh. Figures for a week of larger clusters: bench/bench_report_scale.py.
"""

from __future__ import annotations

import argparse
import time

import pytest

from fabric_exporter.report import collect
from fabric_exporter.report import main as report_main
from tests.conftest import ROOT
from tests.harness.cluster_week import Cluster, write
from tests.harness.prometheus import backfilled_prometheus

DAY = 86400
HALF_DAY = DAY // 2


@pytest.fixture(scope="module")
def cluster_prometheus(tmp_path_factory):
    work = tmp_path_factory.mktemp("prom")
    end = int(time.time()) // 60 * 60
    cluster = Cluster(0.0005, end - HALF_DAY, end, interval=60)
    write(str(work / "cluster.om"), cluster)
    prom = backfilled_prometheus(work, (work / "cluster.om").read_text(),
                                 rule_files=[ROOT / "alerts" / "fabric-exporter.rules.yaml"])
    (work / "cluster.om").unlink()
    prom.start()
    try:
        yield prom, cluster
    finally:
        prom.stop()


def _report(prom, cluster, out, late: float = 30):
    """The report over the 12 h up to ``late`` seconds after the data's last sample."""
    p = argparse.ArgumentParser()
    report_main.add_arguments(p)
    args = p.parse_args(["--prometheus-url", prom.base, "--since", "12h", "--out", str(out), "--timeout", "120"])
    return report_main.build(args, now=float(cluster.end + late))


def _found(summary) -> dict:
    fab = summary["fabrics"]
    return {"episodes": {f: fab[f]["congestion"]["episodes_count"] for f in fab},
            "ib_link_downs": fab["ib"]["stability"]["link_downs_count"],
            "roce_link_downs": fab["roce"]["stability"]["link_downs_count"],
            "ib_flapping_ports": fab["ib"]["stability"]["ports_flapping_count"],
            "roce_flapping_ports": fab["roce"]["stability"]["ports_flapping_count"]}


def test_aggregate_step_stays_within_the_budget():
    w = collect.Window(0, 7 * DAY, 61)
    assert collect.aggregate_step(w, 50, budget=1_000_000) == 61  # 50 x 9,916 points: within
    for ports in (500, 40_000, 91_000):
        step = collect.aggregate_step(w, ports, budget=1_000_000)
        assert step % 61 == 0 and ports * (w.seconds / step + 1) <= 1_000_000, (ports, step)
    assert collect.steps_at(0, 600, 60) == 11 and collect.steps_at(30, 600, 60) == 10


def test_the_coarse_report_finds_what_was_planted(cluster_prometheus, tmp_path, monkeypatch):
    prom, cluster = cluster_prometheus
    fine = _report(prom, cluster, tmp_path / "fine")
    ib_ports = cluster.hcas + cluster.ib_switches * cluster.ib_switch_ports
    # small enough that every aggregate over ports (>= 8 here) is read at a coarser step
    monkeypatch.setattr(collect, "PORT_POINTS_BUDGET", 5 * 721)
    # 10 minutes after the data stopped (past the 5 m lookback): the port counts still see the ports
    coarse = _report(prom, cluster, tmp_path / "coarse", late=600)

    assert _found(fine) == cluster.planted, _found(fine)
    assert _found(coarse) == cluster.planted, _found(coarse)
    for name in ("ib", "roce"):
        f, c = fine["fabrics"][name], coarse["fabrics"][name]
        step = fine["window"]["step_seconds"]
        assert f["throughput"]["host_transmit_step_seconds"] == step
        assert c["throughput"]["host_transmit_step_seconds"] > step
        assert c["throughput"]["link_utilisation_step_seconds"] > step
        # the coarse rate windows tile the window: the same mean (edges aside)
        assert c["throughput"]["host_transmit_mean_bytes_per_second"] == pytest.approx(
            f["throughput"]["host_transmit_mean_bytes_per_second"], rel=0.02)
        # every port-sample in one bin, fewer of them at the coarse step; congested ports reach 0.85
        fine_hist = f["throughput"]["link_utilisation_histogram_port_samples"]
        coarse_hist = c["throughput"]["link_utilisation_histogram_port_samples"]
        assert 0 < sum(coarse_hist.values()) < sum(fine_hist.values())
        assert fine_hist["0.8-0.9"] > 0
        assert 0.8 <= f["throughput"]["link_utilisation_max_ratio"] <= 0.9
        assert f["completeness"]["targets_count"] == c["completeness"]["targets_count"] > 0
        assert f["completeness"]["fresh_min_ratio"] >= 0.99
        assert f["stability"]["errors_count"] > 0
        # ~6 whole errors per coarse window (0.01/s): rate()'s extrapolation of whole counts, +-10 %
        assert c["stability"]["errors_per_second_mean"] == pytest.approx(
            f["stability"]["errors_per_second_mean"], rel=0.1)
    assert fine["fabrics"]["ib"]["throughput"]["host_adapter_ports_count"] == cluster.hcas
    assert ib_ports * (HALF_DAY / coarse["fabrics"]["ib"]["throughput"]["link_utilisation_step_seconds"] + 1) \
        <= 5 * 721
    assert any("many ports" in n for n in coarse["generated"]["notes"])


def test_the_narrowing_selector_matches_each_series_found():
    sel = collect.narrowing_selector('{job="fabric-exporter",fabric="ib"}', [
        {"__name__": "m", "node_guid": "0x1", "port": "2", "node_name": 'leaf (a|b) "x"'},
        {"node_guid": "0x2", "port": "1"}])
    # a label one lacks also matches "", regex metacharacters and quotes are escaped
    assert sel == ('{job="fabric-exporter",fabric="ib",node_guid=~"0x1|0x2",'
                   'node_name=~"|leaf \\\\(a\\\\|b\\\\) \\"x\\"",port=~"1|2"}')
    assert collect.narrowing_selector('{job="x"}', [{}]) == '{job="x"}'
