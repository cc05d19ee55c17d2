"""squeue output -> running jobs, on real captures (tests/fixtures/slurm/README.md), the hostlist
expander's own cases, the bounds and privacy options of the samples."""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabric_exporter.collectors.slurm_jobs import SlurmJobsOptions, job_samples
from fabric_exporter.catalog import family_of
from fabric_exporter.errors import ParseError
from fabric_exporter.parsers.hostlist import HostlistError, expand
from fabric_exporter.parsers.slurm_squeue import (RunningJob, SqueueReportedError, parse_squeue_json,
                                                  parse_squeue_text)

from tests.harness import paths

FIX = paths.FIXTURES / "slurm"


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


# -- the edges the mutation run (scripts/mutation slurm_squeue) found untested -----------------------

def _rivosinc_array_record_running():
    """The rivosinc capture's 23.x-shaped array record (its numbers as ``{"set", "infinite", "number"}``),
    made RUNNING on one node: the rest of the record exactly as Slurm printed it."""
    import json

    doc = json.loads((FIX / "rivosinc_squeue_out.json").read_text())
    (record,) = [j for j in doc["jobs"] if isinstance(j.get("array_job_id"), dict)]
    return {**record, "job_state": "RUNNING", "nodes": "cs[75-76]"}, doc


def test_an_unset_23_number_is_no_number_an_unset_task_id_names_no_task():
    import json

    record, doc = _rivosinc_array_record_running()
    assert record["array_task_id"] == {"set": False, "infinite": False, "number": 0}  # as captured
    (job,) = parse_squeue_json(json.dumps({**doc, "jobs": [record]}))
    # array_job_id is set but the task id is not: the job is its own id, never "58948420_0"
    assert job == RunningJob("58948420", "some job name", "bkd", "account1", "hw-m", ("cs75", "cs76"), None)


def test_an_infinite_23_number_is_no_number_and_infinite_may_be_absent():
    import json

    record, doc = _rivosinc_array_record_running()
    infinite = {"set": True, "infinite": True, "number": 1796175427}
    (job,) = parse_squeue_json(json.dumps({**doc, "jobs": [{**record, "start_time": infinite}]}))
    assert job.start_time is None  # an infinite start is no start time, whatever "number" says
    finite = {"set": True, "number": 1796175427}  # no "infinite" key: the number is read
    (job,) = parse_squeue_json(json.dumps({**doc, "jobs": [{**record, "start_time": finite}]}))
    assert job.start_time == 1796175427.0


def test_a_job_record_without_a_readable_state_is_not_running_and_not_a_crash():
    text = ('{"jobs": [{"job_id": 1, "nodes": "a1"}, {"job_id": 2, "job_state": 7, "nodes": "a2"},'
            ' {"job_id": 3, "job_state": "RUNNING", "nodes": "a3"}]}')
    skipped = []
    assert [j.job_id for j in parse_squeue_json(text, skipped=skipped)] == ["3"] and skipped == []


def test_text_lines_skipped_are_counted_by_their_line_and_the_lines_after_them_still_read():
    lines = (FIX / "slurm-22.05.8-squeue-format.txt").read_text().splitlines()
    bad_id = "x7|RUNNING|1796175427|gpu|(null)|root|gpu-node-001|bad"
    text = "\n".join([lines[0], "", bad_id, "garbage line", *lines[1:]]) + "\n"
    skipped = []
    jobs = parse_squeue_text(text, skipped=skipped)
    # the blank line is no job and no skip; the two bad lines do not end the reading
    assert [j.job_id for j in jobs] == ["1", "2_0", "2_1", "2_2", "3+0", "3+1"]
    assert [(s.source, s.line_no, s.text) for s in skipped] == [("squeue", 3, bad_id), ("squeue", 4, "garbage line")]


def test_text_job_id_parts_up_to_20_digits_and_start_times_read_only_when_plausible():
    u64 = "1" * 20

    def one(job_id, start="1796175427"):
        skipped = []
        jobs = parse_squeue_text(f"{job_id}|RUNNING|{start}|gpu|(null)|root|n1|j\n", skipped=skipped)
        return (jobs[0].job_id, jobs[0].start_time) if jobs else len(skipped)

    assert one(f"{u64}_{u64}") == (f"{u64}_{u64}", 1796175427.0)
    assert one(f"{u64}+{u64}") == (f"{u64}+{u64}", 1796175427.0)
    assert one(u64 + "1") == 1 and one(f"5_{u64}1") == 1  # 21 digits: no Slurm id, skipped and counted
    # N/A (no start yet), 0, and 13 digits (beyond year 33658) are no start time, never a value
    assert one("5", "N/A") == ("5", None) and one("5", "0") == ("5", None)
    assert one("5", "1" * 13) == ("5", None) and one("5", "1" * 12) == ("5", 111111111111.0)


def test_hostlist_expands_up_to_its_bound_and_refuses_one_name_more():
    bound = 1 << 20  # parsers.hostlist.MAX_HOSTS, as its docstring gives it
    # one bracket group: exactly the bound expands (first and last name as Slurm pads them), one more is refused
    names = expand("a[1-1048576]")
    assert len(names) == bound and names[0] == "a1" and names[-1] == "a1048576"
    with pytest.raises(HostlistError, match="more than"):
        expand("a[0-1048576]")
    # two groups: the product is bounded the same way
    names = expand("r[1-2]n[1-524288]")
    assert len(names) == bound and names[:2] == ["r1n1", "r1n2"] and names[-1] == "r2n524288"
    with pytest.raises(HostlistError, match="more than"):
        expand("r[1-2]n[0-524288]")
    # a small range with large numbers is small: the bound counts names, not values
    assert expand("n[600000-600001]") == ["n600000", "n600001"]
    # the bound over a whole comma-separated expression (max_hosts, the caller's tighter bound)
    assert expand("x,y[1-2]", max_hosts=3) == ["x", "y1", "y2"]
    with pytest.raises(HostlistError, match="more than 3"):
        expand("x,y[1-3]", max_hosts=3)
