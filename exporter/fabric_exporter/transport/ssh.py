"""SSH transport (asyncssh): one pooled connection per host, reused across polls and collectors.

Every await has a deadline: TCP connect + handshake (``connect_timeout``), login, each command.
A command that overruns is killed on the remote side too: it runs under coreutils ``timeout``,
and the channel is closed. Commands are argument lists quoted with ``shlex``; ``run_line`` sends a
device CLI's command line as it is (no shell on the other side).
"""

from __future__ import annotations

import asyncio
import logging
import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

import asyncssh

from ..config.model import SSHCredential
from ..errors import AuthError, ConnectError, HostKeyError, OutputTooLargeError, PollTimeoutError
from .base import CommandResult, OutputLimit

# Ciphers in the order offered: asyncssh's defaults with AES-GCM first. AES-GCM runs on the CPU's
# AES instructions; chacha20-poly1305 (asyncssh's first) costs twice the CPU per NIC dump (33 KB:
# 1.6 vs 0.8 ms for both ends of one exec, measured here). The others stay offered, so a server
# without AES-GCM still connects.
PREFERRED_CIPHERS = tuple(sorted(
    (alg.decode() for alg in asyncssh.encryption.get_default_encryption_algs()),
    key=lambda alg: (not alg.startswith(("aes128-gcm", "aes256-gcm")), alg.startswith("aes256"))))

log = logging.getLogger("fabric_exporter.ssh")


@dataclass(frozen=True)
class SSHEndpoint:
    address: str
    port: int
    credential: SSHCredential

    @classmethod
    def of(cls, address: str, port: int | None, credential: SSHCredential) -> SSHEndpoint:
        """The endpoint a host of the config names (no port: 22), as the pool keys its connections."""
        return cls(address, port or 22, credential)


class _Client(asyncssh.SSHClient):
    def __init__(self, on_lost):
        self._on_lost = on_lost

    def connection_lost(self, exc):  # keepalive failure, server restart, network loss
        self._on_lost()


