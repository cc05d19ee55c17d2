"""Job attribution end to end (issue 22): the lab's real Slurm, its simulated hosts named as the Slurm
nodes (RoCE NIC hosts and ibsim HCAs alike), the daemon and a real Prometheus evaluating the
generated rules at the poll interval.

Over random placements: job A and job B on disjoint hosts, job C sharing a node with A or B (jobs
share nodes on distinct cores); an incast injected on A's hosts only (lab scenario
``incast_roce?hosts=`` / ``incast_ib?hosts=``). Then ``fabric:job_congestion:severity`` must rise
above 1 for A (and for C when it shares A's node) and stay below 0.1 for B (and for C when it does
not), within two polls plus one rule interval of the injection (plus the lab's counter tick and the
scrape that carries the second poll to Prometheus: ``Variant.deadline``; one poll more is allowed for
a loaded machine, and the placements past the strict deadline are reported). A job flagged that should
not be, or not flagged that should, is a misattribution; none is allowed, and
``prometheus_rule_evaluation_failures_total`` stays 0. Every wait is bounded.

- roce: 20 placements, 1 s polls, the NIC ports' severity (host label = node name);
- ib: 6 placements, 2 s polls, the HCA ports and the leaf ports facing them, through
  ``fabric_ib_node_host_info`` (issue 22's hostmap part; skipped in a tree without it).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass

import pytest

from fabric_exporter.catalog import CATALOG

from tests.conftest import require_tool
from tests.harness.daemon import package_env
from tests.harness.lab_process import running_lab

HOSTS = [f"gpu-{i:03d}" for i in range(1, 7)]  # --racks 2 --hosts-per-rack 3
LAB_TICK = 1.0  # the lab's traffic model moves the counters once a second


@dataclass(frozen=True)
class Variant:
    scenario: str  # the lab's incast scenario, on A's hosts only
    poll: float  # the lab's poll interval = Prometheus' scrape and rule evaluation interval
    window: str  # the rules' rate window (4 polls)
    placements: int
    lab_args: tuple[str, ...]

    @property
    def deadline(self) -> float:
        """Two polls (the rate needs the second one) plus one rule interval, plus what the lab adds
        before and after: the injection lands at the next traffic tick, and Prometheus scrapes the
        second poll's result one scrape interval later."""
        return LAB_TICK + 2 * self.poll + self.poll + self.poll


VARIANTS = {
    # RoCE NIC ports (host label = Slurm node name): 1 s polls, 20 placements
    "roce": Variant("incast_roce", 1.0, "4s", 20, ("--no-ib",)),
    # IB HCA ports and the leaf ports facing them, joined through fabric_ib_node_host_info (the
    # hostmap part of issue 22): ibsim sweeps are slower, so 2 s polls and fewer placements
    "ib": Variant("incast_ib", 2.0, "8s", 6, ()),
}
SUMMARY: dict[str, dict] = {}


def prom_query(port: int, expr: str) -> dict[str, float]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as r:
        result = json.loads(r.read())["data"]["result"]
    return {s["metric"].get("job_id", s["metric"].get("host", "")): float(s["value"][1]) for s in result}


