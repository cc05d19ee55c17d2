"""``squeue`` output -> the running jobs and the nodes each holds.

Two shapes:

* ``squeue --json`` (Slurm >= 21.08, the openapi data_parser): ``{"jobs": [...], "errors": [...]}``.
  Fields changed shape over releases, so each is read the ways published captures show it:
  ``job_state`` a string (21.08, 22.05) or a list of state flags (23.02+); numbers plain (21.08)
  or ``{"set", "infinite", "number"}`` (23.02+). Slurm 22.05 ignores ``-t`` with ``--json``, so
  pending and finished jobs are in the output and filtered out here (state RUNNING only).
* ``squeue --noheader --states=RUNNING --format=FORMAT`` (``TEXT_FORMAT``) for a Slurm without the
  JSON plugin, run with ``SLURM_TIME_FORMAT=%s`` so the start time is epoch seconds; the node list
  is a hostlist expression, expanded by ``parsers.hostlist``.

A job is named as squeue's ``%i`` names it: ``ARRAYJOB_TASK`` for an array task, ``HETJOB+OFFSET``
for a heterogeneous job's component, else the job id. A job record the parser cannot read (a
non-object, no id, a node list that is not a hostlist) is skipped and counted (source
``squeue_json``/``squeue``), never guessed; output that is not squeue's at all is a ParseError.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import ParseError
from .guard import load_json, parser_entry
from .hostlist import HostlistError, expand
from .skipped import SkippedLine, note

SOURCE_JSON = "squeue_json"
SOURCE_TEXT = "squeue"
SOURCES = (SOURCE_JSON, SOURCE_TEXT)  # skipped lines are counted under these (skipped.sources_of)

# squeue --format fields, '|'-separated, the job name last (it may hold '|'):
# job id as %i prints it, state, start time, partition, account, user, node list, name
TEXT_FORMAT = "%i|%T|%S|%P|%a|%u|%N|%j"
TEXT_FIELDS = 8


class SqueueReportedError(ParseError):
    """squeue's JSON says the query failed (controller unreachable, auth): an ``errors`` entry. squeue
    22.05 then still exits 0, so only its output tells; the collector reports it as a failed command."""


@dataclass(frozen=True)
class RunningJob:
    job_id: str  # as squeue's %i: 123, 123_4 (array task), 123+1 (het component)
    name: str
    user: str
    account: str
    partition: str
    nodes: tuple[str, ...]  # expanded node names, in Slurm's order, duplicates removed
    start_time: float | None  # epoch seconds; None when Slurm gives none


def _number(value: Any) -> int | None:
    """A plain JSON number, or the 23.02+ ``{"set": true, "number": N}`` form (None when unset)."""
    if isinstance(value, dict):
        if not value.get("set", False) or value.get("infinite", False):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value)


def _states(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return ()


def _text(job: dict, key: str) -> str:
    v = job.get(key)
    return v if isinstance(v, str) else ""


def _display_id(job: dict) -> str | None:
    job_id = _number(job.get("job_id"))
    if job_id is None:
        return None
    array_job, task = _number(job.get("array_job_id")), _number(job.get("array_task_id"))
    if array_job and task is not None:
        return f"{array_job}_{task}"
    het_job, offset = _number(job.get("het_job_id")), _number(job.get("het_job_offset"))
    if het_job and offset is not None:
        return f"{het_job}+{offset}"
    return str(job_id)


def _nodes(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(expand(text)))


@parser_entry
def parse_squeue_json(text: str, skipped: list[SkippedLine] | None = None) -> list[RunningJob]:
    """The running jobs of ``squeue --json`` output (every other state left out)."""
    doc = load_json(text, "squeue --json")
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise ParseError("squeue --json: no 'jobs' list (not squeue's JSON)")
    errors = doc.get("errors")
    if isinstance(errors, list) and errors:
        first = errors[0]
        what = first.get("description") or first.get("error") if isinstance(first, dict) else first
        raise SqueueReportedError(f"squeue --json reported an error: {str(what)[:160]}")
    jobs: list[RunningJob] = []
    for i, job in enumerate(doc["jobs"], 1):
        if not isinstance(job, dict):
            note(skipped, SOURCE_JSON, i, f"job record {i} is not an object")
            continue
        if "RUNNING" not in _states(job.get("job_state")):
            continue
        job_id = _display_id(job)
        nodes_text = job.get("nodes")
        if job_id is None or not isinstance(nodes_text, str):
            note(skipped, SOURCE_JSON, i, f"job record {i}: no job_id or nodes")
            continue
        try:
            nodes = _nodes(nodes_text)
        except HostlistError as e:
            note(skipped, SOURCE_JSON, i, f"job {job_id}: {e}")
            continue
        start = _number(job.get("start_time"))
        user = _text(job, "user_name")
        if not user and _number(job.get("user_id")) is not None:
            user = str(_number(job.get("user_id")))  # a release/site without names: the uid, as squeue -o %u prints it
        jobs.append(RunningJob(job_id, _text(job, "name"), user, _text(job, "account"), _text(job, "partition"),
                               nodes, float(start) if start else None))
    return jobs


@parser_entry
def parse_squeue_text(text: str, skipped: list[SkippedLine] | None = None) -> list[RunningJob]:
    """The running jobs of ``squeue --noheader --states=RUNNING --format=TEXT_FORMAT`` (with
    ``SLURM_TIME_FORMAT=%s``). A line that is not 8 fields, or whose node list is not a hostlist,
    is skipped and counted."""
    jobs: list[RunningJob] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("|", TEXT_FIELDS - 1)
        if len(fields) != TEXT_FIELDS:
            note(skipped, SOURCE_TEXT, n, line)
            continue
        job_id, state, start, partition, account, user, nodes_text, name = fields
        if state != "RUNNING":
            continue
        # ids are "123", array tasks "123_4", het components "123+1"; no part is longer than a u64
        if not job_id or not (job_id.replace("_", "").replace("+", "").isdigit()) or not all(
                0 < len(part) <= 20 for part in job_id.replace("+", "_").split("_")):
            note(skipped, SOURCE_TEXT, n, line)
            continue
        try:
            nodes = _nodes(nodes_text)
        except HostlistError:
            note(skipped, SOURCE_TEXT, n, line)
            continue
        account = "" if account == "(null)" else account  # squeue's word for none (the JSON has "")
        start_time = (float(start) if start.isdigit() and start.isascii() and len(start) <= 12 and int(start) > 0
                      else None)  # epoch seconds: 12 digits reach year 33658
        jobs.append(RunningJob(job_id, name, user, account, partition, nodes, start_time))
    return jobs


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse_squeue_json": ("slurm/slurm-22.05.8-squeue.json", "slurm/rivosinc_squeue_out.json"),
    "parse_squeue_text": ("slurm/slurm-22.05.8-squeue-format.txt",),
}