class SSHConnection:
    """One host's connection: opened lazily, reopened after it dies, at most ``max_sessions`` at once."""

    def __init__(self, endpoint: SSHEndpoint, output_limit: OutputLimit | None = None):
        self.endpoint = endpoint
        self.output_limit = output_limit or OutputLimit()
        self.description = f"ssh://{endpoint.credential.username}@{endpoint.address}:{endpoint.port}"
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lock = asyncio.Lock()
        self._sessions = asyncio.Semaphore(max(1, endpoint.credential.max_sessions))

    def _lost(self) -> None:
        self._conn = None

    def _client_keys(self) -> list | None:
        """The private key, decrypted with its passphrase if it has one. A key that cannot be used
        (encrypted without passphrase, wrong passphrase, unreadable) fails the poll as ``auth``
        with a message naming the file, never the passphrase."""
        cred = self.endpoint.credential
        if not cred.private_key_file:
            return None
        try:
            passphrase = cred.private_key_passphrase.read() if cred.private_key_passphrase else None
            return [asyncssh.read_private_key(cred.private_key_file, passphrase)]
        except (asyncssh.KeyImportError, OSError, ValueError) as e:
            what = "encrypted and no private_key_passphrase is configured" \
                if "assphrase must be specified" in str(e) else str(e)
            raise AuthError(f"{self.description}: cannot use private_key_file {cred.private_key_file}: "
                            f"{what}") from None

    async def _connect(self) -> asyncssh.SSHClientConnection:
        cred = self.endpoint.credential
        options = dict(
            username=cred.username,
            # None disables host-key checks (lab option only); () means the user's ~/.ssh/known_hosts.
            known_hosts=None if cred.insecure_ignore_host_key else (cred.known_hosts_file or ()),
            connect_timeout=cred.connect_timeout,
            login_timeout=cred.connect_timeout,
            keepalive_interval=cred.keepalive_interval,
            keepalive_count_max=3,
            client_keys=self._client_keys(),
            password=cred.password.read() if cred.password else None,
            agent_path=None,
            # The login shell's rc files must not matter: commands are exec'd, not sourced.
            request_pty=False,
            config=None,
            encryption_algs=PREFERRED_CIPHERS,
        )
        try:
            conn, _ = await asyncssh.create_connection(
                lambda: _Client(self._lost), self.endpoint.address, self.endpoint.port, **options)
            return conn
        except asyncssh.HostKeyNotVerifiable as e:
            raise HostKeyError(f"{self.description}: host key not trusted ({e.reason}); "
                               f"add it to known_hosts_file") from None
        except asyncssh.PermissionDenied as e:
            raise AuthError(f"{self.description}: authentication failed ({e.reason})") from None
        except asyncssh.DisconnectError as e:
            raise ConnectError(f"{self.description}: disconnected during login ({e.reason})") from None
        except (asyncio.TimeoutError, TimeoutError):
            raise PollTimeoutError(f"{self.description}: no SSH handshake/login within "
                              f"{cred.connect_timeout:g}s") from None
        except OSError as e:
            raise ConnectError(f"{self.description}: {e.strerror or e}") from None
        except asyncssh.Error as e:
            raise ConnectError(f"{self.description}: {e}") from None

    async def connection(self) -> asyncssh.SSHClientConnection:
        async with self._lock:
            if self._conn is None:
                self._conn = await self._connect()
            return self._conn

    async def run(self, argv: Sequence[str], *, timeout: float, stdin: str | None = None) -> CommandResult:
        argv = tuple(argv)
        # The remote side enforces the same deadline, so nothing is left running if we give up.
        remote_limit = max(1, math.ceil(timeout))
        command = shlex.join(("timeout", "-k", "2", str(remote_limit), *argv))
        return await self._run(command, argv, timeout, stdin)

    async def run_line(self, line: str, *, timeout: float) -> CommandResult:
        """One command line sent as the exec request, as it is: for a remote whose SSH lands in a
        device CLI (Arista EOS), not a shell. No ``timeout`` wrapper and no quoting (a CLI has
        neither); at the deadline the channel is closed, which ends the command on the device."""
        return await self._run(line, (line,), timeout, None)

    async def _run(self, command: str, argv: tuple[str, ...], timeout: float, stdin: str | None) -> CommandResult:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        async with self._sessions:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise PollTimeoutError(f"{self.description}: waited {timeout:g}s for a free session")
            conn = await asyncio.wait_for(self.connection(), remaining)
            remaining = max(0.01, deadline - loop.time())
            try:
                async with asyncio.timeout(remaining):
                    status, out, err = await self._exec(conn, command, argv, stdin)
            except TimeoutError:
                raise PollTimeoutError(f"{self.description}: {argv[0]} gave no result within {timeout:g}s") from None
            except asyncssh.ChannelOpenError as e:
                self._drop()
                raise ConnectError(f"{self.description}: cannot open a session ({e.reason})") from None
            except (asyncssh.Error, BrokenPipeError, ConnectionError) as e:  # lost, disconnected, ...
                self._drop()
                raise ConnectError(f"{self.description}: connection lost ({e})") from None
        if status == 124:  # coreutils timeout: the remote deadline fired first
            raise PollTimeoutError(f"{self.description}: {argv[0]} gave no result within {timeout:g}s (killed)")
        return CommandResult(argv, status, out, err)

    async def _exec(self, conn: asyncssh.SSHClientConnection, command: str, argv: tuple[str, ...],
                    stdin: str | None) -> tuple[int, str, str]:
        """Run one command; stdout and stderr are counted as they arrive against the output limit.

        Over the limit the channel is closed (the remote side gets SIGPIPE/hangup and its
        ``timeout`` wrapper ends it) and OutputTooLargeError is raised: memory stays bounded by the limit.
        """
        limit = self.output_limit.max_bytes
        total = 0
        buffers = (bytearray(), bytearray())
        process = await conn.create_process(command, encoding=None)
        completed = False
        try:
            if stdin is not None:
                process.stdin.write(stdin.encode())
            process.stdin.write_eof()

            async def drain(stream, buf: bytearray) -> None:
                nonlocal total
                while chunk := await stream.read(1 << 16):
                    total += len(chunk)
                    if total > limit:
                        raise self.output_limit.exceeded(self.description, argv[0], "stopped reading")
                    buf += chunk

            try:
                async with asyncio.TaskGroup() as tasks:
                    tasks.create_task(drain(process.stdout, buffers[0]))
                    tasks.create_task(drain(process.stderr, buffers[1]))
            except* OutputTooLargeError as group:
                raise group.exceptions[0] from None
            except* (asyncssh.Error, OSError) as group:
                raise group.exceptions[0] from None
            await process.wait_closed()
            completed = True
        finally:
            if not completed:
                process.close()
                # A failed read's traceback outlives it in a reference cycle (Python 3.11's
                # TaskGroup.__aexit__ keeps its exception group in a local, and the group's
                # traceback holds this frame) until a full gc pass; free the output now.
                for buf in buffers:
                    buf.clear()
        if process.exit_status is None and process.exit_signal is None:
            # The channel closed without an exit status: sshd (or the connection) died mid-command.
            # Whatever output arrived is cut short; it is a connection failure, not a parse error.
            self._drop()
            raise ConnectError(f"{self.description}: connection lost while {argv[0]} ran (no exit status)")
        status = process.exit_status if process.exit_status is not None else -1  # -1: killed by a signal
        return status, buffers[0].decode(errors="replace"), buffers[1].decode(errors="replace")

    async def open_stream(self, argv: Sequence[str], *, timeout: float) -> SSHStream:
        """Start a long-lived command (the burst sampler's probe) and hand back its stdout.

        It holds one of the connection's ``max_sessions`` for as long as it runs, and has no
        ``timeout`` wrapper: it runs until ``close()``; the remote command ends when its next write
        finds the channel closed. ``timeout`` bounds getting a session and starting the command."""
        argv = tuple(argv)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            async with asyncio.timeout(timeout):
                await self._sessions.acquire()
        except TimeoutError:
            raise PollTimeoutError(f"{self.description}: waited {timeout:g}s for a free session") from None
        try:
            conn = await asyncio.wait_for(self.connection(), max(0.01, deadline - loop.time()))
            async with asyncio.timeout(max(0.01, deadline - loop.time())):
                process = await conn.create_process(shlex.join(argv), encoding=None, stdin=asyncssh.DEVNULL,
                                                    stderr=asyncssh.DEVNULL)
        except TimeoutError:
            self._sessions.release()
            raise PollTimeoutError(f"{self.description}: {argv[0]} did not start within {timeout:g}s") from None
        except asyncssh.ChannelOpenError as e:
            self._sessions.release()
            self._drop()
            raise ConnectError(f"{self.description}: cannot open a session ({e.reason})") from None
        except (asyncssh.Error, OSError) as e:
            self._sessions.release()
            self._drop()
            raise ConnectError(f"{self.description}: connection lost ({e})") from None
        except BaseException:
            self._sessions.release()
            raise
        return SSHStream(process, self._sessions.release)

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.abort()

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            try:
                await asyncio.wait_for(conn.wait_closed(), 2)
            except (asyncio.TimeoutError, asyncssh.Error, OSError):
                pass