def control(port: int, method: str, path: str) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def rule_failures(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return sum(float(line.rsplit(" ", 1)[1]) for line in r.read().decode().splitlines()
                   if line.startswith("prometheus_rule_evaluation_failures_total"))


def ready(fabric: str):
    def check(lab) -> bool:
        text = lab.metrics()
        ups = [line for line in text.splitlines() if line.startswith("fabric_up{")]
        return ("lab is running" in lab.log() and any('group="slurm"' in u for u in ups)
                and (fabric != "ib" or "fabric_ib_node_host_info{" in text))
    return check


@pytest.mark.slow
@pytest.mark.parametrize("fabric", sorted(VARIANTS))
def test_congestion_on_one_jobs_hosts_is_attributed_to_that_job_only(tmp_path, fabric):
    v = VARIANTS[fabric]
    for t in ("prometheus", "slurmctld", "slurmd", "munged", "sbatch") + (("ibsim", "opensm") if fabric == "ib" else ()):
        require_tool(t)
    if fabric == "ib" and "fabric_ib_node_host_info" not in CATALOG:
        pytest.skip("the IB host map (fabric_ib_node_host_info, issue 22's hostmap part) is not in this tree")
    rng = random.Random(2222)
    with running_lab(tmp_path, *v.lab_args, "--racks", "2", "--hosts-per-rack", "3", "--nics", "1",
                     "--interval", f"{v.poll:g}", "--rules-rate-window", v.window,
                     ready=ready(fabric), up_within=180) as lab:
        env = {**package_env(), "SLURM_CONF": str(tmp_path / "lab" / "slurm" / "slurm.conf")}
        prom = lab.prometheus

        def sbatch(nodes: list[str], name: str) -> str:
            return subprocess.run(
                ["sbatch", "--parsable", f"--job-name={name}", f"-N{len(nodes)}", "-w", ",".join(nodes),
                 "--ntasks-per-node=1", f"--chdir={tmp_path}", f"--output={tmp_path}/job-%j.out", "--wrap=sleep 600"],
                env=env, capture_output=True, text=True, timeout=20, check=True).stdout.strip()

        wait(lambda: prom_query(prom, "fabric:host_congestion:severity"), 60, "host severities in Prometheus")
        misattributions, latencies, late, very_late = [], [], 0, 0
        for placement in range(v.placements):
            a = rng.sample(HOSTS, rng.randint(1, 2))
            b = rng.sample([h for h in HOSTS if h not in a], rng.randint(1, 2))
            c = sorted({rng.choice(a + b), *rng.sample(HOSTS, rng.randint(0, 1))})
            jobs = {"A": sbatch(a, "a"), "B": sbatch(b, "b"), "C": sbatch(c, "c")}
            hot = {"A": True, "B": False, "C": bool(set(c) & set(a))}
            ids = set(jobs.values())
            try:
                wait(lambda: ids <= set(prom_query(prom, "fabric:job_host:info")), 30,
                     f"placement {placement}: the jobs in Prometheus")
                # the previous placement's congestion has left every rate window
                wait(lambda: max(prom_query(prom, "fabric:host_congestion:severity").values()) < 0.1, 30,
                     f"placement {placement}: a quiet fabric")
                t0 = time.monotonic()
                control(lab.control, "POST", f"/scenarios/{v.scenario}?hosts=" + ",".join(a))
                seen = None
                while time.monotonic() - t0 < 10 * v.deadline:
                    sev = prom_query(prom, "fabric:job_congestion:severity")
                    wrong = [k for k, j in jobs.items() if j in sev and not hot[k] and sev[j] >= 0.1]
                    if wrong:
                        misattributions.append((placement, a, b, c, wrong, sev))
                        break
                    if all(j in sev and (sev[j] > 1 if hot[k] else sev[j] < 0.1) for k, j in jobs.items()):
                        seen = time.monotonic() - t0
                        break
                    time.sleep(0.1)
                else:
                    misattributions.append((placement, a, b, c, "never attributed", sev))
                if seen is not None:
                    latencies.append(seen)
                    late += seen > v.deadline
                    very_late += seen > v.deadline + v.poll
            finally:
                control(lab.control, "DELETE", f"/scenarios/{v.scenario}")
                subprocess.run(["scancel", *ids], env=env, timeout=20)
        failures = rule_failures(prom)
        evaluations = prom_query(prom, "count(fabric:job_role:score)")
    SUMMARY[fabric] = dict(placements=v.placements, misattributions=len(misattributions), late=late,
                           deadline_s=v.deadline, max_latency_s=round(max(latencies), 2) if latencies else None,
                           median_latency_s=round(sorted(latencies)[len(latencies) // 2], 2) if latencies else None)
    print(f"\njob attribution e2e ({fabric}): {SUMMARY[fabric]}")
    if os.environ.get("FABRIC_E2E_SUMMARY"):
        with open(os.environ["FABRIC_E2E_SUMMARY"], "w") as f:
            json.dump(SUMMARY, f)
    assert misattributions == [], misattributions
    assert failures == 0
    assert evaluations  # the role rule produced series (no silent many-to-many failure)
    # Wall time on a shared machine: a loaded CI runner once delayed one poll of 20 placements
    # (5.96 s against 5 s). One poll of slack is allowed; the strict count is in SUMMARY (late).
    assert very_late == 0, (f"{very_late} placements slower than {v.deadline} s + one poll: "
                            f"{sorted(latencies)[-3:]}")
