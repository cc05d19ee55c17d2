"""A small lab of faulty and healthy targets for the hardening tests and bench/bench_faults.py.

- ``gpu_host_sshd``: a real OpenSSH sshd serving one lab GPU host (RoceHost: sysfs counters, fake
  ethtool/rdma) for the roce_nic collector; ``extra_ethtool_bytes`` appends that many bytes of
  well-formed extra ``ethtool -S`` counter lines (a host whose driver prints a flood of counters:
  the "50 MB host output" of issue 16; no rule maps them, so the host's filter keeps them at home
  unless the group sets ``expose_unmapped``), ``hang=True`` makes ethtool sleep (a hung host).
- ``Sampler``: polls the daemon's /metrics and /proc/<pid>/status in a background thread (bounded by
  its stop event), recording each scrape's latency, every healthy target's last poll duration and
  state, and the daemon's RSS, open fds and thread count.
"""

from __future__ import annotations

import os
import re
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from fabric_exporter.catalog import exporter as exporter_catalog
from fabric_exporter.lab.roce_host import RoceHost, write_fake_tools
from tests.harness.sshd import SSHD


def gpu_host_sshd(tmp: Path, name: str, *, extra_ethtool_bytes: int = 0, hang: bool = False,
                  nics: int = 2) -> tuple[RoceHost, SSHD]:
    """An sshd (not yet started) serving a lab GPU host; see the module docstring."""
    d = tmp / name
    model = RoceHost.build(name, "mlx5", nics=nics, pfc_priorities=(3,))
    sysfs, data, bin_dir = d / "sys", d / "data", d / "bin"
    model.write_sysfs(sysfs)
    model.write_tool_outputs(data)
    write_fake_tools(bin_dir, data)
    if extra_ethtool_bytes:
        first = data / "ethtool" / model.ports[0].netdev
        line = "     vendor_flood_counter_{:09d}: 12345\n"
        count = extra_ethtool_bytes // len(line.format(0)) + 1
        with open(first, "a") as f:
            f.writelines(line.format(i) for i in range(count))
    if hang:
        ethtool = bin_dir / "ethtool"
        ethtool.write_text("#!/bin/sh\nexec sleep 611\n")  # 611: findable among the machine's processes
        ethtool.chmod(0o755)
    return model, SSHD(d, path_dirs=[bin_dir], sysfs_tree=sysfs)


def restart_on_same_port(sshd: SSHD) -> None:
    """Start a stopped SSHD again on its previous port (SSHD.start picks a new one), so the
    daemon's config still points at it: an sshd killed and brought back by its init system."""
    import subprocess

    assert sshd.proc is None and sshd.port
    with open(sshd.log_file, "ab") as log:
        sshd.proc = subprocess.Popen(sshd._command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=log, start_new_session=True)
    ok, error = sshd._wait_ready()
    if not ok:
        sshd.stop()
        raise RuntimeError(f"sshd did not restart on port {sshd.port}: {error}\n{sshd.log()}")


def process_status(pid: int) -> dict[str, int]:
    """VmRSS/VmHWM (kB), open fds and threads of a process, from /proc."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "Threads"):
            out[key] = int(value.split()[0])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


# The exporter's own per-target series (selfmetrics), published whether or not the target is fresh.
SELF_PER_TARGET = {m.name for m in exporter_catalog.METRICS}

_SERIES = re.compile(r'^(fabric_poll_duration_seconds|fabric_up)\{([^}]*)\} (\S+)$')


@dataclass
class Sampler:
    base_url: str
    pid: int
    watch_hosts: set[str]
    every: float = 0.25
    scrape_timeout: float = 20.0
    headers: dict = field(default_factory=dict)
    scrape_seconds: list[float] = field(default_factory=list)
    poll_durations: dict[str, list[float]] = field(default_factory=dict)
    up: dict[str, list[float]] = field(default_factory=dict)
    status: list[dict[str, int]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    # One entry per scrape: (monotonic time, {host: {"up", "stale", "data", "duration"}}); "data" counts
    # the series of the host that are not the exporter's own per-target metrics.
    views: list[tuple[float, dict[str, dict[str, float]]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(self.scrape_timeout + 5)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                req = urllib.request.Request(self.base_url + "/metrics", headers=self.headers)
                with urllib.request.urlopen(req, timeout=self.scrape_timeout) as r:
                    body = r.read().decode()
                self.scrape_seconds.append(time.monotonic() - started)
                self._record(body)
            except OSError as e:
                self.failures.append(f"{type(e).__name__}: {e}")
                self.scrape_seconds.append(time.monotonic() - started)
            try:
                self.status.append(process_status(self.pid))
            except OSError:
                pass
            self._stop.wait(max(0.0, self.every - (time.monotonic() - started)))

    def _record(self, body: str) -> None:
        view: dict[str, dict[str, float]] = {}
        for line in body.splitlines():
            if line.startswith("#"):
                continue
            # A target's series carry host= (switch metrics: switch=) with the target's name.
            key = 'host="' if 'host="' in line else 'switch="' if 'switch="' in line else None
            if key is None:
                continue
            name = line.split("{", 1)[0]
            host = line.split(key, 1)[1].split('"', 1)[0]
            facts = view.setdefault(host, {"data": 0})
            value = float(line.rsplit(" ", 1)[1])
            if name == "fabric_up":
                facts["up"] = value
            elif name == "fabric_target_stale":
                facts["stale"] = value
            elif name == "fabric_poll_duration_seconds":
                facts["duration"] = value
            elif name not in SELF_PER_TARGET:
                facts["data"] += 1
        self.views.append((time.monotonic(), view))
        for line in body.splitlines():
            m = _SERIES.match(line)
            if m is None:
                continue
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            host = labels.get("host")
            if host in self.watch_hosts:
                target = self.poll_durations if m.group(1) == "fabric_poll_duration_seconds" else self.up
                target.setdefault(host, []).append(float(m.group(3)))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
