"""The Kubernetes join of docs/jobs.md, promtool-tested (issue #22): the expressions on the page are
the ones in tests/e2e/mixin/kubernetes/pod-congestion.rules.yaml, which promtool evaluates over synthetic
fabric:host_congestion:severity, kube_pod_info and kube_pod_owner series with two pods on one node,
a kube-state-metrics HA pair and a host measured by two exporters: the right value per pod and per
workload, and no many-to-many error. A naive join (the host side not aggregated to one series per
node first, or the one-per-node side given to group_left) fails on the same series, so the test can
tell them apart."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).parent / "kubernetes"
RULES = "pod-congestion.rules.yaml"
TESTS = "pod-congestion.rules.test.yaml"


def _documented(repo: str) -> list[str]:
    """The PromQL blocks of docs/jobs.md that follow a ``<!-- tested: RECORD -->`` marker, in order."""
    page = Path(repo, "docs", "jobs.md").read_text()
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"<!-- tested: (\S+) -->\s*```promql\n(.*?)```", page, re.S)]


def _normal(expr: str) -> str:
    return " ".join(expr.split())


def test_the_page_shows_the_tested_expressions(repo):
    rules = yaml.safe_load((HERE / RULES).read_text())["groups"][0]["rules"]
    documented = _documented(repo)
    assert [name for name, _ in documented] == [r["record"] for r in rules]
    for (name, expr), rule in zip(documented, rules):
        assert _normal(expr) == _normal(rule["expr"]), name


def test_promtool_evaluates_the_join(promtool):
    r = subprocess.run([promtool, "test", "rules", TESTS], cwd=HERE, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("naive", [
    # the host side as published (one series per exporter measuring the host)
    lambda e: e.replace("max by (host) (fabric:host_congestion:severity)", "fabric:host_congestion:severity"),
    # the node's one severity matched on the wrong side (two pods on one node)
    lambda e: e.replace("group_right ()", "group_left ()"),
])
def test_the_naive_join_fails_on_the_same_series(promtool, tmp_path, naive):
    shutil.copy(HERE / TESTS, tmp_path / TESTS)
    doc = yaml.safe_load((HERE / RULES).read_text())
    rule = doc["groups"][0]["rules"][0]
    broken = naive(rule["expr"])
    assert broken != rule["expr"]
    rule["expr"] = broken
    (tmp_path / RULES).write_text(yaml.safe_dump(doc))
    r = subprocess.run([promtool, "test", "rules", TESTS], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0, r.stdout
    assert "many-to-many matching not allowed" in r.stdout + r.stderr, r.stdout + r.stderr
