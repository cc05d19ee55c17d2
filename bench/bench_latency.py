"""How many latency probes per second the orchestrator sustains, against the fake perftest over real sshd.

    PYTHONPATH=exporter:. python bench/bench_latency.py --hosts 200 --rounds 3

200 emulated hosts (racks of --rack-size) on loopback addresses behind a few real sshd processes
(tests/harness/latency_sshd.py), each probe = the fake perftest server + client over SSH (two SSH
commands, two Python processes, a TCP exchange), plus --probe-seconds of emulated measurement
(a real 10000-iteration ib_write_lat at ~2 µs takes ~40 ms plus QP setup).

Prints one JSON line per round and a summary: probes/s, the collector process's CPU per probe, and
the peak concurrency the fakes saw. The whole machine's CPU is shared with the sshd and the fakes,
so this is the rate of the whole emulated system; the exporter's own share is the CPU figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "exporter"), str(ROOT)]

from fabric_exporter.collectors import PollContext  # noqa: E402
from fabric_exporter.collectors.latency_probe import LatencyProbeCollector  # noqa: E402
from fabric_exporter.collectors import registry  # noqa: E402
from fabric_exporter.config.loader import parse_config  # noqa: E402
from fabric_exporter.transport.factory import Transports  # noqa: E402
from tests.harness.latency_sshd import LatencyLab  # noqa: E402


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def machine_busy_seconds() -> float:
    """CPU-seconds the whole machine spent busy so far (all processes: sshd, fakes, us, others)."""
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def peak_concurrency(events: list[dict]) -> int:
    points = []
    for e in events:
        if e["event"] == "server_start":
            points.append((e["t"], 1))
        elif e["event"] == "server_end":
            points.append((e["t"], -1))
    cur = peak = 0
    for _, d in sorted(points):
        cur += d
        peak = max(peak, cur)
    return peak


async def run(args, lab) -> dict:
    racks = {f"rack-{i:02d}": lab.host_names[i * args.rack_size:(i + 1) * args.rack_size]
             for i in range(-(-len(lab.host_names) // args.rack_size))}
    cfg = parse_config({
        "credentials": {"lab": lab.credential(max_sessions=4)},
        "targets": [{"name": "bench", "fabric": "ib0", "collector": "latency_probe", "transport": "ssh",
                     "credentials": "lab", "hosts": lab.hosts(), "interval": "10m", "timeout": f"{args.round_timeout}s",
                     "options": {"host_groups": racks, "probe_timeout": "10s", "server_start_wait": "150ms",
                                 "plan": {"full_mesh": True, "sampled_peers": args.sampled_peers},
                                 "budget": {"max_probes_per_round": args.budget,
                                            "max_concurrent_probes": args.concurrency,
                                            "max_probes_per_host": 1}}}]}, options_parsers=registry())
    group = cfg.targets[0]
    transports = Transports()
    col = LatencyProbeCollector(PollContext(group, None, transports))
    rounds = []
    try:
        for n in range(args.rounds):
            lab.clear_events()
            cpu0, busy0, t0 = cpu_seconds(), machine_busy_seconds(), time.monotonic()
            result = await col.poll()
            wall, cpu = time.monotonic() - t0, cpu_seconds() - cpu0
            busy = machine_busy_seconds() - busy0
            ok = next(s.value for s in result.samples
                      if s.name == "fabric_rdma_latency_round_probes" and s.labels["outcome"] == "ok")
            failed = next(s.value for s in result.samples
                          if s.name == "fabric_rdma_latency_round_probes" and s.labels["outcome"] == "failed")
            row = {"round": n, "probes_ok": int(ok), "probes_failed": int(failed), "wall_s": round(wall, 2),
                   "probes_per_s": round(ok / wall, 1), "collector_cpu_ms_per_probe": round(1000 * cpu / max(ok, 1), 2),
                   "machine_cpu_ms_per_probe": round(1000 * busy / max(ok, 1), 1),
                   "machine_busy_cores": round(busy / wall, 2),
                   "peak_concurrent_servers": peak_concurrency(lab.events()) if lab.events() else None, "samples": len(result.samples),
                   "problems": result.problems[:3]}
            print(json.dumps(row), flush=True)
            rounds.append(row)
    finally:
        await col.close()
        await transports.close()
    steady = rounds[1:] or rounds  # round 0 also opens every SSH connection
    probes = sum(r["probes_ok"] for r in steady)
    wall = sum(r["wall_s"] for r in steady)
    return {"hosts": len(lab.host_names), "plan_pairs": len(col.plan.pairs), "cover_rounds": col.plan.cover_rounds,
            "concurrency": args.concurrency, "budget": args.budget, "probe_seconds": args.probe_seconds,
            "steady_probes_per_s": round(probes / wall, 1) if wall else None,
            "first_round_s": rounds[0]["wall_s"], "cores": os.cpu_count()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--rack-size", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=300, help="max probes per round")
    ap.add_argument("--concurrency", type=int, default=32, help="max concurrent probes")
    ap.add_argument("--sampled-peers", type=int, default=1)
    ap.add_argument("--probe-seconds", type=float, default=0.04, help="emulated measurement time per probe")
    ap.add_argument("--round-timeout", type=float, default=120.0)
    ap.add_argument("--mode", choices=("processes", "in-process"), default="processes",
                    help="processes: fake perftest programs behind real sshd (default); in-process: "
                         "lab.ssh_hosts.SimulatedHosts + lab.perftest.SimulatedPerftest in this process "
                         "(no process per probe: the orchestrator's and SSH's own cost)")
    args = ap.parse_args()
    names = [f"gpu-{i:03d}" for i in range(args.hosts)]
    fixture = {"default": {"typical": 2.0, "seconds": args.probe_seconds}}
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        if args.mode == "processes":
            with LatencyLab(tmp, names, fixture) as lab:
                summary = asyncio.run(run(args, lab))
        else:
            summary = asyncio.run(run_in_process(args, tmp, names, fixture))
    print(json.dumps({"summary": {"mode": args.mode, **summary}}))


class _InProcessLab:
    """The SimulatedHosts lab in the same shape as LatencyLab, for run()."""

    def __init__(self, hosts, names):
        self.sim_hosts, self.host_names = hosts, names

    def hosts(self):
        return [{"name": n, "address": "127.0.0.1", "port": self.sim_hosts.ports[n]} for n in self.host_names]

    def credential(self, **overrides):
        return {"type": "ssh", "username": "lab", "private_key_file": str(self.sim_hosts.client_key),
                "known_hosts_file": str(self.sim_hosts.known_hosts), **overrides}

    def clear_events(self):
        pass

    def events(self):
        return []


async def run_in_process(args, tmp, names, fixture) -> dict:
    from fabric_exporter.lab.perftest import SimulatedPerftest
    from fabric_exporter.lab.ssh_hosts import SimulatedHosts

    sim = SimulatedPerftest(fixture, server_wait=15)
    hosts = SimulatedHosts(tmp, sim.answer)
    await hosts.start(names)
    try:
        return await run(args, _InProcessLab(hosts, names))
    finally:
        await hosts.stop()


if __name__ == "__main__":
    main()
