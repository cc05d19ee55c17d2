"""Issue 16 defect 3 and the minor one: a command's output is capped (reason output_too_large,
memory bounded by the cap), and an sshd killed mid-command is a connection failure, not a parse
error. Real processes and a real OpenSSH sshd on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gc
import resource
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from fabric_exporter.config import SSHCredential, ConfigError
from tests.harness.configs import parse_config
from fabric_exporter.errors import ConnectError, OutputTooLargeError
from fabric_exporter.transport.base import OutputLimit
from fabric_exporter.transport.local import LocalRunner
from fabric_exporter.transport.ssh import SSHConnection, SSHEndpoint
from tests.harness.sshd import SSHD

BIG = 50 * 1000 * 1000


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _exe(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


@pytest.fixture
def tools_sshd(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _exe(bin_dir / "huge", f"head -c {BIG} /dev/zero | tr '\\0' 'x'")
    _exe(bin_dir / "small", "echo fine")
    _exe(bin_dir / "half-then-hang", "echo @@fabric-roce 1; echo 'partial line'; sleep 20")
    sshd = SSHD(tmp_path, path_dirs=[bin_dir])
    sshd.start()
    try:
        yield sshd
    finally:
        sshd.stop()


def _connection(sshd: SSHD, limit: int) -> SSHConnection:
    cred = SSHCredential(name="t", username=sshd.user, private_key_file=str(sshd.client_key),
                         known_hosts_file=str(sshd.known_hosts), connect_timeout=5.0)
    return SSHConnection(SSHEndpoint("127.0.0.1", sshd.port, cred), OutputLimit(limit))


def test_local_output_over_the_cap_fails_clearly_and_kills_the_command():
    runner = LocalRunner(output_limit=OutputLimit(1 << 20))

    async def scenario():
        with pytest.raises(OutputTooLargeError) as e:
            await runner.run(["sh", "-c", f"head -c {BIG} /dev/zero; echo done > /dev/stderr"], timeout=20)
        assert e.value.reason == "output_too_large" and "limits.max_output_bytes" in str(e.value)
        assert str(e.value).startswith("local: sh printed more than 1048576 bytes")  # as SSH says it
        ok = await runner.run(["sh", "-c", "echo out; echo err >&2"], timeout=5)
        assert (ok.stdout, ok.stderr) == ("out\n", "err\n")

    before = _maxrss_mb()
    asyncio.run(scenario())
    assert _maxrss_mb() - before < 40  # 50 MB were printed; at most ~1 MiB was kept


def test_ssh_output_over_the_cap_fails_clearly_and_the_connection_stays_usable(tools_sshd):
    conn = _connection(tools_sshd, 1 << 20)

    async def scenario():
        try:
            started = time.monotonic()
            with pytest.raises(OutputTooLargeError) as e:
                await conn.run(["huge"], timeout=20)
            assert e.value.reason == "output_too_large"
            assert str(e.value).startswith(f"{conn.description}: huge printed more than ")  # as local says it
            assert time.monotonic() - started < 15  # stopped reading early, not at the deadline
            assert (await conn.run(["small"], timeout=10)).stdout == "fine\n"
        finally:
            await conn.close()

    before = _maxrss_mb()
    asyncio.run(scenario())
    assert _maxrss_mb() - before < 40


def test_ssh_output_over_the_cap_is_freed_when_its_error_is_dropped(tools_sshd):
    """The read buffers go with the error, not with the cycle collector: a reference cycle through
    the failed read's frame kept ~limit bytes per failed poll alive until a full gc pass, and the
    soak's flooding host grew the daemon by ~8 MiB a poll."""
    limit = 8 << 20
    conn = _connection(tools_sshd, limit)

    async def scenario():
        try:
            await conn.run(["small"], timeout=10)  # connected, asyncssh's own buffers allocated
            gc.collect()
            gc.disable()
            tracemalloc.start()
            try:
                with pytest.raises(OutputTooLargeError):
                    await conn.run(["huge"], timeout=20)
                await asyncio.sleep(0.2)  # the channel's close settles
                kept, _ = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
                gc.enable()
            return kept
        finally:
            await conn.close()

    kept = asyncio.run(scenario())
    assert kept < limit // 4, f"{kept} bytes still held after the over-limit read's error was dropped"


def test_ssh_output_under_the_cap_is_whole(tools_sshd):
    conn = _connection(tools_sshd, 64 << 20)

    async def scenario():
        try:
            return await conn.run(["huge"], timeout=30)
        finally:
            await conn.close()

    result = asyncio.run(scenario())
    assert result.exit_status == 0 and len(result.stdout) == BIG


def test_sshd_killed_mid_command_is_a_connect_failure(tools_sshd):
    conn = _connection(tools_sshd, 1 << 20)

    async def scenario():
        try:
            assert (await conn.run(["small"], timeout=10)).stdout == "fine\n"
            killer = threading.Timer(1.0, tools_sshd.stop)  # the listener and its session processes
            killer.start()
            try:
                with pytest.raises(ConnectError) as e:
                    await conn.run(["half-then-hang"], timeout=15)
            finally:
                killer.join(10)
            assert e.value.reason == "connect"
        finally:
            await conn.close()

    asyncio.run(scenario())


def test_max_output_bytes_is_configurable_and_bounded():
    base = {"targets": [{"name": "g", "fabric": "f", "collector": "roce_nic", "transport": "local", "hosts": ["h"]}]}
    assert parse_config(base).limits.max_output_bytes == 32 << 20
    assert parse_config({**base, "limits": {"max_output_bytes": "8MiB"}}).limits.max_output_bytes == 8 << 20
    assert parse_config({**base, "limits": {"max_output_bytes": 1 << 20}}).limits.max_output_bytes == 1 << 20
    for bad in (0, "lots", 10, "5GiB", True):
        with pytest.raises(ConfigError, match="limits.max_output_bytes"):
            parse_config({**base, "limits": {"max_output_bytes": bad}})
