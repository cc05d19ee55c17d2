"""Issue 16 faults against a running daemon, measured: what a healthy target and a legitimate
scraper see while one host or client misbehaves. Each scenario is run twice in the same run: a
baseline without the fault (the floor on this machine), then with it; figures are reported as
ratios to that baseline.

    PYTHONPATH=exporter:. python bench/bench_faults.py big_output  [--code DIR] [--seconds 30]
    PYTHONPATH=exporter:. python bench/bench_faults.py auth_storm  [--code DIR]
    PYTHONPATH=exporter:. python bench/bench_faults.py slow_clients [--code DIR]

``--code DIR`` runs the daemon from another checkout's ``exporter/`` (e.g. ``git archive`` of the
previous commit) to measure before/after on the same machine. Needs root (sshd in a mount namespace).

- big_output: 8 healthy lab GPU hosts (roce_nic over a real sshd, 5 s timeout) and one host whose
  ``ethtool -S`` prints 50 MB of counters. Reports /metrics latency, healthy hosts' poll durations,
  the daemon's peak and final RSS, and the flooding host's failure reason.
- auth_storm: basic auth on; 100 concurrent clients with a wrong password, in waves, while a
  legitimate client scrapes. Reports the legitimate client's p50/max and the time of a wrong
  password vs. an unknown user.
- slow_clients: 1,016 connections that trickle one header byte every 5 s (daemon under a 1,024-fd
  limit), while a legitimate client scrapes; reports how many of its scrapes succeed and how long
  the trickling connections live.
"""

from __future__ import annotations

import argparse
import base64
import json
import select
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "exporter"), str(ROOT)]

from tests.harness.daemon import DaemonProcess  # noqa: E402
from tests.harness.faultlab import Sampler, gpu_host_sshd, percentile, process_status  # noqa: E402

HEALTHY = [f"gpu-{i:02d}" for i in range(1, 9)]


def _daemon(config: Path, code: str | None, args: tuple[str, ...] = (), wrapper: tuple[str, ...] = ()) -> DaemonProcess:
    env = {"PYTHONPATH": f"{Path(code).resolve() / 'exporter'}:{ROOT}"} if code else None
    d = DaemonProcess(config, args=args, env=env, wrapper=wrapper)
    d.wait_http(30)
    return d


def _roce_config(tmp: Path, healthy, bad, max_output: str | None = None) -> Path:
    creds = {"healthy": healthy.credential()}
    targets = [{"name": "healthy", "fabric": "f1", "collector": "roce_nic", "transport": "ssh",
                "credentials": "healthy", "interval": "6s", "timeout": "5s",
                "hosts": [{"name": h, "address": "127.0.0.1", "port": healthy.port} for h in HEALTHY]}]
    if bad is not None:
        creds["bad"] = bad.credential()
        # expose_unmapped: the host sends every counter (its filter would keep the unmapped flood at home)
        targets.append({"name": "flood", "fabric": "f1", "collector": "roce_nic", "transport": "ssh",
                        "credentials": "bad", "interval": "6s", "timeout": "5s", "options": {"expose_unmapped": True},
                        "hosts": [{"name": "gpu-flood", "address": "127.0.0.1", "port": bad.port}]})
    path = tmp / f"config-{'fault' if bad else 'base'}.yaml"
    config = {"credentials": creds, "targets": targets}
    if max_output:
        config["limits"] = {"max_output_bytes": max_output}
    path.write_text(yaml.safe_dump(config))
    return path


def big_output(code: str | None, seconds: float, max_output: str | None = None) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        _, healthy = gpu_host_sshd(tmp, "healthy")
        _, bad = gpu_host_sshd(tmp, "flood", extra_ethtool_bytes=50_000_000)
        with healthy, bad:
            for label, flood in (("baseline", None), ("fault", bad)):
                d = _daemon(_roce_config(tmp, healthy, flood, max_output), code)
                try:
                    with Sampler(d.base, d.proc.pid, set(HEALTHY) | {"gpu-flood"}) as s:
                        time.sleep(seconds)
                    status = process_status(d.proc.pid)
                    body = d.get("/metrics", timeout=30)[1]
                finally:
                    d.stop()
                durations = [v for h in HEALTHY for v in s.poll_durations.get(h, [])]
                errors = [line for line in body.splitlines()
                          if line.startswith("fabric_poll_errors_total") and 'host="gpu-flood"' in line
                          and float(line.rsplit(" ", 1)[1]) > 0]
                out[label] = {
                    "metrics_p50_s": round(percentile(s.scrape_seconds, 0.5), 4),
                    "metrics_max_s": round(max(s.scrape_seconds), 4),
                    "scrapes": len(s.scrape_seconds), "scrape_failures": len(s.failures),
                    "healthy_poll_max_s": round(max(durations), 3) if durations else None,
                    "healthy_poll_p50_s": round(percentile(durations, 0.5), 3) if durations else None,
                    "rss_peak_mb": round(max(x["VmHWM"] for x in s.status) / 1024, 1),
                    "rss_end_mb": round(status["VmRSS"] / 1024, 1),
                    "flood_errors": errors,
                }
    out["ratios"] = {k: round(out["fault"][k] / out["baseline"][k], 2)
                     for k in ("metrics_max_s", "healthy_poll_max_s", "rss_peak_mb", "rss_end_mb")
                     if out["baseline"].get(k)}
    return out


