"""Running the stock tools: argv building, the retry rule, bounded batches of per-node perfquery runs,
and the poll they run in (IbPoll, handed down the collector's calls).

A crashed tool (killed by a signal, ibsim's occasional segfault) or empty output is retried once,
then fails the poll; it is never read as "no errors"."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ...catalog.infiniband import QP1_DROPPED
from ...commands import Getopt, Shape, Value
from ...errors import CommandError, ParseError, PollError, PollTimeoutError
from ...parsers import ib_perfquery
from ...parsers.skipped import SkippedLine
from ...transport.base import CommandResult
from ..base import PollContext
from .counters import reset_mask
from .join import PortKey, SweptPort
from .options import InfinibandOptions
from .state import FabricState

log = logging.getLogger("fabric_exporter.infiniband")

# What the collector runs over SSH (the SSH guard's allow-list is generated from this): the options
# ``argv`` adds for every tool (ca, ca_port, mad_timeout_ms), then each tool's read-only spellings.
# Counter reset (-R/-r: ``reset_latched``) passes only where the guard runs with --allow-counter-reset.
CA_OPTIONS = {"-C": "name", "-P": "number", "-t": "number"}
SSH_COMMANDS = (
    Getopt("perfquery", flags=("-x", "--extended", "-c", "--smplctl", "-a", "--all_ports", "-l", "--loop_ports",
                               "--vlxmitcounters", "-E", "--rcverr", "-D", "--xmtdisc"),
           values=CA_OPTIONS, reset_flags=("-R", "--Reset_only", "-r", "--reset_after_read"),
           operand="port_list", max_operands=3),
    Getopt("ibqueryerrors", flags=("--counters", "--report-port", "--details", "--data", "--switch", "--ca",
                                   "--router", "--skip-sl"),
           values={**CA_OPTIONS, "--load-cache": "ib_cache_file", "--threshold-file": ("/dev/null",)}),
    # never an operand (a file to write), --load-cache or --diff
    Getopt("ibnetdiscover", flags=("-l", "--list", "-g", "--grouping", "-H", "--Hca_list", "-S", "--Switch_list",
                                   "-R", "--Router_list", "-s", "--show", "-p", "--ports", "--full"),
           values={**CA_OPTIONS, "--cache": "ib_cache_file"}),
    Shape("rm", ("-f", "--", Value("ib_cache_file"))),  # close(): its own discovery cache
)


def discovery_cache_path(options: InfinibandOptions, who: str) -> str | None:
    """Where ibnetdiscover --cache writes on the tool host (None: no cache)."""
    if not options.use_discovery_cache:
        return None
    if options.discovery_cache_path:
        return options.discovery_cache_path
    # Unique per exporter process: two exporters (an HA pair) polling one SM node must not
    # load each other's discovery. close() removes it.
    who = f"{socket.gethostname()}-{os.getpid()}-{who}"
    return f"/tmp/fabric-exporter-ib-{re.sub(r'[^A-Za-z0-9_.-]', '_', who)}.ibnetdiscover-cache"


@dataclass
class IbPoll:
    """One poll of the collector, handed down its calls (sweeps, optional perfquery reads, ibdiagnet
    files) instead of the same four loose arguments at every level."""

    ctx: PollContext
    #: event-loop time by which the poll's tools must be done: ``ctx.deadline()`` read once at the
    #: start, so a poll without the scheduler also shares one budget across its commands
    deadline: float
    #: time.monotonic() at the start: what the topology and tick intervals and the focus count from
    now: float
    #: tool (label) -> loop seconds its runs took this poll: fabric_ib_sweep_duration_seconds
    durations: dict[str, float] = field(default_factory=dict)
    #: why the poll is partial, if it is (PollResult.problems)
    problems: list[str] = field(default_factory=list)
    #: lines the parsers skipped this poll (the skip-and-count rule: PollResult.skipped)
    skipped: list[SkippedLine] = field(default_factory=list)

    @classmethod
    def start(cls, ctx: PollContext) -> IbPoll:
        return cls(ctx, ctx.deadline(), time.monotonic())

    def time_left(self) -> float:
        """Seconds until the deadline, negative past it: a tool is not started with 0.05 s or less."""
        return self.deadline - asyncio.get_running_loop().time()

    def remaining(self) -> float:
        """A helper command's ``timeout=``: the context's floored time left, to this poll's deadline."""
        return self.ctx.remaining(self.deadline)

    def took(self, label: str, started: float) -> None:
        """Add the loop time since ``started`` to ``label``'s duration (a tool may run twice a poll)."""
        self.durations[label] = self.durations.get(label, 0.0) + asyncio.get_running_loop().time() - started


