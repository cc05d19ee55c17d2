"""Many simulated hosts behind one in-process asyncssh server: one listening port per host.

The lab and the benchmarks use it to stand in for a fleet of GPU hosts and switches. Each command
arrives as the SSH transport sends it (``timeout -k 2 N argv...``, shlex-quoted); the wrapper is
removed and the argument list is handed to the host's ``answer`` coroutine, which returns
(exit status, stdout, stderr) rendered from the simulation, so no shell or process is involved.

A command ``streamer`` recognises (it returns a local argv for it) is long-lived: that local process
runs for as long as the client keeps the channel open, its stdout streamed as the command's output
(the burst sampler's probe); the process is killed when the channel or the server closes.

A host named in ``cli_hosts`` stands for a device whose SSH lands in its CLI (Arista EOS): its exec
request goes to ``line_answer`` as the line it is, neither split nor unwrapped.
"""

from __future__ import annotations

import asyncio
import codecs
import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path

import asyncssh

Answer = Callable[[str, list[str]], Awaitable[tuple[int, str, str]]]
LineAnswer = Callable[[str, str], Awaitable[tuple[int, str, str]]]  # (host, CLI line)
Streamer = Callable[[str, list[str]], "list[str] | None"]  # (host, argv) -> a local argv to stream, or None


def write_key_files(directory: Path, prefix: str = "") -> tuple[Path, Path, Path]:
    """New ed25519 keys under ``directory``: (host key, client key, authorized_keys of the client)."""
    host_key, client_key = directory / f"{prefix}host_key", directory / f"{prefix}client_key"
    authorized = directory / f"{prefix}authorized_keys"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(host_key))
    key = asyncssh.generate_private_key("ssh-ed25519")
    key.write_private_key(str(client_key))
    key.write_public_key(str(authorized))
    return host_key, client_key, authorized


def known_hosts_lines(host_key: Path, ports) -> str:
    """known_hosts entries for ``host_key`` at 127.0.0.1 on each of ``ports``."""
    pub = " ".join(asyncssh.read_public_key(str(host_key)).export_public_key().decode().split()[:2])
    return "".join(f"[127.0.0.1]:{p} {pub}\n" for p in ports)


def strip_timeout_wrapper(argv: list[str]) -> list[str]:
    """``timeout -k 2 30 cmd ...`` -> ``cmd ...`` (the transport's remote deadline)."""
    if argv[:1] == ["timeout"]:
        rest = argv[1:]
        while rest and rest[0].startswith("-"):
            rest = rest[2:] if rest[0] in ("-k", "-s", "--kill-after", "--signal") else rest[1:]
        return rest[1:]  # drop the duration
    return argv


class AuthorizedKeyServer(asyncssh.SSHServer):
    """Public-key authentication against one set of authorized keys, for any user name."""

    def __init__(self, authorized: asyncssh.SSHAuthorizedKeys):
        self._authorized = authorized

    def begin_auth(self, username: str) -> bool:
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return self._authorized.validate(key, "127.0.0.1", "127.0.0.1") is not None


