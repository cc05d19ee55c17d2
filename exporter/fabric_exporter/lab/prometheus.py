"""Real Prometheus and Alertmanager on 127.0.0.1 (Debian's packages), and a webhook receiver,
for the lab and the end-to-end tests.

Each server gets its own data directory, listens on a loopback port (a free one unless given;
Alertmanager with clustering off), and is stopped by PID in ``stop()``. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml
from .ports import free_tcp_port

PROMETHEUS = "/usr/bin/prometheus"
ALERTMANAGER = "/usr/bin/prometheus-alertmanager"


def _get_json(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read().decode())


def wait_until(predicate: Callable[[], object], deadline: float, what: str, interval: float = 0.2):
    """Poll ``predicate`` until it returns something truthy; TimeoutError naming ``what`` otherwise."""
    end = time.monotonic() + deadline
    last_error: Exception | None = None
    while time.monotonic() < end:
        try:
            value = predicate()
            if value:
                return value
        except (OSError, ValueError, KeyError) as e:  # server not up yet, or a half-written answer
            last_error = e
        time.sleep(interval)
    raise TimeoutError(f"timed out after {deadline:g}s waiting for {what}"
                       + (f" (last error: {last_error})" if last_error else ""))


class _Server:
    name = "server"

    def __init__(self, workdir: Path, port: int | None = None):
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_tcp_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log_path = workdir / f"{self.name}.log"

    def argv(self) -> list[str]:
        """The server's command line (each server defines it)."""
        raise NotImplementedError

    def start(self):
        """Spawn the server and wait for its /-/ready; returns self."""
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv(), stdout=self._log, stderr=subprocess.STDOUT, cwd=self.workdir,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.wait_ready()
        return self

    def wait_ready(self, deadline: float = 30.0) -> None:
        def ready():
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.logs()}")
            with urllib.request.urlopen(self.base + "/-/ready", timeout=2) as r:
                return r.status == 200
        try:
            wait_until(ready, deadline, f"{self.name} to be ready")
        except TimeoutError as e:
            raise TimeoutError(f"{e}\n{self.logs()}") from None

    def logs(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        self._log.close()


class Alertmanager(_Server):
    name = "alertmanager"

    def __init__(self, workdir: Path, webhook_url: str | None, *, group_wait: str = "1s",
                 group_interval: str = "1s", port: int | None = None):
        super().__init__(workdir, port)
        # Without a webhook (the lab), alerts are only shown in Alertmanager's UI.
        receiver = {"name": "test"}
        if webhook_url:
            receiver["webhook_configs"] = [{"url": webhook_url, "send_resolved": True}]
        config = {
            "route": {"receiver": "test", "group_by": ["alertname", "fabric"], "group_wait": group_wait,
                      "group_interval": group_interval, "repeat_interval": "1h"},
            "receivers": [receiver],
        }
        (workdir / "alertmanager.yml").write_text(yaml.safe_dump(config))

    def argv(self) -> list[str]:
        return [ALERTMANAGER, f"--config.file={self.workdir / 'alertmanager.yml'}",
                f"--storage.path={self.workdir / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}",
                "--cluster.listen-address=", "--log.level=info"]


class Prometheus(_Server):
    name = "prometheus"

    def __init__(self, workdir: Path, *, job: str, targets: list[str], rule_files: list[str],
                 alertmanager: str | None = None, interval: str = "1s", port: int | None = None):
        super().__init__(workdir, port)
        config = {
            "global": {"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": interval},
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}]}],
            "rule_files": [str(p) for p in rule_files],
        }
        if alertmanager:
            config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]}
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))

    def argv(self) -> list[str]:
        return [PROMETHEUS, f"--config.file={self.workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.workdir / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}",
                # resend firing alerts every second, so a test never waits for the 1m default
                "--rules.alert.resend-delay=1s", "--log.level=info"]

    def api(self, path: str, **params) -> dict:
        url = f"{self.base}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            body = _get_json(url)
        except urllib.error.HTTPError as e:
            body = json.loads(e.read().decode() or "{}")
            raise ValueError(f"{path} {params}: {body.get('error', e)}") from None
        if body.get("status") != "success":
            raise ValueError(f"{path} {params}: {body}")
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        return self.api("query", query=expr)["result"]

    def query_range(self, expr: str, start: float, end: float, step: float = 1.0) -> list[dict]:
        return self.api("query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step=str(step))["result"]

    def alerts(self) -> list[dict]:
        """Pending and firing alerts as the rule manager holds them."""
        return self.api("alerts")["alerts"]

    def rule_health(self) -> list[tuple[str, str, str]]:
        """(rule name, health, last error) of every loaded rule."""
        out = []
        for group in self.api("rules")["groups"]:
            for rule in group["rules"]:
                out.append((rule["name"], rule.get("health", ""), rule.get("lastError", "")))
        return out


class WebhookReceiver:
    """Alertmanager's webhook target: records every notification with its arrival time."""

    def __init__(self):
        self.notifications: list[tuple[float, dict]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server naming)
                length = int(self.headers.get("Content-Length", "0"))
                payload = json.loads(self.rfile.read(length).decode() or "{}")
                with receiver._lock:
                    receiver.notifications.append((time.monotonic(), payload))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):  # keep pytest output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        self._thread = threading.Thread(target=self.server.serve_forever, name="webhook", daemon=True)

    def start(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)

    def alerts(self) -> list[tuple[float, dict]]:
        """(arrival time, alert) for every alert in every notification so far."""
        with self._lock:
            return [(t, a) for t, payload in self.notifications for a in payload.get("alerts", [])]

    def wait_for(self, predicate: Callable[[dict], bool], deadline: float, what: str) -> tuple[float, dict]:
        def find():
            for t, alert in self.alerts():
                if predicate(alert):
                    return t, alert
            return None
        return wait_until(find, deadline, what)
