"""slurm_jobs parse cost: a 5,000-job / 2,000-node cluster's ``squeue --json``, in CPU seconds.

    PYTHONPATH=exporter python bench/bench_slurm.py [--jobs 5000 --nodes 2000] [--rounds 7]

The output is generated in the real shape: every job is a copy of the RUNNING record of the Slurm
22.05.8 capture (tests/fixtures/slurm/slurm-22.05.8-squeue.json, ~3.4 KB of fields per job) with its
id, name, user, account, state and node list changed: 75 % running, the rest pending or completed
(which 22.05 lists too: --json ignores -t); array tasks and het components among them; node lists
as Slurm prints them (``gpu-[0001-0008,0013]``, several ranges). Reported, min and median over the
rounds of this process's CPU time (``time.process_time``):

- baseline: ``json.loads`` of the same text (the floor any JSON reader pays);
- parse: ``parse_squeue_json`` (decode, RUNNING filter, ids, hostlist expansion), and its ratio to
  the baseline;
- samples: ``job_samples`` (the series of a poll) on the parsed jobs;
- the text fallback's parse of the equivalent ``squeue --format`` output.

The issue's budget is 0.5 s CPU for the parse; the figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "exporter"))

from fabric_exporter.collectors.slurm_jobs import SlurmJobsOptions, job_samples  # noqa: E402
from fabric_exporter.parsers.hostlist import expand  # noqa: E402
from fabric_exporter.parsers.slurm_squeue import parse_squeue_json, parse_squeue_text  # noqa: E402

CAPTURE = ROOT / "tests" / "fixtures" / "slurm" / "slurm-22.05.8-squeue.json"


def ranged(names: list[int], width: int = 4) -> str:
    """Node numbers as Slurm prints them: gpu-[0001-0004,0009]."""
    names = sorted(set(names))
    parts, start = [], names[0]
    for prev, cur in zip(names, names[1:] + [None]):
        if cur != prev + 1:
            parts.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            start = cur
    return f"gpu-[{','.join(parts)}]" if len(names) > 1 else f"gpu-{names[0]:0{width}d}"


def generate(jobs: int, nodes: int, seed: int = 5) -> tuple[str, str, int]:
    """(squeue --json text, the equivalent --format text, running (job, node) pairs)."""
    rng = random.Random(seed)
    doc = json.loads(CAPTURE.read_text())
    template = next(j for j in doc["jobs"] if j["job_state"] == "RUNNING" and j["array_job_id"] == 0
                    and j["het_job_id"] == 0)
    out, lines, pairs = [], [], 0
    for i in range(jobs):
        j = copy.deepcopy(template)
        job_id = 100000 + i
        j["job_id"], j["name"] = job_id, f"train-{rng.randint(0, 999)}"
        j["user_name"], j["account"] = f"user{rng.randint(1, 300)}", f"acct{rng.randint(1, 40)}"
        state = rng.choices(("RUNNING", "PENDING", "COMPLETED"), (75, 20, 5))[0]
        j["job_state"] = state
        kind = rng.random()
        if kind < 0.1:
            j["array_job_id"], j["array_task_id"] = 90000 + i // 10, i % 10
        elif kind < 0.13:
            j["het_job_id"], j["het_job_offset"] = job_id - i % 2, i % 2
        size = rng.choice((1, 1, 2, 4, 8, 16, 32, 64))
        first = rng.randint(1, nodes - size)
        picked = list(range(first, first + size))
        if size > 4 and rng.random() < 0.5:  # a few holes: several ranges in the list
            picked = [n for n in picked if rng.random() > 0.2] or [first]
        j["nodes"] = ranged(picked) if state != "PENDING" else ""
        j["job_resources"]["nodes"] = j["nodes"]
        out.append(j)
        if state == "RUNNING":
            pairs += len(picked)
            jid = (f"{j['array_job_id']}_{j['array_task_id']}" if j["array_job_id"] else
                   f"{j['het_job_id']}+{j['het_job_offset']}" if j["het_job_id"] else str(job_id))
            lines.append(f"{jid}|RUNNING|{j['start_time']}|{j['partition']}|{j['account']}|{j['user_name']}|"
                         f"{j['nodes']}|{j['name']}")
    doc["jobs"] = out
    return json.dumps(doc, indent=3), "\n".join(lines) + "\n", pairs


def cpu(fn, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    text, fmt_text, pairs = generate(args.jobs, args.nodes)
    parsed = parse_squeue_json(text)
    assert sum(len(j.nodes) for j in parsed) == pairs, "the parse lost or invented nodes"
    assert len(parse_squeue_text(fmt_text)) == len(parsed)
    assert expand(ranged([1, 2, 3, 7])) == ["gpu-0001", "gpu-0002", "gpu-0003", "gpu-0007"]
    base = cpu(lambda: json.loads(text), args.rounds)
    parse = cpu(lambda: parse_squeue_json(text), args.rounds)
    samples = cpu(lambda: job_samples("c", parsed, SlurmJobsOptions()), args.rounds)
    text_parse = cpu(lambda: parse_squeue_text(fmt_text), args.rounds)

    def show(name: str, t: list[float]) -> str:
        return f"{name:<34} min {min(t):.3f} s   median {statistics.median(t):.3f} s CPU"

    print(f"squeue --json: {args.jobs} jobs ({len(parsed)} running), {args.nodes} nodes, "
          f"{len(text) / 1e6:.1f} MB, {pairs} running (job, node) series; {args.rounds} rounds")
    print(show("baseline json.loads", base))
    print(show("parse_squeue_json", parse) + f"   ratio to baseline {min(parse) / min(base):.2f}x"
          + f"   budget 0.5 s: {'within' if min(parse) <= 0.5 else 'OVER'}")
    print(show("job_samples (one poll's series)", samples))
    print(show("parse_squeue_text (fallback)", text_parse) + f"   ({len(fmt_text) / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
