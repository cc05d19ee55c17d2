"""A large output over SSH on a busy loop (an IB sweep run on a management node): the connection's
socket is read more than asyncio's 256 KiB a turn once an output passed LARGE_OUTPUT_AFTER.

A busy loop reads each socket once per turn, so the read size is the output's pace: a 17 MB sweep
at 256 KiB a turn and 0.3 s a turn is 20 s of a 27 s deadline (the local runner's pipes timed out
that way at 10k GPUs: bench/RESULTS.md). A real asyncssh server on 127.0.0.1 (a thread).
"""

from __future__ import annotations

import asyncio
import time

import asyncssh

from fabric_exporter.config import SSHCredential
from fabric_exporter.transport import base
from fabric_exporter.transport.ssh import SSHConnection, SSHEndpoint
from tests.harness.ssh_server import ThreadedSSHServer

ASYNCIO_READ = 256 << 10  # asyncio's socket transport reads at most this much a call


def _connection(srv: ThreadedSSHServer) -> SSHConnection:
    cred = SSHCredential(name="t", username="bench", private_key_file=str(srv.client_key),
                         known_hosts_file=str(srv.known_hosts), connect_timeout=5.0)
    return SSHConnection(SSHEndpoint("127.0.0.1", srv.port, cred))


def _reads(monkeypatch, hold_after: int | None = None) -> list[int]:
    """The sizes of the client's socket reads; with ``hold_after``, the loop is held 0.3 s once
    (a busy turn) when that many bytes came in: the server fills the socket meanwhile."""
    reads: list[int] = []
    held: list[bool] = []
    original = asyncssh.connection.SSHConnection.data_received

    def recording(self, data, datatype=None):
        if isinstance(self, asyncssh.SSHClientConnection):
            reads.append(len(data))
            if hold_after is not None and not held and sum(reads) > hold_after:
                held.append(True)
                asyncio.get_running_loop().call_soon(time.sleep, 0.3)
        return original(self, data, datatype)

    monkeypatch.setattr(asyncssh.connection.SSHConnection, "data_received", recording)
    return reads


def test_on_a_busy_loop_a_large_output_is_read_more_than_asyncio_reads_a_turn(tmp_path, monkeypatch):
    size = 8 << 20
    reads = _reads(monkeypatch, hold_after=4 * ASYNCIO_READ)  # well past LARGE_OUTPUT_AFTER: the reads grew

    async def scenario():
        conn = _connection(srv)
        try:
            return await conn.run(["sh", "-c", f"head -c {size} /dev/zero | tr '\\0' x"], timeout=30)
        finally:
            await conn.close()

    with ThreadedSSHServer(tmp_path / "ssh") as srv:
        result = asyncio.run(scenario())
    assert result.exit_status == 0, result.stderr
    assert result.stdout == "x" * size
    assert max(reads) > ASYNCIO_READ, max(reads)  # a grown read took what the server sent meanwhile


def test_a_small_output_leaves_the_connection_at_asyncio_s_read_size(tmp_path, monkeypatch):
    """Thousands of NIC hosts' connections carry ~30 KB each: they are not grown."""
    _reads(monkeypatch)

    async def scenario():
        conn = _connection(srv)
        try:
            result = await conn.run(["sh", "-c", f"head -c {base.LARGE_OUTPUT_AFTER // 2} /dev/zero"], timeout=30)
            return result, (await conn.connection())._transport.max_size
        finally:
            await conn.close()

    with ThreadedSSHServer(tmp_path / "ssh") as srv:
        result, read_size = asyncio.run(scenario())
    assert len(result.stdout) == base.LARGE_OUTPUT_AFTER // 2
    assert read_size == ASYNCIO_READ
