"""slurm_jobs against the lab's real Slurm (22.05, munge, one slurmd per node on 127.0.0.1): a
submitted job is published by the first poll after Slurm runs it and gone from the first poll
after scancel; JSON and text fallback agree; the series are what squeue's own text form says."""

from __future__ import annotations

import asyncio
import time

import pytest

from fabric_exporter.scheduler import Scheduler
from fabric_exporter.store import SnapshotStore
from fabric_exporter.transport.factory import Transports
from tests.harness.configs import parse_config


def poll(fmt: str = "auto", **options) -> tuple[str, dict[str, set[str]], str]:
    """One scheduler poll of slurm_jobs (transport local): state, job id -> nodes, the exposition."""
    cfg = parse_config({"targets": [{"name": "slurm", "fabric": "lab", "collector": "slurm_jobs",
                                     "transport": "local", "interval": "20s", "timeout": "10s",
                                     "hosts": [{"name": "login", "address": "localhost"}],
                                     "options": {"format": fmt, "cluster": "fabriclab", **options}}]})

    async def main():
        sched = Scheduler(Transports(), SnapshotStore())
        sched.apply(cfg, start_tasks=False)
        (state,) = await sched.poll_all_once()
        return state, sched.store.render().decode()

    state, text = asyncio.run(main())
    jobs: dict[str, set[str]] = {}
    for line in text.splitlines():
        if line.startswith("fabric_job_node_info{"):
            labels = dict(p.split("=", 1) for p in line[line.index("{") + 1:line.rindex("}")].split('",'))
            labels = {k: v.strip('"') for k, v in labels.items()}
            jobs.setdefault(labels["job_id"], set()).add(labels["node"])
    return state.state, jobs, text


@pytest.fixture(autouse=True)
def slurm_conf(slurm, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))


def wait(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_job_appears_within_one_poll_and_vanishes_within_one_poll_of_scancel(slurm, fmt):
    job = slurm.submit(["gpu-node-002", "gpu-node-004"], name="allreduce")
    try:
        slurm.wait_running([job])
        state, jobs, text = poll(fmt)
        assert state == "ok"
        assert jobs[job] == {"gpu-node-002", "gpu-node-004"}
        assert any(line.startswith("fabric_job_start_time_seconds{") and f'job_id="{job}"' in line
                   for line in text.splitlines())
    finally:
        slurm.cancel(job)
    wait(lambda: job not in slurm.running())
    state, jobs, _ = poll(fmt)
    assert state == "ok" and job not in jobs


def test_array_het_and_shared_nodes_match_squeue(slurm):
    w = str(slurm.workdir)
    common = ["--parsable", f"--output={w}/log/x.out", f"--chdir={w}"]
    arr = slurm.run("sbatch", *common, "--array=0-2", "-N1", "-w", "gpu-node-005", "--wrap=sleep 600").stdout.strip()
    het = slurm.run("sbatch", *common, "-N1", "-w", "gpu-node-001", ":", "-N1", "-w", "gpu-node-006",
                    "--wrap=sleep 600").stdout.strip()
    a = slurm.submit(["gpu-node-001", "gpu-node-005"], name="shares")
    try:
        wanted = [f"{arr}_0", f"{arr}_1", f"{arr}_2", f"{het}+0", f"{het}+1", a]
        slurm.wait_running(wanted)
        truth = {j: set(n) for j, n in slurm.running().items()}
        for fmt in ("json", "text"):
            state, jobs, _ = poll(fmt)
            assert state == "ok" and jobs == truth, (fmt, jobs, truth)
        assert truth[f"{het}+1"] == {"gpu-node-006"} and truth[a] == {"gpu-node-001", "gpu-node-005"}
    finally:
        slurm.cancel(arr, het, a)
    wait(lambda: not slurm.running())


def test_bound_makes_a_partial_poll(slurm):
    jobs = [slurm.submit([n]) for n in ("gpu-node-001", "gpu-node-002", "gpu-node-003")]
    try:
        slurm.wait_running(jobs)
        state, published, text = poll("json", max_jobs=2)
        assert state == "partial" and len(published) == 2
        assert [line.split()[-1] for line in text.splitlines() if line.startswith("fabric_jobs_left_out{")] == ["1.0"]
    finally:
        slurm.cancel(*jobs)
    wait(lambda: not slurm.running())
