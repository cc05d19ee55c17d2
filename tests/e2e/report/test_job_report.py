"""``fabric-exporter report --job ID`` against a real Prometheus (issue #22).

The TSDB is backfilled (``promtool tsdb create-blocks-from openmetrics``) with an hour of what the
slurm_jobs collector and the job rules publish (CONTRACT.md), shaped so every figure is known:

- job 101 "llama-70b" on gpu-a and gpu-b all hour; job 102 on gpu-c, ended halfway; job 777 in two
  clusters (the report must ask which);
- job 101's severity (worst host): baseline 0.05; episode 1, samples 40-59 at 3.0, then 0.6 for four
  samples (above baseline + margin) before 0.05: 300 s, recovered 60 s after its end; episode 2,
  samples 150-159 at 2.0 then 0.05: 150 s, recovered at once; episode 3, samples 230-240 at 2.0 up to
  the window's end: end not seen, not recovered;
- roles: incast_target 2.5 in episode 1, victim 1.8 in episode 2, contributor 1.5 in episode 3;
- per host: gpu-a carries the job's severity, gpu-b half of it.

The Prometheus loads the generated rules (the report reads its settings from them: bridge gap 1m,
recovery margin 0.2). The page is opened in headless Chromium and screenshotted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_tool
from tests.harness.daemon import free_port
from tests.harness.prometheus import backfilled_prometheus

STEP = 15
T0 = (int(time.time()) // 3600 - 3) * 3600  # three hours ago, on the hour: backfilled blocks
SAMPLES = 241
END = T0 + (SAMPLES - 1) * STEP
JOB = 'job="fabric-exporter"'
BASE, RECOVERING = 0.05, 0.6


def job_severity(i: int) -> float:
    if 40 <= i < 60:
        return 3.0
    if 60 <= i < 64:
        return RECOVERING
    if 150 <= i < 160 or i >= 230:
        return 2.0
    return BASE


def role_score(role: str, i: int) -> float:
    peak = {"incast_target": (range(40, 60), 2.5), "victim": (range(150, 160), 1.8),
            "contributor": (range(230, SAMPLES), 1.5)}[role]
    return peak[1] if i in peak[0] else 0.1


def _lines() -> list[str]:
    lines = []

    def series(name, labels, value, samples=range(SAMPLES)):
        lines.extend(f"{name}{{{JOB},{labels}}} {value(i)} {T0 + i * STEP}" for i in samples)

    for host in ("gpu-a", "gpu-b", "gpu-c"):
        series("fabric_up", f'fabric="roce-lab",group="gpus",host="{host}",collector="roce_nic"', lambda i: 1)
    jobs = (("c1", "101", "llama-70b", "gpu-a", SAMPLES), ("c1", "101", "llama-70b", "gpu-b", SAMPLES),
            ("c1", "102", "bert", "gpu-c", SAMPLES // 2), ("c1", "777", "a", "gpu-a", SAMPLES),
            ("c2", "777", "b", "gpu-z", SAMPLES))
    for cluster, job_id, name, node, last in jobs:
        series("fabric_job_node_info", f'cluster="{cluster}",job_id="{job_id}",job_name="{name}",user="alice",'
               f'account="ml",partition="gpu",node="{node}"', lambda i: 1, range(last))
    series("fabric_job_start_time_seconds", 'cluster="c1",job_id="101"', lambda i: T0 - 600)
    series("fabric:job_congestion:severity", 'cluster="c1",job_id="101"', job_severity)
    series("fabric:job_congestion:severity", 'cluster="c1",job_id="102"', lambda i: BASE)
    for role in ("victim", "contributor", "incast_target"):
        series("fabric:job_role:score", f'cluster="c1",job_id="101",role="{role}"', lambda i, r=role: role_score(r, i))
    series("fabric:job_host_congestion:severity", 'cluster="c1",job_id="101",host="gpu-a"', job_severity)
    series("fabric:job_host_congestion:severity", 'cluster="c1",job_id="101",host="gpu-b"',
           lambda i: job_severity(i) / 2)
    return lines


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    from fabric_exporter.mixin import rules
    from fabric_exporter.mixin.generate import dump_yaml
    from fabric_exporter.mixin.settings import Settings

    work = tmp_path_factory.mktemp("job-report")
    rule_file = work / "rules.yaml"
    rule_file.write_text(dump_yaml(rules.to_prometheus(rules.build(Settings()))))
    server = backfilled_prometheus(work, "\n".join(_lines()) + "\n# EOF\n", [str(rule_file)]).start()
    try:
        yield server.base
    finally:
        server.stop()


def report(url: str, out: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'exporter'}:{ROOT}"}
    return subprocess.run([sys.executable, "-m", "fabric_exporter", "report", "--prometheus-url", url,
                           "--from", str(T0), "--to", str(END), "--step", str(STEP), "--out", str(out), *args],
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def job101(prometheus, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    r = report(prometheus, out, "--job", "101")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "job 101: 3 episode(s) on 2 host(s)" in r.stdout, r.stdout
    return out, json.loads((out / "summary.json").read_text())["job"]


def _iso(i: int) -> str:
    from fabric_exporter.report.collect import iso

    return iso(T0 + i * STEP)


def test_the_job_its_hosts_and_when_it_ran(job101):
    _, job = job101
    assert {k: job[k] for k in ("job_id", "cluster", "job_name", "user", "account", "partition")} == {
        "job_id": "101", "cluster": "c1", "job_name": "llama-70b", "user": "alice", "account": "ml", "partition": "gpu"}
    assert job["hosts"] == ["gpu-a", "gpu-b"] and job["hosts_count"] == 2
    assert job["start_time"] == _iso(-40)
    assert job["first_seen"] == _iso(0) and job["last_seen"] == _iso(SAMPLES - 1) and job["running_at_window_end"]


def test_episodes_with_duration_and_recovery(job101):
    _, job = job101
    c = job["congestion"]
    assert c["episodes_count"] == 3 and c["episodes_unrecovered_count"] == 1
    assert [(e["start"], e["end"], e["duration_seconds"], e["end_observed"]) for e in c["episodes"]] == [
        (_iso(40), _iso(60), 300, True), (_iso(150), _iso(160), 150, True), (_iso(230), _iso(241), 165, False)]
    assert [e["recovery_seconds"] for e in c["episodes"]] == [60, 0, None]
    assert [e["peak_severity_ratio"] for e in c["episodes"]] == [3.0, 2.0, 2.0]
    assert c["baseline_severity_ratio"] == BASE and c["severity_max_ratio"] == 3.0
    assert c["time_congested_seconds"] == (20 + 10 + 11) * STEP
    assert c["recovery_median_seconds"] == 30 and c["recovery_max_seconds"] == 60


def test_roles_and_the_role_of_each_episode(job101):
    _, job = job101
    by_role = job["roles"]["by_role"]
    assert {r: (v["max_score"], v["time_above_one_seconds"]) for r, v in by_role.items()} == {
        "incast_target": (2.5, 20 * STEP), "victim": (1.8, 10 * STEP), "contributor": (1.5, 11 * STEP)}
    assert job["roles"]["episode_dominant_roles"] == ["incast_target", "victim", "contributor"]


def test_worst_hosts_ranked(job101):
    _, job = job101
    assert job["worst_hosts"] == [
        {"host": "gpu-a", "max_severity_ratio": 3.0, "time_congested_seconds": 41 * STEP},
        {"host": "gpu-b", "max_severity_ratio": 1.5, "time_congested_seconds": 20 * STEP}]


def test_a_step_that_is_not_whole_seconds(prometheus, tmp_path):
    """--step 7.5: the subqueries' resolution is written in milliseconds (PromQL has no 7.5s)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'exporter'}:{ROOT}"}
    r = subprocess.run([sys.executable, "-m", "fabric_exporter", "report", "--prometheus-url", prometheus,
                        "--from", str(T0), "--to", str(END), "--step", "7.5", "--job", "101", "--out", str(tmp_path)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    job = json.loads((tmp_path / "summary.json").read_text())["job"]
    assert job["congestion"]["episodes_count"] == 3
    assert [h["host"] for h in job["worst_hosts"]] == ["gpu-a", "gpu-b"]


def test_a_job_that_ended_inside_the_window_is_reported(prometheus, tmp_path):
    r = report(prometheus, tmp_path, "--job", "102")
    assert r.returncode == 0, r.stderr
    job = json.loads((tmp_path / "summary.json").read_text())["job"]
    assert job["hosts"] == ["gpu-c"] and not job["running_at_window_end"]
    assert job["congestion"]["episodes_count"] == 0 and job["worst_hosts"] == []


@pytest.mark.parametrize("args, message", [
    (("--job", "999"), "job '999' held no node between"),
    (("--job", "777"), "ran in more than one cluster in the window ('c1', 'c2'): choose one with --cluster"),
    (("--job", "101", "--cluster", "c2"), "job '101' in cluster 'c2' held no node"),
    (("--cluster", "c1"), "--cluster goes with --job"),
])
def test_a_job_it_cannot_report_is_refused_with_a_reason(prometheus, tmp_path, args, message):
    r = report(prometheus, tmp_path / "out", *args)
    assert r.returncode == 2 and message in r.stderr, r.stdout + r.stderr
    assert not (tmp_path / "out").exists()


def test_the_cluster_picks_one_of_two_jobs_with_the_same_id(prometheus, tmp_path):
    r = report(prometheus, tmp_path, "--job", "777", "--cluster", "c2")
    assert r.returncode == 0, r.stderr
    job = json.loads((tmp_path / "summary.json").read_text())["job"]
    assert (job["cluster"], job["job_name"], job["hosts"]) == ("c2", "b", ["gpu-z"])


def test_the_job_section_renders_in_headless_chromium(job101, tmp_path):
    from tests.e2e.report.test_e2e_report import chromium_env

    chromium = require_tool("chromium")
    out, _ = job101
    page = (out / "index.html").read_text()
    for part in ('id="job-facts"', 'id="job-episodes"', 'id="job-roles"', 'id="job-worst-hosts"',
                 "llama-70b #101", "incast_target"):
        assert part in page, part
    shot = tmp_path / "job.png"
    r = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,2200",
         f"--proxy-server=127.0.0.1:{free_port()}", f"--user-data-dir={tmp_path / 'profile'}",
         f"--screenshot={shot}", (out / "index.html").as_uri()],
        env=chromium_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert shot.exists(), r.stderr[-2000:]
    from matplotlib import image

    rgb = image.imread(str(shot))[..., :3]
    assert (rgb.min(axis=2) < 0.9).mean() > 0.03 and rgb.std() > 0.05, "the screenshot is (nearly) blank"
    keep = os.environ.get("FABRIC_REPORT_ARTIFACTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / "job-report.png").write_bytes(shot.read_bytes())
