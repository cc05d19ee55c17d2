"""Run commands as local subprocesses: argument lists, no shell, killed on timeout or on too much output."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
from collections.abc import Mapping, Sequence

from ..errors import CommandError, OutputTooLargeError, PollTimeoutError
from .base import CommandResult, OutputLimit

# A tool printing a large report (an ibqueryerrors sweep: ~750 kB in 4 KiB writes) would wake the
# loop once per write. Past BATCH_AFTER bytes the pipe is grown to PIPE_SIZE and read up to that much
# at a time, and a read shorter than BATCH_FULL_READ (the writer is slower than the loop) pauses that
# pipe for BATCH_DELAY so the writes pile up in it (the writer does not block meanwhile): ~1/6 of the
# wakeups on the bench's sweep. Small outputs, and writers fast enough to fill a read, are read at
# once. On a busy loop (one read per pipe per turn) the pipe's size is the output's pace: a 64 KiB
# pipe read every 100 ms passes 17 MB (a 40k-port sweep) in 27 s, a 1 MiB one in under 2 s.
BATCH_AFTER = 64 << 10
BATCH_FULL_READ = 64 << 10
BATCH_DELAY = 0.005
PIPE_SIZE = 1 << 20


class LocalRunner:
    description = "local"

    def __init__(self, env: Mapping[str, str] | None = None, *, output_limit: OutputLimit | None = None):
        self._env = {**os.environ, **env} if env else None
        self.output_limit = output_limit or OutputLimit()

    async def run(self, argv: Sequence[str], *, timeout: float, stdin: str | None = None) -> CommandResult:
        argv = tuple(argv)
        loop = asyncio.get_running_loop()
        output = _Output(loop, argv[0], self.output_limit)
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: output, *argv,
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
            if stdin is not None:
                _feed(transport, stdin)
            try:
                async with asyncio.timeout(timeout):
                    await output.done  # both pipes at EOF and the process reaped, or OutputTooLargeError
            except (TimeoutError, asyncio.CancelledError, OutputTooLargeError) as e:
                _kill_group(transport.get_pid())
                try:
                    await asyncio.wait_for(asyncio.shield(output.exited), 2)
                except (asyncio.TimeoutError, asyncio.CancelledError):
                    pass
                if isinstance(e, TimeoutError):
                    raise PollTimeoutError(f"{argv[0]}: no result within {timeout:g}s (killed)") from None
                raise
            out, err = output.text()
            return CommandResult(argv, transport.get_returncode(), out, err)
        finally:
            if output.done.done() and not output.done.cancelled():
                output.done.exception()  # an OutputTooLargeError that came after a timeout: already handled
            transport.close()

    async def close(self) -> None:
        return None


class _Output(asyncio.SubprocessProtocol):
    """Collects stdout and stderr as the event loop reads them (up to 256 KiB a read), counting both
    against the output limit. No stream reader and no task per pipe: one callback per read, which
    is most of what reading a large sweep costs the loop. ``done`` resolves when both pipes are at
    EOF and the process has exited, or fails with OutputTooLargeError as soon as the limit is passed
    (the chunks read so far are dropped then: only the limit's worth was ever held)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, command: str, limit: OutputLimit):
        self._loop = loop
        self._transport: asyncio.SubprocessTransport | None = None
        self._command = command
        self._output_limit = limit
        self._limit = limit.max_bytes
        self._total = 0
        self._chunks: dict[int, list[bytes]] = {1: [], 2: []}
        self._open_pipes = {1, 2}
        self._grown: set[int] = set()
        self.exited = loop.create_future()
        self.done = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if self.done.done():
            return
        self._total += len(data)
        if self._total > self._limit:
            self._chunks = {1: [], 2: []}
            self.done.set_exception(self._output_limit.exceeded(LocalRunner.description, self._command,
                                                                "stopped reading and killed it"))
            return
        self._chunks[fd].append(data)
        if self._total > BATCH_AFTER and self._transport is not None:
            pipe = self._transport.get_pipe_transport(fd)
            if pipe is None:
                return
            if fd not in self._grown:  # once per pipe, and only for large outputs
                self._grown.add(fd)
                _grow_pipe(pipe)
            if len(data) < BATCH_FULL_READ and pipe.is_reading():
                pipe.pause_reading()
                self._loop.call_later(BATCH_DELAY, pipe.resume_reading)  # a no-op once the pipe is closed

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        # fd 0 (stdin) closing, or breaking because the command did not read it, ends nothing:
        # its output says why.
        self._open_pipes.discard(fd)
        self._maybe_done()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
        self._maybe_done()

    def _maybe_done(self) -> None:
        if not self._open_pipes and self.exited.done() and not self.done.done():
            self.done.set_result(None)

    def text(self) -> tuple[str, str]:
        return (b"".join(self._chunks[1]).decode(errors="replace"),
                b"".join(self._chunks[2]).decode(errors="replace"))


def _grow_pipe(pipe: asyncio.BaseTransport | None) -> None:
    """Grow the pipe to PIPE_SIZE, and let one read take all of it (asyncio reads 256 KiB at most)."""
    fileobj = pipe.get_extra_info("pipe") if pipe is not None else None
    if fileobj is None:
        return
    try:
        fcntl.fcntl(fileobj.fileno(), fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    except (OSError, ValueError, AttributeError):
        return  # not Linux, or over /proc/sys/fs/pipe-max-size: the default pipe only costs more wakeups
    if getattr(pipe, "max_size", 0) < PIPE_SIZE:
        pipe.max_size = PIPE_SIZE  # type: ignore[attr-defined]  # the read size of asyncio's pipe transport


def _feed(transport: asyncio.SubprocessTransport, stdin: str) -> None:
    """Hand the input to the stdin pipe (the loop writes it as the command reads) and close it after."""
    pipe = transport.get_pipe_transport(0)
    if pipe is None:
        return
    try:
        pipe.write(stdin.encode())
        pipe.close()  # after the buffered input is written
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command ended without reading its input: its output says why


def _kill_group(pid: int | None) -> None:
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