class IbTools:
    """The tools of one target, run through its transport (local or SSH)."""

    def __init__(self, options: InfinibandOptions, runner: Callable[[], object]):
        self.options = options
        self._runner = runner  # the context's runner() (a new SSH session may be needed per poll)

    def runner(self):
        """Where the tools run: the target's transport (local or SSH)."""
        return self._runner()

    def argv(self, tool: str, *args: str) -> list[str]:
        o = self.options
        if tool == "ibqueryerrors" and o.skip_sl:
            # No SA PathRecord query for SLs: the sweep keeps working while the SM is down (SL 0).
            args = ("--skip-sl", *args)
        argv = list(o.command_prefix)
        if o.env:
            # An argv prefix rather than the runner's environment: the same on local and SSH.
            argv += ["env", *(f"{k}={v}" for k, v in o.env)]
        argv.append(o.tool(tool))
        if o.ca:
            argv += ["-C", o.ca]
        if o.ca_port:
            argv += ["-P", str(o.ca_port)]
        if o.mad_timeout_ms:
            argv += ["-t", str(o.mad_timeout_ms)]
        return argv + list(args)

    async def run(self, argv: list[str], poll: IbPoll, ok_status: tuple[int, ...], label: str,
                  retry: bool = True) -> CommandResult:
        """Run a tool; a crash or empty output is retried once (time permitting), then raised."""
        loop = asyncio.get_running_loop()
        attempts = 2 if retry else 1
        for attempt in range(attempts):
            remaining = poll.time_left()
            if remaining <= 0.05:
                raise PollTimeoutError(f"{label}: no time left in the poll deadline")
            started = loop.time()
            result = await self._runner().run(argv, timeout=remaining)
            poll.took(label, started)
            crashed = result.exit_status < 0 or result.exit_status >= 128
            if result.exit_status in ok_status and result.stdout.strip():
                return result
            if crashed or not result.stdout.strip():
                if attempt + 1 < attempts:
                    log.info("%s crashed or printed nothing (%s); retrying once", label, result.describe_failure())
                    continue
                what = "crashed" if crashed else "printed nothing"
                raise CommandError(f"{label} {what}: {result.describe_failure()}")
            raise CommandError(f"{label} failed: {result.describe_failure()}")
        raise AssertionError("unreachable")

    async def run_plain(self, argv: list[str], timeout: float) -> CommandResult:
        """A helper command (find, cat, rm) with the command prefix, no retry."""
        return await self._runner().run(list(self.options.command_prefix) + argv, timeout=timeout)

    # -- the sweeps -----------------------------------------------------------------------------

    def counter_sweep(self, poll: IbPoll):
        """Live: every port's data counters and link info (it discovers the fabric itself)."""
        return self.run(self.argv("ibqueryerrors", "--counters", "--report-port"), poll, (0,),
                        "ibqueryerrors_counters")

    def error_sweep(self, poll: IbPoll, cache: str | None):
        """Every non-zero error counter: an empty threshold file makes every threshold 0. Exit
        status 1 means "errors found", not a failure."""
        load = ("--load-cache", cache) if cache is not None else ()
        return self.run(self.argv("ibqueryerrors", *load, "--threshold-file", "/dev/null"), poll, (0, 1),
                        "ibqueryerrors_errors")

    def discover(self, poll: IbPoll, cache: str | None = None):
        args = ("--cache", cache) if cache is not None else ()
        return self.run(self.argv("ibnetdiscover", *args), poll, (0,), "ibnetdiscover")

    # -- optional per-device queries (bounded concurrency, one process per node, never per port) --

    async def batch(self, argvs: list[tuple[object, list[str]]], poll: IbPoll,
                    label: str) -> dict[object, CommandResult | PollError]:
        sem = asyncio.Semaphore(self.options.max_concurrency)
        out: dict[object, CommandResult | PollError] = {}

        async def one(key, argv):
            async with sem:
                remaining = poll.time_left()
                if remaining <= 0.05:
                    out[key] = PollTimeoutError(f"{label}: no time left")
                    return
                try:
                    out[key] = await self._runner().run(argv, timeout=remaining)
                except PollError as e:
                    out[key] = e

        started = asyncio.get_running_loop().time()
        await asyncio.gather(*(one(k, a) for k, a in argvs))
        poll.took(label, started)
        return out

    async def read_qp1_dropped(self, ports: dict[PortKey, SweptPort], state: FabricState, poll: IbPoll) -> None:
        """QP1Dropped is in PortCounters but no sweep prints it: one perfquery per node (-l: all ports)."""
        by_node: dict[int, list[SweptPort]] = {}
        for p in ports.values():
            if p.entry.link is not None and p.entry.link.lid:
                by_node.setdefault(p.node_guid, []).append(p)
        jobs = []
        for guid, plist in by_node.items():
            if state.node_type(guid) == "switch":
                jobs.append((guid, self.argv("perfquery", "-l", str(plist[0].entry.link.lid), "255")))
            else:
                jobs += [((guid, p.port), self.argv("perfquery", str(p.entry.link.lid), str(p.port))) for p in plist]
        results = await self.batch(jobs, poll, "perfquery_qp1")
        failed = 0
        for key, res in results.items():
            try:
                if isinstance(res, PollError) or res.exit_status != 0:
                    raise ParseError("perfquery failed")
                blocks = ib_perfquery.parse(res.stdout, skipped=poll.skipped)
            except ParseError:
                failed += 1
                continue
            guid = key if isinstance(key, int) else key[0]
            for b in blocks:
                p = ports.get((guid, b.port))
                # basic PortCounters; perfquery -x prints it in the extended block too (real captures)
                if p is not None and b.kind in ("counters", "extended") and QP1_DROPPED.name in b.values:
                    p.qp1_dropped = b.values[QP1_DROPPED.name]
        if failed:
            poll.problems.append(f"QP1Dropped: perfquery failed on {failed} of {len(jobs)} node(s)/port(s)")

    async def read_ticks(self, state: FabricState, poll: IbPoll) -> None:
        """PortSamplesControl.Tick per switch, where the device answers (perfquery -c)."""
        topo = state.topology
        if topo is None:
            return
        jobs = []
        for node in topo.nodes.values():
            if node.type == "switch" and node.lid:
                port = min(node.ports) if node.ports else 1
                jobs.append((node.guid, self.argv("perfquery", "-c", str(node.lid), str(port))))
        results = await self.batch(jobs, poll, "perfquery_tick")
        for guid, res in results.items():
            try:
                if isinstance(res, PollError) or res.exit_status != 0:
                    raise ParseError("no PortSamplesControl")
                blocks = ib_perfquery.parse(res.stdout, skipped=poll.skipped)
                state.ticks[guid] = next(b.values["Tick"] for b in blocks if "Tick" in b.values)
            except (ParseError, StopIteration):
                state.ticks.pop(guid, None)  # not readable on this device: publish nothing

    async def reset_latched(self, ports: dict[PortKey, SweptPort], latched: dict[PortKey, list[str]],
                            poll: IbPoll) -> None:
        """perfquery -R on the latched counters only (reset_latched_counters)."""
        jobs = []
        for key, names in latched.items():
            p = ports[key]
            mask = reset_mask(names)
            if mask and p.entry.link is not None and p.entry.link.lid:
                jobs.append((key, self.argv("perfquery", "-R", str(p.entry.link.lid), str(p.port), hex(mask))))
        results = await self.batch(jobs, poll, "perfquery_reset")
        failed = [k for k, r in results.items() if isinstance(r, PollError) or r.exit_status != 0]
        log.warning("reset latched counters on %d port(s)", len(jobs) - len(failed))
        if failed:
            poll.problems.append(f"reset of latched counters failed on {len(failed)} port(s)")
