"""Every expression the mixin ships parses, and references only catalog metrics or our recording rules;
every dashboard follows the house rules; every alert has its runbook page."""

import json
import os
import re
import subprocess

import pytest
import yaml

from fabric_exporter.catalog import CATALOG
from fabric_exporter.mixin import dashboards, generate, rules
from fabric_exporter.mixin.panels import queries_of
from fabric_exporter.mixin.settings import Settings
from fabric_exporter.serving.selfmetrics import GLOBAL_FAMILIES

SETTINGS = Settings()
RULESET = rules.build(SETTINGS)
BOARDS = dashboards.build_all(SETTINGS)
SERIES_NAMES = {name for spec in CATALOG.values() for name in spec.series_names()}
RECORDED = {r.record for r in RULESET.recordings()}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NAME = re.compile(r"\bfabric[_:][A-Za-z0-9_:]*")
_SELECTED = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*[{\[]")
# Words that may precede "{" or "[" in PromQL without being a metric name.
_NOT_METRICS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset"}


def metric_names(expr: str) -> set[str]:
    bare = _STRING.sub('""', expr)
    names = set(_NAME.findall(bare))
    names |= {m for m in _SELECTED.findall(bare) if m not in _NOT_METRICS}
    return names


def _panel_exprs():
    for board_name, board in sorted(BOARDS.items()):
        for title, expr in queries_of(board):
            yield board_name, title, expr


def _as_promql(expr: str) -> str:
    """A dashboard query as plain PromQL: Grafana's interval variables become durations, and
    label_values(expr, label) becomes expr. $variables inside matcher strings are valid regexes."""
    m = re.fullmatch(r"label_values\((.*),\s*\w+\)", expr) or re.fullmatch(r"query_result\((.*)\)", expr)
    if m:
        expr = m.group(1)
    return (expr.replace("$__rate_interval", "5m").replace("$__interval", "1m").replace("$__range", "1h"))


def test_rule_expressions_reference_only_catalog_or_recorded_names():
    for r in RULESET.recordings():
        assert metric_names(r.expr) <= SERIES_NAMES | RECORDED, (r.record, metric_names(r.expr) - SERIES_NAMES - RECORDED)
    for a in RULESET.alerts():
        assert metric_names(a.expr) <= SERIES_NAMES | RECORDED, (a.alert, metric_names(a.expr) - SERIES_NAMES - RECORDED)


def test_recording_names_follow_level_metric_operation():
    for r in RULESET.recordings():
        assert re.fullmatch(r"fabric:[a-z0-9_]+:[a-z0-9_]+", r.record), r.record
        assert r.record not in SERIES_NAMES


def test_panel_queries_reference_only_catalog_or_recorded_names():
    known = SERIES_NAMES | RECORDED
    bad = [(b, t, metric_names(_as_promql(e)) - known) for b, t, e in _panel_exprs() if metric_names(_as_promql(e)) - known]
    assert not bad, bad


def test_reference_checker_notices_an_unknown_name():
    assert metric_names('rate(fabric_ib_port_xmit_wiat_total{job="x"}[5m])') - SERIES_NAMES
    assert metric_names('sum by (fabric) (up{job="fabric_thing"})') == {"up"}


def test_every_panel_query_parses(promtool, tmp_path):
    """Each query goes into a throwaway recording rule file that promtool checks."""
    rules_doc = {"groups": [{"name": "panels", "rules": [
        {"record": f"panel:query_{i}:check", "expr": _as_promql(expr)} for i, (_, _, expr) in enumerate(_panel_exprs())
    ]}]}
    path = tmp_path / "panels.rules.yaml"
    path.write_text(yaml.safe_dump(rules_doc))
    r = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"SUCCESS: {len(rules_doc['groups'][0]['rules'])} rules found" in r.stdout


def test_panels_use_rate_interval_not_fixed_windows():
    for board, title, expr in _panel_exprs():
        for window in re.findall(r"\b(?:rate|irate|increase|changes)\([^\[]*\[([^\]]+)\]", expr):
            # a figure over the whole dashboard range (episodes counted) says so in its title
            allowed = {"$__rate_interval", "$__range"} if "(dashboard range)" in title else {"$__rate_interval"}
            assert window in allowed, (board, title, expr)


def test_dashboard_house_rules():
    uids = set()
    for name, board in BOARDS.items():
        assert board["uid"].startswith("fabric-") and board["uid"] not in uids
        uids.add(board["uid"])
        assert [i["name"] for i in board["__inputs"]] == ["DS_PROMETHEUS"]
        variables = {v["name"]: v for v in board["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource" and "fabric" in variables
        ids = [p["id"] for p in board["panels"]]
        assert ids == list(range(1, len(ids) + 1)), name
        for p in board["panels"]:
            if p["type"] == "row":
                continue
            assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, (name, p["title"])
            unit = (p.get("fieldConfig", {}).get("defaults", {}).get("unit") or p.get("format")
                    or p.get("yAxis", {}).get("format") or (p.get("yaxes") or [{}])[0].get("format"))
            assert unit and unit != "none", (name, p["title"])
            assert p["targets"], (name, p["title"])
            for t in p["targets"]:
                # a job panel is per cluster (jobs span fabrics): it selects by $cluster and $job instead;
                # the process-wide self-metrics have no fabric to select
                assert "$fabric" in t["expr"] or "$cluster" in t["expr"] \
                    or any(family in t["expr"] for family in GLOBAL_FAMILIES), (name, p["title"], t["expr"])
            x, w = p["gridPos"]["x"], p["gridPos"]["w"]
            assert 0 <= x and x + w <= 24
    assert {"fabric-overview", "fabric-infiniband", "fabric-roce", "fabric-latency", "fabric-exporter"} == set(BOARDS)


def test_drill_down_links_point_at_our_dashboards():
    uids = {b["uid"] for b in BOARDS.values()}
    found = 0
    for board in BOARDS.values():
        text = json.dumps(board)
        for uid in re.findall(r"/d/([\w-]+)\?", text):
            assert uid in uids
            found += 1
    assert found >= 5


def test_every_alert_has_a_runbook_page(repo):
    for name in RULESET.alert_names():
        path = os.path.join(repo, "docs", "runbooks", f"{name}.md")
        assert os.path.exists(path), f"missing runbook {path}"
        text = open(path, encoding="utf-8").read()
        assert text.startswith(f"# {name}"), path
        for section in ("## Meaning", "## Confirm", "## Act"):
            assert section in text, (path, section)


def test_committed_rules_file_is_what_prometheus_loads(repo):
    with open(os.path.join(repo, "alerts", generate.RULE_FILE)) as f:
        loaded = yaml.safe_load(f)
    assert loaded == rules.to_prometheus(RULESET)


def test_prometheusrule_wraps_the_same_groups(repo):
    with open(os.path.join(repo, "alerts", generate.K8S_FILE)) as f:
        k8s = yaml.safe_load(f)
    assert k8s["apiVersion"] == "monitoring.coreos.com/v1" and k8s["kind"] == "PrometheusRule"
    assert k8s["spec"] == rules.to_prometheus(RULESET)


def test_only_the_panel_factory_imports_grafanalib(repo):
    """House rule 7: a move off grafanalib touches panels.py only."""
    package = os.path.join(repo, "exporter", "fabric_exporter")
    importers = []
    for folder, _, files in os.walk(package):
        for name in files:
            if name.endswith(".py") and re.search(r"^\s*(from|import)\s+grafanalib", open(os.path.join(folder, name)).read(), re.M):
                importers.append(os.path.relpath(os.path.join(folder, name), package))
    assert importers == [os.path.join("mixin", "panels.py")]


def test_panels_refuse_a_missing_unit():
    from fabric_exporter.mixin import panels
    with pytest.raises(ValueError, match="needs a unit"):
        panels.timeseries("x", [panels.Query("fabric_up")], "")
    with pytest.raises(ValueError, match="needs a unit"):
        panels.table("x", [panels.Query("fabric_up")], "")
