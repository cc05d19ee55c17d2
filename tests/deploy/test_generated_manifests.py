"""deploy_k8s: the committed PrometheusRule and dashboard ConfigMaps equal a fresh generation from
alerts/ and dashboards/ (rerun `python -m fabric_exporter.deploy_k8s` after the mixin changes), and
the generator itself behaves on small inputs: order, skipping promtool test files, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fabric_exporter import deploy_k8s

from ..conftest import require_tool
from ..harness.daemon import package_env
from .conftest import ROOT


def test_committed_manifests_match_a_fresh_generation():
    stale = deploy_k8s.stale_files(ROOT)
    assert not stale, f"out of date: {[str(p.relative_to(ROOT)) for p in stale]}; run " \
                      "`PYTHONPATH=exporter python -m fabric_exporter.deploy_k8s` and commit the result"


def test_same_groups_as_the_mixins_own_prometheusrule():
    """The mixin also writes a PrometheusRule (alerts/*.prometheusrule.yaml, skipped as input since it
    has no top-level groups): ours, built from the rule files, must carry exactly its groups."""
    theirs = sorted((ROOT / "alerts").glob("*.prometheusrule.yaml"))
    if not theirs:
        pytest.skip("the mixin writes no PrometheusRule of its own")
    ours = next(d for d in yaml.safe_load_all((ROOT / deploy_k8s.RULE_FILE).read_text()) if d)
    groups = [g for path in theirs for g in yaml.safe_load(path.read_text())["spec"]["groups"]]
    assert groups and ours["spec"]["groups"] == groups


def test_check_mode_exit_codes(tmp_path: Path):
    cmd = [sys.executable, "-m", "fabric_exporter.deploy_k8s", "--repo-root", str(tmp_path)]
    (tmp_path / "alerts").mkdir()
    assert subprocess.run(cmd + ["--check"], env=package_env(), capture_output=True, timeout=60).returncode == 1
    assert subprocess.run(cmd, env=package_env(), capture_output=True, timeout=60).returncode == 0
    assert subprocess.run(cmd + ["--check"], env=package_env(), capture_output=True, timeout=60).returncode == 0


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "alerts").mkdir()
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "alerts" / "b-links.yaml").write_text(yaml.safe_dump({"groups": [
        {"name": "fabric-links", "rules": [{"alert": "FabricLinkDown", "expr": "fabric_link_up == 0",
                                            "for": "2m", "labels": {"severity": "critical"}}]}]}))
    (tmp_path / "alerts" / "a-exporter.yaml").write_text(yaml.safe_dump({"groups": [
        {"name": "fabric-exporter", "rules": [{"record": "job:x:rate5m",
                                               "expr": "sum by (job) (\n  rate(x_total[5m])\n)"}]}]}))
    # A promtool unit-test file lives beside the rules and is not a rule file.
    (tmp_path / "alerts" / "links.test.yaml").write_text(yaml.safe_dump({"rule_files": ["b-links.yaml"], "tests": []}))
    (tmp_path / "dashboards" / "Fabric Overview.json").write_text(json.dumps({"uid": "fabric-overview", "title": "O"}, indent=2) + "\n")
    (tmp_path / "dashboards" / "roce-congestion.json").write_text('{"uid": "fabric-roce", "title": "R"}\n')
    return tmp_path


def test_generation_on_a_small_mixin(tmp_path: Path):
    root = _tree(tmp_path)
    first = deploy_k8s.render(root)
    assert first == deploy_k8s.render(root)  # deterministic
    (rule,) = [d for d in yaml.safe_load_all(first[deploy_k8s.RULE_FILE]) if d]
    assert rule["kind"] == "PrometheusRule"
    assert [g["name"] for g in rule["spec"]["groups"]] == ["fabric-exporter", "fabric-links"]  # file order
    assert rule["spec"]["groups"][0]["rules"][0]["expr"] == "sum by (job) (\n  rate(x_total[5m])\n)"
    maps = [d for d in yaml.safe_load_all(first[deploy_k8s.DASHBOARD_FILE]) if d]
    assert [m["metadata"]["name"] for m in maps] == ["fabric-exporter-dashboard-fabric-overview",
                                                     "fabric-exporter-dashboard-roce-congestion"]
    for m, source in zip(maps, sorted((root / "dashboards").glob("*.json"))):
        assert m["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert m["data"] == {source.name: source.read_text()}  # byte-for-byte the committed JSON
    assert deploy_k8s.write_k8s_manifests(root) and not deploy_k8s.write_k8s_manifests(root)
    assert deploy_k8s.stale_files(root) == []


def test_generator_refuses_bad_input(tmp_path: Path):
    root = _tree(tmp_path)
    (root / "alerts" / "c-dup.yaml").write_text(yaml.safe_dump({"groups": [{"name": "fabric-links", "rules": []}]}))
    with pytest.raises(deploy_k8s.GenerateError, match="fabric-links"):
        deploy_k8s.render(root)
    (root / "alerts" / "c-dup.yaml").unlink()
    (root / "dashboards" / "broken.json").write_text("{not json")
    with pytest.raises(deploy_k8s.GenerateError, match="broken.json"):
        deploy_k8s.render(root)


def test_committed_rules_pass_promtool(tmp_path: Path):
    promtool = require_tool("promtool")
    (rule,) = [d for d in yaml.safe_load_all((ROOT / deploy_k8s.RULE_FILE).read_text()) if d]
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    result = subprocess.run([promtool, "check", "rules", str(rules_file)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
