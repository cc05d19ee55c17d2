"""Benchmark: the roce_nic collector polling many simulated 8-NIC GPU hosts over SSH.

    PYTHONPATH=exporter python bench/bench_roce_nic.py [--hosts 200] [--rounds 3]

A separate process (``python -m fabric_exporter.lab.roce_host``) serves every simulated host over
SSH (asyncssh, one port per host, 127.0.0.1, host key verified by the client as in production) and
answers the collector's command with that host's dump (``RoceHost.render_dump``). This process runs
the exporter's real path: config -> scheduler -> pooled SSH transport -> parsers -> mapping ->
snapshot store (rendered exposition).

Reported, in the same run and on the same connections:
- connection setup (first poll per host: TCP + SSH handshake + auth + one poll);
- bare SSH round trips (``true`` on the pooled connection): hosts/s and client CPU per round trip;
- full polls: hosts/s and client CPU seconds per host-poll, and the excess over a bare round trip;
- parse + map alone (no I/O) per host, on the same dump text;
- the server process's CPU, since both share this machine's cores;
- with ``--split``: a full poll's client CPU by step (split, parse, map, render, store, and the
  rest: SSH, asyncio, scheduler), each step timed in its thread's CPU time.

``--moving SHARE``: only that share of each host's counters move between polls (the lab model moves
them all; a real host's errors, CNPs and idle priorities stand still): the server answers every
other counter with its value in the host's first answer (picked by a stable hash of host, section
and name, as bench_cluster's ``--moving`` picks them in its recordings).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


from fabric_exporter.collectors.roce_nic import RoceNicOptions, result_from_dump
from fabric_exporter.collectors import PollContext, registry
from fabric_exporter.config.loader import parse_config
from fabric_exporter.lab.roce_host import RoceHost
from fabric_exporter.lab.ssh_hosts import known_hosts_lines, write_key_files
from fabric_exporter.parsers.rdma import parse_host_dump
from fabric_exporter.scheduler import Scheduler
from fabric_exporter.serving.store import SnapshotStore, build_snapshot
from fabric_exporter.transport.factory import Transports

from cputime import process_cpu as cpu_of, self_cpu as cpu_self  # noqa: E402
from nic_moving import hold_still  # noqa: E402


def start_server(tmp: Path, hosts: int, nics: int, moving: float = 1.0
                 ) -> tuple[subprocess.Popen, dict[str, int], Path, Path]:
    host_key, client_key, authorized = write_key_files(tmp)
    ports_file = tmp / "ports.json"
    server = ["-m", "fabric_exporter.lab.roce_host"] if moving >= 1.0 else [__file__, "--lab-server", str(moving)]
    proc = subprocess.Popen(
        [sys.executable, *server, "--hosts", str(hosts), "--nics", str(nics),
         "--host-key", str(host_key), "--authorized-keys", str(authorized),
         "--ports-file", str(ports_file)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not ports_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("lab SSH server did not start")
        time.sleep(0.1)
    ports = json.loads(ports_file.read_text())
    known_hosts = tmp / "known_hosts"
    known_hosts.write_text(known_hosts_lines(host_key, ports.values()))
    return proc, ports, client_key, known_hosts


async def bench(args, ports, client_key, known_hosts, server_pid) -> dict:
    raw = {
        "limits": {"max_concurrent_polls": args.concurrency, "per_transport": {"ssh": args.concurrency}},
        "credentials": {"lab": {"type": "ssh", "username": "bench", "private_key_file": str(client_key),
                                "known_hosts_file": str(known_hosts), "connect_timeout": "20s",
                                "max_sessions": 2}},
        "targets": [{"name": "gpu", "fabric": "bench", "collector": "roce_nic", "transport": "ssh",
                     "credentials": "lab", "interval": "60s", "timeout": "50s",
                     "hosts": [{"name": name, "address": "127.0.0.1", "port": port} for name, port in ports.items()]}],
    }
    cfg = parse_config(raw, options_parsers=registry())
    group = cfg.targets[0]
    transports = Transports()
    store = SnapshotStore()
    sched = Scheduler(transports, store)
    sched.apply(cfg, start_tasks=False)
    n = len(group.hosts)
    out: dict = {"hosts": n, "nics_per_host": args.nics, "concurrency": args.concurrency, "moving": args.moving}

    def measure(label, started_wall, started_cpu, started_server, count):
        wall = time.perf_counter() - started_wall
        cpu = cpu_self() - started_cpu
        server = cpu_of(server_pid) - started_server
        out[label] = {"wall_s": round(wall, 3), "per_second": round(count / wall, 1),
                      "client_cpu_ms_each": round(cpu / count * 1e3, 3),
                      "server_cpu_ms_each": round(server / count * 1e3, 3)}

    # One collector per host for the whole run, as the daemon's poll loop keeps it: a collector's
    # memos (the ports' kept label sets) last from poll to poll. (poll_all_once makes new ones each
    # call: with it, the rounds measured every poll as a collector's first.)
    collectors = {key: cls(PollContext(g, host, transports)) for key, (g, host, cls) in sched.targets(cfg).items()}

    async def poll_round():
        return await asyncio.gather(*(sched.poll(key, collector) for key, collector in collectors.items()))

    try:
        # 1. first poll: connection setup + one poll per host
        t, c, s = time.perf_counter(), cpu_self(), cpu_of(server_pid)
        states = await poll_round()
        measure("first_poll_with_connect", t, c, s, n)
        bad = [st for st in states if st.state != "ok"]
        if bad:
            raise SystemExit(f"{len(bad)} hosts failed: {bad[0].host}: {bad[0].last_error}")
        out["samples_per_host"] = states[0].samples

        # 2. bare round trips on the same pooled connections
        sem = asyncio.Semaphore(args.concurrency)

        async def bare(host):
            async with sem:
                r = await transports.runner(group, host).run(["true"], timeout=20)
                assert r.exit_status == 0

        t, c, s = time.perf_counter(), cpu_self(), cpu_of(server_pid)
        for _ in range(args.rounds):
            await asyncio.gather(*(bare(h) for h in group.hosts))
        measure("bare_ssh_round_trip", t, c, s, n * args.rounds)

        # 3. full polls
        timers = CpuTimers() if args.split else None
        t, c, s = time.perf_counter(), cpu_self(), cpu_of(server_pid)
        for _ in range(args.rounds):
            states = await poll_round()
            assert all(st.state == "ok" for st in states), [st.last_error for st in states if st.state != "ok"][:3]
        measure("full_poll", t, c, s, n * args.rounds)
        if timers:
            timers.restore()
            out["full_poll_split_ms"] = timers.split(out["full_poll"]["client_cpu_ms_each"], n * args.rounds)
        out["exposition_bytes"] = len(store.render())
    finally:
        await asyncio.gather(*(c.close() for c in collectors.values()), return_exceptions=True)
        await transports.close()

    # 4. parse + map + render alone, on one host's dump (no I/O)
    host = RoceHost.build("gpu-x", nics=args.nics)
    host.advance(60)
    text = host.render_dump()
    reps = 200
    c = cpu_self()
    for _ in range(reps):
        result = result_from_dump(parse_host_dump(text), "gpu-x", RoceNicOptions())
        build_snapshot("bench", result.samples, 60)
    out["parse_map_render_only"] = {"client_cpu_ms_each": round((cpu_self() - c) / reps * 1e3, 3),
                                    "dump_bytes": len(text)}
    full, bare_rt = out["full_poll"], out["bare_ssh_round_trip"]
    out["poll_minus_bare_client_cpu_ms"] = round(full["client_cpu_ms_each"] - bare_rt["client_cpu_ms_each"], 3)
    return out


class CpuTimers:
    """The CPU time spent in each synchronous step of a host poll, timed by wrapping the step where
    its caller looks it up (two clock reads a call, not a profiler's per call), on the clock of the
    thread that runs it: the split, parse and map run in parse_off_loop's worker threads while the
    loop's thread goes on with other hosts' polls, so the process's clock would count that work in
    the step too. The rest of a poll's client CPU is the SSH command (asyncssh, the transport),
    asyncio and the scheduler: awaiting code cannot be timed this way, as other tasks run while it
    waits."""

    def __init__(self):
        from fabric_exporter import scheduler
        from fabric_exporter.collectors.roce_nic import collector, ports

        self.spent: dict[str, float] = {}
        self._lock = threading.Lock()
        self._undo = []
        for label, owner, name in (("split the dump (parsers/rdma parse_host_dump)", collector, "parse_host_dump"),
                                   ("parse the tables, build the ports (ports._ports)", ports, "_ports"),
                                   ("map to samples, label sets (ports._samples)", ports, "_samples"),
                                   ("render the snapshot (serving build_snapshot)", scheduler, "build_snapshot"),
                                   ("store it (SnapshotStore.put: gzip pieces)", SnapshotStore, "put")):
            self._wrap(label, owner, name)

    def _wrap(self, label: str, owner, name: str) -> None:
        step = getattr(owner, name)
        self.spent[label] = 0.0
        clock = time.thread_time
        lock = self._lock

        def timed(*args, **kwargs):
            t0 = clock()
            try:
                return step(*args, **kwargs)
            finally:
                spent = clock() - t0
                with lock:  # steps of several hosts end in several threads
                    self.spent[label] += spent

        setattr(owner, name, timed)
        self._undo.append((owner, name, step))

    def restore(self) -> None:
        for owner, name, step in self._undo:
            setattr(owner, name, step)

    def split(self, total_ms: float, polls: int) -> dict[str, float]:
        """ms per host poll of each step, and the rest of ``total_ms``."""
        out = {label: round(sec / polls * 1e3, 3) for label, sec in self.spent.items()}
        out["the rest: SSH command, asyncssh, asyncio, scheduler"] = round(total_ms - sum(out.values()), 3)
        return out


def lab_server(moving: float, argv: list[str]) -> None:
    """The lab's SSH hosts (``python -m fabric_exporter.lab.roce_host ARGV``) with only ``moving`` of
    each host's counters moving (``hold_still`` on every dump they answer)."""
    from fabric_exporter.lab import roce_host

    answer = roce_host.answer
    first: dict[str, dict] = {}

    def held_still(host, command: str) -> tuple[int, str, str]:
        status, out, err = answer(host, command)
        if out.startswith("@@fabric-roce"):
            out = hold_still(host.name, out, first.setdefault(host.name, {}), moving)
        return status, out, err

    roce_host.answer = held_still  # looked up by roce_host.serve at each command
    roce_host._main(argv)


def main() -> None:
    if sys.argv[1:2] == ["--lab-server"]:
        lab_server(float(sys.argv[2]), sys.argv[3:])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--nics", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--moving", type=float, default=1.0,
                    help="share of each host's counters that move between polls (the others keep their first value)")
    ap.add_argument("--split", action="store_true",
                    help="time each step of the full polls (split, parse, map, render, store) in CPU")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, ports, client_key, known_hosts = start_server(Path(tmp), args.hosts, args.nics, args.moving)
        try:
            out = asyncio.run(bench(args, ports, client_key, known_hosts, proc.pid))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
    print(json.dumps(out, indent=2))
    f, b = out["full_poll"], out["bare_ssh_round_trip"]
    print(f"\n{args.hosts} hosts x {args.nics} NICs, {args.rounds} rounds, concurrency {args.concurrency}, "
          f"moving {args.moving}:")
    print(f"  full poll : {f['per_second']:8.1f} hosts/s   client CPU {f['client_cpu_ms_each'] / 1e3:.5f} s/host-poll "
          f"(server {f['server_cpu_ms_each'] / 1e3:.5f} s)")
    print(f"  bare SSH  : {b['per_second']:8.1f} trips/s   client CPU {b['client_cpu_ms_each'] / 1e3:.5f} s/round trip "
          f"(server {b['server_cpu_ms_each'] / 1e3:.5f} s)")
    print(f"  a poll costs {f['client_cpu_ms_each'] / b['client_cpu_ms_each']:.1f}x a bare round trip's client CPU")
    for label, ms in out.get("full_poll_split_ms", {}).items():
        print(f"    {label:52s} {ms:7.3f} ms")
    print(f"  parse+map+render alone: {out['parse_map_render_only']['client_cpu_ms_each']:.2f} ms/host "
          f"({out['parse_map_render_only']['dump_bytes']} bytes, {out['samples_per_host']} samples)")


if __name__ == "__main__":
    main()
