"""A 10,000-GPU cluster on one daemon, against replay targets cheap enough to measure the daemon.

    PYTHONPATH=exporter:bench python bench/bench_cluster.py [--scale 1.0] [--polls 10] [--interval 30]
        [--exporter PATH ...]   # several: each checkout's daemon in turn, same targets, same run

At ``--scale 1``: 1,250 GPU hosts x 8 RoCE NICs over SSH, 800 switches x 64 ports over SNMP (half
SNMPv2c, half SNMPv3 authPriv SHA/AES-128: ``--v3-share``), and one InfiniBand fabric, all polled
every ``--interval`` seconds by ONE daemon (``fabric-exporter run``, a subprocess) for ``--polls``
intervals after a warm-up round.

The targets are replays, so the machine's cores go to the daemon, not to simulators:
- SSH: ``lab.replay_ssh`` (one asyncssh server process, one port per host) answering dumps the lab's
  host model recorded (``--nic-recordings`` hosts x 4 epochs; host i replays recording i mod N), whole
  or through the script's host-side filter of unmapped counters, as the daemon's command asks (an
  older ``--exporter`` asks for the whole dump). The lab model prints ~1/3 unmapped bytes; a real
  mlx5/bnxt/ice ``ethtool -S`` far more (the filter keeps 5-22 % of the real captures' bytes);
- SNMP: ``lab.replay_snmp`` (one UDP agent process) answering walks recorded from the lab's
  switch model (IF-MIB + IEEE8021-PFC-MIB, ~1,300 varbinds a switch; ``--snmp-recordings`` x one epoch per interval of the run, so
  counters and sysUpTime only rise), on a port per switch (``--snmp-agent-ports``): the daemon keeps
  at most 8 requests in flight per agent address and port, so switches sharing one port share 8
  (until 2026-12-06 late all shared one: the whole cluster's ~450 SNMP requests a second then had 8
  in flight, and any lag of the daemon's loop queued polls past their deadlines);
- InfiniBand: the collector's own tool runs, recorded from a live ibsim fabric (``--ib``, default
  the 40-switch / 320-HCA fat tree, 1,760 ports) through wrapper scripts given as its
  ``tool_paths``, then answered by the same wrappers from the recordings (ibsim stopped). ibsim on
  this machine cannot hold a ~40k-port fabric: ``--ib-copies 23`` answers every recorded run as
  23 copies of the recorded fabric side by side (40,480 ports; lab.replay_ib.replicate).
Each replay's own CPU is printed beside the daemon's.

Per daemon (``--exporter`` checkout): CPU in cores (user + system; the tool processes it runs
apart), RSS and peak RSS, polls completed vs due and polls that failed by reason (``timeout`` = a
missed deadline; those of the start-up, before the measured window, apart), and /metrics latency p50/p99 while polls land, gzip and plain (a scraper thread
alternating both every ``--scrape-every`` s), with the body sizes. Figures only, no pass/fail.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import NamedTuple

import yaml

from cputime import children_cpu_of, process_cpu, rss_mib
from nic_moving import hold_still

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PY = sys.executable
V3_USER, V3_AUTH, V3_PRIV = "bench", "bench-auth-pass", "bench-priv-pass"


def wait_file(path: Path, proc: subprocess.Popen, what: str, timeout: float = 600) -> str:
    end = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > end:
            raise SystemExit(f"{what} did not start")
        time.sleep(0.2)
    return path.read_text()


def _env(exporter: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(exporter)}


# -- InfiniBand: record the collector's tool runs from ibsim, replay them -------------------------

def ib_target(interval: str, timeout: str, tools: dict[str, str], env: dict[str, str]) -> dict:
    return {"name": "ib", "fabric": "ib", "collector": "infiniband", "transport": "local", "interval": interval,
            "timeout": timeout, "options": {"env": env, "tool_paths": tools}}


def record_ib(tmp: Path, exporter: Path, shape: tuple[int, int, int], polls: int = 4) -> tuple[dict, dict, int]:
    """Tool wrappers that replay the collector's runs recorded here from a live ibsim fabric, the
    options' env the recording ran with (the collector's arguments depend on it: keep it), and the
    fabric's port count. ibsim is stopped on return."""
    from fabric_exporter.lab.ibsim import FatTree, IbsimFabric
    from fabric_exporter.lab.replay_ib import recording, write_wrappers

    rec = tmp / "ib-rec"
    tools = write_wrappers(rec)
    fabric = IbsimFabric(FatTree(*shape), tmp / "ibsim", sockname=f"bc{os.getpid()}")
    fabric.start(timeout=300)
    env = fabric.env()
    try:
        with recording(rec):
            d = Daemon(tmp, "ib-record", exporter, {}, [ib_target("10s", "9s", tools, env)])
            try:
                d.wait_polls({"infiniband": polls}, 120 + polls * 30)
                text = d.metrics()
            finally:
                d.stop()
    finally:
        fabric.stop()
    ports = len(set(re.findall(r'^fabric_ib_port_active_width_lanes\{([^}]*)\}', text, re.M)))
    return tools, env, ports


