"""``promtool test rules`` cases written from the rules' own scenarios.

For every alert rule: one case whose input makes the expression true from ``onset``; it asserts no
firing alert one evaluation before ``for:`` has elapsed and exactly the expected alert (labels and
rendered annotations) once it has. For every recording rule: its exact value at one instant.

promtool evaluates every rule at every step from 0 to the latest eval time, so scenarios that need a
day of history use hourly steps and go to a second file with a 1h evaluation interval.
"""

from __future__ import annotations

import math
import re

from .rules import AlertRule, RuleSet, Scenario, duration_seconds, labels_text

_LABEL_REF = re.compile(r"\{\{\s*\$labels\.(\w+)\s*\}\}")


def render(template: str, labels: dict) -> str:
    """Expand ``{{ $labels.x }}`` the way Prometheus does (a missing label is empty); anything else
    in a template is a bug here, because the tests could not predict it."""
    text = _LABEL_REF.sub(lambda m: labels.get(m.group(1), ""), template)
    if "{{" in text:
        raise ValueError(f"template uses more than $labels: {template!r}")
    return text


def for_steps(a: AlertRule, step: int) -> int:
    """Evaluations (of ``step`` minutes) until an alert active since onset is firing."""
    return math.ceil(duration_seconds(a.for_) / (60 * step))


def eval_times(a: AlertRule, sc: Scenario) -> tuple[int, int]:
    """(silent, firing) evaluation times in minutes."""
    wait = for_steps(a, sc.step)
    return (sc.onset + wait - 1) * sc.step, (sc.onset + wait) * sc.step


def _alert_case(a: AlertRule, sc: Scenario, index: int) -> dict:
    before, after = eval_times(a, sc)
    labels = {**sc.labels, "component": a.component, "severity": a.severity}
    annotations = {"summary": a.summary, "description": render(a.description, sc.labels),
                   "runbook_url": a.runbook_url}
    return {
        "name": f"{a.alert} #{index}: silent at {before}m, firing at {after}m (for {a.for_})",
        "interval": f"{sc.step}m",
        "input_series": [{"series": s, "values": v} for s, v in sc.series],
        "alert_rule_test": [
            {"eval_time": f"{before}m", "alertname": a.alert, "exp_alerts": []},
            {"eval_time": f"{after}m", "alertname": a.alert,
             "exp_alerts": [{"exp_labels": labels, "exp_annotations": annotations}]},
        ],
    }


def _labels_text(labels: dict, name: str) -> str:
    return name + labels_text(labels)


def build_tests(rs: RuleSet, rule_file: str) -> dict[int, dict]:
    """Evaluation step in minutes -> promtool test file document."""
    if not rs.testable:
        raise ValueError("rate_window must be whole minutes (>= 2m) to generate promtool tests")
    by_step: dict[int, list] = {}
    for r in rs.recordings():
        by_step.setdefault(r.test_step, []).append({
            "name": f"recording {r.record}",
            "interval": f"{r.test_step}m",
            "input_series": [{"series": s, "values": v} for s, v in r.test_series],
            "promql_expr_test": [{
                "expr": r.record,
                "eval_time": f"{r.test_at * r.test_step}m",
                "exp_samples": [{"labels": _labels_text(lbl, r.record), "value": v} for lbl, v in r.test_expect],
            }],
        })
    seen: dict[str, int] = {}
    for a in rs.alerts():
        for sc in a.scenarios():
            seen[a.alert] = seen.get(a.alert, 0) + 1
            by_step.setdefault(sc.step, []).append(_alert_case(a, sc, seen[a.alert]))
    # Recording groups first, so alerts read this evaluation's recorded values (as in the file).
    order = [name for name, _ in rs.recording_groups] + [name for name, _ in rs.alert_groups]
    return {step: {"rule_files": [rule_file], "evaluation_interval": f"{step}m", "group_eval_order": order,
                   "tests": tests} for step, tests in sorted(by_step.items())}
