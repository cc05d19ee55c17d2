"""``promtool test rules`` cases written from the rules' own scenarios.

For every alert rule: one case whose input makes the expression true from ``onset``; it asserts no
firing alert one evaluation before ``for:`` has elapsed and exactly the expected alert (labels and
rendered annotations) once it has. For every recording rule: its exact value at one instant.
"""

from __future__ import annotations

import re

from .rules import AlertRule, RuleSet, Scenario, minutes

_LABEL_REF = re.compile(r"\{\{\s*\$labels\.(\w+)\s*\}\}")


def render(template: str, labels: dict) -> str:
    """Expand ``{{ $labels.x }}`` the way Prometheus does (a missing label is empty); anything else
    in a template is a bug here, because the tests could not predict it."""
    text = _LABEL_REF.sub(lambda m: labels.get(m.group(1), ""), template)
    if "{{" in text:
        raise ValueError(f"template uses more than $labels: {template!r}")
    return text


def _alert_case(a: AlertRule, sc: Scenario, index: int) -> dict:
    wait = minutes(a.for_)
    before, after = sc.onset + wait - 1, sc.onset + wait
    labels = {**sc.labels, "component": a.component, "severity": a.severity}
    annotations = {"summary": a.summary, "description": render(a.description, sc.labels),
                   "runbook_url": a.runbook_url}
    return {
        "name": f"{a.alert} #{index}: silent at {before}m, firing at {after}m (onset {sc.onset}m, for {a.for_})",
        "interval": "1m",
        "input_series": [{"series": s, "values": v} for s, v in sc.series],
        "alert_rule_test": [
            {"eval_time": f"{before}m", "alertname": a.alert, "exp_alerts": []},
            {"eval_time": f"{after}m", "alertname": a.alert,
             "exp_alerts": [{"exp_labels": labels, "exp_annotations": annotations}]},
        ],
    }


def _labels_text(labels: dict, name: str) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def build_tests(rs: RuleSet, rule_file: str) -> dict:
    tests = []
    for r in rs.recordings():
        tests.append({
            "name": f"recording {r.record}",
            "interval": "1m",
            "input_series": [{"series": s, "values": v} for s, v in r.test_series],
            "promql_expr_test": [{
                "expr": r.record,
                "eval_time": f"{r.test_at}m",
                "exp_samples": [{"labels": _labels_text(lbl, r.record), "value": v} for lbl, v in r.test_expect],
            }],
        })
    seen: dict[str, int] = {}
    for a in rs.alerts():
        for sc in a.scenarios():
            seen[a.alert] = seen.get(a.alert, 0) + 1
            tests.append(_alert_case(a, sc, seen[a.alert]))
    return {
        "rule_files": [rule_file],
        "evaluation_interval": "1m",
        # Recording groups first, so alerts read this evaluation's recorded values (as in the file).
        "group_eval_order": [name for name, _ in rs.recording_groups] + [name for name, _ in rs.alert_groups],
        "tests": tests,
    }
