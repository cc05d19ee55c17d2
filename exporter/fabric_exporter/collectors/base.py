"""What every collector is: named, told which transports it supports, given a target, polled.

A collector knows which commands to run (or OIDs to walk), calls pure parsers and maps records to
catalog samples. It does no HTTP and no scheduling.
"""

from __future__ import annotations

import abc
import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..config.model import Host, TargetGroup
from ..samples import PollResult
from ..transport.base import CommandRunner, ReadBudget
from ..config.validator import ErrorSink

# Text longer than this is parsed on a worker thread: a big output (up to limits.max_output_bytes)
# would otherwise hold the event loop for seconds, and every other target's deadline and /metrics
# with it. The thread still takes the GIL, but CPython hands it back to the loop every 5 ms
# (sys.getswitchinterval), so the loop keeps running. Two threads: this work is CPU, more would only queue.
PARSE_IN_THREAD_CHARS = 256 * 1024
_worker_pool: ThreadPoolExecutor | None = None


async def off_loop(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` on a worker thread, for a synchronous step long enough to hold the
    loop (a large fabric's mapping, its render). ``fn`` must touch only what the caller owns until
    it returns (a cancelled caller does not stop it). Exceptions propagate."""
    global _worker_pool
    if _worker_pool is None:
        _worker_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fabric-work")
    return await asyncio.get_running_loop().run_in_executor(_worker_pool, functools.partial(fn, *args, **kwargs))


async def parse_off_loop(parse: Callable[..., Any], text: str, *args: Any, **kwargs: Any) -> Any:
    """``parse(text, *args, **kwargs)``, on a worker thread when ``text`` is large. Exceptions propagate."""
    if len(text) < PARSE_IN_THREAD_CHARS:
        return parse(text, *args, **kwargs)
    return await off_loop(parse, text, *args, **kwargs)


def work_budget(timeout: float, reserve: float = 0.0) -> float:
    """Seconds a poll may spend on its own I/O within its ``timeout``: 90 % (at least 1 s). The
    rest is kept so the collector's own timeout (naming the command that hung) fires before the
    scheduler cancels the poll. A collector that needs ``reserve`` seconds after its I/O (to stop
    what it started and build samples) gets at most ``timeout - reserve``, but never less than
    0.5 s (or the whole timeout, if shorter). The only such formula: the scheduler owns it."""
    budget = max(1.0, timeout * 0.9)
    if reserve > 0:
        budget = max(min(0.5, timeout), min(budget, timeout - reserve))
    return budget


@dataclass
class PollContext:
    """What a collector instance may use: its group, its host (None for group-scoped collectors),
    the daemon's transports, reached through ``runner()`` and ``snmp()``, and the current poll's
    deadline, reached through ``deadline()`` and ``remaining()``."""

    group: TargetGroup
    host: Host | None
    transports: Any  # transport.factory.Transports (typed loosely to keep imports light)
    #: event-loop time by which this poll's I/O must be done; set by the scheduler for each poll
    #: (``begin_poll``), None between polls
    poll_deadline: float | None = None
    #: the collector's ``deadline_reserve`` (set when the collector is made)
    reserve: float = 0.0
    #: the bytes this poll may read from SNMP agents; restarted by ``begin_poll``
    read_budget: ReadBudget = field(default_factory=ReadBudget)

    def begin_poll(self, started: float) -> float:
        """Called by the scheduler when a poll starts (loop time ``started``): sets and returns its
        deadline, and gives the poll a fresh byte budget (``limits.max_snmp_poll_bytes``)."""
        self.poll_deadline = started + work_budget(self.group.timeout, self.reserve)
        self.read_budget.restart(getattr(self.transports, "snmp_poll_bytes", None))
        return self.poll_deadline

    def end_poll(self) -> None:
        self.poll_deadline = None

    def deadline(self) -> float:
        """Event-loop time by which the collector's commands/walks must be done. A collector polled
        without the scheduler (tests, tools) gets the same budget counted from now."""
        if self.poll_deadline is not None:
            return self.poll_deadline
        return asyncio.get_running_loop().time() + work_budget(self.group.timeout, self.reserve)

    def remaining(self, until: float | None = None) -> float:
        """Seconds left until ``deadline()`` (or ``until``: a deadline the collector read once, so a
        poll without the scheduler does not get a fresh budget per command), for a command's
        ``timeout=``. Never below 0.1 s: a command started at the deadline still gets a real
        (short) timeout, and fails by it."""
        return max(0.1, (self.deadline() if until is None else until) - asyncio.get_running_loop().time())

    def runner(self, host: Host | None = None) -> CommandRunner:
        """Where commands for ``host`` (default: this target's host) run: SSH or local, per the group."""
        return self.transports.runner(self.group, host or self.host)

    def snmp(self, host: Host | None = None) -> Any:
        """An SNMP session to ``host`` whose reads count against this poll's ``read_budget``."""
        return self.transports.snmp(self.group, host or self.host, self.read_budget)


class Collector(abc.ABC):
    #: name used in the config's ``collector:`` key
    name: ClassVar[str]
    #: transports this collector can use
    transports: ClassVar[tuple[str, ...]]
    #: "host": one poll task per host; "group": one task per group (e.g. pairwise latency probes)
    scope: ClassVar[str] = "host"
    #: sources this collector's parsers report skipped lines under (fabric_parse_skipped_lines_total),
    #: published at 0 from the first scrape so rate() sees the first skipped line
    parse_sources: ClassVar[tuple[str, ...]] = ()
    #: the commands it may run over SSH, as data (fabric_exporter.commands): the SSH guard's allow-list
    #: is generated from every collector's list (``python -m fabric_exporter.ssh_guard --write``)
    ssh_commands: ClassVar[tuple[Any, ...]] = ()
    #: every ``options:`` that changes the commands it builds (``{}`` for the defaults): the SSH guard
    #: test polls once with each and checks every command sent; empty when a hand-written driver in
    #: tests/deploy/test_ssh_guard_generated.py does that instead (or it runs nothing over SSH)
    command_variants: ClassVar[tuple[dict[str, Any], ...]] = ()
    #: real captures of what its commands print (paths under tests/fixtures), one group per kind of
    #: output: tests/unit/test_collectors_fuzz.py polls it, once per ``command_variants``
    #: entry, with every command answered by a mutated group; empty when a hand-written test there does
    captures: ClassVar[tuple[tuple[str, ...], ...]] = ()
    #: seconds the collector needs after its I/O, before the poll's timeout (see ``work_budget``)
    deadline_reserve: ClassVar[float] = 0.0

    def __init__(self, ctx: PollContext):
        ctx.reserve = self.deadline_reserve
        self.ctx = ctx
        self.group = ctx.group
        self.host = ctx.host
        self.options = ctx.group.options

    @classmethod
    def sources_for(cls, options: Any) -> tuple[str, ...]:
        """The parse sources a target with these options can report (published at 0 from its start).
        Default: every one the collector declares; a collector with dialects names its dialect's."""
        return cls.parse_sources

    @classmethod
    def parse_options(cls, raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> Any:
        """Validate ``options:``; report problems with ``err(key_path, message)``. Default: none allowed."""
        for key in raw:
            err(f"{path}.{key}", f"unknown option for collector {cls.name}")
        return None

    @classmethod
    def check_targets(cls, groups: list[tuple[int, TargetGroup]], err: ErrorSink) -> None:
        """Checks across all groups of this collector, as (index in targets, group). Default: none."""

    @abc.abstractmethod
    async def poll(self) -> PollResult:
        """One poll. Raise PollError (or a subclass) on failure; never return made-up values."""

    async def close(self) -> None:
        """Release per-target state (transports are closed by the daemon)."""
