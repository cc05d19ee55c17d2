"""SNMP polling cost: fabric-exporter's two request paths vs prometheus/snmp_exporter vs snmpbulkwalk.

Real agents with real interfaces: the script creates a private network namespace, gives it
``--veth-pairs`` veth pairs (2 interfaces each, plus lo: 257 interfaces by default), starts
``--agents`` net-snmp snmpd processes inside it on 127.0.0.1 (ports 16100+), and runs every client
inside it too -- no address outside that namespace's loopback is used. Every client walks the same
if_mib columns (14 IF-MIB counter/state columns + ifName + ifAlias, GETBULK max-repetitions 25) of
every agent, SNMPv2c and SNMPv3 authPriv (SHA/AES-128), with 1 and with 8 agents polled at once
(each path on both versions: the fast path serves SNMPv3 too, transport.snmp_fast_v3):

* ``fast`` / ``pysnmp`` -- fabric-exporter's sessions (transport.snmp_fast / transport.snmp) walking
  the 16 columns: the transport's own cost;
* ``fast+poll`` / ``pysnmp+poll`` -- the snmp_switch collector through the Scheduler, as the daemon
  polls (ifName/ifAlias cached after round 0), samples rendered into the store: what a varbind costs
  end to end; ``fast+poll, every value moved``: the same as if every counter had moved since the
  last poll (the agents' interfaces are idle, so the collector would otherwise hand out its last
  samples again: a busy switch's octets and packets move every poll);
* snmp_exporter (Debian's prometheus-snmp-exporter 0.21; its CPU from /proc/<pid>/stat): one /snmp
  scrape per agent with a generated module for the same 16 columns;
* snmpbulkwalk: one process per agent and table entry (ifEntry, ifXEntry; CPU from rusage).

Reported: CPU microseconds per varbind (the tool's own process(es), agents excluded), varbinds per
wall second, and the CPU ratio against snmp_exporter measured in the same run (the baseline the
issue names), per table; a last table puts every path's ratio side by side, SNMPv2c and SNMPv3
apart (the daemon's own figure is ``poll + render``). The machine is shared and noisy: compare
ratios, not absolute figures. Needs root (ip netns) and Debian's snmpd, snmp,
prometheus-snmp-exporter.

    python bench/bench_snmp.py                       # 8 agents x 257 interfaces, 3 rounds
    python bench/bench_snmp.py --agents 4 --rounds 2 --versions 2c
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

MAX_REPETITIONS = 25
BASE_PORT = 16100
V3_USER, V3_AUTH, V3_PRIV = "benchuser", "bench-auth-pass", "bench-priv-pass"
#: seconds every client waits for an answer before resending: generous, since 8 agents serving 257
#: interfaces each fall seconds behind on a loaded machine, and a resend costs CPU the figures should not hold
SNMP_TIMEOUT = 30


# -- the namespace and its agents (run as root, outside) --------------------------------------------

def run_in_namespace(args: argparse.Namespace) -> int:
    ns = f"fxbench{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        batch = [f"link add fxa{i} type veth peer name fxb{i}" for i in range(args.veth_pairs)]
        batch += [f"link set fxa{i} up" for i in range(args.veth_pairs)]
        batch += [f"link set fxb{i} up" for i in range(args.veth_pairs)]
        batch += ["link set lo up"]
        subprocess.run(["ip", "-n", ns, "-batch", "-"], input="\n".join(batch) + "\n", text=True, check=True)
        argv = ["ip", "netns", "exec", ns, sys.executable, __file__, "--inside"] + sys.argv[1:]
        return subprocess.run(argv).returncode
    finally:
        subprocess.run(["ip", "netns", "del", ns])


def _die_with_parent() -> None:
    """In the child: SIGTERM when the bench dies, however it dies (no orphaned agents)."""
    import ctypes
    import signal

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start_agents(n: int, workdir: Path) -> list[subprocess.Popen]:
    snmpd = shutil.which("snmpd") or "/usr/sbin/snmpd"
    procs = []
    for i in range(n):
        d = workdir / f"agent{i}"
        (d / "persist").mkdir(parents=True)
        conf = d / "snmpd.conf"
        conf.write_text(f"agentAddress udp:127.0.0.1:{BASE_PORT + i}\n"
                        f"rocommunity bench{i} 127.0.0.1\n"
                        f"createUser {V3_USER} SHA \"{V3_AUTH}\" AES \"{V3_PRIV}\"\n"
                        f"rouser {V3_USER} priv\n")
        env = {**os.environ, "SNMP_PERSISTENT_DIR": str(d / "persist")}
        procs.append(subprocess.Popen([snmpd, "-f", "-I", "-smux", "-Lf", str(d / "snmpd.log"), "-C", "-c", str(conf),
                                       f"--persistentDir={d / 'persist'}"], env=env, preexec_fn=_die_with_parent,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    deadline = time.monotonic() + 120  # 8 agents starting on a loaded 2-CPU machine take a while
    for i in range(n):  # ready when it answers
        while subprocess.run(["snmpget", "-v2c", f"-cbench{i}", "-t", "1", "-r", "0", f"127.0.0.1:{BASE_PORT + i}",
                              "1.3.6.1.2.1.1.3.0"], capture_output=True).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError(f"snmpd {i} did not answer: {(workdir / f'agent{i}' / 'snmpd.log').read_text()}")
            time.sleep(0.2)
    return procs


# -- clients (inside) -----------------------------------------------------------------------------

def columns():
    from fabric_exporter.collectors.snmp_modules import IF_ALIAS, IF_MIB, IF_NAME

    return [c.oid for t in IF_MIB.tables for c in t.columns] + [IF_NAME, IF_ALIAS]


def credential(version: str, i: int) -> dict:
    if version == "2c":
        return {"type": "snmp", "version": "2c", "community": f"bench{i}"}
    return {"type": "snmp", "version": "3", "username": V3_USER, "auth_protocol": "sha", "auth_password": V3_AUTH,
            "priv_protocol": "aes128", "priv_password": V3_PRIV}


def config(version: str, engine: str, agents: int):
    from fabric_exporter.collectors import registry
    from fabric_exporter.config.loader import parse_config

    creds, targets = {}, []
    for i in range(agents):
        creds[f"c{i}"] = credential(version, i)
        targets.append({"name": f"a{i}", "fabric": "bench", "collector": "snmp_switch", "transport": "snmp",
                        "credentials": f"c{i}", "hosts": [{"name": f"a{i}", "address": "127.0.0.1",
                                                           "port": BASE_PORT + i}],
                        "interval": "10m", "timeout": "9m",
                        "options": {"modules": ["if_mib"], "max_repetitions": MAX_REPETITIONS,
                                    "snmp_timeout": f"{SNMP_TIMEOUT}s",
                                    "snmp_retries": 2, "snmp_engine": engine, "max_concurrent_walks": 1}})
    return parse_config({"credentials": creds, "targets": targets}, base_dir=Path("."), options_parsers=registry())


async def bench_sessions(version: str, engine: str, agents: int, concurrency: int, rounds: int) -> dict:
    """The transport alone: each agent's 16 columns walked one after another, ``concurrency`` agents at once."""
    from fabric_exporter.transport.factory import Transports

    cfg = config(version, engine, agents)
    transports = Transports()
    sessions = [transports.snmp(g, g.hosts[0]) for g in cfg.targets]
    want = {"fast": {"2c": "FastSession", "3": "FastV3Session"}[version], "pysnmp": "SnmpSession"}[engine]
    if {type(s).__name__ for s in sessions} != {want}:  # a silent fallback would measure the wrong path
        raise RuntimeError(f"{engine} {version}: sessions are {[type(s).__name__ for s in sessions]}, not {want}")
    cols = columns()
    sem = asyncio.Semaphore(concurrency)

    async def agent(s) -> int:
        async with sem:
            n = 0
            for c in cols:
                n += len(await s.walk(c))
            return n

    try:
        await asyncio.gather(*(agent(s) for s in sessions))  # round 0: discovery, sockets, warm caches
        t = {"varbinds": 0, "wall": 0.0, "cpu": 0.0}
        for _ in range(rounds):
            cpu0, wall0 = time.process_time(), time.perf_counter()
            t["varbinds"] += sum(await asyncio.gather(*(agent(s) for s in sessions)))
            t["wall"] += time.perf_counter() - wall0
            t["cpu"] += time.process_time() - cpu0
        return t
    finally:
        await transports.close()


