"""A real OpenSSH server for tests: Debian's sshd on 127.0.0.1, its own keys, a fake PATH and sysfs.

    with SSHD(tmp_path, path_dirs=[fake_bin], sysfs_tree=tree) as sshd:
        sshd.port, sshd.client_key, sshd.known_hosts, sshd.user

- Host key and client key are fresh ed25519 keys made with ssh-keygen; ``known_hosts`` trusts the
  host key for ``[127.0.0.1]:port``; ``other_client_key`` is a second key that is NOT authorized.
- ``SetEnv PATH=...`` puts ``path_dirs`` first, so sessions find fake ``ethtool``/``rdma``/... first.
- sshd always runs in its own mount namespace (``unshare -m``; the machine's mounts are untouched):
  * ``sysfs_tree``: a directory bind-mounted on /sys/class, so every session sees it as
    /sys/class/... while the test keeps writing new values into it from outside;
  * the login shell: sshd runs every command as ``<login shell> -c <command>``, and bash started by
    sshd sources ~/.bashrc (root's here runs pyenv init: ~100 ms per command). Inside the namespace a
    copy of /etc/passwd with the user's shell set to ``shell`` (default /bin/sh, which reads no rc
    file for a non-interactive command) is bind-mounted over /etc/passwd, so no rc file matters.
- ``start()`` waits (bounded) for the SSH banner; ``stop()`` ends sshd by its PID, after signalling
  its per-connection children (found by parent PID), which would otherwise outlive the listener.

- the privilege separation directory /run/sshd sshd requires is made on a tmpfs mounted on /run
  inside the namespace: the host's /run is left alone (nothing outside the test's directory is
  written; sshd's pid file and log are in it too).

Needs root (mount namespaces).
"""

from __future__ import annotations

import os
import signal
import shlex
import socket
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from fabric_exporter.lab.ports import free_tcp_port as free_port

SSHD_BINARY = "/usr/sbin/sshd"


def make_key(path: Path, comment: str = "fabric-exporter-test") -> Path:
    """An ed25519 key pair at ``path`` / ``path.pub`` (no passphrase)."""
    if not path.exists():
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                       check=True, timeout=20, stdin=subprocess.DEVNULL)
    return path


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    found = []  # kernels without CONFIG_PROC_CHILDREN: scan every process's parent
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