def replicate_recording(rec: Path, copies: int) -> None:
    """Every recorded run answered as if the fabric were ``copies`` copies of the recorded one
    (lab.replay_ib.replicate: GUIDs and names made each copy's own): a ~40k-port fabric, which
    ibsim cannot hold here, from the 1,760-port recording."""
    from fabric_exporter.lab.replay_ib import replicate, replicate_stderr

    for out in rec.glob("*.out"):
        out.write_text(replicate(out.read_text(), copies))
    for err in rec.glob("*.err"):
        err.write_text(replicate_stderr(err.read_text(), copies))


# -- the daemon -----------------------------------------------------------------------------------

class Counts(NamedTuple):
    """One read of a daemon's counters: polls per target (collector, group, host), failed polls by
    "collector/reason", the event loop's lag histogram (probes per ``le`` bound, and "sum" and
    "count"; empty from a daemon without it), and the read itself: when it was asked and answered
    and the newest poll its body shows (wall clock)."""

    target_polls: dict[tuple[str, str, str], float]
    failed: dict[str, float]
    lag: dict[str, float]
    read: dict[str, float]

    @property
    def polls(self) -> dict[str, float]:
        """Polls per collector."""
        polls: dict[str, float] = {}
        for (collector, _group, _host), n in self.target_polls.items():
            polls[collector] = polls.get(collector, 0.0) + n
        return polls


