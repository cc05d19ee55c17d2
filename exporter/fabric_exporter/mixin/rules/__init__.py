"""Recording and alerting rules, built from the settings, with a promtool test scenario for each.

Every derived signal that both a dashboard and an alert read is a recording rule here, so its
expression lives once; rule names follow ``level:metric:operation`` (``fabric:`` level = per series
of the exporter, no aggregation). Each alert rule carries a ``Scenario``: input series that make its
expression true from a known minute, from which ``rule_tests.py`` writes a ``promtool test rules`` case
showing it silent one evaluation before ``for:`` elapses and firing at ``for:``, with exact labels
and annotations.

An alert name may have several rules (one per source: IB port, NIC port, switch interface), each
with a description naming that source's labels; they share summary, severity and runbook.

The rules live one module per domain (exporter, infiniband, roce, latency, congestion) on the shared
types and helpers of ``base.py``; this module assembles them.
"""

from __future__ import annotations

from ..settings import Settings
from .base import (CRITICAL, EXAMPLE, IB_PORT, INFO, LAT_GROUP_PAIR, NIC_PORT, SWITCH_IF, TARGET, WARNING,
                   AlertRule, Ctx, Ramp, Recording, RuleSet, Scenario, component_of, duration_seconds, fmt,
                   labels_text, minutes, pct)
from .congestion import CONGESTION_GROUP, congestion_rules
from .exporter import exporter_rules
from .infiniband import ib_rules
from .infiniband_detail import ib_detail_rules
from .jobs import job_rules
from .latency import LAT_BY, QUANTILES, latency_rules
from .roce import roce_rules

# The public names other modules (generate, rule_tests, congestion, report, lab, tests) use.
__all__ = ["CRITICAL", "EXAMPLE", "IB_PORT", "INFO", "LAT_BY", "LAT_GROUP_PAIR", "NIC_PORT", "QUANTILES", "SWITCH_IF",
           "TARGET", "WARNING", "AlertRule", "Ctx", "Ramp", "Recording", "RuleSet", "Scenario", "build",
           "component_of", "duration_seconds", "exporter_rules", "fmt", "ib_rules", "labels_text",
           "latency_rules", "minutes", "pct", "roce_rules", "to_prometheus"]

# --- assembly --------------------------------------------------------------------------------------

def build(settings: Settings) -> RuleSet:
    c = Ctx(settings)
    rs = RuleSet(testable=c.testable)
    ib_rec, ib_alerts = ib_rules(c)
    detail_rec, detail_alerts = ib_detail_rules(c)
    parts = (("exporter", exporter_rules(c)), ("infiniband", (ib_rec + detail_rec, ib_alerts + detail_alerts)),
             ("roce", roce_rules(c)),
             ("latency", latency_rules(c)))
    for domain, (rec, _) in parts:
        rs.recording_groups.append((f"fabric-exporter.{domain}.recording", rec))
    # after the groups it reads, so one evaluation sees this round's ratios
    rs.recording_groups.append((CONGESTION_GROUP, congestion_rules(c)))
    # after the congestion group: job attribution reads this round's port severities
    jobs_rec, jobs_alerts = job_rules(c)
    rs.recording_groups.append(("fabric-exporter.jobs.recording", jobs_rec))
    for domain, (_, alerts) in parts + (("jobs", ([], jobs_alerts)),):
        rs.alert_groups.append((f"fabric-exporter.{domain}.alerts", alerts))
    return rs


def to_prometheus(rs: RuleSet) -> dict:
    """The rule file as Prometheus loads it (``rule_files``)."""
    groups = []
    for name, recs in rs.recording_groups:
        groups.append({"name": name, "rules": [{"record": r.record, "expr": r.expr, **({"labels": dict(r.labels)}
                                                                                    if r.labels else {})}
                                               for r in recs]})
    for name, alerts in rs.alert_groups:
        rules = []
        for a in alerts:
            rule = {"alert": a.alert, "expr": a.expr, "labels": {"component": a.component, "severity": a.severity},
                    "annotations": {"summary": a.summary, "description": a.description,
                                    "runbook_url": a.runbook_url}}
            if duration_seconds(a.for_) > 0:
                rule["for"] = a.for_
            rules.append(rule)
        groups.append({"name": name, "rules": rules})
    return {"groups": groups}