class SSHD:
    def __init__(self, tmpdir: str | os.PathLike, path_dirs: Iterable[str | os.PathLike] = (),
                 env: Mapping[str, str] | None = None, sysfs_tree: str | os.PathLike | None = None,
                 *, shell: str = "/bin/sh", max_sessions: int = 10, max_startups: str = "512:30:1024",
                 extra_config: Iterable[str] = (), start_timeout: float = 10.0,
                 system_path: Iterable[str] = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin",
                                               "/sbin", "/bin")):
        self.dir = Path(tmpdir) / f"sshd-{os.getpid()}-{id(self):x}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path_dirs = [str(Path(p).resolve()) for p in path_dirs]
        self.env = dict(env or {})
        self.sysfs_tree = Path(sysfs_tree).resolve() if sysfs_tree is not None else None
        self.shell = shell
        self.max_sessions = max_sessions
        self.max_startups = max_startups
        self.extra_config = list(extra_config)
        self.system_path = list(system_path)  # after path_dirs; drop /usr/sbin to hide e.g. ethtool
        self.start_timeout = start_timeout
        self.user = os.environ.get("USER") or _username()
        self.host_key = make_key(self.dir / "ssh_host_ed25519_key", "test-host")
        self.client_key = make_key(self.dir / "client_ed25519", "test-client")
        self.other_client_key = make_key(self.dir / "unauthorized_ed25519", "test-intruder")
        self.authorized_keys = self.dir / "authorized_keys"
        self.authorized_keys.write_text(Path(f"{self.client_key}.pub").read_text())
        self.known_hosts = self.dir / "known_hosts"
        self.config_file = self.dir / "sshd_config"
        self.log_file = self.dir / "sshd.log"
        self.port = 0
        self.proc: subprocess.Popen | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def __enter__(self) -> SSHD:
        if self.proc is None:  # `with sshd.start():` must not start a second, unstopped sshd
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> SSHD:
        last_error = ""
        for _ in range(3):  # the free port may be taken between probing and binding: retry
            self.port = free_port()
            self._write_config()
            self.known_hosts.write_text(
                f"[127.0.0.1]:{self.port} {' '.join(Path(f'{self.host_key}.pub').read_text().split()[:2])}\n")
            with open(self.log_file, "ab") as log:
                self.proc = subprocess.Popen(self._command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=log, start_new_session=True)
            ok, last_error = self._wait_ready()
            if ok:
                return self
            self.stop()
        raise RuntimeError(f"sshd did not start: {last_error}\n--- sshd log ---\n{self.log()}")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        # Connection children first (they outlive the listener otherwise), then the listener.
        for child in _children(proc.pid):
            try:
                os.kill(child, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)

    def log(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    # -- helpers for tests -------------------------------------------------------------------------

    def ssh_argv(self, command: str, *, key: Path | None = None) -> list[str]:
        """An OpenSSH client command line for this server (for checks by hand or in tests)."""
        return ["ssh", "-p", str(self.port), "-i", str(key or self.client_key), "-o", "BatchMode=yes",
                "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "StrictHostKeyChecking=yes",
                "-F", "/dev/null", f"{self.user}@127.0.0.1", command]

    def credential(self, **overrides) -> dict:
        """A config ``credentials:`` entry that logs in to this server."""
        return {"type": "ssh", "username": self.user, "private_key_file": str(self.client_key),
                "known_hosts_file": str(self.known_hosts), "connect_timeout": "5s", **overrides}

    # -- internals ---------------------------------------------------------------------------------

    def _write_config(self) -> None:
        path = ":".join(self.path_dirs + self.system_path)
        set_env = " ".join(f'"{k}={v}"' for k, v in {"PATH": path, **self.env}.items())
        lines = [
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {self.host_key}",
            f"AuthorizedKeysFile {self.authorized_keys}",
            f"PidFile {self.dir / 'sshd.pid'}",
            "PermitRootLogin prohibit-password",
            "StrictModes no",
            "UsePAM no",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UseDNS no",
            "PrintMotd no",
            "PrintLastLog no",
            "X11Forwarding no",
            "AllowTcpForwarding no",
            "PermitUserEnvironment no",
            f"SetEnv {set_env}",
            f"MaxSessions {self.max_sessions}",
            f"MaxStartups {self.max_startups}",
            "LogLevel INFO",
            *self.extra_config,
        ]
        self.config_file.write_text("\n".join(lines) + "\n")

    def _command(self) -> list[str]:
        # sshd insists on its compiled-in privilege separation directory /run/sshd: a tmpfs on /run
        # inside this namespace gives it one without creating anything on the host.
        steps = ["set -e", "mount -t tmpfs -o mode=0755,size=1m fabric-test-run /run", "mkdir -m 0755 /run/sshd"]
        if self.shell:
            passwd = self.dir / "passwd"
            rows = []
            for line in Path("/etc/passwd").read_text().splitlines():
                fields = line.split(":")
                if len(fields) == 7 and fields[0] == self.user:
                    fields[6] = self.shell
                rows.append(":".join(fields))
            passwd.write_text("\n".join(rows) + "\n")
            steps.append(f"mount --bind {shlex.quote(str(passwd))} /etc/passwd")
        if self.sysfs_tree is not None:
            self.sysfs_tree.mkdir(parents=True, exist_ok=True)
            steps.append(f"mount --bind {shlex.quote(str(self.sysfs_tree))} /sys/class")
        steps.append(f"exec {SSHD_BINARY} -D -E {shlex.quote(str(self.log_file))} -f {shlex.quote(str(self.config_file))}")
        # unshare execs sh, sh execs sshd: the PID we hold is sshd's.
        return ["unshare", "-m", "--propagation", "private", "sh", "-c", "; ".join(steps)]

    def _wait_ready(self) -> tuple[bool, str]:
        deadline = time.monotonic() + self.start_timeout
        error = "no banner"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False, f"sshd exited with status {self.proc.returncode}"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.settimeout(1)
                    if s.recv(64).startswith(b"SSH-2.0-"):
                        return True, ""
            except OSError as e:
                error = str(e)
            time.sleep(0.05)
        return False, f"no SSH banner on 127.0.0.1:{self.port} within {self.start_timeout:g}s ({error})"


def _username() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


class SilentServer:
    """A TCP listener that accepts connections and never says anything: a host that hangs after
    connecting (SSH clients wait for the banner until their own deadline)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
                self._held.append(conn)  # keep it open, say nothing
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for c in self._held:
            c.close()
        self.sock.close()


__all__ = ["SSHD", "SilentServer", "free_port", "make_key"]
