"""The scheduler owns each poll's deadline: it sets it on the PollContext, collectors only read it.

The budgets are the ones the collectors computed for themselves before (``max(1.0, 0.9 * timeout)``
in infiniband, roce_nic and switch_cli); the latency probe declares the 0.5 s it needs after its
probes (``deadline_reserve``) and gets the same budget as before up to a 5 s timeout, 90 % above.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from fabric_exporter.collectors import Collector, register, unregister
from fabric_exporter.collectors.base import PollContext, work_budget

from tests.harness import paths
from tests.harness.configs import parse_config
from fabric_exporter.samples import PollResult
from fabric_exporter.scheduler import Scheduler
from fabric_exporter.serving.store import SnapshotStore
from fabric_exporter.transport.base import CommandResult

COLLECTORS = paths.ROOT / "exporter" / "fabric_exporter" / "collectors"


TIMEOUTS = [0.4, 0.8, 1.0, 1.6, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 120.0]


@pytest.mark.parametrize("timeout", TIMEOUTS)
def test_budget_is_the_one_the_collectors_used_to_compute(timeout):
    assert work_budget(timeout) == max(1.0, timeout * 0.9)  # infiniband, roce_nic, switch_cli before


@pytest.mark.parametrize("timeout", TIMEOUTS)
def test_latency_probe_keeps_its_half_second_for_samples(timeout):
    """Up to 5 s the probe's budget is the one it computed before (timeout - max(0.5, 5%), at least
    0.5 s); above, it keeps 10 % like the others instead of 5 %."""
    from fabric_exporter.collectors.latency_probe import LatencyProbeCollector

    before = min(timeout, max(0.5, timeout - max(0.5, 0.05 * timeout)))  # past the timeout meant the timeout
    now = work_budget(timeout, LatencyProbeCollector.deadline_reserve)
    if timeout <= 5.0:
        assert now == pytest.approx(before)
    else:
        assert now == pytest.approx(0.9 * timeout) and now < before


def test_no_collector_computes_its_own_deadline():
    """Collectors read ctx.deadline()/ctx.remaining(); none derives a budget from group.timeout."""
    offenders = []
    for path in sorted(COLLECTORS.glob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(r"group\.timeout\s*[-*+/]|[-*+/(,]\s*self\.group\.timeout\b(?!:g)", code) \
                    and path.name != "base.py":
                offenders.append(f"{path.name}:{n}: {line.strip()}")
    assert offenders == []


class RecordingRunner:
    description = "recording"

    def __init__(self, loop_time, stdout: str):
        self.calls: list[tuple[float, float]] = []  # (loop time at call, timeout given)
        self._time = loop_time
        self._stdout = stdout

    async def run(self, argv, *, timeout, stdin=None):
        self.calls.append((self._time(), timeout))
        await asyncio.sleep(0.05)
        return CommandResult(tuple(argv), 0, self._stdout, "")

    async def close(self):
        pass


class RecordingTransports:
    def __init__(self, stdout: str):
        self.runners: list[RecordingRunner] = []
        self.stdout = stdout

    def runner(self, group, host):
        r = RecordingRunner(asyncio.get_running_loop().time, self.stdout)
        self.runners.append(r)
        return r


class DeadlineProbe(Collector):
    """Records what its context says while polled; runs two commands, as a retrying collector would."""

    name = "test_deadline_probe"
    transports = ("local",)
    seen: list[tuple[float, float, float]] = []

    async def poll(self) -> PollResult:
        loop = asyncio.get_running_loop()
        self.seen.append((loop.time(), self.ctx.deadline(), self.ctx.remaining()))
        await self.ctx.runner().run(["true"], timeout=self.ctx.remaining())
        await self.ctx.runner().run(["true"], timeout=self.ctx.remaining())
        return PollResult([])


def _config(collector: str, timeout: str, options: dict | None = None):
    return parse_config({"targets": [{
        "name": "g", "fabric": "f", "collector": collector, "transport": "local", "interval": "60s",
        "timeout": timeout, "hosts": [{"name": "h1", "address": "localhost"}], **({"options": options} if options else {})}]})


def test_scheduler_sets_the_deadline_once_per_poll_and_clears_it():
    register(DeadlineProbe)
    DeadlineProbe.seen = []
    try:
        async def scenario():
            transports = RecordingTransports("")
            sched = Scheduler(transports, SnapshotStore())
            cfg = _config("test_deadline_probe", "20s")
            sched.apply(cfg, start_tasks=False)
            ctx = PollContext(cfg.targets[0], cfg.targets[0].hosts[0], transports)
            collector = DeadlineProbe(ctx)
            key = ("g", "h1")
            before = asyncio.get_running_loop().time()
            await sched.poll(key, collector)
            after_first = asyncio.get_running_loop().time()
            await sched.poll(key, collector)
            return before, after_first, ctx, transports

        before, after_first, ctx, transports = asyncio.run(scenario())
        (t1, d1, r1), (t2, d2, r2) = DeadlineProbe.seen
        assert before <= d1 - 18.0 <= t1  # deadline = the poll's start + 18 s, set by the scheduler
        assert d2 - 18.0 >= after_first  # a new one for the next poll
        assert 17.5 < r1 <= 18.0
        assert ctx.poll_deadline is None  # cleared between polls
        # both commands of one poll share its deadline: the second is given less time, not a new 18 s
        first, second = transports.runners[0].calls[0], transports.runners[1].calls[0]
        assert second[1] < first[1] - 0.04
        assert abs((first[0] + first[1]) - (second[0] + second[1])) < 0.05
    finally:
        unregister("test_deadline_probe")


def test_roce_nic_command_timeout_is_the_scheduler_budget():
    """roce_nic gives its one command what is left of the scheduler's deadline (was max(1, 0.9 t))."""
    from fabric_exporter.collectors.roce_nic import RoceNicCollector

    async def scenario(timeout: str):
        transports = RecordingTransports("")  # no dump header: the poll fails after the command ran
        sched = Scheduler(transports, SnapshotStore())
        cfg = _config("roce_nic", timeout)
        sched.apply(cfg, start_tasks=False)
        collector = RoceNicCollector(PollContext(cfg.targets[0], cfg.targets[0].hosts[0], transports))
        await sched.poll(("g", "h1"), collector)
        return transports.runners[0].calls[0][1]

    for timeout, budget in (("10s", 9.0), ("2s", 1.8), ("800ms", 1.0)):
        given = asyncio.run(scenario(timeout))
        assert budget - 0.5 < given <= budget, (timeout, given)


