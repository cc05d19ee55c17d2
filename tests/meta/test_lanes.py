"""The lane rule (tests/harness/lanes.py): a test is marked external exactly when its code, its helpers
or its fixtures start a process, and a fast-lane test that starts one anyway fails."""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

from tests.harness import lanes
from tests.harness.lanes import MARKER, ProcessFinder, ProcessStartForbidden, starts_processes
from tests.harness.sshd import SSHD


def _helper_that_starts_sshd(tmp):
    return SSHD(tmp).start()


def _pure_helper(text):
    return text.split()


@starts_processes
def _declared_helper():
    """Starts processes in a way the walk cannot see (here: nothing, it is declared)."""


class _Lab:
    def start(self):
        return _helper_that_starts_sshd("/nonexistent")


async def _loop_subprocess():
    loop = asyncio.get_running_loop()
    await loop.subprocess_exec(asyncio.SubprocessProtocol, "true")


# Samples reached through a dict, which the walk does not enter: referring to them by name from a test
# would (rightly) put that test in the external lane.
SAMPLES = {
    "subprocess.run in the body": lambda: subprocess.run(["true"]),
    "os.fork in the body": lambda: os.fork(),
    "a helper that starts sshd": lambda: _helper_that_starts_sshd("/x"),
    "a method of a class that starts sshd": lambda: _Lab().start(),
    "a declared helper": lambda: _declared_helper(),
    "loop.subprocess_exec": _loop_subprocess,
    "asyncio.create_subprocess_exec": lambda: asyncio.create_subprocess_exec("true"),
}
PURE = {
    "a pure helper": lambda: _pure_helper("a b"),
    "asyncio.run": lambda: asyncio.run(asyncio.sleep(0)),
    "a constant read from a module": lambda: lanes.MARKER,
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_way_of_starting_a_process_is_found(name):
    assert ProcessFinder().why(SAMPLES[name]), name


@pytest.mark.parametrize("name", sorted(PURE))
def test_code_that_starts_nothing_is_not_marked(name):
    assert ProcessFinder().why(PURE[name]) is None


def test_the_reason_names_the_path_to_the_process():
    why = ProcessFinder().why(SAMPLES["a method of a class that starts sshd"])
    assert "_helper_that_starts_sshd" in why and "SSHD" in why and "subprocess." in why, why


def test_a_fast_lane_test_cannot_start_a_process(request):
    assert request.node.get_closest_marker(MARKER) is None
    # Looked up by string, so the walk does not see it: this test is the blind spot on purpose.
    run = getattr(subprocess, "r" + "un")
    with pytest.raises(ProcessStartForbidden, match="starts an external process.*@starts_processes"):
        run(["true"])
    with pytest.raises(ProcessStartForbidden):
        getattr(os, "fo" + "rk")()
