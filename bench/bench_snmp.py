"""SNMP polling cost: fabric-exporter's snmp_switch vs prometheus/snmp_exporter vs net-snmp snmpbulkwalk.

N simulated 64-port switches (IF-MIB + IEEE8021-PFC-MIB data) are served by ONE snmpsim process on
127.0.0.1 (one community per switch). The same if_mib walks -- 14 IF-MIB counter/state columns plus
ifName and ifAlias, GETBULK max-repetitions 25 -- are done by:

* fabric-exporter: the snmp_switch collector (modules [if_mib]) through the real Scheduler, all
  switches concurrently under the default limits, collectors kept across rounds as in the daemon
  (so ifName/ifAlias come from its cache: 14 columns per round, where the others walk 16);
* snmp_exporter (Debian's prometheus-snmp-exporter): one /snmp scrape per switch, 64 at a time;
  the Debian package ships no generated snmp.yml (MIB licensing), so this script writes the module
  the generator would produce for these columns (numeric OIDs, ifName/ifAlias lookups);
* snmpbulkwalk: one process per switch and column group (ifTable columns, ifXTable columns),
  16 at a time.

Reported per tool: varbinds, wall seconds, varbinds per second, CPU seconds per 10k varbinds (the
tool's own process(es) only: this process for fabric-exporter, the snmp_exporter daemon's
/proc/<pid>/stat, children rusage for snmpbulkwalk) and ratios against fabric-exporter.
snmpsim (pure Python) answers every request and is usually the throughput bound on a small
machine: varbinds/s say more about the agent than the poller; CPU per varbind is the poller's.

    PYTHONPATH=exporter python bench/bench_snmp.py                 # N = 10, 50, 200
    PYTHONPATH=exporter python bench/bench_snmp.py --switches 10 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "exporter"))

from fabric_exporter.collectors import PollContext  # noqa: E402
from fabric_exporter.collectors.snmp_modules import IF_ALIAS, IF_MIB, IF_NAME  # noqa: E402
from fabric_exporter.config import parse_config  # noqa: E402
from fabric_exporter.lab.snmp import SimulatedSwitch, SnmpSim  # noqa: E402
from fabric_exporter.scheduler import Scheduler  # noqa: E402
from fabric_exporter.store import SnapshotStore  # noqa: E402
from fabric_exporter.transport.factory import Transports  # noqa: E402
from fabric_exporter.transport.snmp import format_oid  # noqa: E402

from cputime import process_cpu as proc_cpu  # noqa: E402

MAX_REPETITIONS = 25
COLUMNS = [c.oid for t in IF_MIB.tables for c in t.columns] + [IF_NAME, IF_ALIAS]
IFTABLE_COLS = [c for c in COLUMNS if c[:9] == (1, 3, 6, 1, 2, 1, 2, 2, 1)]
IFXTABLE_COLS = [c for c in COLUMNS if c not in IFTABLE_COLS]


def switch_names(n: int) -> list[str]:
    return [f"sw{i:04d}" for i in range(n)]


# -- fabric-exporter ----------------------------------------------------------------------------

async def run_fabric_exporter(port: int, names: list[str], rounds: int, workdir: Path) -> dict:
    secrets = workdir / "communities"
    secrets.mkdir(exist_ok=True)
    creds, targets = {}, []
    for name in names:
        (secrets / name).write_text(name)
        creds[name] = {"type": "snmp", "version": "2c", "community_file": str(secrets / name)}
        targets.append({"name": name, "fabric": "bench", "collector": "snmp_switch", "transport": "snmp",
                        "credentials": name, "hosts": [{"name": name, "address": "127.0.0.1", "port": port}],
                        "interval": "10m", "timeout": "9m",  # deadline includes queueing for a slot
                        "options": {"modules": ["if_mib"], "max_repetitions": MAX_REPETITIONS,
                                    "snmp_timeout": "5s", "snmp_retries": 2, "max_concurrent_walks": 2}})
    # 32 switches at a time x 2 walks each = 64 requests in flight, as snmp_exporter's 64 scrapes
    # (each walks one OID at a time): one snmpsim process serves them all and must not be flooded.
    cfg = parse_config({"credentials": creds, "targets": targets, "limits": {"per_transport": {"snmp": 32}}},
                       base_dir=workdir)
    transports = Transports()
    sched = Scheduler(transports, SnapshotStore())
    sched.apply(cfg, start_tasks=False)
    totals = {"varbinds": 0, "wall": 0.0, "cpu": 0.0, "failed": 0}
    # Collectors live across rounds as in the daemon; round 0 (engine start, first ifName/ifAlias
    # walk, page sizing) is not counted.
    collectors = {key: cls(PollContext(g, h, transports)) for key, (g, h, cls) in sched.targets(cfg).items()}
    try:
        for round_no in range(rounds + 1):
            if round_no == 1:
                totals = {"varbinds": 0, "wall": 0.0, "cpu": 0.0, "failed": 0}
            cpu0, wall0 = time.process_time(), time.perf_counter()
            states = await asyncio.gather(*(sched.poll(k, c) for k, c in collectors.items()))
            totals["wall"] += time.perf_counter() - wall0
            totals["cpu"] += time.process_time() - cpu0
            totals["varbinds"] += sum(c.last_varbinds for c in collectors.values())
            totals["failed"] += sum(1 for s in states if s.state != "ok")
            for s in states:
                if s.state != "ok":
                    print(f"  fabric-exporter {s.key}: {s.state} {s.last_error}", file=sys.stderr)
    finally:
        await transports.close()
    return totals


# -- snmp_exporter ------------------------------------------------------------------------------

def snmp_exporter_config(names: list[str]) -> str:
    """The module prometheus-snmp-generator would write for these columns, once per community."""
    lookups = [{"labels": ["ifIndex"], "labelname": "ifName", "oid": format_oid(IF_NAME), "type": "DisplayString"},
               {"labels": ["ifIndex"], "labelname": "ifAlias", "oid": format_oid(IF_ALIAS), "type": "DisplayString"}]
    metrics = []
    for table in IF_MIB.tables:
        for col in table.columns:
            metrics.append({"name": col.object, "oid": format_oid(col.oid),
                            "type": "gauge" if col.object in ("ifOperStatus", "ifHighSpeed") else "counter",
                            "help": col.object, "indexes": [{"labelname": "ifIndex", "type": "gauge"}],
                            "lookups": lookups})
    walk = [format_oid(c) for c in COLUMNS]
    modules = {name: {"walk": walk, "metrics": metrics, "version": 2, "max_repetitions": MAX_REPETITIONS,
                      "retries": 2, "timeout": "5s", "auth": {"community": name}} for name in names}
    return json.dumps(modules)  # JSON is YAML


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def run_snmp_exporter(port: int, names: list[str], rounds: int, workdir: Path) -> dict | None:
    exe = shutil.which("prometheus-snmp-exporter")
    if not exe:
        return None
    conf = workdir / "snmp.yml"
    conf.write_text(snmp_exporter_config(names))
    http_port = free_tcp_port()
    proc = subprocess.Popen([exe, f"--config.file={conf}", f"--web.listen-address=127.0.0.1:{http_port}",
                             "--log.level=warn"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{http_port}/", timeout=1).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"snmp_exporter did not start: {proc.stderr.read().decode()[-1000:]}")
                time.sleep(0.1)
        sem = asyncio.Semaphore(64)
        pdus_re = re.compile(rb"^snmp_scrape_pdus_returned (\S+)$", re.M)
        totals = {"varbinds": 0, "wall": 0.0, "cpu": 0.0, "failed": 0}

        def scrape(name: str) -> bytes:
            url = f"http://127.0.0.1:{http_port}/snmp?target=127.0.0.1:{port}&module={name}"
            return urllib.request.urlopen(url, timeout=60).read()

        async def one(name: str) -> int:
            async with sem:
                body = await asyncio.to_thread(scrape, name)
            m = pdus_re.search(body)
            if not m or b"ifHCInOctets{" not in body:
                totals["failed"] += 1
                return 0
            return int(float(m.group(1)))

        for _ in range(rounds):
            cpu0, wall0 = proc_cpu(proc.pid), time.perf_counter()
            counts = await asyncio.gather(*(one(n) for n in names))
            totals["wall"] += time.perf_counter() - wall0
            totals["cpu"] += proc_cpu(proc.pid) - cpu0
            totals["varbinds"] += sum(counts)
        return totals
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- snmpbulkwalk -------------------------------------------------------------------------------

async def run_snmpbulkwalk(port: int, names: list[str], rounds: int) -> dict | None:
    exe = shutil.which("snmpbulkwalk")
    if not exe:
        return None
    sem = asyncio.Semaphore(16)
    totals = {"varbinds": 0, "wall": 0.0, "cpu": 0.0, "failed": 0}

    async def walk(name: str, cols: list[tuple[int, ...]]) -> int:
        # net-snmp walks one subtree per invocation: one process per table entry (a process per
        # column would mostly measure process start-up). The entry also holds ifIndex/ifDescr:
        # every varbind fetched is counted, so CPU per varbind stays comparable.
        root = format_oid(cols[0][:-1])
        async with sem:
            proc = await asyncio.create_subprocess_exec(
                exe, "-v2c", "-c", name, "-On", "-Oq", f"-Cr{MAX_REPETITIONS}", "-t", "5", "-r", "2",
                f"127.0.0.1:{port}", root, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, _ = await proc.communicate()
        if proc.returncode != 0:
            totals["failed"] += 1
        return len(out.decode().splitlines())

    for _ in range(rounds):
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall0 = time.perf_counter()
        results = await asyncio.gather(*(walk(n, cols) for n in names for cols in (IFTABLE_COLS, IFXTABLE_COLS)))
        totals["wall"] += time.perf_counter() - wall0
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        totals["cpu"] += (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
        totals["varbinds"] += sum(results)
    return totals


# -- main ---------------------------------------------------------------------------------------

def row(tool: str, t: dict | None, ref: dict | None) -> str:
    if t is None:
        return f"| {tool} | not installed | | | | | |"
    vbs = t["varbinds"]
    rate = vbs / t["wall"] if t["wall"] else 0.0
    cpu10k = t["cpu"] / vbs * 10_000 if vbs else float("nan")
    if ref is not None and ref["varbinds"] and vbs:
        ref_rate = ref["varbinds"] / ref["wall"]
        ref_cpu10k = ref["cpu"] / ref["varbinds"] * 10_000
        ratios = f"{rate / ref_rate:.2f} | {cpu10k / ref_cpu10k:.2f}"
    else:
        ratios = "- | -"
    return (f"| {tool} | {vbs} | {t['wall']:.2f} | {rate:,.0f} | {cpu10k:.3f} | {ratios} |"
            + (f" ({t['failed']} failed)" if t["failed"] else ""))


async def bench(n: int, rounds: int, tools: set[str]) -> list[str]:
    ref = None
    names = switch_names(n)
    switches = [SimulatedSwitch(name, "ieee", ports=64, seed=i + 1) for i, name in enumerate(names)]
    work = Path(tempfile.mkdtemp(prefix="bench-snmp-"))
    sim = SnmpSim(switches, workdir=work / "sim")
    t0 = time.perf_counter()
    sim.start(timeout=120 + n)
    # snmpsim indexes each data file on first use: touch every community once before timing
    await run_fabric_exporter(sim.port, names, 0, work)
    print(f"N={n}: snmpsim up and warmed in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    try:
        ours = ref = await run_fabric_exporter(sim.port, names, rounds, work) if "fabric" in tools else None
        exp = await run_snmp_exporter(sim.port, names, rounds, work) if "snmp_exporter" in tools else None
        walk = await run_snmpbulkwalk(sim.port, names, rounds) if "snmpbulkwalk" in tools else None
    finally:
        sim.stop()
        shutil.rmtree(work, ignore_errors=True)
    lines = [f"### N = {n} switches x 64 ports, {rounds} round(s), max-repetitions {MAX_REPETITIONS}", "",
             "| tool | varbinds | wall s | varbinds/s | CPU s per 10k varbinds | rate ratio | CPU ratio |",
             "|---|---|---|---|---|---|---|",
             row("fabric-exporter (pysnmp 7)", ours, ref), row("snmp_exporter 0.21", exp, ref),
             row("snmpbulkwalk (net-snmp)", walk, ref), ""]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--switches", type=int, nargs="+", default=[10, 50, 200])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tools", nargs="+", default=["fabric", "snmp_exporter", "snmpbulkwalk"])
    args = ap.parse_args()
    print(f"# SNMP bench ({os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M:%S')})\n")
    for n in args.switches:
        for line in asyncio.run(bench(n, args.rounds, set(args.tools))):
            print(line, flush=True)


if __name__ == "__main__":
    main()
