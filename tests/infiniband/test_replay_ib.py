"""The bench's InfiniBand replay (lab/replay_ib.py) against the real path: polls answered from the
tool runs recorded from ibsim give the same series as the live polls they were recorded from."""

from __future__ import annotations

from fabric_exporter.lab.replay_ib import recording, rewind, write_wrappers
from fabric_exporter.store import build_snapshot

from .conftest import CollectorHarness, group_for


def _series(result) -> dict:
    # the poll's own timings and clock readings are not the fabric's data
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for s in result.samples if "duration" not in s.name and "timestamp" not in s.name}


def test_replayed_sweeps_give_the_live_series(fabric, tmp_path):
    tools = write_wrappers(tmp_path / "rec")
    options = {"env": fabric.env(), "tool_paths": tools}
    live = CollectorHarness(group_for(options))
    with recording(tmp_path / "rec"):
        recorded = [live.poll() for _ in range(3)]
    live.close()
    assert all(not r.problems for r in recorded), [r.problems for r in recorded]
    assert len(_series(recorded[0])) > 100
    rewind(tmp_path / "rec")
    fabric.stop()  # the replay needs neither ibsim nor the tools
    try:
        replay = CollectorHarness(group_for(options))
        replayed = [replay.poll() for _ in range(3)]
        replay.close()
    finally:
        fabric.start()
    for n, (want, got) in enumerate(zip(recorded, replayed)):
        assert _series(got) == _series(want), f"poll {n}"
    build_snapshot("lab", replayed[-1].samples, 60)  # and it renders


def test_a_run_never_recorded_fails_as_a_failed_tool(tmp_path):
    import subprocess

    tools = write_wrappers(tmp_path / "rec")
    run = subprocess.run([tools["perfquery"], "-x", "1", "1"], capture_output=True, text=True, timeout=10)
    assert run.returncode == 3 and "no recording of perfquery -x 1 1" in run.stderr