def test_a_collector_polled_without_the_scheduler_gets_the_same_budget():
    async def scenario():
        group = _config("roce_nic", "10s").targets[0]
        ctx = PollContext(group, group.hosts[0], None)
        now = asyncio.get_running_loop().time()
        return now, ctx.deadline(), ctx.remaining()

    now, deadline, remaining = asyncio.run(scenario())
    assert 9.0 <= deadline - now < 9.5
    assert 8.5 < remaining <= 9.0


def test_remaining_never_hands_a_command_a_zero_or_negative_timeout():
    async def scenario():
        group = _config("roce_nic", "10s").targets[0]
        ctx = PollContext(group, group.hosts[0], None)
        ctx.begin_poll(asyncio.get_running_loop().time() - 30)  # a poll that started long ago
        return ctx.remaining()

    assert asyncio.run(scenario()) == 0.1


def test_remaining_until_a_deadline_read_once():
    """A collector polled without the scheduler reads deadline() once; remaining(until) counts down
    to it (remaining() alone would restart the budget), with the same 0.1 s floor."""
    async def scenario():
        group = _config("roce_nic", "10s").targets[0]
        ctx = PollContext(group, group.hosts[0], None)
        loop = asyncio.get_running_loop()
        deadline = ctx.deadline()
        await asyncio.sleep(0.2)
        return ctx.remaining(deadline), ctx.remaining(), deadline - loop.time(), ctx.remaining(loop.time() - 5)

    counted_down, fresh, left, past = asyncio.run(scenario())
    assert left <= counted_down < left + 0.05  # read just before left
    assert fresh - counted_down > 0.15
    assert past == 0.1
