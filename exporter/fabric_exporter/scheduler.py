"""Poll scheduling: one task per (group, host) — or per group for group-scoped collectors.

Each task polls on its interval, under a deadline shorter than the interval, inside the global and
per-transport concurrency limits; after failures it backs off exponentially (capped), and resets on
success. A task never overlaps its own polls, and a host that hangs holds at most its own slot for
at most its own deadline.

Each target keeps a fixed phase in its interval, from a hash of its key (as Prometheus spreads its
scrapes): its polls fall on the grid ``anchor + k * interval``, moved off it by the jitter each time
but never drifting, so a thousand targets' polls stay spread evenly over the interval. With a random
walk instead, polls that began together stayed bunched for hours: at 10k GPUs the first minutes'
burst of 2,000 polls (1,250 SSH handshakes among them) outlasted the interval, and polls failed
waiting for a slot. The first polls after a start are paced (FIRST_POLLS_PER_SECOND) for the same reason.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import hashlib
import logging
import math
import random
import time
from dataclasses import dataclass, field, replace

from .collectors import Collector, PollContext, registry
from .collectors.base import off_loop
from .config.model import Config, Host, TargetGroup
from .errors import PollError
from .serving.selfmetrics import SelfMetrics
from .sharding import Shard, target_key
from .serving.exposition import UnknownMetricError
from .serving.store import SnapshotStore, TargetKey, build_snapshot

log = logging.getLogger("fabric_exporter.scheduler")

GROUP_HOST = "all"  # the host label of a group-scoped target
# While a target stays unhealthy, its warning is repeated at most this often (a state change logs at once).
HEALTH_REMINDER_SECONDS = 300.0
# A poll of this many samples or more is rendered into its snapshot on a worker thread (a large
# InfiniBand fabric's: ~0.25 s per million samples on the loop otherwise); smaller ones, on the loop.
SNAPSHOT_IN_THREAD_SAMPLES = 50_000


@dataclass
class TargetState:
    """What the status page and the self-metrics show about one target."""

    group: str
    host: str
    collector: str
    fabric: str
    transport: str
    interval: float
    stale_after: float
    polls: int = 0
    errors: collections.Counter = field(default_factory=collections.Counter)
    state: str = "pending"  # pending | ok | partial | failed
    last_error: str = ""
    last_poll_end: float | None = None  # wall clock
    last_duration: float | None = None
    last_success: float | None = None  # wall clock
    consecutive_failures: int = 0
    backoff: float = 0.0
    samples: int = 0
    skipped_lines: collections.Counter = field(default_factory=collections.Counter)  # source -> lines
    # for logging changes of health rather than every poll (Scheduler._log_health)
    health_issue: tuple[str, str] | None = None  # (reason, error text) while failing or partial
    unhealthy_since: float = 0.0  # monotonic
    unhealthy_polls: int = 0
    health_logged: float = 0.0  # monotonic time of the last warning about this target

    @property
    def key(self) -> TargetKey:
        return (self.group, self.host)

    @property
    def tried(self) -> bool:
        return self.last_poll_end is not None


def backoff_delay(interval: float, failures: int, max_backoff: float) -> float:
    """Extra wait added to the interval after ``failures`` consecutive failures: the gap between
    polls doubles per failure (2x, 4x, 8x the interval, ...) up to ``max_backoff``; 0 when healthy."""
    if failures <= 0:
        return 0.0
    gap = min(interval * 2 ** min(failures, 30), max(max_backoff, interval))
    return gap - interval


#: first polls after a start or reload: at most this many a second on average (a first poll costs
#: more than the next ones: an SSH handshake, SNMPv3 discovery, the names' walks), spread over at
#: most START_SPREAD_MAX_INTERVALS; a config of up to 50 targets has every first poll within
#: START_SPREAD_MIN (or the interval, if shorter). At 10k GPUs (2,051 targets), 100 a second left ~840 polls failing for want of a
#: slot in the first minutes; 25 a second (82 s) left 7 (bench/RESULTS.md, issue 27).
FIRST_POLLS_PER_SECOND = 25.0
START_SPREAD_MIN = 2.0
START_SPREAD_MAX_INTERVALS = 3


def phase_of(key: TargetKey) -> float:
    """The target's fixed place in its interval, in [0, 1): a hash of its key, the same on every start."""
    digest = hashlib.blake2b("\0".join(key).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2 ** 64


def first_poll_delay(phase: float, interval: float, starting: int) -> float:
    """Seconds from a start (or a reload) to a target's first poll, when ``starting`` targets start."""
    paced = min(START_SPREAD_MAX_INTERVALS * interval, starting / FIRST_POLLS_PER_SECOND)
    return phase * max(min(interval, START_SPREAD_MIN), paced)


def next_poll_due(anchor: float, interval: float, earliest: float) -> float:
    """The first grid time ``anchor + k * interval`` (k >= 1) at or after ``earliest``."""
    k = max(1, math.ceil((earliest - anchor) / interval - 1e-9))
    return anchor + k * interval


def _identity(group: TargetGroup, host: Host | None, cls: type[Collector]) -> tuple:
    """What a running target depends on. A host-scoped target ignores its group's other hosts, so
    adding a host to a hosts file does not restart (and empty the snapshots of) the others."""
    if cls.scope == "host":
        group = replace(group, hosts=())
    return (cls, group, host)


def _target_keys(group: TargetGroup, collector_cls: type[Collector]) -> list[tuple[TargetKey, Host | None]]:
    if collector_cls.scope == "group":
        return [((group.name, GROUP_HOST), None)]
    return [((group.name, h.name), h) for h in group.hosts]


_SKIPPED_LOGGED: set[tuple[str, str, str]] = set()
_SKIPPED_LOG_LIMIT = 10_000  # distinct lines remembered, so the set cannot grow without bound


def _count_skipped(state: TargetState, skipped) -> None:
    """Count the lines the poll's parsers skipped; log each distinct line once, at debug."""
    for line in skipped:
        state.skipped_lines[line.source] += 1
        key = (state.collector, line.source, line.text)
        if key not in _SKIPPED_LOGGED and len(_SKIPPED_LOGGED) < _SKIPPED_LOG_LIMIT:
            _SKIPPED_LOGGED.add(key)
            log.debug("skipped an unknown line", extra=_ctx(state, source=line.source, line=line.text))


class Scheduler:
    def __init__(self, transports, store: SnapshotStore, *, rng: random.Random | None = None,
                 shard: Shard | None = None, self_metrics: SelfMetrics | None = None):
        self.transports = transports
        self.shard = shard
        self.store = store
        self.self_metrics = self_metrics
        self.states: dict[TargetKey, TargetState] = {}
        self._tasks: dict[TargetKey, asyncio.Task] = {}
        self._retiring: set[asyncio.Task] = set()  # cancelled tasks of retired targets, until they end
        self._running: dict[TargetKey, tuple] = {}  # key -> what the target's task was started with
        self._config: Config | None = None
        self._global: asyncio.Semaphore | None = None
        self._per_transport: dict[str, asyncio.Semaphore] = {}
        self._rng = rng or random.Random()
        self._registry = registry()
        self.health_reminder_seconds = HEALTH_REMINDER_SECONDS

    # -- configuration ------------------------------------------------------------------------

    def targets(self, config: Config) -> dict[TargetKey, tuple[TargetGroup, Host | None, type[Collector]]]:
        found = {}
        for group in config.targets:
            cls = self._registry[group.collector]
            for key, host in _target_keys(group, cls):
                if self.shard is None or self.shard.owns(target_key(*key)):
                    found[key] = (group, host, cls)
        return found

    def apply(self, config: Config, *, start_tasks: bool = True) -> None:
        """Switch to ``config``: unchanged targets keep running (and their data); others restart or go."""
        self._registry = registry()
        prepare = getattr(self.transports, "prepare", None)
        if prepare is not None:  # load what the config's transports need now, not inside a poll's deadline
            prepare(config)
        apply_limits = getattr(self.transports, "apply_limits", None)
        if apply_limits is not None:  # limits.max_output_bytes / max_snmp_poll_bytes, in place
            apply_limits(config.limits)
        if self._config is None or self._config.limits != config.limits:
            self._global = asyncio.Semaphore(config.limits.max_concurrent_polls)
            self._per_transport = {t: asyncio.Semaphore(n) for t, n in config.limits.per_transport.items()}
        self._config = config
        wanted = self.targets(config)
        for key in list(self._running):
            if key not in wanted or _identity(*wanted[key]) != self._running[key]:
                self._retire(key)
        starting = sum(key not in self._running for key in wanted)
        for key, (group, host, cls) in wanted.items():
            if key in self._running:
                continue
            self._running[key] = _identity(group, host, cls)
            self.states[key] = TargetState(group.name, key[1], group.collector, group.fabric, group.transport,
                                           group.interval, group.stale_after)
            for source in cls.sources_for(group.options):
                self.states[key].skipped_lines[source] = 0  # published from the start
            self._publish_state(key)
            if start_tasks:
                self._tasks[key] = asyncio.create_task(self._run(key, group, host, cls, starting),
                                                       name=f"poll:{key[0]}/{key[1]}")

    def _retire(self, key: TargetKey) -> None:
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()
            self._retiring.add(task)
            task.add_done_callback(self._retiring.discard)
        self._running.pop(key, None)
        self.states.pop(key, None)
        with self.store.lock:
            self.store.drop(key)
            if self.self_metrics is not None:
                self.self_metrics.target_removed(key)

    async def settle(self, timeout: float = 3.0) -> None:
        """Wait (at most ``timeout``) for the tasks of retired targets to end: their collectors are
        closed then, so what they used can be released (``Transports.release_unused``)."""
        if self._retiring:
            await asyncio.wait(list(self._retiring), timeout=timeout)

    def _publish_state(self, key: TargetKey) -> None:
        """Render the target's self-metrics now, so a scrape only joins bytes."""
        if self.self_metrics is not None:
            with self.store.lock:
                snapshot = self.store.get(key)
                self.self_metrics.target_changed(self.states[key], snapshot.fresh_until if snapshot else None)

    @property
    def config(self) -> Config | None:
        return self._config

    def ready(self) -> bool:
        return self._config is not None and all(s.tried for s in self.states.values())

    # -- polling ------------------------------------------------------------------------------

    async def _run(self, key: TargetKey, group: TargetGroup, host: Host | None, cls: type[Collector],
                   starting: int = 1) -> None:
        collector = cls(PollContext(group, host, self.transports))
        defaults = self._config.defaults
        interval = group.interval
        try:
            # The first polls of the targets starting together are spread by their phases, so a
            # restart does not hit every host in the same instant; the later ones fall on the grid.
            phase = phase_of(key)
            anchor = time.monotonic() + phase * interval
            await asyncio.sleep(first_poll_delay(phase, interval, starting))
            while True:
                started = time.monotonic()
                await self.poll(key, collector)
                state = self.states.get(key)
                extra = state.backoff if state else 0.0
                # half an interval at least after this poll began (the first poll may come before
                # the anchor), plus the backoff; each poll moved off the grid by up to +-jitter/2 of
                # the interval, so two polls' gap varies by up to +-jitter of it
                due = next_poll_due(anchor, interval, started + interval / 2 + extra)
                due += self._rng.uniform(-defaults.jitter, defaults.jitter) * interval / 2
                await asyncio.sleep(max(0.0, due - time.monotonic()))
        except asyncio.CancelledError:
            pass
        finally:
            try:
                await asyncio.wait_for(asyncio.shield(collector.close()), 2)
            except BaseException:  # closing is best effort; never let it mask a cancel
                pass

    async def poll(self, key: TargetKey, collector: Collector) -> TargetState:
        """Poll one target once, under its deadline and the concurrency limits; update state and store."""
        group = collector.group
        state = self.states[key]
        loop = asyncio.get_running_loop()
        started_mono = loop.time()
        problems: list[str] = []
        error: PollError | None = None
        snapshot = None
        slots = _Slots(self._global, self._per_transport[group.transport])
        try:
            # Waiting for a slot is bounded by the interval (the next poll is due then); the poll's
            # own deadline starts once it holds its slots, so a queue never eats a poll's time.
            try:
                async with asyncio.timeout(group.interval):
                    await slots.acquire()
            except TimeoutError:
                raise PollError(f"no poll slot free within the {group.interval:g}s interval "
                                f"(limits.max_concurrent_polls / limits.per_transport.{group.transport})",
                                reason="timeout") from None
            started_mono = loop.time()
            collector.ctx.begin_poll(started_mono)  # the collector's own I/O deadline, inside ours
            try:
                async with asyncio.timeout(group.timeout):
                    result = await collector.poll()
            except TimeoutError:
                raise PollError(f"poll did not finish within its {group.timeout:g}s deadline",
                                reason="timeout") from None
            finally:
                collector.ctx.end_poll()
                slots.release()
            problems = list(result.problems)
            _count_skipped(state, result.skipped)
            build = functools.partial(build_snapshot, group.fabric, result.samples, group.stale_after,
                                      previous=self.store.get(key))
            # a large fabric's render (~0.3 s for 1.3 M samples) on a worker thread, not holding the
            # loop; the target's renderer is this poll's alone until its snapshot is stored
            snapshot = build() if len(result.samples) < SNAPSHOT_IN_THREAD_SAMPLES else await off_loop(build)
        except PollError as e:
            error = e
        except UnknownMetricError as e:
            error = PollError(f"collector bug: {e}", reason="internal")
            log.error("collector emitted a metric outside the catalog", extra=_ctx(state, error=str(e)))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a collector bug must not kill the task or the daemon
            error = PollError(f"internal error: {type(e).__name__}: {e}", reason="internal")
            log.exception("poll crashed", extra=_ctx(state))
        duration = loop.time() - started_mono
        state = self.states.get(key)
        if state is None:  # retired while polling
            return TargetState(key[0], key[1], group.collector, group.fabric, group.transport,
                               group.interval, group.stale_after)
        # Under the store's lock: a scrape (on the web thread) sees this poll's samples and its
        # self-metrics together, or neither.
        with self.store.lock:
            state.polls += 1
            state.last_duration = duration
            state.last_poll_end = time.time()
            if error is None:
                self.store.put(key, snapshot)
                state.samples = snapshot.sample_count
                state.last_success = state.last_poll_end
                state.consecutive_failures = 0
                state.backoff = 0.0
                if problems:
                    state.state = "partial"
                    state.errors["partial"] += 1
                    state.last_error = "; ".join(problems)
                else:
                    state.state = "ok"
                    state.last_error = ""
                    log.debug("poll ok", extra=_ctx(state, samples=state.samples, duration=duration))
            else:
                state.state = "failed"
                state.errors[error.reason] += 1
                state.last_error = str(error)
                state.consecutive_failures += 1
                state.backoff = backoff_delay(group.interval, state.consecutive_failures,
                                              self._config.defaults.max_backoff)
            self._publish_state(key)
        self._log_health(state, error, duration)
        return state

    def _log_health(self, state: TargetState, error: PollError | None, duration: float) -> None:
        """Log a target's changes of health, not every poll: one line when it starts failing (or
        returning partial data), one when its reason changes, one when it recovers, and a
        reminder at most every ``health_reminder_seconds`` while it stays unhealthy."""
        now = time.monotonic()
        if error is not None:
            issue: tuple[str, str] | None = (error.reason, str(error))
        else:
            issue = ("partial", state.last_error) if state.state == "partial" else None
        previous = state.health_issue
        state.health_issue = issue
        if issue is None:
            if previous is not None:
                log.info("target recovered", extra=_ctx(state, was=previous[0], polls=state.unhealthy_polls,
                                                        unhealthy_for=round(now - state.unhealthy_since, 3)))
            state.unhealthy_polls = 0
            return
        state.unhealthy_polls += 1
        what = "target failing" if error else "partial data"
        fields = {"reason": issue[0], "error": issue[1], "duration": duration} if error else {"error": issue[1]}
        if previous is None:
            state.unhealthy_since = state.health_logged = now
            log.warning(what, extra=_ctx(state, **fields))
        elif previous[0] != issue[0]:  # a new reason (not new text: messages carry varying details)
            state.health_logged = now
            log.warning(what, extra=_ctx(state, **fields, changed_from=previous[0]))
        elif now - state.health_logged >= self.health_reminder_seconds:
            state.health_logged = now
            log.warning(f"{what} still", extra=_ctx(state, **fields, polls=state.unhealthy_polls,
                                                     unhealthy_for=round(now - state.unhealthy_since, 3)))
        else:
            log.debug("poll failed" if error else "partial data", extra=_ctx(state, **fields))

    async def poll_all_once(self) -> list[TargetState]:
        """For ``fabric-exporter once``: every target polled once, concurrently."""
        keys = []
        collectors = []
        for key, (group, host, cls) in self.targets(self._config).items():
            keys.append(key)
            collectors.append(cls(PollContext(group, host, self.transports)))
        try:
            return list(await asyncio.gather(*(self.poll(k, c) for k, c in zip(keys, collectors))))
        finally:
            await asyncio.gather(*(c.close() for c in collectors), return_exceptions=True)

    async def stop(self, grace: float = 3.0) -> None:
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=grace)


class _Slots:
    """The global and per-transport semaphores taken together (released in reverse order)."""

    def __init__(self, *semaphores: asyncio.Semaphore):
        self._semaphores = semaphores
        self._held: list[asyncio.Semaphore] = []

    async def acquire(self) -> None:
        try:
            for sem in self._semaphores:
                await sem.acquire()
                self._held.append(sem)
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        while self._held:
            self._held.pop().release()


def _ctx(state: TargetState, **fields) -> dict:
    return {"fields": {"group": state.group, "host": state.host, "collector": state.collector, **fields}}
