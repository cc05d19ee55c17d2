"""Start-up cost of ``fabric-exporter run``'s import graph: wall time, peak RSS, module count.

Each sample is a fresh interpreter that does what ``fabric-exporter run --config X`` does before its
event loop starts: build the CLI parser, parse the arguments, import the daemon, validate a config
whose groups use ``--collectors`` (which imports those collectors) and make its transports. Baseline (same run, same machine): a bare ``python -c pass`` — the physical floor
of any Python daemon. Results are ratios against it, medians of ``--repeat`` runs.

    PYTHONPATH=exporter python bench/bench_startup.py [--repeat 15] [--importtime 15]

``--importtime N`` also prints the N slowest modules (cumulative) of one ``-X importtime`` run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

DAEMON_PATH = r"""
import json, sys
from fabric_exporter.cli import build_parser
args = build_parser().parse_args(["run", "--config", "/nonexistent.yaml"])
from fabric_exporter.daemon import Daemon
from fabric_exporter.collectors import registry
from fabric_exporter.config.loader import parse_config
collectors = sys.argv[1].split(",")
transport = {"snmp_switch": "snmp", "latency_probe": "ssh"}
creds = {"ssh": {"type": "ssh", "username": "u", "private_key_file": "/dev/null"},
         "snmp": {"type": "snmp", "version": "2c", "community": "public"}}
cfg = parse_config({"credentials": creds, "targets": [
    {"name": c, "fabric": "f", "collector": c, "transport": transport.get(c, "local"), "interval": "30s",
     **({"credentials": transport[c]} if c in transport else {}),
     "hosts": [{"name": "h1", "address": "127.0.0.1"}]} for c in collectors]}, options_parsers=registry())
from fabric_exporter.transport.factory import Transports
transports = Transports()
getattr(transports, "prepare", lambda config: None)(cfg)  # what Scheduler.apply() loads for the config
rss = hwm = 0
for line in open("/proc/self/status"):
    if line.startswith("VmRSS:"):
        rss = int(line.split()[1])
    elif line.startswith("VmHWM:"):
        hwm = int(line.split()[1])
tooling = sorted(m for m in sys.modules if m.split(".")[:2] in (["fabric_exporter", "lab"], ["fabric_exporter", "mixin"])
                 or m in ("fabric_exporter.deploy_k8s", "grafanalib"))
print(json.dumps({"rss_kib": rss, "hwm_kib": hwm, "modules": len(sys.modules),
                  "fabric_modules": sum(m.startswith("fabric_exporter") for m in sys.modules), "tooling": tooling}))
"""

FLOOR = "import json; rss=[l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]; " \
        "import sys; print(json.dumps({'hwm_kib': int(rss), 'modules': len(sys.modules)}))"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(code: str, *argv: str) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds, what the child printed). CPU time is what to compare on a shared
    machine: other processes stretch the wall time, not the CPU the start-up itself needs."""
    started, cpu = time.perf_counter(), _children_cpu()
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return time.perf_counter() - started, _children_cpu() - cpu, json.loads(out.stdout)


def _importtime(n: int, collectors: str) -> list[tuple[int, str]]:
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", DAEMON_PATH, collectors], capture_output=True, text=True,
                         check=True)
    rows = []
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:"):].split("|")
        if name[1:2] != " ":  # top-level imports only (nested ones are indented)
            rows.append((int(cumulative), name.strip()))
    return sorted(rows, reverse=True)[:n]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--importtime", type=int, default=15, metavar="N")
    p.add_argument("--collectors", default="infiniband,roce_nic",
                   help="the collectors the loaded config uses (comma-separated; default: a GPU-host daemon)")
    args = p.parse_args()
    _run(DAEMON_PATH, args.collectors)  # warm the page cache and bytecode
    floor, daemon = [], []
    for _ in range(args.repeat):  # interleaved, so both see the same load from other processes
        floor.append(_run(FLOOR))
        daemon.append(_run(DAEMON_PATH, args.collectors))
    f_wall, f_cpu = (statistics.median(r[i] for r in floor) for i in (0, 1))
    d_wall, d_cpu = (statistics.median(r[i] for r in daemon) for i in (0, 1))
    f_hwm = statistics.median(r[2]["hwm_kib"] for r in floor)
    d_hwm = statistics.median(r[2]["hwm_kib"] for r in daemon)
    d = daemon[-1][2]
    print(f"baseline: bare interpreter       CPU {f_cpu * 1000:7.1f} ms  wall {f_wall * 1000:7.1f} ms  "
          f"peak RSS {f_hwm / 1024:6.1f} MiB")
    print(f"config with: {args.collectors}")
    print(f"fabric-exporter run import path  CPU {d_cpu * 1000:7.1f} ms  wall {d_wall * 1000:7.1f} ms  "
          f"peak RSS {d_hwm / 1024:6.1f} MiB  modules {d['modules']} (fabric_exporter {d['fabric_modules']})")
    print(f"ratio vs baseline: CPU x{d_cpu / f_cpu:.1f} (+{1000 * (d_cpu - f_cpu):.0f} ms), "
          f"wall x{d_wall / f_wall:.1f}, peak RSS x{d_hwm / f_hwm:.1f} (+{(d_hwm - f_hwm) / 1024:.1f} MiB)")
    print(f"tooling modules imported by the daemon path: {len(d['tooling'])} {d['tooling'][:8]}")
    if args.importtime:
        print("slowest top-level imports (cumulative us, one -X importtime run):")
        for us, name in _importtime(args.importtime, args.collectors):
            print(f"  {us:9d}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