def as_if_every_value_moved(collector) -> None:
    """The bench's agents serve idle interfaces: their counters stand still, so the collector hands
    out its last samples again (a column that did not move) and the store keeps their lines. A busy
    switch's octets and packets move every poll: forget the raw values the kept samples were made
    from (the series, their labels and Counter32 state stay), so that every varbind is mapped and
    every line formatted again, as when every value moved. A column's last values become values no
    varbind equals (rather than none at all), as a busy switch's last poll left them: a collector
    that maps a moved column whole from its last poll does so here as it would there."""
    getattr(collector, "_sums", {}).clear()
    for column in getattr(collector, "_columns", {}).values():
        column.values = None if column.values is None else [None] * len(column.values)
    for series_of_column in getattr(collector, "_series", {}).values():
        for series in series_of_column.values():
            series.raw = None


async def bench_collector(version: str, engine: str, agents: int, concurrency: int, rounds: int,
                          moved: bool = False, profile: str | None = None) -> dict:
    """The snmp_switch collector through the Scheduler, samples rendered into the store, as the daemon
    polls; ``moved``: as if every value had moved since the last poll (as_if_every_value_moved);
    ``profile``: a file the measured rounds' cProfile statistics are written to."""
    from fabric_exporter.collectors import PollContext
    from fabric_exporter.scheduler import Scheduler
    from fabric_exporter.serving.store import SnapshotStore
    from fabric_exporter.transport.factory import Transports

    cfg = config(version, engine, agents)
    transports = Transports()
    store = SnapshotStore()
    sched = Scheduler(transports, store)
    sched.apply(cfg, start_tasks=False)
    collectors = {key: cls(PollContext(g, h, transports)) for key, (g, h, cls) in sched.targets(cfg).items()}
    sem = asyncio.Semaphore(concurrency)

    async def one(key, c):
        async with sem:
            st = await sched.poll(key, c)
            if st.state != "ok":
                raise RuntimeError(f"{key}: {st.state} {st.last_error}")

    try:
        await asyncio.gather(*(one(k, c) for k, c in collectors.items()))
        t = {"varbinds": 0, "wall": 0.0, "cpu": 0.0}
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile(time.process_time)  # CPU, as the figures: not time waited
        for _ in range(rounds):
            if moved:
                for c in collectors.values():
                    as_if_every_value_moved(c)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            if profiler is not None:
                profiler.enable()
            await asyncio.gather(*(one(k, c) for k, c in collectors.items()))
            if profiler is not None:
                profiler.disable()
            t["wall"] += time.perf_counter() - wall0
            t["cpu"] += time.process_time() - cpu0
            t["varbinds"] += sum(c.last_varbinds for c in collectors.values())
        if profiler is not None:
            profiler.dump_stats(profile)
        return t
    finally:
        await transports.close()


