"""slurm_jobs against the lab's real Slurm (22.05, munge, one slurmd per node on 127.0.0.1): a
submitted job is published by the first poll after Slurm runs it and gone from the first poll
after scancel; JSON and text fallback agree; the series are what squeue's own text form says."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from fabric_exporter.collectors.base import PollContext
from fabric_exporter.scheduler import Scheduler
from fabric_exporter.serving.store import SnapshotStore
from fabric_exporter.transport.factory import Transports
from tests.conftest import require_tool
from tests.harness.configs import parse_config


def poll(fmt: str = "auto", polls: int = 1, **options) -> tuple[str, dict[str, set[str]], str]:
    """``polls`` scheduler polls of one slurm_jobs target (transport local); after the last one: its
    state, job id -> nodes, the exposition."""
    cfg = parse_config({"targets": [{"name": "slurm", "fabric": "lab", "collector": "slurm_jobs",
                                     "transport": "local", "interval": "20s", "timeout": "10s",
                                     "hosts": [{"name": "login", "address": "localhost"}],
                                     "options": {"format": fmt, "cluster": "fabriclab", **options}}]})

    async def main():
        sched = Scheduler(Transports(), SnapshotStore())
        sched.apply(cfg, start_tasks=False)
        ((key, (group, host, cls)),) = sched.targets(sched._config).items()  # noqa: SLF001
        collector = cls(PollContext(group, host, sched.transports))  # one instance: it remembers across polls
        try:
            for _ in range(polls):
                state = await sched.poll(key, collector)
        finally:
            await collector.close()
        return state, sched.store.render().decode()

    state, text = asyncio.run(main())
    poll.last = state  # the target's PollState (errors by reason)
    jobs: dict[str, set[str]] = {}
    for line in text.splitlines():
        if line.startswith("fabric_job_node_info{"):
            labels = dict(p.split("=", 1) for p in line[line.index("{") + 1:line.rindex("}")].split('",'))
            labels = {k: v.strip('"') for k, v in labels.items()}
            jobs.setdefault(labels["job_id"], set()).add(labels["node"])
    return state.state if not state.last_error else f"{state.state}: {state.last_error}", jobs, text


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
        assert state.startswith("partial: 1 of 3 running jobs left out (max_jobs=2") and len(published) == 2
        assert [line.split()[-1] for line in text.splitlines() if line.startswith("fabric_jobs_left_out{")] == ["1.0"]
    finally:
        slurm.cancel(*jobs)
    wait(lambda: not slurm.running())


def test_controller_down_fails_the_poll_as_a_command_failure(tmp_path, monkeypatch):
    """squeue --json of 22.05 exits 0 when slurmctld cannot be reached; its errors entry fails the poll."""
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=dead\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=1\nMessageTimeout=2\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    for fmt in ("json", "text"):
        state, jobs, text = poll(fmt)
        assert state.startswith("failed") and ("Failed while looking for jobs" in state or "controller" in state), state
        assert jobs == {}
        assert set(poll.last.errors) == {"command_failed"}, poll.last.errors


def test_a_slurm_without_json_is_read_through_the_text_form_from_then_on(slurm, tmp_path, monkeypatch):
    """A squeue that refuses --json (as one without the JSON plugin does): the first poll falls back to
    the text listing of the real squeue, and the next poll asks only for that."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    real = require_tool("squeue")
    (bin_dir / "squeue").write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {calls}\n'
        'for a in "$@"; do if [ "$a" = --json ]; then\n'
        "  echo \"squeue: unrecognized option '--json'\" >&2; echo 'Try \"squeue --help\" for more information' >&2\n"
        "  exit 1; fi; done\n"
        f'exec {real} "$@"\n')
    (bin_dir / "squeue").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    job = slurm.submit(["gpu-node-003"], name="nojson")
    try:
        slurm.wait_running([job])
        state, jobs, _ = poll("auto", polls=2)
        assert state == "ok" and jobs[job] == {"gpu-node-003"}
    finally:
        slurm.cancel(job)
    wait(lambda: job not in slurm.running())
    asked = [a for a in calls.read_text().splitlines() if not a.startswith("-h -t R")]  # the lab's own checks
    assert asked[0] == "--json" and [a for a in asked[1:] if "--json" in a] == [] and len(asked) == 3, asked
