"""``fabric-exporter lab`` as a newcomer runs it: a subprocess on free loopback ports, waited for with a
bounded poll of its /metrics, stopped with Ctrl-C (SIGINT) as a person stops it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .daemon import free_port, package_env


@dataclass
class RunningLab:
    proc: subprocess.Popen
    log_path: Path
    port: int  # the daemon's /metrics
    control: int  # the lab's scenario control API
    prometheus: int = 0  # the lab's Prometheus (when installed and not --no-prometheus)

    def log(self) -> str:
        return self.log_path.read_text()

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            return r.read().decode()


@contextmanager
def running_lab(tmp_path: Path, *args: str, ready: Callable[[RunningLab], bool], up_within: float,
                cwd: Path | None = None, stop_within: float = 60) -> Iterator[RunningLab]:
    """Start the lab with ``args`` (work dir and addresses added here), wait until ``ready(lab)`` (a
    refused connection counts as not yet; at most ``up_within`` s), hand it over, then stop it with
    SIGINT (killed if it outlives ``stop_within`` s). ``lab.proc.returncode`` is then its exit status."""
    port, control, prom = free_port(), free_port(), free_port()
    log_path = tmp_path / "lab.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fabric_exporter", "lab", "--workdir", str(tmp_path / "lab"), *args,
             "--web.listen-address", f"127.0.0.1:{port}", "--control-address", f"127.0.0.1:{control}",
             "--prometheus-address", f"127.0.0.1:{prom}"],
            cwd=cwd, env=package_env(), stdout=log, stderr=subprocess.STDOUT)
        lab = RunningLab(proc, log_path, port, control, prom)
        try:
            deadline = time.monotonic() + up_within
            while time.monotonic() < deadline:
                assert proc.poll() is None, lab.log()[-3000:]
                try:
                    if ready(lab):
                        break
                except OSError:
                    pass
                time.sleep(0.5)
            else:
                raise AssertionError("lab did not come up:\n" + lab.log()[-3000:])
            yield lab
            proc.send_signal(signal.SIGINT)
            proc.wait(stop_within)
        finally:
            if proc.poll() is None:
                # a failing test: still Ctrl-C first, so the lab stops what it started (ibsim, snmpsim,
                # Slurm's daemons...); SIGKILL would orphan them
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(stop_within)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