def snmp_exporter_modules(version: str, agents: int) -> str:
    from fabric_exporter.collectors.snmp_modules import IF_ALIAS, IF_MIB, IF_NAME
    from fabric_exporter.transport.snmp import format_oid

    lookups = [{"labels": ["ifIndex"], "labelname": "ifName", "oid": format_oid(IF_NAME), "type": "DisplayString"},
               {"labels": ["ifIndex"], "labelname": "ifAlias", "oid": format_oid(IF_ALIAS), "type": "DisplayString"}]
    metrics = [{"name": col.object, "oid": format_oid(col.oid), "help": col.object,
                "type": "gauge" if col.object in ("ifOperStatus", "ifHighSpeed") else "counter",
                "indexes": [{"labelname": "ifIndex", "type": "gauge"}], "lookups": lookups}
               for table in IF_MIB.tables for col in table.columns]
    modules = {}
    for i in range(agents):
        if version == "2c":
            auth = {"community": f"bench{i}"}
        else:
            auth = {"security_level": "authPriv", "username": V3_USER, "password": V3_AUTH, "auth_protocol": "SHA",
                    "priv_protocol": "AES", "priv_password": V3_PRIV}
        modules[f"m{i}"] = {"walk": [format_oid(c) for c in columns()], "metrics": metrics,
                            "version": 2 if version == "2c" else 3, "max_repetitions": MAX_REPETITIONS,
                            "retries": 2, "timeout": f"{SNMP_TIMEOUT}s", "auth": auth}
    return json.dumps(modules)  # JSON is YAML


