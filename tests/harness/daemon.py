"""Run the real daemon as a subprocess on 127.0.0.1 and talk to it over HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from fabric_exporter.lab.ports import free_tcp_port as free_port

from .processes import stop_process

from tests.harness import paths

ROOT = paths.ROOT


def package_env(**extra: str) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'exporter'}:{ROOT}"}
    env.update(extra)
    return env


class DaemonProcess:
    def __init__(self, config: Path, *, plugins: str = "", args: tuple[str, ...] = (), env: dict | None = None,
                 wrapper: tuple[str, ...] = ()):
        self.port = free_port()
        self.config = config
        self.log_path = config.parent / f"daemon-{self.port}.log"
        # wrapper: a command the daemon runs under, e.g. ("prlimit", "--nofile=256:256", "--").
        cmd = [*wrapper, sys.executable, "-m", "fabric_exporter", "run", "--config", str(config),
               "--web.listen-address", f"127.0.0.1:{self.port}", *args]
        extra = {"FABRIC_EXPORTER_PLUGINS": plugins} if plugins else {}
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, env={**package_env(**extra), **(env or {})},
                                     stdout=self._log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"

    def get(self, path: str, timeout: float = 5.0, headers: dict | None = None) -> tuple[int, str]:
        req = urllib.request.Request(self.base + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def wait_http(self, deadline: float = 15.0) -> None:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited with {self.proc.returncode}:\n{self.logs()}")
            try:
                self.get("/healthz", timeout=1)
                return
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"daemon did not answer within {deadline}s:\n{self.logs()}")

    def wait_for(self, predicate, deadline: float = 15.0, path: str = "/metrics") -> str:
        end = time.monotonic() + deadline
        body = ""
        while time.monotonic() < end:
            status, body = self.get(path)
            if predicate(status, body):
                return body
            time.sleep(0.2)
        raise TimeoutError(f"condition not met within {deadline}s; last {path}:\n{body[-3000:]}\nlogs:\n{self.logs()}")

    def metrics_when_ready(self, deadline: float = 60.0) -> str:
        """/metrics once /ready says every target was polled (bounded); fails with the daemon's log."""
        self.wait_http()
        end = time.monotonic() + deadline
        while time.monotonic() < end and self.get("/ready")[0] != 200:
            time.sleep(0.2)
        status, body = self.get("/ready")
        assert status == 200, f"{body}\n{self.logs()[-3000:]}"
        status, text = self.get("/metrics")
        assert status == 200, text
        return text

    def logs(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def stop(self) -> int | None:
        stop_process(self.proc)
        self._log.close()
        return self.proc.returncode

    def __enter__(self) -> DaemonProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def metric_value(text: str, series: str) -> float | None:
    """The value of an exact series line prefix (name{labels}) in exposition text."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return None
