"""The latency_probe collector: RDMA latency probes between host pairs with perftest over SSH, pingmesh style.

One instance per target group (``scope = "group"``); one poll = one round. Each round:

1. takes the next round of the pair plan (``plan.PairPlan``: full mesh within host groups,
   sampled peers across groups, explicit pairs; at most ``max_probes_per_round``), plus the probes
   the previous round's deadline left out;
2. checks every involved host once (``true`` over its pooled SSH connection, in parallel), so a
   dead host costs one connect attempt per round and fails only its own probes, at once;
3. runs the probes under ``plan.run_round`` (``max_probes_per_host`` at once per host,
   ``max_concurrent_probes`` in all, nothing started that cannot end before the round deadline).
   One probe: the perftest server on the destination (a port of its own from ``port_range``),
   then, after ``server_start_wait``, the client on the source pointed at the destination, retried
   while the server is not listening yet. Both commands run under coreutils ``timeout`` (the SSH
   transport adds it), so nothing outlives ``probe_timeout``;
4. parses the client's report and publishes, in seconds: cumulative histograms (per group pair,
   per source host, and per pair when per-pair series are on) and the last probe's statistics per
   pair (only with per-pair series on, withheld after ``keep_results_for``). A probe without a
   result is counted by host, role and reason, never published as a latency.

Histogram state lives in memory: counts only grow; a restart resets them (Prometheus handles it).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ...commands import Command, Getopt, Shape
from ...config.model import Host
from ...errors import PollError
from ...parsers import perftest
from ...parsers.perftest import LatencyReport, parse_report
from ...parsers.skipped import sources_of
from ...samples import PollResult, Sample, histogram_samples
from ..base import Collector
from .histogram import BUCKET_LABELS, Histogram, seconds
from .options import TOOLS, LatencyProbeOptions, parse_options
from .plan import PairPlan, PlanSpec, Probe, run_round
from .ports import PortPool

log = logging.getLogger("fabric_exporter.latency_probe")

_CONNECT_REFUSED = re.compile(r"Couldn't connect to|Unable to open file descriptor")
_TRANSPORT_REASONS = ("connect", "auth", "host_key", "timeout")


@dataclass
class _ProbeResult:
    report: LatencyReport | None = None
    failed_host: str | None = None
    role: str | None = None  # server | client
    reason: str | None = None
    message: str = ""


# What the probes run over SSH (the SSH guard's allow-list is generated from this): ``true`` (the
# host check before a round) and the perftest tools with the options ``_command`` builds, plus the
# flags and values ``extra_args`` may add (-F, -R, -c, -m, -I); at most one operand, the server.
_NUMBER = "number"
SSH_COMMANDS: tuple[Command, ...] = (
    Shape("true"),
    *(Getopt(tool, flags=("-F", "-R", "--out_json", "--out_json_file=/dev/stdout"),
             values={"-p": _NUMBER, "-n": _NUMBER, "-s": _NUMBER, "-d": "name", "-i": _NUMBER, "-x": _NUMBER,
                     "--tclass": _NUMBER, "-S": _NUMBER, "-c": ("RC", "UC", "UD"),
                     "-m": ("256", "512", "1024", "2048", "4096"), "-I": _NUMBER},
             operand="address", max_operands=1, required=("-p", "-n", "-s"),
             together=(("--out_json", "--out_json_file=/dev/stdout"),))
      for tool in TOOLS),
)


class LatencyProbeCollector(Collector):
    name: ClassVar[str] = "latency_probe"
    transports: ClassVar[tuple[str, ...]] = ("ssh", "local")
    scope: ClassVar[str] = "group"
    parse_sources: ClassVar[tuple[str, ...]] = sources_of(perftest)
    ssh_commands: ClassVar[tuple[Command, ...]] = SSH_COMMANDS
    deadline_reserve: ClassVar[float] = 0.5  # to stop servers and build the round's samples

    # -- options ------------------------------------------------------------------------------

    @classmethod
    def parse_options(cls, raw: dict, path: str, err, *, base_dir: Path = Path(".")) -> LatencyProbeOptions:
        return parse_options(raw, path, err, base_dir=base_dir)

    # -- state --------------------------------------------------------------------------------

    def __init__(self, ctx):
        super().__init__(ctx)
        self.options: LatencyProbeOptions = self.options or LatencyProbeOptions()
        self.hosts: dict[str, Host] = {h.name: h for h in self.group.hosts}
        self.round_number = 0
        self._carry: list[Probe] = []  # probes the last round's deadline left out
        self._ports = PortPool(*self.options.port_range)
        self._hist: dict[tuple[str, tuple], Histogram] = {}
        self._last: dict[Probe, tuple[LatencyReport, float]] = {}  # pair -> (report, wall time)
        self._probes: Counter = Counter()  # (host, role)
        self._failures: Counter = Counter()  # (host, role, reason)
        self._background: set[asyncio.Task] = set()
        self.plan, self.group_of, self.plan_problems = self._build_plan()
        self.per_pair = len(self.plan.pairs) <= self.options.per_pair_series_max_pairs
        self._skipped: list = []
        self._test_labels = {"tool": self.options.tool, "message_bytes": str(self.options.message_bytes)}

    def _build_plan(self) -> tuple[PairPlan, dict[str, str], list[str]]:
        o = self.options
        problems: list[str] = []
        groups: dict[str, list[str]] = {}
        if o.host_groups:
            for g, hosts in o.host_groups:
                for h in hosts:
                    if h not in self.hosts:
                        problems.append(f"host_groups.{g}: {h} is not a host of this target; not probed")
                    else:
                        groups.setdefault(g, []).append(h)
            grouped = {h for hs in groups.values() for h in hs}
            for h in self.hosts:
                if h not in grouped:
                    problems.append(f"host {h} is in no host group; not probed")
        elif o.host_group_pattern:
            rx = re.compile(o.host_group_pattern)
            for h in self.hosts:
                m = rx.search(h)
                name = (m.groupdict().get("group") or m.group(1)) if m else None
                if not name:
                    problems.append(f"host {h} does not match host_group_pattern; not probed")
                else:
                    groups.setdefault(name, []).append(h)
        else:
            groups = {self.group.name: list(self.hosts)}  # one group: the target group itself
        explicit = []
        for s, d in o.pairs:
            missing = [h for h in (s, d) if h not in self.hosts]
            if missing:
                problems.append(f"plan.pairs {s}>{d}: {', '.join(missing)} not a host of this target; not probed")
            else:
                explicit.append((s, d))
        group_of = {h: g for g, hs in groups.items() for h in hs}
        for s, d in explicit:  # an explicit pair may name hosts outside every group
            group_of.setdefault(s, "")
            group_of.setdefault(d, "")
        seed = o.seed if o.seed is not None else hashlib.sha256(self.group.name.encode()).hexdigest()[:16]
        spec = PlanSpec(groups={g: tuple(hs) for g, hs in groups.items()}, full_mesh=o.full_mesh,
                        sampled_peers=o.sampled_peers, explicit=tuple(explicit),
                        max_probes_per_round=o.max_probes_per_round, seed=seed)
        return PairPlan(spec), group_of, problems

    # -- one round ------------------------------------------------------------------------------

    async def poll(self) -> PollResult:
        o = self.options
        loop = asyncio.get_running_loop()
        deadline = self.ctx.deadline()
        self._skipped: list = []  # lines the perftest parser skipped this round
        planned = list(self.plan.round(self.round_number))
        self.round_number += 1
        wanted = list(dict.fromkeys(self._carry + planned))
        probes, overflow = wanted[:o.max_probes_per_round], wanted[o.max_probes_per_round:]

        hosts = sorted({h for p in probes for h in (p.source, p.destination)})
        checks = {h: asyncio.ensure_future(self._check_host(h, deadline - loop.time())) for h in hosts}

        async def one(probe: Probe, seconds_left: float) -> _ProbeResult:
            return await self._probe(probe, min(o.probe_timeout, seconds_left), checks)

        try:
            outcome = await run_round(probes, one, per_host=o.max_probes_per_host,
                                      max_parallel=o.max_concurrent_probes, deadline=deadline,
                                      min_start_window=min(o.probe_timeout, max(1.0, 3 * o.server_start_wait)))
        finally:
            for t in checks.values():
                t.cancel()

        ok = failed = 0
        failures_by_reason: Counter = Counter()
        examples: dict[str, str] = {}
        no_percentiles: list[str] = []
        now = time.time()
        for probe, result in outcome.finished.items():
            self._probes[(probe.source, "client")] += 1
            self._probes[(probe.destination, "server")] += 1
            if result.report is not None:
                ok += 1
                self._record(probe, result.report, now)
                if not result.report.has_percentiles:
                    no_percentiles.append(f"{probe.source}>{probe.destination}")
            else:
                failed += 1
                self._failures[(result.failed_host, result.role, result.reason)] += 1
                key = f"{result.failed_host} ({result.role}) {result.reason}"
                failures_by_reason[key] += 1
                examples.setdefault(key, result.message)
        # Left out by the deadline or the budget: first in line next round (bounded by the budget).
        self._carry = (list(outcome.not_run) + overflow)[:o.max_probes_per_round]

        log.debug("latency round done", extra={"fields": {
            "group": self.group.name, "round": self.round_number - 1, "ok": ok, "failed": failed,
            "not_run": len(outcome.not_run), "carried": len(self._carry)}})
        problems = list(self.plan_problems)
        for key, n in sorted(failures_by_reason.items()):
            problems.append(f"{n} probe(s) failed: {key}: {examples[key]}")
        if no_percentiles:
            problems.append(f"{len(no_percentiles)} probe(s) ran a perftest that prints no percentiles (older "
                            "perftest: t_min t_max t_typical only): min/median/max published, p99/p99.9/avg and "
                            "the latency histograms not, for " + ", ".join(sorted(no_percentiles)[:5])
                            + (" ..." if len(no_percentiles) > 5 else ""))
        if outcome.not_run:
            problems.append(f"{len(outcome.not_run)} probe(s) not run before the round deadline "
                            f"({self.group.timeout:g}s); carried over to the next round")
        if probes and ok == 0 and failed > 0:
            # Nothing measured at all: the target is down, not partial.
            first = next(r for r in outcome.finished.values() if r.report is None)
            reason = first.reason if first.reason in _TRANSPORT_REASONS else "command_failed"
            raise PollError(f"all {failed} latency probes failed; e.g. {first.failed_host} ({first.role}): "
                            f"{first.message}", reason=reason)
        return PollResult(self._samples(now, ok, failed, len(outcome.not_run)), problems, self._skipped)

    async def _check_host(self, host: str, timeout: float) -> tuple[str, str] | None:
        """None if ``host`` runs commands; else (reason, message). Opens the pooled connection."""
        try:
            result = await self.ctx.runner(self.hosts[host]).run(["true"], timeout=max(0.5, min(timeout, 15.0)))
        except PollError as e:
            return (e.reason if e.reason in _TRANSPORT_REASONS else "host_check", str(e))
        if result.exit_status != 0:
            return ("host_check", result.describe_failure())
        return None

    async def _probe(self, probe: Probe, timeout: float, checks: dict) -> _ProbeResult:
        o = self.options
        loop = asyncio.get_running_loop()
        started = loop.time()
        for host, role in ((probe.destination, "server"), (probe.source, "client")):
            try:
                down = await asyncio.wait_for(asyncio.shield(checks[host]), timeout)
            except asyncio.TimeoutError:
                return _ProbeResult(failed_host=host, role=role, reason="timeout",
                                    message=f"{host} did not answer within {timeout:g}s")
            if down is not None:
                return _ProbeResult(failed_host=host, role=role, reason=down[0], message=down[1])
        port = self._ports.acquire(loop.time())
        if port is None:
            return _ProbeResult(failed_host=probe.destination, role="server", reason="server_failed",
                                message=f"no free port in {o.port_range[0]}-{o.port_range[1]}")
        remaining = timeout - (loop.time() - started)
        if remaining < 0.5:  # the host checks used up the time: not worth starting a server
            self._ports.release(port)
            return _ProbeResult(failed_host=probe.destination, role="server", reason="timeout",
                                message="no time left after the host checks")
        server_runner = self.ctx.runner(self.hosts[probe.destination])
        client_runner = self.ctx.runner(self.hosts[probe.source])
        server = asyncio.ensure_future(server_runner.run(self._command(probe.destination, port), timeout=remaining))
        server_deadline = loop.time() + remaining
        try:
            result = await self._client(probe, port, server, client_runner, started + timeout)
            if not server.done():
                # The server prints its report and exits right after the client: hold this probe's
                # host slots until it has, so a host never serves two probes at once.
                await asyncio.wait([server], timeout=max(0.0, min(2.0, server_deadline - loop.time())))
            return result
        finally:
            self._finish_server(server, port, server_deadline)

    async def _client(self, probe: Probe, port: int, server: asyncio.Future, runner, deadline: float) -> _ProbeResult:
        o = self.options
        loop = asyncio.get_running_loop()
        dst = self.hosts[probe.destination]
        argv = self._command(probe.source, port, server_address=dst.address)
        wait = o.server_start_wait
        attempts = 0
        while True:
            done, _ = await asyncio.wait([server], timeout=max(0.0, wait))
            if done:  # the server ended before any client got through: it failed to start
                return _server_failure(probe, server)
            left = deadline - loop.time()
            if left <= 0.05:
                return _ProbeResult(failed_host=probe.source, role="client", reason="timeout",
                                    message=f"no result within {o.probe_timeout:g}s")
            attempts += 1
            try:
                result = await runner.run(argv, timeout=left)
            except PollError as e:
                return _ProbeResult(failed_host=probe.source, role="client", reason=_reason(e.reason, "client"),
                                    message=str(e))
            if result.exit_status == 0:
                try:
                    report = parse_report(result.stdout, message_bytes=o.message_bytes,
                                          skipped=self._skipped)
                except PollError as e:  # ParseError
                    return _ProbeResult(failed_host=probe.source, role="client", reason="parse", message=str(e))
                except Exception as e:  # a parser bug fails this probe, clearly, not the whole round
                    log.error("perftest parser bug", exc_info=True, extra={"fields": {
                        "group": self.group.name, "source": probe.source, "destination": probe.destination}})
                    return _ProbeResult(failed_host=probe.source, role="client", reason="parse",
                                        message=f"parser bug: {type(e).__name__}: {e}")
                if report.iterations < o.iterations:
                    return _ProbeResult(failed_host=probe.source, role="client", reason="parse",
                                        message=f"report has {report.iterations} iterations, asked for {o.iterations}")
                return _ProbeResult(report=report)
            if _CONNECT_REFUSED.search(result.stderr):
                if server.done():  # nobody to connect to: the server failed
                    return _server_failure(probe, server)
                if attempts <= o.client_retries:
                    wait = o.server_start_wait * (2 ** (attempts - 1))  # the server is not listening yet
                    continue
            # The client got through and then failed: its side reports the failure, so it takes the blame
            # (the server usually exits too, right after it).
            return _ProbeResult(failed_host=probe.source, role="client", reason="client_failed",
                                message=result.describe_failure())

    def _finish_server(self, server: asyncio.Future, port: int, server_deadline: float) -> None:
        """Release the port when the server has ended; a server still waiting is left to its
        ``timeout`` wrapper (it ends by ``server_deadline`` + the 2 s kill grace) and its port is
        held back until then."""
        loop = asyncio.get_running_loop()
        if server.done():
            if not server.cancelled():
                server.exception()  # retrieved: its failure was already accounted for
            self._ports.release(port)
            return

        async def reap() -> None:
            try:
                await asyncio.wait_for(server, max(0.1, min(2.0, server_deadline - loop.time())))
                self._ports.release(port)
            except (asyncio.TimeoutError, asyncio.CancelledError, PollError):
                self._ports.release(port, free_at=server_deadline + 3.0)
            except Exception:  # never leak a task error; the port stays out until the deadline
                self._ports.release(port, free_at=server_deadline + 3.0)

        task = asyncio.ensure_future(reap())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _command(self, host: str, port: int, server_address: str | None = None) -> list[str]:
        o = self.options
        argv = [a.replace("{host}", host) for a in o.command_prefix]
        argv += [o.tool, "-p", str(port), "-n", str(o.iterations), "-s", str(o.message_bytes)]
        if o.device:
            argv += ["-d", o.device]
        if o.ib_port is not None:
            argv += ["-i", str(o.ib_port)]
        if o.gid_index is not None:
            argv += ["-x", str(o.gid_index)]
        if o.traffic_class is not None:
            argv += ["--tclass", str(o.traffic_class)]
        if o.service_level is not None:
            argv += ["-S", str(o.service_level)]
        argv += list(o.extra_args)
        if server_address is not None:
            if o.report == "json":
                argv += ["--out_json", "--out_json_file=/dev/stdout"]
            argv.append(server_address)
        return argv

    # -- results --------------------------------------------------------------------------------

    def _record(self, probe: Probe, report: LatencyReport, now: float) -> None:
        sg, dg = self.group_of.get(probe.source, ""), self.group_of.get(probe.destination, "")
        keys = [("fabric_rdma_latency_seconds", (("source_group", sg), ("destination_group", dg))),
                ("fabric_rdma_latency_source_seconds", (("source", probe.source), ("source_group", sg)))]
        if self.per_pair:
            keys.append(("fabric_rdma_latency_pair_seconds", self._pair_labels(probe)))
            self._last[probe] = (report, now)
        if not report.has_percentiles or report.avg_us is None:
            return  # the histogram's shape needs the percentiles and its sum the average: not guessed
        for key in keys:
            hist = self._hist.get(key)
            if hist is None:
                hist = self._hist[key] = Histogram()
            hist.add(report)

    def _pair_labels(self, probe: Probe) -> tuple:
        return (("source", probe.source), ("destination", probe.destination),
                ("source_group", self.group_of.get(probe.source, "")),
                ("destination_group", self.group_of.get(probe.destination, "")))

    def _samples(self, now: float, ok: int, failed: int, not_run: int) -> list[Sample]:
        out: list[Sample] = []
        test = self._test_labels
        for (family, labels), hist in sorted(self._hist.items()):
            out += histogram_samples(family, {**dict(labels), **test}, BUCKET_LABELS, hist.buckets, hist.count,
                                     hist.total)
        keep = self.options.keep_results_for or (self.plan.cover_rounds + 1) * self.group.interval
        for probe, (r, when) in sorted(self._last.items()):
            if now - when > keep:
                continue  # too old to call "the last probe": withheld, not frozen
            labels = {**dict(self._pair_labels(probe)), **test}
            for name, value in (("min", r.min_us), ("median", r.typical_us), ("avg", r.avg_us), ("p99", r.p99_us),
                                ("p999", r.p999_us), ("max", r.max_us)):
                if value is not None:  # older perftest prints no avg/percentiles: absent, not guessed
                    out.append(Sample(f"fabric_rdma_latency_{name}_seconds", labels, seconds(value)))
            out.append(Sample("fabric_rdma_latency_last_probe_timestamp_seconds", labels, when))
        roles = set(self._probes)
        for p in self.plan.pairs:  # zero from the first round, so rate() sees the first probe
            roles.add((p.source, "client"))
            roles.add((p.destination, "server"))
        for host, role in sorted(roles):
            out.append(Sample("fabric_rdma_latency_probes_total",
                              {"host": host, "host_group": self.group_of.get(host, ""), "role": role},
                              self._probes.get((host, role), 0)))
        for (host, role, reason), n in sorted(self._failures.items()):
            out.append(Sample("fabric_rdma_latency_probe_failures_total",
                              {"host": host, "host_group": self.group_of.get(host, ""), "role": role,
                               "reason": reason}, n))
        g = {"group": self.group.name}
        for outcome, n in (("ok", ok), ("failed", failed), ("not_run", not_run)):
            out.append(Sample("fabric_rdma_latency_round_probes", {**g, "outcome": outcome}, n))
        out.append(Sample("fabric_rdma_latency_plan_pairs", g, len(self.plan.pairs)))
        out.append(Sample("fabric_rdma_latency_plan_cover_rounds", g, self.plan.cover_rounds))
        return out

    async def close(self) -> None:
        for task in list(self._background):
            task.cancel()


def _reason(poll_reason: str, role: str) -> str:
    """Transport failures keep their reason; anything else is a failed server or client command."""
    return poll_reason if poll_reason in _TRANSPORT_REASONS else f"{role}_failed"


def _server_failure(probe: Probe, server: asyncio.Future) -> _ProbeResult:
    host = probe.destination
    if server.cancelled():
        return _ProbeResult(failed_host=host, role="server", reason="server_failed", message="server cancelled")
    exc = server.exception()
    if isinstance(exc, PollError):
        return _ProbeResult(failed_host=host, role="server", reason=_reason(exc.reason, "server"), message=str(exc))
    if exc is not None:
        return _ProbeResult(failed_host=host, role="server", reason="server_failed", message=repr(exc))
    result = server.result()
    return _ProbeResult(failed_host=host, role="server", reason="server_failed",
                        message=result.describe_failure() if result.exit_status else "server ended before the client")


__all__ = ["LatencyProbeCollector"]