class Daemon:
    def __init__(self, tmp: Path, name: str, exporter: Path, creds: dict, targets: list[dict],
                 log_level: str = "error"):
        config = tmp / f"{name}.yaml"
        config.write_text(yaml.safe_dump({
            "limits": {"max_concurrent_polls": 256, "per_transport": {"ssh": 128, "snmp": 128, "local": 8}},
            "credentials": creds, "targets": targets}))
        from fabric_exporter.lab.ports import free_tcp_port  # the lab is importable once main() set the path

        self.port = free_tcp_port()
        self.log_path = tmp / f"{name}.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([PY, "-m", "fabric_exporter", "run", "--config", str(config),
                                      "--web.listen-address", f"127.0.0.1:{self.port}", "--log.level", log_level,
                                      "--log.format", "json"],
                                     env=_env(exporter), cwd=tmp, stdout=self.log, stderr=subprocess.STDOUT)

    def failure_causes(self, window_start: float, top: int = 6) -> dict[str, dict[str, int]]:
        """From the log (--log-level warning or lower): the daemon's "target failing" lines (one when a
        target starts failing or its reason changes) per collector and error, numbers and names
        blanked, before and in the window (wall-clock ``window_start``), and its other warnings and errors;
        the ``top`` most frequent of each."""
        tallies: dict[str, collections.Counter] = {"before_window": collections.Counter(),
                                                   "in_window": collections.Counter(), "other": collections.Counter()}
        with open(self.log_path, errors="replace") as f:
            for line in f:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue  # the interpreter's own warnings, a traceback
                if not isinstance(event, dict) or event.get("level") not in ("warning", "error", "critical"):
                    continue
                if event.get("msg") != "target failing":  # e.g. a shutdown step past its limit
                    if event.get("msg") not in ("partial data", "target recovered"):
                        tallies["other"][" ".join(str(event.get(k, "")) for k in ("msg", "step", "error"))[:160]] += 1
                    continue
                error = re.sub(r"\b[\w.-]*\d[\w.:-]*", "N", str(event.get("error", "")))[:160]
                when = "in_window" if event.get("ts", 0) >= window_start else "before_window"
                tallies[when][f"{event.get('collector', '?')}: {error}"] += 1
        return {when: dict(t.most_common(top)) for when, t in tallies.items()}

    def get(self, gz: bool, timeout: float = 60) -> tuple[float, int, bytes]:
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/metrics",
                                     headers={"Accept-Encoding": "gzip"} if gz else {})
        t = time.perf_counter()
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
        return time.perf_counter() - t, len(body), body

    def metrics(self) -> str:
        return self.get(False)[2].decode()

    def counts(self) -> Counts:
        """The daemon's counters, from one plain scrape (see Counts)."""
        target_polls: dict[tuple[str, str, str], float] = {}
        failed: dict[str, float] = {}
        lag: dict[str, float] = {}
        asked = time.time()
        text = self.metrics()
        read = {"asked": asked, "received": time.time(), "latest_poll": 0.0}
        for line in text.splitlines():
            if line.startswith("fabric_last_poll_timestamp_seconds{"):
                read["latest_poll"] = max(read["latest_poll"], float(line.rsplit(" ", 1)[1]))
                continue
            if line.startswith("fabric_event_loop_lag_seconds"):
                m = re.match(r'fabric_event_loop_lag_seconds_(?:bucket\{le="([^"]+)"\}|(sum|count)) (\S+)$', line)
                if m:
                    lag[m[1] or m[2]] = float(m[3])
                continue
            m = re.match(r'fabric_polls_total\{collector="([^"]+)".*group="([^"]*)",host="([^"]*)"\} (\S+)$', line)
            if m:
                target_polls[(m[1], m[2], m[3])] = float(m[4])
                continue
            m = re.match(r'fabric_poll_errors_total\{collector="([^"]+)".*reason="(\w+)"\} (\S+)$', line)
            if m and m[2] != "partial" and float(m[3]):
                failed[f"{m[1]}/{m[2]}"] = failed.get(f"{m[1]}/{m[2]}", 0.0) + float(m[3])
        return Counts(target_polls, failed, lag, read)

    def wait_polls(self, want: dict[str, float], timeout: float) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise SystemExit(f"daemon exited: {Path(self.log.name).read_text()[-2000:]}")
            try:
                polls = self.counts().polls
                if all(polls.get(c, 0) >= n for c, n in want.items()):
                    return
            except OSError:
                pass
            time.sleep(1)
        raise SystemExit(f"fewer polls than {want} within {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


class Scraper(threading.Thread):
    """Scrapes /metrics every ``every`` s, alternating gzip and plain (or gzip only, as Prometheus
    asks), until stopped."""

    def __init__(self, daemon: Daemon, every: float, plain: bool = True):
        super().__init__(daemon=True)
        self.d, self.every, self.plain = daemon, every, plain
        self.times: dict[str, list[float]] = {"gzip": [], "plain": []}
        self.sizes: dict[str, list[int]] = {"gzip": [], "plain": []}
        self.failures = 0
        #: scrapes slower than a second: (wall clock at the start, kind, seconds), to set beside the daemon's log
        self.slow: list[tuple[str, str, float]] = []
        self._halt = threading.Event()

    def run(self) -> None:
        gz = True
        while not self._halt.wait(self.every):
            try:
                began = time.time()
                seconds, size, body = self.d.get(gz)
                if gz:
                    gzip.decompress(body)  # a whole, valid stream
                kind = "gzip" if gz else "plain"
                self.times[kind].append(seconds)
                self.sizes[kind].append(size)
                if seconds > 1.0:
                    at = time.strftime("%H:%M:%S", time.gmtime(began)) + f".{int(began % 1 * 1000):03d}Z"
                    self.slow.append((at, kind, round(seconds, 3)))
            except Exception:  # noqa: BLE001 - counted: a scrape that failed or timed out
                self.failures += 1
            gz = not gz or not self.plain

    def stop(self) -> None:
        self._halt.set()
        self.join(120)


def loop_lag_in_window(before: dict[str, float], after: dict[str, float], wall: float) -> dict | None:
    """The daemon's event-loop lag probes of the window: how many woke later than each bound, and the
    share of the window the loop was behind (the lateness summed over wall time)."""
    if not after:
        return None  # an --exporter from before the histogram
    count = after["count"] - before.get("count", 0.0)
    late_over = {le: int(count - (after[le] - before.get(le, 0.0)))
                 for le in after if le not in ("sum", "count", "+Inf")}
    return {"probes": int(count), "late_over_s": late_over,
            "behind_share": round((after["sum"] - before.get("sum", 0.0)) / wall, 4)}


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# -- the run --------------------------------------------------------------------------------------

def hold_still_recordings(dumps: Path, moving: float) -> None:
    """Rewrite recorded NIC dumps so that only ``moving`` of the counters move: every other counter
    (picked by a stable hash of recording, section and name) keeps its value of the first epoch."""
    for rec in sorted(p for p in dumps.iterdir() if p.is_dir()):
        for suffix in (".mapped.dump", ".dump"):
            files = sorted(f for f in rec.glob(f"*{suffix}") if suffix == ".mapped.dump" or ".mapped" not in f.name)
            first: dict[tuple[str, str], str] = {}
            for path in files:
                path.write_text(hold_still(rec.name, path.read_text(), first, moving))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the 10k-GPU cluster's hosts and switches")
    ap.add_argument("--hosts", type=int, help="GPU hosts (default 1250 x scale)")
    ap.add_argument("--switches", type=int, help="SNMP switches (default 800 x scale)")
    ap.add_argument("--v3-share", type=float, default=0.5, help="share of switches polled over SNMPv3 authPriv")
    ap.add_argument("--ib", default="8,32,10", help="ibsim fat tree SPINES,LEAVES,HCAS_PER_LEAF recorded ('' = no IB)")
    ap.add_argument("--ib-copies", type=int, default=1,
                    help="answer the IB target as this many copies of the recorded fabric (23: 40,480 ports)")
    ap.add_argument("--interval", type=float, default=30.0)
    ap.add_argument("--polls", type=int, default=10, help="intervals measured after the warm-up round")
    ap.add_argument("--settle", type=float, default=4,
                    help="intervals to wait after the warm-up round before measuring, so the window holds the "
                         "steady state alone: at 10k GPUs polls still finished late, the first round's backlog "
                         "draining, 80 s after the warm-up round, and a window begun then counted 3-10 %% more "
                         "polls done than due (completions catching up)")
    ap.add_argument("--scrape-every", type=float, default=2.0,
                    help="seconds between /metrics scrapes while measuring (0: none, the polls' cost alone)")
    ap.add_argument("--scrape-kinds", choices=("both", "gzip"), default="both",
                    help="gzip and plain in turn, or gzip only (what Prometheus asks for)")
    ap.add_argument("--nic-recordings", type=int, default=16)
    ap.add_argument("--moving", type=float, default=1.0,
                    help="share of NIC counters that move between polls (the lab model moves them all; a real "
                         "host's errors, CNPs and idle priorities' pauses mostly stand still): the others keep "
                         "their first epoch's value in every recorded dump")
    ap.add_argument("--snmp-recordings", type=int, default=8)
    ap.add_argument("--snmp-agent-ports", type=int, default=0,
                    help="UDP ports the SNMP replay answers on, switches spread over them (0: one per switch, "
                         "each its own agent as in a fabric; 1: every switch behind one address and port, "
                         "which the daemon's limit of requests in flight per agent makes a global one)")
    ap.add_argument("--exporter", action="append", type=Path,
                    help="an exporter/ directory to run the daemon from (repeatable: each in turn, "
                         "same targets; default this checkout's)")
    ap.add_argument("--only", choices=("roce_nic", "snmp_switch", "infiniband"),
                    help="poll only this collector's targets (its cost alone)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (recordings, configs, daemon logs)")
    ap.add_argument("--log-level", default="error", choices=("debug", "info", "warning", "error"),
                    help="the daemon's --log.level (warning: each target's failures, in the kept daemon log)")
    ap.add_argument("--json", type=Path, help="write the results here too")
    args = ap.parse_args()
    hosts = args.hosts if args.hosts is not None else round(1250 * args.scale)
    switches = args.switches if args.switches is not None else round(800 * args.scale)
    exporters = [p.resolve() for p in (args.exporter or [ROOT / "exporter"])]
    lab = ROOT / "exporter"  # the replays and recordings come from this checkout, whatever --exporter runs
    sys.path.insert(0, str(lab))
    from fabric_exporter.lab.replay_ssh import record as record_dumps
    from fabric_exporter.lab.snmp import SimulatedSwitch
    from fabric_exporter.lab.ssh_hosts import known_hosts_lines, write_key_files

    tmp = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    servers: list[subprocess.Popen] = []
    results = []
    try:
        t0 = time.monotonic()
        # recordings
        record_dumps(tmp / "dumps", recordings=args.nic_recordings, epochs=4, interval=args.interval)
        if args.moving < 1.0:
            hold_still_recordings(tmp / "dumps", args.moving)
        snmp_dir = tmp / "walks"
        for r in range(args.snmp_recordings):
            sw = SimulatedSwitch(f"rec{r}", "ieee", ports=64, seed=r + 1)
            (snmp_dir / f"rec{r}").mkdir(parents=True, exist_ok=True)
            # one recording per interval of the run (warm-up, measured polls, margin): the counters and
            # sysUpTime only rise, as on a busy switch; with two that alternated, every other poll
            # read as an agent restart (uptime back) and re-walked ifName/ifAlias
            for e in range(args.polls + 4):
                sw.advance(int(args.interval))
                (snmp_dir / f"rec{r}" / f"{e}.snmprec").write_text(sw.render())
        ib_tools, ib_env, ib_ports = ({}, {}, 0)
        if args.ib:
            ib_tools, ib_env, ib_ports = record_ib(tmp, lab, tuple(int(x) for x in args.ib.split(",")))
            if args.ib_copies > 1:
                replicate_recording(tmp / "ib-rec", args.ib_copies)
                ib_ports *= args.ib_copies
        # replay servers
        host_key, client_key, authorized = write_key_files(tmp)
        ssh = subprocess.Popen([PY, "-m", "fabric_exporter.lab.replay_ssh", "--dumps", str(tmp / "dumps"),
                                "--hosts", str(hosts), "--host-key", str(host_key), "--authorized-keys",
                                str(authorized), "--ports-file", str(tmp / "ports.json")],
                               env=_env(lab), stdin=subprocess.DEVNULL)
        servers.append(ssh)
        names = [f"sw{i:04d}" for i in range(switches)]
        (tmp / "aliases.json").write_text(json.dumps({n: f"rec{i % args.snmp_recordings}" for i, n in enumerate(names)}))
        snmp = subprocess.Popen([PY, "-m", "fabric_exporter.lab.replay_snmp", "--snmprec-dir", str(snmp_dir),
                                 "--aliases-file", str(tmp / "aliases.json"), "--port-file", str(tmp / "snmp.port"),
                                 "--listeners", str(args.snmp_agent_ports or switches),
                                 "--epoch-seconds", str(args.interval),
                                 "--v3-user", f"{V3_USER}:sha:{V3_AUTH}:aes128:{V3_PRIV}"],
                                env=_env(lab), stdin=subprocess.DEVNULL)
        servers.append(snmp)
        ports = json.loads(wait_file(tmp / "ports.json", ssh, "SSH replay"))
        snmp_ports = [int(p) for p in wait_file(tmp / "snmp.port", snmp, "SNMP replay").split()]
        (tmp / "known_hosts").write_text(known_hosts_lines(host_key, ports.values()))
        interval, timeout = f"{args.interval:g}s", f"{args.interval * 0.9:g}s"
        creds = {"ssh": {"type": "ssh", "username": "bench", "private_key_file": str(client_key),
                         "known_hosts_file": str(tmp / "known_hosts"), "connect_timeout": "20s"},
                 "v3": {"type": "snmp", "version": "3", "username": V3_USER, "auth_protocol": "sha",
                        "auth_password": V3_AUTH, "priv_protocol": "aes128", "priv_password": V3_PRIV}}
        targets = [{"name": "gpus", "fabric": "roce", "collector": "roce_nic", "transport": "ssh",
                    "credentials": "ssh", "interval": interval, "timeout": timeout,
                    "hosts": [{"name": h, "address": "127.0.0.1", "port": p} for h, p in ports.items()]}]
        v3_count = round(switches * args.v3_share)
        for i, name in enumerate(names):
            if i < v3_count:  # SNMPv3: one engine answers every switch, the context names it
                creds[f"v3-{name}"] = {**creds["v3"], "context": name}
            else:
                creds[f"c-{name}"] = {"type": "snmp", "version": "2c", "community": name}
            targets.append({"name": f"sw-{name}", "fabric": "roce", "collector": "snmp_switch", "transport": "snmp",
                            "credentials": f"v3-{name}" if i < v3_count else f"c-{name}", "interval": interval,
                            "timeout": timeout, "hosts": [{"name": name, "address": "127.0.0.1", "port": snmp_ports[i % len(snmp_ports)]}],
                            "options": {"modules": ["if_mib", "ieee8021_pfc"]}})
        if ib_tools:
            targets.append(ib_target(interval, timeout, ib_tools, ib_env))
        want = {"roce_nic": hosts, "snmp_switch": switches, **({"infiniband": 1} if ib_tools else {})}
        if args.only:
            targets = [t for t in targets if t["collector"] == args.only]
            want = {args.only: want[args.only]}
        print(f"recorded and replays up in {time.monotonic() - t0:.0f} s: {hosts} SSH hosts x 8 NICs, {switches} "
              f"SNMP switches x 64 ports ({v3_count} SNMPv3 authPriv), IB fabric of {ib_ports} ports "
              f"({args.ib or 'none'}); interval {interval}, {args.polls} polls measured", flush=True)

        for run, exporter in enumerate(exporters):
            d = Daemon(tmp, f"daemon{run}", exporter, creds, targets, args.log_level)
            try:
                started = time.monotonic()
                d.wait_polls(want, 120 + 3 * args.interval + hosts / 20 + switches / 20)
                warm = time.monotonic() - started
                time.sleep(args.settle * args.interval)  # the start-up's retries and backoff play out first
                # The counters are read when each counts() request arrives; its plain body then takes
                # seconds to send and parse, so the polls are counted from c0 to c1, not over the window.
                c0 = time.monotonic()
                counts0 = d.counts()
                cpu0, tools0 = process_cpu(d.proc.pid), children_cpu_of(d.proc.pid)
                srv0 = [process_cpu(s.pid) for s in servers]
                scraper = Scraper(d, args.scrape_every, plain=args.scrape_kinds == "both")
                w0, w0_wall = time.monotonic(), time.time()
                if args.scrape_every > 0:
                    scraper.start()
                time.sleep(args.interval * args.polls)
                if args.scrape_every > 0:
                    scraper.stop()
                w1 = time.monotonic()
                cpu1, tools1 = process_cpu(d.proc.pid), children_cpu_of(d.proc.pid)
                srv1 = [process_cpu(s.pid) for s in servers]
                rss, hwm = rss_mib(d.proc.pid)
                c1 = time.monotonic()
                counts1 = d.counts()
                samples = sum(1 for line in d.metrics().splitlines() if line and not line.startswith("#"))
            finally:
                d.stop()
            wall, counted = w1 - w0, c1 - c0
            polls0, polls1, failed0 = counts0.polls, counts1.polls, counts0.failed
            done = {c: polls1.get(c, 0) - polls0.get(c, 0) for c in want}
            due = {c: n * counted / args.interval for c, n in want.items()}
            failed = {k: v - failed0.get(k, 0.0) for k, v in counts1.failed.items() if v - failed0.get(k, 0.0)}
            per_target = collections.defaultdict(collections.Counter)  # collector: {polls in the span: targets}
            for key, n in counts1.target_polls.items():
                per_target[key[0]][int(n - counts0.target_polls.get(key, 0.0))] += 1
            row = {
                "exporter": str(exporter), "wall_s": round(wall, 1), "warm_up_s": round(warm, 1),
                "daemon_cores": round((cpu1 - cpu0) / wall, 3), "tools_cores": round((tools1 - tools0) / wall, 3),
                "rss_mib": round(rss), "peak_rss_mib": round(hwm), "samples": samples,
                "polls_done": {c: int(v) for c, v in done.items()}, "polls_due": {c: round(v) for c, v in due.items()},
                "failed_by_reason": failed,
                # how many targets polled how many times between the counter reads (a grid gives
                # every target floor or ceil of counted_s / interval)
                "polls_per_target": {c: dict(sorted(t.items())) for c, t in per_target.items()},
                # each counter read: the latest poll it shows and when its body came in, against when it was asked
                "reads": [{k: round(v - r["asked"], 2) for k, v in r.items() if k != "asked"}
                          for r in (counts0.read, counts1.read)],
                # the first round and --settle: a start-up's polls that found no slot or deadline in time
                "failed_before_window": {k: v for k, v in failed0.items() if v},
                "metrics_p50_s": {k: round(pct(v, 0.5), 3) for k, v in scraper.times.items()},
                "metrics_p99_s": {k: round(pct(v, 0.99), 3) for k, v in scraper.times.items()},
                "metrics_max_s": {k: round(max(v), 3) if v else None for k, v in scraper.times.items()},
                "scrapes": {k: len(v) for k, v in scraper.times.items()}, "scrape_failures": scraper.failures,
                "slow_scrapes": scraper.slow,
                "body_mb": {k: round(statistics.median(v) / 1e6, 2) if v else None for k, v in scraper.sizes.items()},
                "loop_lag": loop_lag_in_window(counts0.lag, counts1.lag, counted), "counted_s": round(counted, 1),
                "replay_cores": {name: round((b - a) / wall, 3) for name, a, b in zip(("ssh", "snmp"), srv0, srv1)},
                # with --only: the daemon's CPU per poll of one target of that collector
                "daemon_cpu_ms_per_poll": {c: round((cpu1 - cpu0) / v * 1e3, 2) for c, v in done.items() if v}
                if len(done) == 1 else None,
                # what the failures said (needs --log-level warning): the start-up's apart
                "failure_causes": d.failure_causes(w0_wall) if args.log_level in ("debug", "info", "warning") else None,
            }
            results.append(row)
            print(json.dumps(row, indent=1), flush=True)
    finally:
        for s in servers:
            if s.poll() is None:
                s.terminate()
                try:
                    s.wait(10)
                except subprocess.TimeoutExpired:
                    s.kill()
        if args.keep:
            print(f"work dir kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{hosts} hosts x 8 NICs (SSH), {switches} switches x 64 ports (SNMP, {args.v3_share:.0%} v3), "
          f"IB {ib_ports} ports, {args.interval:g} s interval, {args.polls} polls:")
    for row in results:
        print(f"  {row['exporter']}: daemon {row['daemon_cores']:.3f} cores (+ tools {row['tools_cores']:.3f}), "
              f"RSS {row['rss_mib']} MiB (peak {row['peak_rss_mib']}), polls {row['polls_done']} of "
              f"{row['polls_due']} due, failed {row['failed_by_reason'] or 'none'} (before the window: "
              f"{row['failed_before_window'] or 'none'}); /metrics p50/p99 gzip "
              f"{row['metrics_p50_s']['gzip']}/{row['metrics_p99_s']['gzip']} s, plain "
              f"{row['metrics_p50_s']['plain']}/{row['metrics_p99_s']['plain']} s ({row['body_mb']} MB); "
              f"replays {row['replay_cores']} cores")
    if len(results) > 1:
        base = results[0]["daemon_cores"]
        for row in results[1:]:
            print(f"  daemon CPU {row['exporter']} / {results[0]['exporter']}: {row['daemon_cores'] / base:.2f}x")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average at the end {os.getloadavg()[0]:.1f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
