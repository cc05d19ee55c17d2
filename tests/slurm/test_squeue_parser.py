"""squeue output -> running jobs, on real captures (tests/fixtures/slurm/README.md), the hostlist
expander's own cases, the bounds and privacy options of the samples."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabric_exporter.collectors.slurm_jobs import SlurmJobsOptions, job_samples
from fabric_exporter.catalog import family_of
from fabric_exporter.errors import ParseError
from fabric_exporter.parsers.hostlist import HostlistError, expand
from fabric_exporter.parsers.slurm_squeue import (RunningJob, SqueueReportedError, parse_squeue_json,
                                                  parse_squeue_text)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"


def by_id(jobs):
    return {j.job_id: j for j in jobs}


def test_slurm_22_05_json_running_jobs_with_array_tasks_and_het_components():
    skipped = []
    jobs = by_id(parse_squeue_json((FIX / "slurm-22.05.8-squeue.json").read_text(), skipped=skipped))
    # pending job 5 and completed job 6 (which still names gpu-node-004) are left out
    assert set(jobs) == {"1", "2_0", "2_1", "2_2", "3+0", "3+1"}
    assert jobs["1"] == RunningJob("1", "allreduce a|b", "root", "", "gpu", ("gpu-node-001", "gpu-node-002"), 1796175427.0)
    assert jobs["2_2"].nodes == ("gpu-node-001",) and jobs["2_2"].name == "sweep"
    assert jobs["3+0"].nodes == ("gpu-node-003",) and jobs["3+1"].nodes == ("gpu-node-004",)
    assert skipped == []


def test_text_fallback_gives_the_same_jobs_as_json():
    from_json = parse_squeue_json((FIX / "slurm-22.05.8-squeue.json").read_text())
    from_text = parse_squeue_text((FIX / "slurm-22.05.8-squeue-format.txt").read_text())
    assert sorted(from_text, key=lambda j: j.job_id) == sorted(from_json, key=lambda j: j.job_id)


def test_rivosinc_capture_21_08_and_23_shapes():
    jobs = parse_squeue_json((FIX / "rivosinc_squeue_out.json").read_text())
    # the 21.08-shaped RUNNING job; the 23.x-shaped array record is PENDING
    assert jobs == [RunningJob("26515966", "job_name", "bkd", "account1", "hw-l", ("cs75",), 1684114921.0)]


def test_23_shapes_state_list_and_set_numbers():
    text = ('{"jobs": [{"job_id": 9, "job_state": ["RUNNING", "COMPLETING"], "nodes": "n[1-2]", "name": "x",'
            ' "user_name": "u", "account": "a", "partition": "p",'
            ' "array_job_id": {"set": true, "infinite": false, "number": 8},'
            ' "array_task_id": {"set": true, "infinite": false, "number": 3},'
            ' "start_time": {"set": true, "infinite": false, "number": 100}},'
            ' {"job_id": 10, "job_state": ["PENDING"], "nodes": ""}], "errors": []}')
    assert parse_squeue_json(text) == [RunningJob("8_3", "x", "u", "a", "p", ("n1", "n2"), 100.0)]


def test_unreadable_job_records_are_skipped_and_counted():
    skipped = []
    text = ('{"jobs": [7, {"job_state": "RUNNING", "nodes": "a"}, {"job_id": 1, "job_state": "RUNNING",'
            ' "nodes": "a[2-1]"}, {"job_id": 2, "job_state": "RUNNING", "nodes": "b1"}]}')
    jobs = parse_squeue_json(text, skipped=skipped)
    assert [j.job_id for j in jobs] == ["2"] and len(skipped) == 3
    assert {s.source for s in skipped} == {"squeue_json"}
    skipped = []
    assert parse_squeue_text("garbage line\n5|RUNNING|0|p|(null)|u|n[1-|x\n", skipped=skipped) == []
    assert len(skipped) == 2


def test_controller_down_capture_is_a_reported_error_not_an_empty_cluster():
    with pytest.raises(SqueueReportedError, match="Failed while looking for jobs"):
        parse_squeue_json((FIX / "slurm-22.05.8-squeue-controller-down.json").read_text())


@pytest.mark.parametrize("text", ["", "[]", '{"meta": {}}', "not json",
                                  '{"jobs": [], "errors": [{"error": "Unable to contact slurm controller"}]}'])
def test_not_squeue_json_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_squeue_json(text)


@pytest.mark.parametrize("expr, names", [
    ("gpu-node-[001-003,007]", ["gpu-node-001", "gpu-node-002", "gpu-node-003", "gpu-node-007"]),
    ("a[8-10]", ["a8", "a9", "a10"]), ("a[01-3]", ["a01", "a02", "a03"]), ("a[1-03]", ["a1", "a2", "a3"]),
    ("r[1-2]n[3-4]", ["r1n3", "r1n4", "r2n3", "r2n4"]),
    ("a[1-2]b[3-4]c[5-6]", ["a1b3c5", "a1b3c6", "a2b3c5", "a2b3c6", "a1b4c5", "a1b4c6", "a2b4c5", "a2b4c6"]),
    ("x,y[1-2],x", ["x", "y1", "y2", "x"]), ("(null)", []), ("", []), ("[1-2]", ["1", "2"]),
])
def test_hostlist_cases(expr, names):
    assert expand(expr) == names


@pytest.mark.parametrize("expr", ["a[1-2]b", "a[2-1]", "a[]", "a[1-", "a]", "a[[1]]", "a,,b", "a[1-99999999]",
                                  "a[" + "9" * 5000 + "]"])
def test_hostlist_refuses(expr):
    with pytest.raises(HostlistError):
        expand(expr)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab01-9[],-", max_size=40))
def test_hostlist_raises_only_hostlist_errors(text):
    try:
        names = expand(text)
    except HostlistError:
        return
    assert all("[" not in n and "]" not in n and "," not in n for n in names)


def _jobs(n_jobs, nodes_each):
    return [RunningJob(str(i), f"j{i}", "u", "acct", "gpu" if i % 2 else "cpu",
                       tuple(f"n{i}-{k}" for k in range(nodes_each)), 1000.0 + i) for i in range(1, n_jobs + 1)]


def test_samples_are_in_the_catalog_and_bounds_make_the_poll_partial():
    samples, problems = job_samples("c", _jobs(10, 3), SlurmJobsOptions())
    assert problems == []
    for s in samples:
        spec = family_of(s.name)
        assert spec is not None and spec.allows_labels(s.name, ("fabric", *s.labels)), s
    assert sum(s.name == "fabric_job_node_info" for s in samples) == 30
    # max_jobs: the lowest ids kept, the rest counted, never silently cut
    samples, problems = job_samples("c", _jobs(10, 3), SlurmJobsOptions(max_jobs=4))
    info = {s.labels["job_id"] for s in samples if s.name == "fabric_job_node_info"}
    assert info == {"1", "2", "3", "4"} and "6 of 10 running jobs left out" in problems[0]
    left = [s.value for s in samples if s.name == "fabric_jobs_left_out"]
    assert left == [6.0]
    running = {s.labels["partition"]: s.value for s in samples if s.name == "fabric_jobs_running"}
    assert running == {"gpu": 5.0, "cpu": 5.0}  # every running job counted
    samples, problems = job_samples("c", _jobs(10, 3), SlurmJobsOptions(max_series=10))
    assert sum(s.name == "fabric_job_node_info" for s in samples) == 9 and problems


def test_drop_labels_empties_private_labels():
    samples, _ = job_samples("c", _jobs(1, 1), SlurmJobsOptions(drop_labels=("user", "job_name")))
    (info,) = [s for s in samples if s.name == "fabric_job_node_info"]
    assert info.labels == {"cluster": "c", "job_id": "1", "job_name": "", "user": "", "account": "acct",
                           "partition": "gpu", "node": "n1-0"}
