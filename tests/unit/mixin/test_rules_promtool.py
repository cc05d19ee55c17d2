"""The committed rule file passes `promtool check rules`, its generated tests pass `promtool test rules`,
and those tests can fail: a rule that fires a minute early or late, or with another label, breaks them."""

import os
import re
import subprocess

import pytest
import yaml

from fabric_exporter.mixin import generate, rule_tests, rules
from fabric_exporter.mixin.settings import Settings

ALERTS_DIR = "alerts"
SEVERITIES = {"critical", "warning", "info"}


def _run(args, cwd):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def alerts_dir(repo):
    return os.path.join(repo, ALERTS_DIR)


def test_promtool_check_rules(promtool, alerts_dir):
    r = _run([promtool, "check", "rules", generate.RULE_FILE], alerts_dir)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout


def test_promtool_test_rules(promtool, alerts_dir):
    r = _run([promtool, "test", "rules", generate.TEST_FILE, generate.HOURLY_TEST_FILE], alerts_dir)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("SUCCESS") == 2


def test_every_alert_rule_has_a_before_and_after_case(alerts_dir):
    tests = []
    for name in (generate.TEST_FILE, generate.HOURLY_TEST_FILE):
        with open(os.path.join(alerts_dir, name)) as f:
            tests += yaml.safe_load(f)["tests"]
    rs = rules.build(Settings())
    cases: dict[str, list] = {}
    for t in tests:
        for case in t.get("alert_rule_test", []):
            cases.setdefault(case["alertname"], []).append(case)
    for a in rs.alerts():
        for sc in a.scenarios():
            silent, firing = rule_tests.eval_times(a, sc)
            # "just before for:" is one evaluation before it, "just after" the evaluation it elapses
            assert firing - silent == sc.step and firing - sc.onset * sc.step >= rules.duration_seconds(a.for_) / 60
            before = [c for c in cases[a.alert] if c["eval_time"] == f"{silent}m" and c["exp_alerts"] == []]
            after = [c for c in cases[a.alert] if c["eval_time"] == f"{firing}m" and c["exp_alerts"]]
            assert before and after, a.alert
    recorded = {t["promql_expr_test"][0]["expr"] for t in tests if "promql_expr_test" in t}
    assert recorded == {r.record for r in rs.recordings()}
    for t in tests:
        for case in t.get("promql_expr_test", []):
            assert case["exp_samples"], t["name"]  # an exact value, never "no result"


def test_alert_conventions():
    rs = rules.build(Settings())
    for a in rs.alerts():
        assert a.severity in SEVERITIES, a.alert
        assert "{{" not in a.summary, f"{a.alert}: summary must be static"
        # a job's alert spans fabrics: it names its cluster and job instead
        assert "{{ $labels.fabric }}" in a.description or a.alert.startswith("FabricExporter") or (
            a.component == "job" and "{{ $labels.job_id }}" in a.description), a.alert
        assert a.runbook_url.endswith(f"/{a.alert}.md")
        assert a.component in {"exporter", "infiniband", "roce_nic", "roce_switch", "latency", "job"}
    # one severity per alert name even when several rules (one per source) share it
    by_name: dict[str, set] = {}
    for a in rs.alerts():
        by_name.setdefault(a.alert, set()).add(a.severity)
    assert all(len(v) == 1 for v in by_name.values()), by_name


REQUIRED_ALERTS = {
    # congestion
    "FabricIBXmitWaitHigh", "FabricRocePfcPauseStorm", "FabricRocePfcPausesSustained", "FabricRoceEcnMarkingHigh",
    "FabricRoceCnpIgnored", "FabricRoceLosslessQueueDrops", "FabricRoceRetransmitTimeouts", "FabricRoceRepeatedBursts",
    # link health
    "FabricLinkSymbolErrors", "FabricLinkFlapping", "FabricLinkDown", "FabricLinkDegraded", "FabricPortErrors",
    "FabricPortDiscards",
    # tail latency
    "FabricLatencyP99High", "FabricLatencyP99Regression", "FabricLatencyProbeLoss",
    # the exporter itself
    "FabricTargetDown", "FabricPollsFailing", "FabricPollsSlow", "FabricTargetStale",
    "FabricExporterConfigReloadFailed", "FabricExporterAbsent", "FabricExporterEventLoopBehind",
}


def test_required_alerts_exist():
    assert REQUIRED_ALERTS <= set(rules.build(Settings()).alert_names())


def _mutated_copy(tmp_path, alerts_dir, pattern, replacement, keep):
    """The rule file with one edit, and only the test cases named ``keep`` (fast)."""
    text = open(os.path.join(alerts_dir, generate.RULE_FILE)).read()
    mutated, n = re.subn(pattern, replacement, text, count=1)
    assert n == 1, pattern
    (tmp_path / generate.RULE_FILE).write_text(mutated)
    with open(os.path.join(alerts_dir, generate.TEST_FILE)) as f:
        doc = yaml.safe_load(f)
    doc["tests"] = [t for t in doc["tests"] if t["name"].startswith(keep)]
    assert doc["tests"]
    (tmp_path / generate.TEST_FILE).write_text(yaml.safe_dump(doc))
    return doc


