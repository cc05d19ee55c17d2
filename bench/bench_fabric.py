"""The whole fabric at once: the real daemon with the real collectors against simulated sources.

    PYTHONPATH=exporter python bench/bench_fabric.py [--hosts 1000] [--switches 50] [--rounds 2]

Sources, all on 127.0.0.1: ``--hosts`` GPU hosts with 8 RoCE NICs each, served over SSH by the lab's
in-process host server (``fabric_exporter.lab.roce_host``, one port per host); the 40-switch /
320-HCA InfiniBand fat tree on ibsim + opensm, swept with the real infiniband-diags; ``--switches``
switches with 64 ports served by one snmpsim process: by default the ``ieee`` model (IF-MIB +
IEEE8021-PFC-MIB, ~1,300 varbinds a switch); ``--snmp-model sonic`` adds the Cisco PFC and queue
MIBs (~6,300 varbinds a switch), more than one snmpsim process answers in a 30 s round on 2 cores.

1. Each collector alone in its own daemon (``--phase-interval``, default 30 s, for ``--rounds``
   rounds after a warm-up round): the daemon's CPU seconds per poll per target (= per poll round
   per target), and the CPU of the tools it ran (ibqueryerrors, ibnetdiscover) apart.
2. All of them in one daemon at a 30 s interval (``--interval``) for ``--rounds`` rounds: the
   daemon's total CPU (cores busy on average) and its RSS.

The lab servers' own CPU (sshd stand-in, snmpsim, ibsim) is not the daemon's and is not counted.
Figures only, no pass/fail: absolute numbers depend on the machine (printed at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

from fabric_exporter.lab.ibsim import FatTree, IbsimFabric
from fabric_exporter.lab.ports import free_tcp_port
from fabric_exporter.lab.snmp import SimulatedSwitch, SnmpSim
from fabric_exporter.lab.ssh_hosts import known_hosts_lines, write_key_files

from cputime import children_cpu_of, process_cpu, rss_mib

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


class Labs:
    def __init__(self, tmp: Path, hosts: int, switches: int, snmp_model: str):
        self.tmp = tmp
        host_key, client_key, authorized = write_key_files(tmp)
        ports_file = tmp / "ports.json"
        self.ssh = subprocess.Popen(
            [sys.executable, "-m", "fabric_exporter.lab.roce_host", "--hosts", str(hosts), "--nics", "8",
             "--host-key", str(host_key), "--authorized-keys", str(authorized),
             "--ports-file", str(ports_file)],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, stdin=subprocess.DEVNULL)
        self.ib = IbsimFabric(FatTree(spines=8, leaves=32, hcas_per_leaf=10), tmp / "ib", sockname=f"bf{os.getpid()}")
        self.ib.start(timeout=120)
        names = [f"sw{i:03d}" for i in range(switches)]
        self.snmp_modules = {"ieee": ["if_mib", "ieee8021_pfc"], "sonic": ["if_mib", "cisco_pfc", "cisco_qos"]}[snmp_model]
        self.snmp = SnmpSim([SimulatedSwitch(n, snmp_model, ports=64, seed=i + 1) for i, n in enumerate(names)],
                            workdir=tmp / "snmp").start(timeout=120 + switches)
        self.switch_names = names
        deadline = time.monotonic() + 120
        while not ports_file.exists():
            if self.ssh.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("lab SSH server did not start")
            time.sleep(0.2)
        time.sleep(0.5)  # the file is written whole once every host listens
        self.ports = json.loads(ports_file.read_text())
        self.known_hosts = tmp / "known_hosts"
        self.known_hosts.write_text(known_hosts_lines(host_key, self.ports.values()))
        self.client_key = client_key

    def groups(self, interval: str, timeout: str) -> dict[str, tuple[dict, list[dict]]]:
        """collector -> (credentials, target groups)."""
        ssh_creds = {"lab-ssh": {"type": "ssh", "username": "bench", "private_key_file": str(self.client_key),
                                 "known_hosts_file": str(self.known_hosts), "connect_timeout": "20s"}}
        nic = [{"name": "gpus", "fabric": "roce", "collector": "roce_nic", "transport": "ssh", "credentials": "lab-ssh",
                "interval": interval, "timeout": timeout,
                "hosts": [{"name": h, "address": "127.0.0.1", "port": p} for h, p in self.ports.items()]}]
        ib = [{"name": "ib", "fabric": "ib", "collector": "infiniband", "transport": "local",
               "interval": interval, "timeout": timeout, "options": {"env": self.ib.env()}}]
        snmp_creds, snmp = {}, []
        for name in self.switch_names:
            snmp_creds[f"snmp-{name}"] = {"type": "snmp", "version": "2c", "community": name}
            snmp.append({"name": f"sw-{name}", "fabric": "roce", "collector": "snmp_switch", "transport": "snmp",
                         "credentials": f"snmp-{name}", "interval": interval, "timeout": timeout,
                         "hosts": [{"name": name, "address": "127.0.0.1", "port": self.snmp.port}],
                         "options": {"modules": self.snmp_modules}})
        return {"roce_nic": (ssh_creds, nic), "infiniband": ({}, ib), "snmp_switch": (snmp_creds, snmp)}

    def stop(self) -> None:
        for stop in (self.snmp.stop, self.ib.stop):
            try:
                stop()
            except Exception as e:  # noqa: BLE001 - best effort cleanup
                print(f"cleanup: {e}", file=sys.stderr)
        if self.ssh.poll() is None:
            self.ssh.terminate()
            try:
                self.ssh.wait(10)
            except subprocess.TimeoutExpired:
                self.ssh.kill()


class Daemon:
    def __init__(self, tmp: Path, name: str, creds: dict, targets: list[dict]):
        config = tmp / f"{name}.yaml"
        config.write_text(yaml.safe_dump({
            "limits": {"max_concurrent_polls": 128, "per_transport": {"ssh": 64, "snmp": 32, "local": 8}},
            "credentials": creds, "targets": targets}))
        self.port = free_tcp_port()
        self.log = open(tmp / f"{name}.log", "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "fabric_exporter", "run", "--config", str(config),
                                      "--web.listen-address", f"127.0.0.1:{self.port}", "--log.level", "error"],
                                     env={**os.environ, "PYTHONPATH": str(ROOT / "exporter")},
                                     cwd=tmp,  # libumad2sim writes ./sys-<pid> for each IB tool run: not in the checkout
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=60) as r:
            return r.read().decode()

    def polls(self) -> tuple[dict[str, float], dict[str, float]]:
        """(polls, failed polls) per collector, from the self-metrics."""
        polls, failed, _reasons = self.poll_counts()
        return polls, failed

    def poll_counts(self) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
        """(polls, failed polls) per collector and failures by "collector/reason"."""
        text = self.metrics()
        polls: dict[str, float] = {}
        failed: dict[str, float] = {}
        reasons: dict[str, float] = {}
        for m in re.finditer(r'^fabric_polls_total\{collector="([^"]+)".*\} (\S+)$', text, re.M):
            polls[m[1]] = polls.get(m[1], 0.0) + float(m[2])
        for m in re.finditer(r'^fabric_poll_errors_total\{collector="([^"]+)".*reason="(\w+)"\} (\S+)$', text, re.M):
            if m[2] != "partial" and float(m[3]):
                failed[m[1]] = failed.get(m[1], 0.0) + float(m[3])
                reasons[f"{m[1]}/{m[2]}"] = reasons.get(f"{m[1]}/{m[2]}", 0.0) + float(m[3])
        return polls, failed, reasons

    def wait_polls(self, collector: str, at_least: float, deadline: float) -> None:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise SystemExit(f"daemon exited: {Path(self.log.name).read_text()[-2000:]}")
            try:
                if self.polls()[0].get(collector, 0) >= at_least:
                    return
            except OSError:
                pass
            time.sleep(1)
        raise SystemExit(f"{collector}: fewer than {at_least} polls within {deadline}s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def count_targets(groups: list[dict]) -> int:
    return sum(len(g.get("hosts") or [None]) for g in groups)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--switches", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--phase-interval", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=30.0)
    ap.add_argument("--snmp-model", choices=("ieee", "sonic"), default="ieee")
    ap.add_argument("--skip-alone", action="store_true", help="only the all-at-once phase")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-fabric-"))
    t0 = time.monotonic()
    labs = Labs(tmp, args.hosts, args.switches, args.snmp_model)
    print(f"labs up in {time.monotonic() - t0:.0f} s: {args.hosts} SSH hosts x 8 NICs, IB 40 switches / 320 HCAs, "
          f"{args.switches} SNMP switches x 64 ports ({args.snmp_model} model)", flush=True)
    rows = []
    try:
        if not args.skip_alone:
            interval = f"{args.phase_interval:g}s"
            for collector, (creds, groups) in labs.groups(interval, f"{args.phase_interval * 0.9:g}s").items():
                n = count_targets(groups)
                d = Daemon(tmp, collector, creds, groups)
                try:
                    d.wait_polls(collector, n, 300)  # the warm-up round: connections, engines, topology
                    polls0, failed0 = d.polls()
                    cpu0, tools0 = process_cpu(d.proc.pid), children_cpu_of(d.proc.pid)
                    d.wait_polls(collector, polls0[collector] + n * args.rounds, 60 + 3 * args.rounds * args.phase_interval)
                    cpu1, tools1 = process_cpu(d.proc.pid), children_cpu_of(d.proc.pid)
                    polls1, failed1, reasons = d.poll_counts()
                    done = polls1[collector] - polls0[collector]
                    failed = failed1.get(collector, 0) - failed0.get(collector, 0)
                    ok = max(1.0, done - failed)
                    rss, _hwm = rss_mib(d.proc.pid)
                    rows.append((collector, n, done, failed, (cpu1 - cpu0) / done, (tools1 - tools0) / done, rss))
                    if failed > 0.05 * done:
                        print(f"WARNING: {failed:.0f} of {done:.0f} {collector} polls failed (since start, by reason: "
                              f"{json.dumps(reasons)}): the sources cannot keep up at this interval on this machine; "
                              f"per successful poll it is at most {(cpu1 - cpu0) / ok * 1e3:.2f} ms")
                    print(f"{collector:12s} alone: {n:5d} targets, {done:.0f} polls ({failed:.0f} failed): "
                          f"daemon {(cpu1 - cpu0) / done * 1e3:8.2f} ms CPU per poll per target, "
                          f"tools {(tools1 - tools0) / done * 1e3:7.2f} ms; RSS {rss:.0f} MiB", flush=True)
                finally:
                    d.stop()
        creds, targets = {}, []
        for c, g in labs.groups(f"{args.interval:g}s", f"{args.interval * 0.9:g}s").values():
            creds.update(c)
            targets += g
        d = Daemon(tmp, "all", creds, targets)
        try:
            for collector, (_c, groups) in labs.groups("1s", "1s").items():
                d.wait_polls(collector, count_targets(groups), 300)
            cpu0, tools0, w0 = process_cpu(d.proc.pid), children_cpu_of(d.proc.pid), time.monotonic()
            time.sleep(args.interval * args.rounds)
            cpu1, tools1, w1 = process_cpu(d.proc.pid), children_cpu_of(d.proc.pid), time.monotonic()
            polls, failed, reasons = d.poll_counts()
            rss, hwm = rss_mib(d.proc.pid)
            samples = sum(1 for line in d.metrics().splitlines() if line and not line.startswith("#"))
        finally:
            d.stop()
    finally:
        labs.stop()
    wall = w1 - w0
    print(f"all at once, {args.interval:g} s interval, {wall:.0f} s: daemon {(cpu1 - cpu0) / wall:.3f} cores "
          f"(+ tools {(tools1 - tools0) / wall:.3f}), RSS {rss:.0f} MiB (peak {hwm:.0f} MiB), {samples} samples "
          f"served; polls since start {json.dumps(polls)}, failed by reason {json.dumps(reasons)}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores ({_cpu_model()}), Python {platform.python_version()}, "
          f"load average before the end {os.getloadavg()[0]:.1f}")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    main()