class SSHStream:
    """A running remote command's stdout, read in chunks; ``close()`` ends the channel and frees its session."""

    def __init__(self, process, release):
        self._process = process
        self._release = release
        self._closed = False

    async def read(self, n: int) -> bytes:
        """Up to ``n`` bytes; b"" when the command ended or the connection was lost."""
        try:
            return await self._process.stdout.read(n)
        except (asyncssh.Error, OSError):
            return b""

    def describe_end(self) -> str:
        p = self._process
        if p.exit_status is not None:
            return f" (exit status {p.exit_status})"
        if p.exit_signal is not None:
            return f" (signal {p.exit_signal[0]})"
        return ""

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._process.close()
            self._release()


class SSHPool:
    """One SSHConnection per (address, port, credential), shared by every collector that needs it."""

    def __init__(self, output_limit: OutputLimit | None = None):
        self._conns: dict[SSHEndpoint, SSHConnection] = {}
        self.output_limit = output_limit or OutputLimit()

    def get(self, address: str, port: int | None, credential: SSHCredential) -> SSHConnection:
        ep = SSHEndpoint.of(address, port, credential)
        conn = self._conns.get(ep)
        if conn is None:
            conn = self._conns[ep] = SSHConnection(ep, self.output_limit)
        return conn

    def retain(self, endpoints: set[SSHEndpoint]) -> list[SSHConnection]:
        """Forget connections not in ``endpoints`` (after a reload); returns them for closing."""
        gone = [c for ep, c in self._conns.items() if ep not in endpoints]
        self._conns = {ep: c for ep, c in self._conns.items() if ep in endpoints}
        return gone

    async def close(self) -> None:
        conns, self._conns = list(self._conns.values()), {}
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)


__all__ = ["SSHConnection", "SSHPool", "SSHEndpoint"]
