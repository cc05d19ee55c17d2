"""Many emulated hosts for the latency-probe tests and bench, on a few real sshd processes.

Each host gets its own loopback address (127.77.x.y); one sshd listens on up to 15 of them (OpenSSH
allows 16 listen sockets). The fake perftest (fabric_exporter.lab.perftest) learns which host it
runs on from SSH_CONNECTION (the address that was dialled), so servers bind that host's address and
clients dial the destination's address, as on a real fabric. All sshd instances trust one client
key, and one known_hosts file lists every address, so one credential reaches every host.

A "dead" host has an address nobody listens on: connecting is refused at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from fabric_exporter.lab.perftest import install_programs

from .sshd import SSHD, make_key

PER_SSHD = 15


def host_address(index: int) -> str:
    return f"127.77.{index // 250}.{index % 250 + 1}"


class LatencyLab:
    def __init__(self, tmpdir: str | os.PathLike, host_names: list[str], fixture: dict | None = None,
                 dead: tuple[str, ...] = ()):
        self.dir = Path(tmpdir) / "latency-lab"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.host_names = list(host_names)
        self.dead = set(dead)
        self.address = {name: host_address(i) for i, name in enumerate(self.host_names)}
        self.bin = self.dir / "bin"
        self.state = self.dir / "state"
        self.state.mkdir(exist_ok=True)
        self.fixture_file = self.dir / "fixture.json"
        self.write_fixture(fixture or {})
        self.client_key = make_key(self.dir / "client_ed25519")
        self.known_hosts = self.dir / "known_hosts"
        self.sshds: list[SSHD] = []
        self.port_of: dict[str, int] = {}

    def write_fixture(self, fixture: dict) -> None:
        data = {**fixture, "hosts": {a: n for n, a in self.address.items()}}
        self.fixture_file.write_text(json.dumps(data))

    def start(self) -> LatencyLab:
        install_programs(self.bin)
        live = [n for n in self.host_names if n not in self.dead]
        pub = Path(f"{self.client_key}.pub").read_text()
        known = []
        try:
            for start in range(0, len(live), PER_SSHD):
                chunk = live[start:start + PER_SSHD]
                sshd = SSHD(self.dir / f"sshd{len(self.sshds)}", path_dirs=[self.bin],
                            env={"FABRIC_LAB_PERFTEST_FIXTURE": str(self.fixture_file),
                                 "FABRIC_LAB_PERFTEST_STATE": str(self.state)},
                            extra_config=[f"ListenAddress {self.address[n]}" for n in chunk])
                sshd.authorized_keys.write_text(pub)
                self.sshds.append(sshd)
                sshd.start()
                key = " ".join(Path(f"{sshd.host_key}.pub").read_text().split()[:2])
                known.append(",".join(f"[{self.address[n]}]:{sshd.port}" for n in chunk) + " " + key)
                for n in chunk:
                    self.port_of[n] = sshd.port
        except BaseException:
            self.stop()
            raise
        any_port = self.sshds[0].port if self.sshds else 22
        for n in self.dead:
            self.port_of[n] = any_port  # right port, but no listener on that address
        self.known_hosts.write_text("\n".join(known) + "\n")
        return self

    def stop(self) -> None:
        for sshd in self.sshds:
            sshd.stop()
        self.sshds = []
        # Fake perftest processes left by a test that failed midway: end them by their recorded PIDs.
        for pid in self.running_fake_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def __enter__(self) -> LatencyLab:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- config pieces ---------------------------------------------------------------------------

    def hosts(self) -> list[dict]:
        return [{"name": n, "address": self.address[n], "port": self.port_of[n]} for n in self.host_names]

    def credential(self, **overrides) -> dict:
        user = self.sshds[0].user if self.sshds else "root"
        return {"type": "ssh", "username": user, "private_key_file": str(self.client_key),
                "known_hosts_file": str(self.known_hosts), "connect_timeout": "3s", **overrides}

    # -- what the fakes recorded -------------------------------------------------------------------

    def events(self) -> list[dict]:
        path = self.state / "events.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def clear_events(self) -> None:
        (self.state / "events.jsonl").unlink(missing_ok=True)

    def running_fake_pids(self) -> list[int]:
        alive = []
        for pidfile in self.state.glob("*.pid"):
            try:
                pid = int(pidfile.read_text())
            except (OSError, ValueError):
                continue
            if _alive(pid):
                alive.append(pid)
        return alive

    def wait_no_fakes(self, timeout: float) -> list[int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running_fake_pids():
                return []
            time.sleep(0.1)
        return self.running_fake_pids()


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status  # a zombie has ended; only its parent has not reaped it yet


def run_quiet(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
