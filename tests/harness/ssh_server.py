"""A real SSH server (asyncssh) on 127.0.0.1 in a background thread, for tests of the SSH transport.

Each session's command runs locally through ``sh -c`` with a PATH the test chooses, so the server
behaves like a host whose tools are small fixture programs. Also: a TCP server that accepts and
then never says a word (a hung host).
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from pathlib import Path

import asyncssh

from fabric_exporter.lab.ssh_hosts import AuthorizedKeyServer


class ThreadedSSHServer:
    """Start with ``with ThreadedSSHServer(tmp, path_dirs=[...]) as srv:``; connect to srv.port."""

    def __init__(self, workdir: Path, path_dirs: list[str] | None = None, env: dict | None = None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.path_dirs = path_dirs or []
        self.env = env or {}
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        client_key = asyncssh.generate_private_key("ssh-ed25519")
        self.host_key_path = self.workdir / "host_key"
        host_key.write_private_key(self.host_key_path)
        self.client_key = self.workdir / "client_key"
        client_key.write_private_key(self.client_key)
        self._authorized = asyncssh.import_authorized_keys(client_key.export_public_key().decode())
        self._host_pub = host_key.export_public_key().decode().strip()
        self.port = 0
        self.known_hosts = self.workdir / "known_hosts"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server = None
        self.commands: list[str] = []

    async def _handle(self, process: asyncssh.SSHServerProcess) -> None:
        self.commands.append(process.command or "")
        env = {**os.environ, **self.env,
               "PATH": ":".join(self.path_dirs + [os.environ.get("PATH", "/usr/bin:/bin")])}
        proc = await asyncio.create_subprocess_exec(
            "sh", "-c", process.command or "true", env=env, start_new_session=True,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await proc.communicate()
            process.stdout.write(out)
            process.stderr.write(err)
            process.exit(proc.returncode if proc.returncode >= 0 else 128 - proc.returncode)
        finally:
            if proc.returncode is None:  # the client went away: do not leave the command running
                try:
                    os.killpg(proc.pid, 9)
                except ProcessLookupError:
                    pass

    async def _start(self) -> None:
        self._server = await asyncssh.create_server(
            lambda: AuthorizedKeyServer(self._authorized), "127.0.0.1", 0,
            server_host_keys=[str(self.host_key_path)], process_factory=self._handle, encoding=None)
        self.port = self._server.sockets[0].getsockname()[1]

    def __enter__(self) -> ThreadedSSHServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {self._host_pub}\n")
        return self

    def __exit__(self, *exc) -> None:
        async def stop():
            self._server.close()
            await self._server.wait_closed()

        try:
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(5)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)


class SilentTCPServer:
    """Accepts TCP connections on 127.0.0.1 and never sends a byte: a host that hangs after connect."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = self._sock.getsockname()[1]
        self._conns: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        self._sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
                self._conns.append(conn)
            except OSError:
                continue

    def __enter__(self) -> SilentTCPServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(2)
        for c in self._conns:
            c.close()
        self._sock.close()
