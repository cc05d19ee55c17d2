"""The settings the report reads from the loaded rules: what the generator records reads back as the
same settings, a --settings file that disagrees is refused with every difference named, and rules
without the record (or loaded twice with different settings) are a clear error. Real input: the rule
groups the generator writes, shaped as Prometheus's rules API returns them (name, labels per rule)."""

from __future__ import annotations

import pytest

from fabric_exporter.lab.run import LAB_MIXIN_SETTINGS
from fabric_exporter.mixin import rules
from fabric_exporter.mixin.settings import REPORT_SETTINGS, Settings
from fabric_exporter.report import loaded_rules
from fabric_exporter.report.prom import ReportError


def api_groups(settings: Settings, interval: str = "15s") -> list[dict]:
    """The generated rule file as /api/v1/rules lists it (its rules keyed by name, intervals in seconds)."""
    out = []
    for g in rules.to_prometheus(rules.build(settings))["groups"]:
        out.append({"name": g["name"], "interval": float(interval.rstrip("s")), "rules": [
            {"name": r.get("record") or r.get("alert"), "query": r["expr"], "labels": r.get("labels", {})}
            for r in g["rules"]]})
    return out


def test_recorded_settings_read_back_exactly():
    lab = Settings(LAB_MIXIN_SETTINGS)
    got = loaded_rules.read(api_groups(lab))
    assert got.interval == 15.0
    for path in REPORT_SETTINGS:
        assert got.settings[path] == lab[path], path
    # the lab's IB threshold is a scaled float: it must survive the label round trip bit for bit
    assert got.settings["congestion.ib_xmit_wait_ratio"] == lab["congestion.ib_xmit_wait_ratio"] != 0.05


def test_a_disagreeing_settings_file_is_refused_naming_each_difference():
    recorded = loaded_rules.read(api_groups(Settings(LAB_MIXIN_SETTINGS))).settings
    loaded_rules.check_given(recorded, Settings(LAB_MIXIN_SETTINGS), "lab.yaml")  # the same: accepted
    # the same durations written differently are the same setting; unrelated settings do not matter
    loaded_rules.check_given(recorded, Settings({**LAB_MIXIN_SETTINGS, "rate_window": "60s",
                                                 "thresholds": {"poll_error_ratio": 0.9}}), "lab.yaml")
    with pytest.raises(ReportError) as e:
        loaded_rules.check_given(recorded, Settings(), "defaults.yaml")
    text = str(e.value)
    assert "--settings defaults.yaml disagrees" in text
    for difference in ("rate_window: '1m' in the rules, '5m' in the file",
                       "congestion.pfc_pause_fraction: 0.05 in the rules, 0.1 in the file",
                       "congestion.bridge_gap: '30s' in the rules, '1m' in the file",
                       "congestion.ib_xmit_wait_ratio: "):
        assert difference in text, text
    assert "selector" not in text and "ecn_marked_ratio" not in text  # equal ones are not named


def test_rules_without_the_record_or_without_the_group_are_clear_errors():
    groups = api_groups(Settings())
    old = [{**g, "rules": [r for r in g["rules"] if r["name"] != "fabric:mixin_settings:info"]} for g in groups]
    with pytest.raises(ReportError, match="do not record the settings they were generated with.*regenerate them"):
        loaded_rules.read(old)
    with pytest.raises(ReportError, match="has no rule group 'fabric-exporter.congestion.recording'"):
        loaded_rules.read([g for g in groups if "congestion" not in g["name"]])


def test_two_rule_files_with_different_settings_are_refused():
    twice = api_groups(Settings()) + api_groups(Settings({"rate_window": "2m"}))
    with pytest.raises(ReportError, match=r"loaded more than once.*rate_window: '5m' in the rules, '2m' in the other"):
        loaded_rules.read(twice)
    assert loaded_rules.read(api_groups(Settings()) + api_groups(Settings())).settings["rate_window"] == "5m"
