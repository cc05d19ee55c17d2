"""Serving /metrics at scale: the real daemon with 10,000 targets x 160 series (1.6M samples) from a
collector that does no I/O (synthetic_collector.py, loaded through FABRIC_EXPORTER_PLUGINS), so only
the daemon's own costs count.

    PYTHONPATH=exporter python bench/bench_serving.py [--targets 10000] [--series 160] [--scrapes 5]

Baseline (the floor), measured in the same run: a minimal asyncio server in its own process writing
the very bytes the daemon returned, from memory. Both are fetched by the same client (curl, body
discarded), plain and gzip (Prometheus always asks for gzip); reported as the ratio of median wall
time per scrape, plus the daemon's CPU per scrape and its RSS. Polls are quiet during the scrapes
(the interval defaults to 600 s) so the scrape path is measured alone; --interval 30s measures it
with polls landing meanwhile; with ``--busy-ms M`` each target's poll also spends M ms of CPU in
1 ms turns of the event loop, so ``targets x M / interval`` near 1 saturates the daemon's loop the
way a 10k-GPU cluster's collectors do (bench_cluster.py): the scrapes then show how long /metrics
waits for that loop (median and the slowest scrape, p99 at up to 100 scrapes).

``--exporter DIR`` runs another checkout's package (its ``exporter/`` dir) for before/after figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

from cputime import process_cpu, rss_mib

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

FLOOR_SERVER = r'''
import asyncio, sys
bodies = {False: open(sys.argv[1], "rb").read(), True: open(sys.argv[2], "rb").read()}

async def serve(reader, writer):
    try:
        while True:
            request = await reader.readuntil(b"\r\n\r\n")
            gz = b"gzip" in request.lower().split(b"accept-encoding:", 1)[-1].split(b"\r\n", 1)[0] \
                if b"accept-encoding:" in request.lower() else False
            body = bodies[gz]
            head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                    + (b"Content-Encoding: gzip\r\n" if gz else b"")
                    + b"Content-Length: %d\r\n\r\n" % len(body))
            writer.write(head)
            writer.write(body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()

async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()

asyncio.run(main())
'''


def curl(url: str, gz: bool) -> tuple[float, int]:
    cmd = ["curl", "-s", "-o", "/dev/null", "-w", "%{time_total} %{size_download} %{http_code}", url]
    if gz:
        cmd[1:1] = ["-H", "Accept-Encoding: gzip"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout.split()
    if out[2] != "200":
        raise SystemExit(f"{url}: HTTP {out[2]}")
    return float(out[0]), int(out[1])


def fetch(url: str, gz: bool) -> bytes:
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"} if gz else {})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.read()


def wait_ready(base: str, proc: subprocess.Popen, deadline: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"daemon exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(base + "/ready", timeout=10) as r:
                if r.status == 200:
                    return time.monotonic() - started
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"daemon not ready within {deadline}s")


def measure(url: str, pid: int, gz: bool, scrapes: int) -> tuple[list[float], float, int]:
    """(wall seconds of each scrape, CPU seconds of ``pid`` per scrape, bytes)."""
    walls = []
    size = 0
    cpu0 = process_cpu(pid)
    for _ in range(scrapes):
        wall, size = curl(url, gz)
        walls.append(wall)
    return walls, (process_cpu(pid) - cpu0) / scrapes, size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", type=int, default=10_000)
    ap.add_argument("--series", type=int, default=160)
    ap.add_argument("--scrapes", type=int, default=5)
    ap.add_argument("--interval", default="600s")
    ap.add_argument("--busy-ms", type=float, default=0.0, help="CPU each poll spends in 1 ms loop turns")
    ap.add_argument("--exporter", type=Path, default=ROOT / "exporter", help="the package's parent directory")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-serving-"))
    config = {
        "limits": {"max_concurrent_polls": 256, "per_transport": {"local": 256}},
        "targets": [{"name": "bench", "fabric": "bench", "collector": "bench_synthetic", "transport": "local",
                     "interval": args.interval, "timeout": "20s", "stale_after": "3600s",
                     "options": {"series": args.series, "busy_ms": args.busy_ms},
                     "hosts": [{"name": f"gpu-{i:05d}"} for i in range(args.targets)]}],
    }
    (tmp / "fabric.yaml").write_text(yaml.safe_dump(config))
    port_probe = __import__("socket").socket()
    port_probe.bind(("127.0.0.1", 0))
    port = port_probe.getsockname()[1]
    port_probe.close()
    env = {**os.environ, "PYTHONPATH": f"{args.exporter}:{BENCH}", "FABRIC_EXPORTER_PLUGINS": "synthetic_collector"}
    log = open(tmp / "daemon.log", "wb")
    daemon = subprocess.Popen([sys.executable, "-m", "fabric_exporter", "run", "--config", str(tmp / "fabric.yaml"),
                               "--web.listen-address", f"127.0.0.1:{port}", "--log.level", "error"],
                              env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
    floor = None
    try:
        base = f"http://127.0.0.1:{port}"
        first_round = wait_ready(base, daemon, 600)
        url = base + "/metrics"
        plain, packed = fetch(url, False), fetch(url, True)
        (tmp / "plain").write_bytes(plain)
        (tmp / "gzip").write_bytes(packed)
        samples = sum(1 for line in plain.splitlines() if line and not line.startswith(b"#"))
        floor = subprocess.Popen([sys.executable, "-c", FLOOR_SERVER, str(tmp / "plain"), str(tmp / "gzip")],
                                 stdout=subprocess.PIPE, text=True)
        floor_url = f"http://127.0.0.1:{floor.stdout.readline().strip()}/metrics"
        print(f"{args.targets} targets x {args.series} series: {samples} samples, {len(plain) / 1e6:.1f} MB plain, "
              f"{len(packed) / 1e6:.1f} MB gzip; first poll round done in {first_round:.1f} s")
        rows = []
        cpu0, wall0 = process_cpu(daemon.pid), time.monotonic()
        for gz in (False, True):
            d_walls, d_cpu, d_size = measure(url, daemon.pid, gz, args.scrapes)
            f_walls, f_cpu, f_size = measure(floor_url, floor.pid, gz, args.scrapes)
            d_wall, f_wall = statistics.median(d_walls), statistics.median(f_walls)
            kind = "gzip " if gz else "plain"
            rows.append((kind, d_wall, f_wall))
            print(f"{kind}: daemon {d_wall:.3f} s/scrape median, slowest {max(d_walls):.3f} s ({d_cpu:.3f} CPU-s), "
                  f"floor {f_wall:.3f} s ({f_cpu:.3f} CPU-s), {d_size / 1e6:.1f} MB  ->  {d_wall / f_wall:.2f}x the floor")
        print(f"daemon {(process_cpu(daemon.pid) - cpu0) / (time.monotonic() - wall0):.2f} cores while scraped")
        rss, hwm = rss_mib(daemon.pid)
        print(f"daemon RSS {rss:.0f} MiB (peak {hwm:.0f} MiB)")
    finally:
        for proc in (floor, daemon):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
        log.close()


if __name__ == "__main__":
    main()
