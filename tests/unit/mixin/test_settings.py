"""Settings: defaults, overrides, and that a typo or a bad value is an error, not a silent default."""

import pytest
import yaml

from fabric_exporter.mixin import rules
from fabric_exporter.mixin.settings import FOR_DEFAULTS, SETTINGS, Settings, SettingsError, defaults_yaml, load_settings


def test_every_setting_has_a_comment_and_every_alert_a_for_default():
    assert all(s.comment for s in SETTINGS)
    built = rules.build(Settings())
    assert set(built.alert_names()) == set(FOR_DEFAULTS)


def test_defaults_yaml_loads_back_to_the_defaults(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(defaults_yaml())
    assert load_settings(str(path)).as_dict() == Settings().as_dict()
    # Each section appears once: YAML keeps only the last of duplicate keys, so a copied file
    # with a repeated 'thresholds:' would silently drop the overrides in the earlier block.
    sections = [line for line in defaults_yaml().splitlines() if line and not line[0] in " #"]
    assert len(sections) == len(set(sections)), sections


def test_override_changes_thresholds_and_for(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"thresholds": {"ib_xmit_wait_ratio": 0.25},
                                    "for": {"FabricIBXmitWaitHigh": "30m"},
                                    "selector": 'job="fab"'}))
    rs = rules.build(load_settings(str(path)))
    (rule,) = [a for a in rs.alerts() if a.alert == "FabricIBXmitWaitHigh"]
    assert rule.expr == 'fabric:ib_port_xmit_wait:ratio{job="fab"} > 0.25'
    assert rule.for_ == "30m"
    assert all('job="fabric-exporter"' not in r.expr for r in rs.recordings())


@pytest.mark.parametrize("raw, message", [
    ({"thresholds": {"ib_xmit_wait_ration": 0.2}}, "unknown setting"),
    ({"for": {"FabricTargetDown": "five minutes"}}, "not a Prometheus duration"),
    ({"thresholds": {"pfc_pause_fraction": "high"}}, "non-negative number"),
    ({"thresholds": {"pfc_pause_fraction": -1}}, "non-negative number"),
    ({"runbook_url_pattern": "https://example.org/runbook"}, "{alertname}"),
    ({"latency_baseline": "last_week"}, "median_7d"),
])
def test_bad_settings_are_errors(raw, message):
    with pytest.raises(SettingsError, match=message):
        Settings(raw)


def test_runbook_url_pattern():
    s = Settings({"runbook_url_pattern": "https://wiki.example/{alertname}"})
    assert s.runbook_url("FabricLinkDown") == "https://wiki.example/FabricLinkDown"