MUTATIONS = [
    # fires a minute early / late
    (r"(alert: FabricTargetDown\n(?:.*\n)*?\s+for: )5m", r"\g<1>4m", "FabricTargetDown"),
    (r"(alert: FabricIBXmitWaitHigh\n(?:.*\n)*?\s+for: )10m", r"\g<1>11m", "FabricIBXmitWaitHigh"),
    # wrong label
    (r"(alert: FabricRoceLosslessQueueDrops\n(?:.*\n)*?\s+severity: )critical", r"\g<1>warning",
     "FabricRoceLosslessQueueDrops"),
    # wrong threshold
    (r'ratio\{job="fabric-exporter"\} > 0.1$', 'ratio{job="fabric-exporter"} > 0.9', "FabricIBXmitWaitHigh"),
    (r'(lag_seconds_sum\{job="fabric-exporter"\}\[5m\]\)) > 0.5$', r"\g<1> > 0.95", "FabricExporterEventLoopBehind"),
    # bursts counted on the wrong signal (the sampler's rx pause time no longer counts)
    (r'signal=~"pfc_rx_pause_time\|pfc_tx_pause_time"', 'signal=~"pfc_tx_pause_time"', "FabricRoceRepeatedBursts"),
    # a recording rule whose value is off
    (r"(clamp_max\(.*), 1\)$", r"\g<1>, 0.3)", "recording fabric:ib_port_xmit_wait:ratio"),
    # a congestion mark against the wrong threshold, a fabric congested when it is not
    (r"(ratio\{job=\"fabric-exporter\"\} / )0.05$", r"\g<1>0.5", "recording fabric:ib_port_congestion:severity"),
    (r"(severity\{job=\"fabric-exporter\"\} > bool )1$", r"\g<1>0", "recording fabric:fabric_congested:bool"),
    # job attribution: a job's severity that is not its worst host's; a host map that keeps an ambiguous name
    (r"max by \(cluster, job_id\) \(fabric:job_host_congestion", "min by (cluster, job_id) (fabric:job_host_congestion",
     "recording fabric:job_congestion:severity"),
    (r"count by \(fabric, node_name\) \(max by \(fabric, node_name, host\) \(fabric:ib_node_host:info\)\) > 1",
     "count by (fabric, node_name) (fabric:ib_node_host:info) > 2", "recording fabric:host_congestion:severity"),
]


@pytest.mark.parametrize("pattern, replacement, keep", MUTATIONS, ids=[m[2] + str(i) for i, m in enumerate(MUTATIONS)])
def test_promtool_tests_catch_a_broken_rule(promtool, alerts_dir, tmp_path, pattern, replacement, keep):
    _mutated_copy(tmp_path, alerts_dir, "(?m)" + pattern, replacement, keep)
    r = _run([promtool, "test", "rules", generate.TEST_FILE], tmp_path)
    assert r.returncode != 0, "promtool tests passed on a broken rule file"


def test_promtool_subset_passes_unmutated(promtool, alerts_dir, tmp_path):
    """The control for the mutations above: the same subsets pass without the edit."""
    for _, _, keep in MUTATIONS:
        _mutated_copy(tmp_path, alerts_dir, r"(?m)^groups:", "groups:", keep)
        r = _run([promtool, "test", "rules", generate.TEST_FILE], tmp_path)
        assert r.returncode == 0, keep + r.stdout + r.stderr


def test_custom_settings_generate_passing_tests(promtool, tmp_path):
    """A site's thresholds and for: durations regenerate rules whose own tests pass."""
    settings = tmp_path / "site.yaml"
    settings.write_text(yaml.safe_dump({
        "selector": 'job="fabric", cluster="a"', "rate_window": "3m", "lossless_priority": "4",
        "lossless_queue": "UC4", "latency_baseline": "yesterday",
        "thresholds": {"ib_xmit_wait_ratio": 0.3, "pfc_pause_fraction": 0.5, "link_flaps_per_hour": 1},
        "for": {"FabricTargetDown": "90s", "FabricLinkFlapping": "2m", "FabricRocePfcPauseStorm": "0s"},
    }))
    out = tmp_path / "out"
    generate.generate(str(out), str(settings))
    r = _run([promtool, "test", "rules", generate.TEST_FILE, generate.HOURLY_TEST_FILE], out / "alerts")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("fraction", [0.2, 0.3, 0.05])
def test_any_congestion_pause_fraction_generates_passing_tests(promtool, tmp_path, fraction):
    """The job alert's scenario follows congestion.pfc_pause_fraction: with a fixed 0.6 s/s ramp, 0.2
    put a partial rate exactly on the threshold and generate refused to run."""
    settings = tmp_path / "site.yaml"
    settings.write_text(yaml.safe_dump({"congestion": {"pfc_pause_fraction": fraction}}))
    out = tmp_path / "out"
    generate.generate(str(out), str(settings))
    r = _run([promtool, "test", "rules", generate.TEST_FILE, generate.HOURLY_TEST_FILE], out / "alerts")
    assert r.returncode == 0, r.stdout + r.stderr


def test_hostile_lossless_queue_and_priority_stay_one_label_value(promtool, tmp_path):
    """Settings values are quoted by fabric_exporter.promql.quote wherever they enter a matcher or a
    test series: a queue named with a quote, a backslash and a would-be injection still gives rules
    promtool accepts and whose own tests pass (so the matcher selects exactly that value)."""
    settings = tmp_path / "site.yaml"
    settings.write_text(yaml.safe_dump({
        "lossless_priority": '3"} or vector(1) or {x="', "lossless_queue": 'UC"3\\',
        "rate_window": "5m"}))
    out = tmp_path / "out"
    generate.generate(str(out), str(settings))
    rule_text = (out / "alerts" / generate.RULE_FILE).read_text()
    assert 'queue="UC\\"3\\\\"' in rule_text and '{x=\\"' in rule_text  # escaped, inside the string
    r = _run([promtool, "check", "rules", generate.RULE_FILE], out / "alerts")
    assert r.returncode == 0, r.stdout + r.stderr
    r = _run([promtool, "test", "rules", generate.TEST_FILE, generate.HOURLY_TEST_FILE], out / "alerts")
    assert r.returncode == 0, r.stdout + r.stderr