async def bench_snmp_exporter(version: str, agents: int, concurrency: int, rounds: int, workdir: Path) -> dict | None:
    from cputime import process_cpu

    exe = shutil.which("prometheus-snmp-exporter")
    if not exe:
        return None
    conf = workdir / f"snmp-{version}.yml"
    conf.write_text(snmp_exporter_modules(version, agents))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        http_port = s.getsockname()[1]
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
        sem = asyncio.Semaphore(concurrency)

        def scrape(i: int) -> int:
            url = f"http://127.0.0.1:{http_port}/snmp?target=127.0.0.1:{BASE_PORT + i}&module=m{i}"
            body = urllib.request.urlopen(url, timeout=120).read()
            for line in body.splitlines():
                if line.startswith(b"snmp_scrape_pdus_returned "):
                    if b"ifHCInOctets{" not in body:
                        raise RuntimeError(f"snmp_exporter scrape of agent {i} has no data")
                    return int(float(line.split()[1]))
            raise RuntimeError(f"snmp_exporter scrape of agent {i} failed")

        async def one(i: int) -> int:
            async with sem:
                return await asyncio.to_thread(scrape, i)

        await asyncio.gather(*(one(i) for i in range(agents)))
        t = {"varbinds": 0, "wall": 0.0, "cpu": 0.0}
        for _ in range(rounds):
            cpu0, wall0 = process_cpu(proc.pid), time.perf_counter()
            t["varbinds"] += sum(await asyncio.gather(*(one(i) for i in range(agents))))
            t["wall"] += time.perf_counter() - wall0
            t["cpu"] += process_cpu(proc.pid) - cpu0
        return t
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def bench_snmpbulkwalk(version: str, agents: int, concurrency: int, rounds: int) -> dict | None:
    from cputime import children_cpu

    exe = shutil.which("snmpbulkwalk")
    if not exe:
        return None
    cols = columns()
    roots = sorted({".".join(map(str, c[:-1])) for c in cols})  # ifEntry, ifXEntry
    sem = asyncio.Semaphore(concurrency)

    async def walk(i: int, root: str) -> int:
        auth = (["-v2c", f"-cbench{i}"] if version == "2c" else
                ["-v3", "-l", "authPriv", "-u", V3_USER, "-a", "SHA", "-A", V3_AUTH, "-x", "AES", "-X", V3_PRIV])
        async with sem:
            proc = await asyncio.create_subprocess_exec(
                exe, *auth, "-On", "-Oq", f"-Cr{MAX_REPETITIONS}", "-t", str(SNMP_TIMEOUT), "-r", "2",
                f"127.0.0.1:{BASE_PORT + i}", root, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"snmpbulkwalk: {err.decode()[-300:]}")
        return len(out.splitlines())  # every varbind fetched (the entries also hold columns we skip)

    t = {"varbinds": 0, "wall": 0.0, "cpu": 0.0}
    for _ in range(rounds):
        cpu0, wall0 = children_cpu(), time.perf_counter()
        t["varbinds"] += sum(await asyncio.gather(*(walk(i, r) for i in range(agents) for r in roots)))
        t["wall"] += time.perf_counter() - wall0
        t["cpu"] += children_cpu() - cpu0
    return t


def ratio_to(t: dict | None, ref: dict | None) -> float | None:
    """CPU per varbind of ``t`` over the reference's (snmp_exporter's, same run)."""
    if not t or not t["varbinds"] or not ref or not ref["varbinds"] or not ref["cpu"]:
        return None
    return (t["cpu"] / t["varbinds"]) / (ref["cpu"] / ref["varbinds"])


def row(tool: str, t: dict | None, ref: dict | None) -> str:
    if t is None:
        return f"| {tool} | not installed | | | | |"
    us = t["cpu"] / t["varbinds"] * 1e6 if t["varbinds"] else float("nan")
    r = ratio_to(t, ref)
    ratio = "" if r is None else f"{r:.2f}"
    return f"| {tool} | {t['varbinds']} | {t['wall']:.2f} | {t['varbinds'] / t['wall']:,.0f} | {us:.1f} | {ratio} |"


