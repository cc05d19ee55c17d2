"""Run commands as local subprocesses: argument lists, no shell, killed on timeout."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping, Sequence

from ..errors import CommandFailed, PollTimeout
from .base import CommandResult


class LocalRunner:
    description = "local"

    def __init__(self, env: Mapping[str, str] | None = None):
        self._env = {**os.environ, **env} if env else None

    async def run(self, argv: Sequence[str], *, timeout: float, stdin: str | None = None) -> CommandResult:
        argv = tuple(argv)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env,
                start_new_session=True,  # so a timeout kills the whole process group
            )
        except FileNotFoundError:
            raise CommandFailed(f"{argv[0]}: command not found") from None
        except PermissionError as e:
            raise CommandFailed(f"{argv[0]}: {e.strerror}") from None
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin is not None else None),
                                              timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError) as e:
            _kill_group(proc)
            try:
                await asyncio.wait_for(proc.wait(), 2)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass
            if isinstance(e, asyncio.CancelledError):
                raise
            raise PollTimeout(f"{argv[0]}: no result within {timeout:g}s (killed)") from None
        return CommandResult(argv, proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))

    async def close(self) -> None:
        return None


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