class SimulatedHosts:
    """``await SimulatedHosts(workdir, answer).start(names)`` -> {name: port}; ``known_hosts`` and
    ``client_key`` are files a config can point its SSH credential at."""

    def __init__(self, workdir: str | Path, answer: Answer, *, host_key_file: str | None = None,
                 authorized_keys_file: str | None = None, cli_hosts: frozenset[str] = frozenset(),
                 line_answer: LineAnswer | None = None, streamer: Streamer | None = None):
        """Keys are generated in ``workdir`` unless a host key and an authorized_keys file are given."""
        if cli_hosts and line_answer is None:
            raise ValueError("cli_hosts need a line_answer")
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.answer = answer
        self.cli_hosts = cli_hosts
        self.line_answer = line_answer
        self.streamer = streamer
        self._streams: set[asyncio.subprocess.Process] = set()
        if host_key_file:
            self.host_key_file = Path(host_key_file)
            host_key = asyncssh.read_private_key(str(host_key_file))
        else:
            host_key = asyncssh.generate_private_key("ssh-ed25519")
            self.host_key_file = self.workdir / "lab_host_key"
            host_key.write_private_key(self.host_key_file)
        self._host_pub = host_key.export_public_key().decode().strip()
        self.client_key: Path | None = None
        if authorized_keys_file:
            self._authorized = asyncssh.read_authorized_keys(str(authorized_keys_file))
        else:
            client_key = asyncssh.generate_private_key("ssh-ed25519")
            self.client_key = self.workdir / "lab_client_key"
            client_key.write_private_key(self.client_key)
            self._authorized = asyncssh.import_authorized_keys(client_key.export_public_key().decode())
        self.known_hosts = self.workdir / "lab_known_hosts"
        self.ports: dict[str, int] = {}
        self._servers: list[asyncssh.SSHAcceptor] = []
        self.commands = 0

    async def start(self, names: list[str]) -> dict[str, int]:
        for name in names:
            server = await asyncssh.create_server(
                lambda: AuthorizedKeyServer(self._authorized), "127.0.0.1", 0,
                server_host_keys=[str(self.host_key_file)],
                process_factory=lambda process, name=name: self._handle(name, process))
            self._servers.append(server)
            self.ports[name] = server.sockets[0].getsockname()[1]
        self.known_hosts.write_text("".join(f"[127.0.0.1]:{p} {self._host_pub}\n" for p in self.ports.values()))
        return self.ports

    async def _handle(self, host: str, process: asyncssh.SSHServerProcess) -> None:
        self.commands += 1
        if host in self.cli_hosts:
            reply = self.line_answer(host, process.command or "")  # type: ignore[misc]
        else:
            try:
                argv = strip_timeout_wrapper(shlex.split(process.command or ""))
            except ValueError as e:
                process.stderr.write(f"sh: syntax error: {e}\n")
                process.exit(2)
                return
            local = self.streamer(host, argv) if self.streamer is not None else None
            if local is not None:
                await self._stream(local, process)
                return
            reply = self.answer(host, argv)
        try:
            status, out, err = await reply
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a simulator bug shows up as a failing command, not a dead server
            status, out, err = 1, "", f"lab: {type(e).__name__}: {e}\n"
        try:
            if out:
                process.stdout.write(out)
            if err:
                process.stderr.write(err)
            process.exit(status)
        except (OSError, asyncssh.Error):
            pass

    async def _stream(self, argv: list[str], process: asyncssh.SSHServerProcess) -> None:
        """Run ``argv`` here and stream its stdout to the channel until either side ends."""
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        self._streams.add(proc)

        async def pump() -> None:
            decode = codecs.getincrementaldecoder("utf-8")("replace").decode  # the channel carries text
            while chunk := await proc.stdout.read(1 << 16):
                process.stdout.write(decode(chunk))
                await process.stdout.drain()

        pumping = asyncio.ensure_future(pump())
        closed = asyncio.ensure_future(process.channel.wait_closed())
        try:
            await asyncio.wait({pumping, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (pumping, closed):
                t.cancel()
            await asyncio.gather(pumping, closed, return_exceptions=True)
            await self._end(proc)
            try:
                process.exit(proc.returncode if proc.returncode is not None and proc.returncode >= 0 else 1)
            except (OSError, asyncssh.Error):
                pass

    async def _end(self, proc: asyncio.subprocess.Process) -> None:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        self._streams.discard(proc)

    async def stop(self) -> None:
        await asyncio.gather(*(self._end(p) for p in list(self._streams)), return_exceptions=True)
        for s in self._servers:
            s.close()
        await asyncio.gather(*(s.wait_closed() for s in self._servers), return_exceptions=True)
        self._servers.clear()