def summary(ratios: dict[tuple[str, str, int], float | None]) -> list[str]:
    """One table of every path's CPU ratio to snmp_exporter, per version and concurrency: the
    daemon's figure is the whole poll's (poll + render), for SNMPv2c and SNMPv3 apart."""
    cols = sorted({(v, c) for _, v, c in ratios}, key=lambda vc: (vc[0] != "2c", vc[1]))
    tools = list(dict.fromkeys(t for t, _, _ in ratios))
    head = " | ".join(f"{'v2c' if v == '2c' else 'v3 authPriv'}, {c} at once" for v, c in cols)
    lines = ["### CPU per varbind / snmp_exporter's, same run", "", f"| path | {head} |",
             "|---|" + "---|" * len(cols)]
    for tool in tools:
        cells = (ratios.get((tool, v, c)) for v, c in cols)
        lines.append(f"| {tool} | " + " | ".join("" if x is None else f"{x:.2f}" for x in cells) + " |")
    return lines


async def inside(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-snmp-"))
    # net-snmp's clients (snmpget, snmpbulkwalk) keep state in /var/lib/snmp by default: keep it here
    os.environ["SNMP_PERSISTENT_DIR"] = str(work / "client-persist")
    procs = start_agents(args.agents, work)
    try:
        n_if = len(os.listdir("/sys/class/net"))
        print(f"# SNMP bench: {args.agents} net-snmp agents x {n_if} interfaces (private netns), "
              f"{args.rounds} round(s), max-repetitions {MAX_REPETITIONS}, {os.cpu_count()} CPUs, "
              f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n", flush=True)
        ratios: dict[tuple[str, str, int], float | None] = {}
        for version in args.versions:
            for conc in args.concurrency:
                results = {}
                results["snmp_exporter 0.21"] = await bench_snmp_exporter(version, args.agents, conc, args.rounds, work)
                results["snmpbulkwalk"] = await bench_snmpbulkwalk(version, args.agents, conc, args.rounds)
                for engine in args.engines:  # the fast path serves v2c and SNMPv3 (transport.snmp_fast_v3)
                    results[f"fabric-exporter {engine} (transport)"] = await bench_sessions(
                        version, engine, args.agents, conc, args.rounds)
                    results[f"fabric-exporter {engine} (poll + render)"] = await bench_collector(
                        version, engine, args.agents, conc, args.rounds)
                    if engine == "fast":
                        results[f"fabric-exporter {engine} (poll + render, every value moved)"] = await bench_collector(
                            version, engine, args.agents, conc, args.rounds, moved=True,
                            profile=args.profile and f"{args.profile}.{version}.{conc}")
                ref = results["snmp_exporter 0.21"]
                label = "v2c" if version == "2c" else "v3 authPriv (SHA/AES128)"
                print(f"### {label}, {conc} agent(s) at once\n")
                print("| tool | varbinds | wall s | varbinds/s | CPU us per varbind | CPU ratio vs snmp_exporter |")
                print("|---|---|---|---|---|---|")
                for tool, t in results.items():
                    print(row(tool, t, ref))
                    if tool != "snmp_exporter 0.21":
                        ratios[(tool, version, conc)] = ratio_to(t, ref)
                print(flush=True)
        print("\n".join(summary(ratios)) + "\n", flush=True)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=8)
    ap.add_argument("--veth-pairs", type=int, default=128, help="interfaces = 2 x pairs + lo")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--versions", nargs="+", default=["2c", "3"], choices=["2c", "3"])
    ap.add_argument("--engines", nargs="+", default=["fast", "pysnmp"], choices=["fast", "pysnmp"])
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--profile", metavar="PREFIX",
                    help="cProfile the 'every value moved' rounds into PREFIX.<version>.<concurrency> (pstats "
                         "files; the figures of that row then include the profiler's overhead)")
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inside:
        asyncio.run(inside(args))
    else:
        sys.exit(run_in_namespace(args))


if __name__ == "__main__":
    main()
