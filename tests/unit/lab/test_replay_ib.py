"""The bench's InfiniBand replay (lab/replay_ib.py) against the real path: polls answered from the
tool runs recorded from ibsim give the same series as the live polls they were recorded from."""

from __future__ import annotations

from fabric_exporter.lab.replay_ib import recording, rewind, write_wrappers
from fabric_exporter.serving.store import build_snapshot

from tests.harness import paths
from tests.harness.infiniband import (  # noqa: F401  (fixtures: the fabric, the harness checks)
    CollectorHarness, _close_harnesses, _verify_render, fabric, group_for)


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


def test_a_replicated_recording_reads_as_that_many_copies_of_the_fabric():
    """lab/replay_ib.replicate (the bench's large fabric): the ibsim captures as 3 copies give 3
    times the nodes, links and port series; copy 0 is the original, every other copy the same
    series under its own GUIDs and names; the sweep summaries add up."""
    import re
    from pathlib import Path

    from fabric_exporter.collectors.infiniband import FabricState, join_sweeps, samples_from_sweep
    from fabric_exporter.lab.replay_ib import replicate
    from fabric_exporter.parsers import ib_netdiscover, ib_queryerrors

    fixtures = paths.FIXTURES / "infiniband"
    texts = [(fixtures / f"ibsim_{name}.txt").read_text() for name in
             ("ibnetdiscover", "ibqueryerrors_counters_report_port", "ibqueryerrors_errors_zero_threshold")]

    def series(copies):
        disc, counters, errors = (replicate(t, copies) for t in texts)
        state = FabricState(forget_missing_after=3600.0)
        state.apply_topology(ib_netdiscover.parse(disc))
        c, e = ib_queryerrors.parse(counters), ib_queryerrors.parse(errors)
        problems: list[str] = []
        joined = join_sweeps(c, e, "", state.owners, problems)
        state.sweep_names = joined.sweep_names
        state.record_sweep(joined.ports, 1.0)
        out = samples_from_sweep(joined.ports, {}, state, {}, 1.0, problems)
        return state, c, e, problems, [(s.name, s.labels, s.value) for s in out if "port" in s.labels]

    state1, c1, e1, problems1, one = series(1)
    state3, c3, e3, problems3, three = series(3)
    assert ib_queryerrors.parse(replicate(texts[1], 1)) == c1
    assert not problems1 and not problems3
    assert len(state3.topology.nodes) == 3 * len(state1.topology.nodes)
    assert len(state3.topology.links()) == 3 * len(state1.topology.links())
    assert (c3.summary.nodes_checked, c3.summary.ports_checked) == (3 * c1.summary.nodes_checked,
                                                                    3 * c1.summary.ports_checked)
    assert (e3.summary.bad_nodes, e3.summary.bad_ports) == (3 * e1.summary.bad_nodes, 3 * e1.summary.bad_ports)
    assert len(three) == 3 * len(one)

    def copy(n):
        return [s for s in three if (re.search(r"-c(\d+)\b", s[1]["node_name"]) or [0, "0"])[1] == str(n)]

    assert copy(0) == one  # copy 0: the original
    copy2 = copy(2)
    assert [(n, v) for n, _labels, v in copy2] == [(n, v) for n, _labels, v in one]
    assert {lab["node_guid"] for _n, lab, _v in copy2}.isdisjoint({lab["node_guid"] for _n, lab, _v in one})
