"""The local runner's read path (transport/local.py): output read by protocol callbacks, batched
for large outputs (pipe paused between reads, grown to PIPE_SIZE). Real processes: the bytes that
come back are exactly the bytes printed, stdout and stderr apart, the cap is honoured to the byte,
and a slow writer of a large report (the batched path) loses nothing."""

from __future__ import annotations

import asyncio
import hashlib
import sys
import time

import pytest

from fabric_exporter.errors import OutputTooLargeError, PollTimeoutError
from fabric_exporter.transport import local
from fabric_exporter.transport.base import OutputLimit
from fabric_exporter.transport.local import LocalRunner

# Prints a deterministic pseudo-random text report in small writes with pauses (as ibqueryerrors
# does: 4 KiB stdio writes while it sweeps), interleaving a few stderr lines.
SLOW_WRITER = r"""
import os, random, sys, time
rng = random.Random(int(sys.argv[1]))
size, write, pause = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 =[]:\n"
text = "".join(rng.choice(alphabet) for _ in range(size)).encode()
for i in range(0, size, write):
    os.write(1, text[i:i + write])
    if i % (64 * write) == 0:
        os.write(2, b"progress %d\n" % i)
    if pause:
        time.sleep(pause)
"""


def _expected(seed: int, size: int) -> bytes:
    import random
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 =[]:\n"
    return "".join(rng.choice(alphabet) for _ in range(size)).encode()


def _run(runner: LocalRunner, argv, **kw):
    return asyncio.run(runner.run(argv, timeout=kw.pop("timeout", 30), **kw))


@pytest.mark.parametrize("size,write,pause", [
    (900_000, 4096, 0.0005),   # a slow writer of a large report: the batched (paused) read path
    (3_000_000, 1 << 16, 0.0),  # a fast writer: full reads, no pause
    (100, 100, 0.0),            # small output: read at once
])
def test_large_output_comes_back_byte_for_byte(size, write, pause):
    result = _run(LocalRunner(), [sys.executable, "-c", SLOW_WRITER, "7", str(size), str(write), str(pause)])
    assert result.exit_status == 0, result.stderr
    assert hashlib.sha256(result.stdout.encode()).hexdigest() == hashlib.sha256(_expected(7, size)).hexdigest()
    assert len(result.stdout) == size
    progress = [i for i in range(0, size, write) if i % (64 * write) == 0]
    assert result.stderr == "".join(f"progress {i}\n" for i in progress)


@pytest.fixture
def stdout_reads(monkeypatch) -> list[int]:
    """The length of each read of stdout, as the runner gets them."""
    reads: list[int] = []
    original = local._Output.pipe_data_received

    def counting(self, fd, data):
        if fd == 1:
            reads.append(len(data))
        return original(self, fd, data)

    monkeypatch.setattr(local._Output, "pipe_data_received", counting)
    return reads


def test_the_batched_path_is_taken_and_reads_fewer_times(stdout_reads):
    """The slow writer's ~220 writes arrive in far fewer reads once past BATCH_AFTER."""
    reads = stdout_reads
    size, write = 900_000, 4096
    result = _run(LocalRunner(), [sys.executable, "-c", SLOW_WRITER, "3", str(size), str(write), "0.0005"])
    assert result.stdout.encode() == _expected(3, size)
    assert sum(reads) == size
    assert max(reads) > 4 * write  # writes piled up in the pipe while it was paused
    assert len(reads) < size // write // 2


def test_output_exactly_at_the_cap_is_whole_and_one_byte_more_fails():
    limit = 200_000
    at_cap = _run(LocalRunner(output_limit=OutputLimit(limit)),
                  ["sh", "-c", f"head -c {limit - 4} /dev/zero | tr '\\0' 'y'; printf abc >&2; printf d >&2"])
    assert (len(at_cap.stdout), at_cap.stderr) == (limit - 4, "abcd")  # stdout + stderr == the cap
    with pytest.raises(OutputTooLargeError) as e:
        _run(LocalRunner(output_limit=OutputLimit(limit)),
             ["sh", "-c", f"head -c {limit - 4} /dev/zero | tr '\\0' 'y'; printf abcde >&2"])
    assert e.value.reason == "output_too_large" and f"more than {limit} bytes" in str(e.value)


def test_a_slow_writer_over_the_cap_is_killed_while_paused_reads_are_pending():
    """The cap is checked on the batched path too, and the command (still writing) is killed."""
    started = time.monotonic()
    with pytest.raises(OutputTooLargeError):
        _run(LocalRunner(output_limit=OutputLimit(300_000)),
             [sys.executable, "-c", SLOW_WRITER, "1", "5000000", "4096", "0.0005"], timeout=60)
    assert time.monotonic() - started < 30  # killed at the cap, not read to the end (~5 s of writes)


def test_timeout_during_a_batched_read_kills_the_group():
    started = time.monotonic()
    with pytest.raises(PollTimeoutError) as e:
        _run(LocalRunner(), [sys.executable, "-c", SLOW_WRITER + "\ntime.sleep(30)\n", "1", "200000", "4096", "0"],
             timeout=1.5)
    assert "no result within 1.5s (killed)" in str(e.value)
    assert time.monotonic() - started < 5


def test_large_stdin_is_fed_whole_and_a_command_that_ignores_it_is_fine():
    text = _expected(5, 2_000_000).decode()
    result = _run(LocalRunner(), ["sha256sum"], stdin=text)
    assert result.stdout.split()[0] == hashlib.sha256(text.encode()).hexdigest()
    ignored = _run(LocalRunner(), ["sh", "-c", "echo ignored"], stdin=text)
    assert (ignored.exit_status, ignored.stdout) == (0, "ignored\n")


def test_exit_status_and_signal_are_returned():
    assert _run(LocalRunner(), ["sh", "-c", "exit 3"]).exit_status == 3
    assert _run(LocalRunner(), ["sh", "-c", "kill -9 $$"]).exit_status == -9


def test_on_a_busy_loop_a_large_output_is_read_a_grown_pipe_at_a_time(stdout_reads):
    """A busy loop reads each pipe once per turn: the pipe's size is then the output's pace. A
    fast writer's full 64 KiB reads once grew the pipe no more (only a short read did), so a 17 MB
    sweep took 27 s at 100 ms a turn (bench_cluster, 10k GPUs). Past BATCH_AFTER the pipe is grown
    and read up to PIPE_SIZE a turn, above asyncio's own 256 KiB. Here the loop is held 0.3 s once
    the output passed BATCH_AFTER (a busy turn): the writer fills the pipe meanwhile."""
    block, blocks = b"0123456789abcde\n" * 4096, 128  # 64 KiB writes, 8 MiB, as fast as the pipe takes them
    writer = f"import sys\nblock = {block[:16]!r} * 4096\nfor _ in range({blocks}): sys.stdout.buffer.write(block)"
    original = local._Output.pipe_data_received
    held: list[bool] = []

    def then_busy(self, fd, data):
        original(self, fd, data)
        if not held and sum(stdout_reads) > local.BATCH_AFTER:
            held.append(True)
            asyncio.get_running_loop().call_soon(time.sleep, 0.3)

    local._Output.pipe_data_received = then_busy  # restored by stdout_reads' monkeypatch
    result = asyncio.run(LocalRunner().run([sys.executable, "-c", writer], timeout=60))
    assert result.exit_status == 0, result.stderr
    assert sum(stdout_reads) == len(block) * blocks and result.stdout.encode() == block * blocks
    assert max(stdout_reads) > 256 << 10, max(stdout_reads)  # more than asyncio's read size, from a grown pipe