def _web_config(tmp: Path) -> Path:
    import bcrypt

    hashed = bcrypt.hashpw(b"right-password", bcrypt.gensalt(rounds=10)).decode()
    path = tmp / "web.yaml"
    path.write_text(yaml.safe_dump({"basic_auth_users": {"prometheus": hashed}}))
    return path


def _local_config(tmp: Path) -> Path:
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump({"targets": [{
        "name": "local", "fabric": "f1", "collector": "roce_nic", "transport": "local", "interval": "5s",
        "timeout": "4s", "hosts": ["localhost"]}]}))
    return path


def _get(base: str, user: str, password: str, timeout: float = 30.0) -> tuple[int, float]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    req = urllib.request.Request(base + "/metrics", headers={"Authorization": f"Basic {token}"})
    started = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    except OSError:
        status = 0
    return status, time.monotonic() - started


def auth_storm(code: str | None, seconds: float) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        d = _daemon(_local_config(tmp), code, ("--web.config.file", str(_web_config(tmp))))
        try:
            # Timing of one wrong password vs one unknown user (user enumeration), quiet server.
            wrong = [_get(d.base, "prometheus", f"nope{i}")[1] for i in range(10)]
            unknown = [_get(d.base, f"nobody{i}", "nope")[1] for i in range(10)]
            out["wrong_password_p50_s"] = round(statistics.median(wrong), 4)
            out["unknown_user_p50_s"] = round(statistics.median(unknown), 4)
            for label, storm in (("baseline", False), ("fault", True)):
                stop = threading.Event()
                legit: list[float] = []
                statuses: list[int] = []

                def attacker(i: int) -> None:
                    while not stop.is_set():
                        _get(d.base, "prometheus", f"wrong-{i}", timeout=30)

                with ThreadPoolExecutor(100) as pool:
                    if storm:
                        for i in range(100):
                            pool.submit(attacker, i)
                    end = time.monotonic() + seconds
                    while time.monotonic() < end:
                        status, took = _get(d.base, "prometheus", "right-password")
                        statuses.append(status)
                        legit.append(took)
                        time.sleep(0.1)
                    stop.set()
                out[label] = {"legit_p50_s": round(statistics.median(legit), 4), "legit_max_s": round(max(legit), 3),
                              "legit_ok": sum(1 for s in statuses if s == 200), "legit_total": len(statuses)}
        finally:
            d.stop()
    out["ratio_p50"] = round(out["fault"]["legit_p50_s"] / out["baseline"]["legit_p50_s"], 1)
    return out


def _readable(sock: socket.socket) -> bool:
    poller = select.poll()  # not select(): descriptors above 1023
    poller.register(sock, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(0))


def slow_clients(code: str | None, seconds: float, connections: int = 1016) -> dict:
    """As in the issue: 1,016 connections trickling a byte every 5 s, the daemon under a 1,024-fd limit."""
    out = {}
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        d = _daemon(_local_config(tmp), code, wrapper=("prlimit", "--nofile=1024:1024", "--"))
        try:
            for label, n in (("baseline", 0), ("fault", connections)):
                socks: dict[socket.socket, float] = {}
                closed_after: list[float] = []

                def top_up() -> None:
                    # An attacker keeps n connections open, replacing those the server closes.
                    for _ in range(n - len(socks)):
                        try:
                            s = socket.create_connection(("127.0.0.1", d.port), timeout=0.5)
                            s.sendall(b"GET /metrics HTTP/1.1\r\n")
                            socks[s] = time.monotonic()
                        except OSError:
                            break

                ok = total = 0
                end = time.monotonic() + seconds
                next_trickle = time.monotonic()
                while time.monotonic() < end:
                    if time.monotonic() >= next_trickle:
                        next_trickle += 5.0
                        for s, opened in list(socks.items()):
                            try:
                                s.sendall(b"X")
                                readable = _readable(s)
                                if readable:  # a 408 or EOF: the server cut it
                                    raise OSError("closed by the server")
                            except OSError:
                                closed_after.append(time.monotonic() - opened)
                                del socks[s]
                                s.close()
                        top_up()
                    total += 1
                    try:
                        with urllib.request.urlopen(d.base + "/metrics", timeout=2) as r:
                            r.read()
                            ok += 1
                    except OSError:
                        pass
                    time.sleep(0.2)
                fds = process_status(d.proc.pid)["fds"]
                for s in socks:
                    s.close()
                out[label] = {"trickling": n, "open_at_end": len(socks), "legit_ok": ok, "legit_total": total,
                              "trickling_closed_by_server": len(closed_after),
                              "closed_after_p50_s": round(statistics.median(closed_after), 1) if closed_after else None,
                              "daemon_fds_under_attack": fds}
                time.sleep(1)
        finally:
            d.stop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", choices=("big_output", "auth_storm", "slow_clients"))
    ap.add_argument("--code", help="run the daemon from DIR/exporter (a checkout of another revision)")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--max-output-bytes", help="big_output: set limits.max_output_bytes (e.g. 64MiB: the "
                                                "50 MB output is then read and parsed, off the loop)")
    ap.add_argument("--connections", type=int, default=1016, help="slow_clients: trickling connections kept open")
    args = ap.parse_args()
    if args.scenario == "big_output":
        result = big_output(args.code, args.seconds, args.max_output_bytes)
    elif args.scenario == "slow_clients":
        result = slow_clients(args.code, args.seconds, args.connections)
    else:
        result = auth_storm(args.code, args.seconds)
    print(json.dumps({"scenario": args.scenario, "code": args.code or "this checkout", **result}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
