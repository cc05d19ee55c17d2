"""slurm_jobs: which running Slurm job holds which node -- the key that names the job behind a
congested port (issue 22; the join is in mixin/rules/jobs.py).

One ``squeue`` per poll, run on the target host (``local``, or ``ssh`` to a login/controller
node), never one per job:

* ``squeue --json`` (Slurm >= 21.08), filtered to RUNNING here (22.05 ignores ``-t`` with it);
* without the JSON plugin: ``env SLURM_TIME_FORMAT=%s squeue --noheader --states=RUNNING
  --format=...`` and the node lists expanded by our own hostlist expander.

``format: auto`` (default) tries JSON first; a Slurm that refuses ``--json`` (usage error, or no
data_parser/serializer plugin) is remembered and the text form used from then on.

Publishes ``fabric_job_node_info`` per (running job, node), the job's start time, running jobs per
partition, and how many jobs a bound left out. ``max_jobs``/``max_series`` bound the series: above
them the poll is partial (the problem names the bound, ``fabric_jobs_left_out`` counts the jobs),
never a silent cut. ``drop_labels`` empties job_name/user/account (privacy).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..commands import Command, Shape
from ..errors import CommandError
from ..parsers import slurm_squeue as sq
from ..parsers.skipped import sources_of
from ..samples import PollResult, Sample
from .base import Collector, ErrorSink, parse_off_loop
from .options import OptionReader

JSON_ARGV = ("squeue", "--json")
TEXT_ARGV = ("env", "SLURM_TIME_FORMAT=%s", "squeue", "--noheader", "--states=RUNNING",
             f"--format={sq.TEXT_FORMAT}")
# the two commands it runs (the SSH guard's allow-list is generated from this)
SSH_COMMANDS: tuple[Command, ...] = (Shape(JSON_ARGV[0], JSON_ARGV[1:]), Shape(TEXT_ARGV[0], TEXT_ARGV[1:]))
PRIVATE_LABELS = ("job_name", "user", "account")
NO_JSON_HINTS = ("json", "data_parser", "serializer", "unrecognized option", "invalid option")


@dataclass(frozen=True)
class SlurmJobsOptions:
    cluster: str | None = None  # None: the group's fabric
    format: str = "auto"  # auto | json | text
    drop_labels: tuple[str, ...] = ()
    max_jobs: int = 20_000
    max_series: int = 200_000


def job_samples(cluster: str, jobs: list[sq.RunningJob], options: SlurmJobsOptions) -> tuple[list[Sample], list[str]]:
    """Samples for the running jobs, within the bounds; and the problems (bounds hit). Pure."""
    samples: list[Sample] = []
    per_partition = Counter(j.partition for j in jobs)
    kept = series = 0
    left_out = 0
    drop = set(options.drop_labels)
    # lowest job ids first: a bound keeps the same jobs poll after poll, not a random subset
    for job in sorted(jobs, key=lambda j: _id_key(j.job_id)):
        if kept >= options.max_jobs or series + len(job.nodes) > options.max_series:
            left_out += 1
            continue
        kept += 1
        series += len(job.nodes)
        labels = {"cluster": cluster, "job_id": job.job_id,
                  "job_name": "" if "job_name" in drop else job.name,
                  "user": "" if "user" in drop else job.user,
                  "account": "" if "account" in drop else job.account,
                  "partition": job.partition}
        samples.extend(Sample("fabric_job_node_info", {**labels, "node": node}, 1.0) for node in job.nodes)
        if job.start_time is not None:
            samples.append(Sample("fabric_job_start_time_seconds", {"cluster": cluster, "job_id": job.job_id},
                                  job.start_time))
    samples.extend(Sample("fabric_jobs_running", {"cluster": cluster, "partition": p}, float(n))
                   for p, n in sorted(per_partition.items()))
    samples.append(Sample("fabric_jobs_left_out", {"cluster": cluster}, float(left_out)))
    problems = []
    if left_out:
        problems.append(f"{left_out} of {len(jobs)} running jobs left out "
                        f"(max_jobs={options.max_jobs}, max_series={options.max_series})")
    return samples, problems


def _id_key(job_id: str) -> tuple[tuple[int, str], ...]:
    # numeric order of the id's parts without int(): a digit string's length, then its text
    return tuple((len(x), x) for x in job_id.replace("+", "_").split("_") if x.isdigit())


class SlurmJobsCollector(Collector):
    name: ClassVar[str] = "slurm_jobs"
    transports: ClassVar[tuple[str, ...]] = ("ssh", "local")
    parse_sources: ClassVar[tuple[str, ...]] = sources_of(sq)
    ssh_commands: ClassVar[tuple[Command, ...]] = SSH_COMMANDS
    # each form of squeue it can run, and published squeue output of each (tests/fixtures/slurm/README.md)
    command_variants: ClassVar[tuple[dict[str, Any], ...]] = ({"format": "json"}, {"format": "text"})
    captures: ClassVar[tuple[tuple[str, ...], ...]] = (
        ("slurm/slurm-22.05.8-squeue.json", "slurm/rivosinc_squeue_out.json"),
        ("slurm/slurm-22.05.8-squeue-format.txt",))

    @classmethod
    def parse_options(cls, raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> SlurmJobsOptions:
        r = OptionReader(raw, path, err, base_dir)
        cluster = r.string("cluster")
        fmt = r.string("format", "auto", choices=("auto", "json", "text")) or "auto"
        drop = r.string_list("drop_labels", (), choices=PRIVATE_LABELS)
        max_jobs = r.integer("max_jobs", SlurmJobsOptions.max_jobs, minimum=1)
        max_series = r.integer("max_series", SlurmJobsOptions.max_series, minimum=1)
        r.done()
        return SlurmJobsOptions(cluster or None, fmt, drop, max_jobs, max_series)

    def __init__(self, ctx: Any):
        super().__init__(ctx)
        self.options: SlurmJobsOptions = self.options or SlurmJobsOptions()
        self.cluster = self.options.cluster or self.group.fabric
        self._json = self.options.format != "text"

    async def _squeue(self, argv: tuple[str, ...]) -> Any:
        runner = self.ctx.runner()
        return runner, await runner.run(list(argv), timeout=self.ctx.remaining())

    async def poll(self) -> PollResult:
        skipped: list = []
        if self._json:
            runner, result = await self._squeue(JSON_ARGV)
            if result.exit_status != 0 and self.options.format == "auto" and _refuses_json(result):
                self._json = False  # a Slurm without the JSON plugin: the text form from now on
            elif result.exit_status != 0:
                raise CommandError(f"{runner.description}: squeue --json: {result.describe_failure()}")
            else:
                try:
                    jobs = await parse_off_loop(sq.parse_squeue_json, result.stdout, skipped=skipped)
                except sq.SqueueReportedError as e:  # exit 0, but the query failed (22.05)
                    raise CommandError(f"{runner.description}: {e}") from None
                return self._result(jobs, skipped)
        runner, result = await self._squeue(TEXT_ARGV)
        if result.exit_status != 0:
            raise CommandError(f"{runner.description}: squeue --format: {result.describe_failure()}")
        jobs = await parse_off_loop(sq.parse_squeue_text, result.stdout, skipped=skipped)
        return self._result(jobs, skipped)

    def _result(self, jobs: list[sq.RunningJob], skipped: list) -> PollResult:
        samples, problems = job_samples(self.cluster, jobs, self.options)
        return PollResult(samples, problems, skipped)


def _refuses_json(result: Any) -> bool:
    text = f"{result.stderr}\n{result.stdout}".lower()
    return result.exit_status in (1, 2, 255) and any(h in text for h in NO_JSON_HINTS)
