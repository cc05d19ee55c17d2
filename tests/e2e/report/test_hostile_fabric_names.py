"""Fabric names that are hostile PromQL (issue 25 item 5), against a real Prometheus.

A static scrape target gives three fabrics known targets and known transmit rates; one fabric is
named with a quote and a backslash, one with a would-be injection. Prometheus (the generated rules
loaded, as in a site) scrapes it every 2 seconds; ``fabric-exporter report`` must find all three and give
each its own figures: the number of targets and the host transmit rate the target serves, not a
parse error and not what an injected ``or vector(1)`` would compute.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.parse

import pytest
import yaml

from fabric_exporter.lab.prometheus import PROMETHEUS, Prometheus
from tests.conftest import ROOT
from tests.harness.static_exporter import StaticExporter, sample_line

pytestmark = pytest.mark.skipif(not os.path.exists(PROMETHEUS), reason="needs prometheus (scripts/setup-deps)")

# fabric name -> (targets, transmit bytes per second per host)
FABRICS = {
    'a"b\\c': (2, 1000.0),
    'x"} or vector(1) or {y="': (3, 5000.0),
    "plain": (1, 100.0),
}
# 2 s scrapes and an 8 s rate window: a scrape that a loaded 2-core machine delays past its timeout
# (a 1 s interval times out at 1 s) leaves the host's rate in place instead of a hole in the sum.
RATE_WINDOW = "8s"


def _render(elapsed: float) -> str:
    lines = []
    for fabric, (hosts, rate) in FABRICS.items():
        for i in range(hosts):
            host = f"h{i}"
            lines.append(sample_line("fabric_up", {"fabric": fabric, "group": "g", "host": host,
                                                   "collector": "roce_nic"}, 1.0))
            lines.append(sample_line("fabric_roce_tx_bytes_total", {"fabric": fabric, "host": host, "device": "mlx5_0",
                                                                    "port": "1"}, rate * elapsed))
    return "".join(lines)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    from fabric_exporter.mixin import rules as mixin_rules
    from fabric_exporter.mixin.generate import dump_yaml
    from fabric_exporter.mixin.settings import load_settings

    tmp = tmp_path_factory.mktemp("hostile-names")
    settings = tmp / "settings.yaml"
    settings.write_text(yaml.safe_dump({"rate_window": RATE_WINDOW}))
    rule_file = tmp / "rules.yaml"
    rule_file.write_text(dump_yaml(mixin_rules.to_prometheus(mixin_rules.build(load_settings(str(settings))))))
    with StaticExporter(_render) as target:
        prom = Prometheus(tmp / "prometheus", job="fabric-exporter", targets=[target.target],
                          rule_files=[str(rule_file)], interval="2s").start()
        try:
            started = time.time()
            # a rate window and a few scrapes of data for every fabric
            deadline = time.monotonic() + 60
            while len(prom.query("group by (fabric) (fabric_roce_tx_bytes_total)")) < len(FABRICS) \
                    or time.time() < started + 20:
                assert time.monotonic() < deadline, prom.logs()
                time.sleep(0.5)
            yield {"tmp": tmp, "url": prom.base, "settings": settings, "from": started + 10, "to": time.time()}
        finally:
            prom.stop()


def _report(prometheus, out, *extra):
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'exporter'}:{ROOT}"}
    return subprocess.run(
        [sys.executable, "-m", "fabric_exporter", "report", "--prometheus-url", prometheus["url"],
         "--from", f"{prometheus['from']:.0f}", "--to", f"{prometheus['to']:.0f}",
         "--settings", str(prometheus["settings"]), "--out", str(out), *extra],
        env=env, capture_output=True, text=True, timeout=300)


def _check(figures: dict, fabric: str) -> None:
    hosts, rate = FABRICS[fabric]
    assert figures["kind"] == "roce", (fabric, figures["kind"])
    assert figures["completeness"]["targets_count"] == hosts, (fabric, figures["completeness"])
    assert [t["host"] for t in figures["completeness"]["targets"]] == [f"h{i}" for i in range(hosts)]
    mean = figures["throughput"]["host_transmit_mean_bytes_per_second"]
    assert mean == pytest.approx(hosts * rate, rel=0.15), (fabric, mean)


def test_every_fabric_gets_its_own_figures(prometheus, tmp_path):
    r = _report(prometheus, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    fabrics = json.loads((tmp_path / "summary.json").read_text())["fabrics"]
    assert set(fabrics) == set(FABRICS)
    for fabric in FABRICS:
        _check(fabrics[fabric], fabric)


@pytest.mark.parametrize("fabric", [f for f in FABRICS if f != "plain"])
def test_a_hostile_name_given_with_fabric(prometheus, tmp_path, fabric):
    r = _report(prometheus, tmp_path, "--fabric", fabric)
    assert r.returncode == 0, r.stdout + r.stderr
    fabrics = json.loads((tmp_path / "summary.json").read_text())["fabrics"]
    assert list(fabrics) == [fabric]
    _check(fabrics[fabric], fabric)


ROUND_TRIP = ['a"b\\c', 'x"} or vector(1) or {y="', "line\nbreak\ttab\rcr", "ctl\x01\x7f", "re.*+?()|[]{}^$\\d",
              "ünïcødé ✓", "'single'", "`back`", ""]


@pytest.mark.parametrize("value", ROUND_TRIP)
def test_quote_round_trips_through_prometheus(prometheus, value):
    """What quote() writes, Prometheus reads back as exactly the value; as a regex it matches the value
    and nothing longer."""
    from fabric_exporter.lab.prometheus import _get_json
    from fabric_exporter.promql import quote

    def labels(expr):
        url = f"{prometheus['url']}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        return [r["metric"] for r in _get_json(url)["data"]["result"]]

    with_w = f'label_replace(vector(1), "w", {quote(value)}, "", "")'
    assert labels(with_w) == ([{"w": value}] if value else [{}])
    matched = f'label_replace({with_w}, "m", "yes", "w", {quote(value, regex=True)})'
    assert labels(matched) == [{"w": value, "m": "yes"} if value else {"m": "yes"}]
    longer = f'label_replace(label_replace(vector(1), "w", {quote(value + "x")}, "", ""), "m", "yes", "w", ' \
             f'{quote(value, regex=True)})'
    assert labels(longer) == [{"w": value + "x"}]


def test_a_one_year_window_is_downsampled_and_says_so(prometheus, tmp_path):
    """A year of window (the data is seconds old): the step is chosen so a series has at most
    collect.MAX_POINTS points, the report says so, and its memory stays that of a small report."""
    from fabric_exporter.report.collect import MAX_POINTS
    from tests.harness.hostile_prometheus import run_measured

    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'exporter'}:{ROOT}"}
    run = run_measured([sys.executable, "-m", "fabric_exporter", "report", "--prometheus-url", prometheus["url"],
                        "--since", "365d", "--settings", str(prometheus["settings"]), "--out", str(tmp_path / "out")],
                       env=env, cwd=str(tmp_path), kill_after=300)
    print(f"\none-year window: {run}")
    assert run.returncode == 0, run
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    step = summary["window"]["step_seconds"]
    assert 365 * 86400 / step <= MAX_POINTS and step == 3154, summary["window"]
    assert f"note: step {step:g} s instead of the rules' 2 s" in run.stderr, run
    assert set(summary["fabrics"]) == set(FABRICS)
    assert run.peak_rss_mb < 300, run
