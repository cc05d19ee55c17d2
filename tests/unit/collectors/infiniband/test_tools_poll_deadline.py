"""One infiniband poll, one deadline: every command of a poll (the sweeps, the discovery, the
ibdiagnet find and cat) is given the time left to the same deadline, read once from the PollContext
(tools.IbPoll). Polled without the scheduler, ``ctx.deadline()`` counts a fresh budget from each
call; a collector asking it per command would give its later commands more time than the poll has."""

from __future__ import annotations

import asyncio

from fabric_exporter.transport.base import CommandResult

from tests.harness import paths
from tests.harness.infiniband import (  # noqa: F401  (fixtures: every harness poll render-checked, closed after)
    CollectorHarness, _close_harnesses, _verify_render, group_for)

FIX = paths.FIXTURES / "infiniband"
COMMAND_SECONDS = 0.05  # each answer takes this long, so the poll's commands start at different times


class TimingRunner:
    """Answers each command from a capture after COMMAND_SECONDS; records when its timeout would end."""

    description = "timing"

    def __init__(self):
        self.ends: list[tuple[str, float]] = []  # (what ran, loop time + the timeout it was given)

    async def run(self, argv, *, timeout, stdin=None):
        loop = asyncio.get_running_loop()
        status, name, text = self.answer(list(argv))
        self.ends.append((name, loop.time() + timeout))
        await asyncio.sleep(COMMAND_SECONDS)
        return CommandResult(tuple(argv), status, text, "")

    @staticmethod
    def answer(argv: list[str]) -> tuple[int, str, str]:
        if "ibnetdiscover" in argv:
            return 0, "ibnetdiscover", (FIX / "ndr_fabric_ibnetdiscover.txt").read_text()
        if "ibqueryerrors" in argv and "--counters" in argv:
            return 0, "counter sweep", (FIX / "ndr_fabric_counters.txt").read_text()
        if "ibqueryerrors" in argv:
            return 1, "error sweep", (FIX / "ndr_fabric_errors.txt").read_text()  # 1: errors found
        if argv[0] == "find":
            return 0, "find", "1700000000.0 /diag/ibdiagnet2.pm\n"
        if argv[0] == "cat":
            return 0, "cat", (FIX / "ibdiagnet2.pm").read_text()
        if argv[0] == "rm":  # close(), at the harness's teardown: the discovery cache
            return 0, "rm", ""
        raise AssertionError(f"unexpected command {argv}")


def test_every_command_of_an_unscheduled_poll_counts_down_to_one_deadline():
    harness = CollectorHarness(group_for({"ibdiagnet_dir": "/diag"}, timeout="20s"))
    runner = TimingRunner()
    harness.collector.tools._runner = lambda: runner
    result = harness.poll()
    assert not result.problems
    assert sorted(name for name, _end in runner.ends) == ["cat", "counter sweep", "error sweep", "find",
                                                           "ibnetdiscover"]
    ends = [end for _name, end in runner.ends]
    # cat starts >= 3 command times after the first sweep: a budget restarted per command would end
    # 0.15 s later; one deadline ends within the loop's jitter
    assert max(ends) - min(ends) < COMMAND_SECONDS / 2, runner.ends
    # the ibdiagnet read (find, then cat: two command times) publishes its own duration
    took = [s.value for s in result.samples
            if s.name == "fabric_ib_sweep_duration_seconds" and s.labels["tool"] == "ibdiagnet_files"]
    assert len(took) == 1 and 2 * COMMAND_SECONDS <= took[0] < 3 * COMMAND_SECONDS, took
