"""Run commands as local subprocesses: argument lists, no shell, killed on timeout or on too much output."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping, Sequence

from ..errors import CommandError, OutputTooLargeError, PollTimeoutError
from .base import CommandResult, OutputLimit

READ_CHUNK = 1 << 16


class LocalRunner:
    description = "local"

    def __init__(self, env: Mapping[str, str] | None = None, *, output_limit: OutputLimit | None = None):
        self._env = {**os.environ, **env} if env else None
        self.output_limit = output_limit or OutputLimit()

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
            raise CommandError(f"{argv[0]}: command not found") from None
        except PermissionError as e:
            raise CommandError(f"{argv[0]}: {e.strerror}") from None
        try:
            async with asyncio.timeout(timeout):
                out, err = await self._collect(proc, argv, stdin)
        except (TimeoutError, asyncio.CancelledError, OutputTooLargeError) as e:
            _kill_group(proc)
            try:
                await asyncio.wait_for(proc.wait(), 2)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass
            if isinstance(e, TimeoutError):
                raise PollTimeoutError(f"{argv[0]}: no result within {timeout:g}s (killed)") from None
            raise
        return CommandResult(argv, proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))

    async def _collect(self, proc: asyncio.subprocess.Process, argv: tuple[str, ...],
                       stdin: str | None) -> tuple[bytes, bytes]:
        """Read stdout and stderr as they come, counting both against the output limit."""
        limit = self.output_limit.max_bytes
        total = 0
        buffers = (bytearray(), bytearray())

        async def drain(stream: asyncio.StreamReader, buf: bytearray) -> None:
            nonlocal total
            while chunk := await stream.read(READ_CHUNK):
                total += len(chunk)
                if total > limit:
                    raise OutputTooLargeError(f"{argv[0]}: printed more than {limit} bytes "
                                         f"(limits.max_output_bytes); stopped reading and killed it")
                buf += chunk

        async def feed() -> None:
            if stdin is not None and proc.stdin is not None:
                try:
                    proc.stdin.write(stdin.encode())
                    await proc.stdin.drain()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the command ended without reading its input: its output says why
                finally:
                    proc.stdin.close()

        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(drain(proc.stdout, buffers[0]))
                tasks.create_task(drain(proc.stderr, buffers[1]))
                tasks.create_task(feed())
        except* OutputTooLargeError as group:
            raise group.exceptions[0] from None
        await proc.wait()
        return bytes(buffers[0]), bytes(buffers[1])

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
