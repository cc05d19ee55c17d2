"""Issue 25's hostile targets against a running daemon, measured (run once with ``--code DIR`` on a
checkout of the previous revision, once without, on the same machine):

    PYTHONPATH=exporter:. python bench/bench_hostile.py reload_sessions [--code DIR] [--reloads 100]
    PYTHONPATH=exporter:. python bench/bench_hostile.py snmp_walk [--mode huge_strings] [--engine fast|pysnmp]
                                                        [--code DIR] [--seconds 12]

- reload_sessions: a real sshd serving a lab GPU host (roce_nic) on 8 loopback addresses; the config
  names 3 hosts on a window of addresses that moves one address per reload, and its credential's key
  is rotated to a new file every reload; SIGHUP after each rewrite. Reports the SSH sessions
  established to the sshd and the daemon's open fds after the first and after the last reload.
- snmp_walk: a hostile SNMPv2c agent (tests/harness/hostile_snmp.py, its own process) misbehaving in
  ``--mode`` on every GETBULK, polled by the daemon's snmp_switch (3 s timeout, 4 s interval; SNMP 1 s x 2 tries) for
  ``--seconds``. Reports the daemon's peak RSS (VmHWM) and final RSS, the requests the agent got
  per poll, and the poll failure reasons /metrics counts.

Needs root (sshd in a mount namespace).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "exporter"), str(ROOT)]

from tests.harness.daemon import DaemonProcess  # noqa: E402
from tests.harness.faultlab import gpu_host_sshd, process_status  # noqa: E402
from tests.harness.processes import stop_process  # noqa: E402

ADDRESSES = [f"127.0.0.{i}" for i in range(1, 9)]


def _daemon(config: Path, code: str | None) -> DaemonProcess:
    env = {"PYTHONPATH": f"{Path(code).resolve() / 'exporter'}:{ROOT}"} if code else None
    d = DaemonProcess(config, env=env)
    d.wait_http(30)
    return d


def established_to(port: int) -> int:
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "01" and int(fields[2].split(":")[1], 16) == port:
            count += 1
    return count


def _up(d: DaemonProcess, hosts: list[str]) -> bool:
    status, text = d.get("/metrics")
    if status != 200:
        return False
    up = {m.group(1) for m in re.finditer(r'^fabric_up\{[^}]*host="([^"]+)"[^}]*\} 1(?:\.0)?$', text, re.M)}
    return set(hosts) <= up


def reload_sessions(code: str | None, reloads: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        tmp = Path(tmp)
        _, sshd = gpu_host_sshd(tmp, "gpu")
        sshd.extra_config = [f"ListenAddress {a}" for a in ADDRESSES[1:]]
        with sshd:
            host_key = " ".join(Path(f"{sshd.host_key}.pub").read_text().split()[:2])
            known_hosts = tmp / "known_hosts"
            known_hosts.write_text("".join(f"[{a}]:{sshd.port} {host_key}\n" for a in ADDRESSES))
            config = tmp / "fabric.yaml"

            def write(round_: int) -> list[str]:
                key = tmp / f"key-{round_}"  # a rotated key: same key pair, a new file, a new credential
                shutil.copy(sshd.client_key, key)
                key.chmod(0o600)
                first = round_ % (len(ADDRESSES) - 2)
                hosts = [{"name": f"r{round_}-h{i}", "address": ADDRESSES[first + i], "port": sshd.port}
                         for i in range(3)]
                doc = {"credentials": {"gpu": {**sshd.credential(private_key_file=str(key)),
                                               "known_hosts_file": str(known_hosts)}},
                       "targets": [{"name": "gpu", "fabric": "lab", "collector": "roce_nic", "transport": "ssh",
                                    "credentials": "gpu", "interval": "2s", "timeout": "1500ms", "hosts": hosts}]}
                config.write_text(yaml.safe_dump(doc))
                return [h["name"] for h in hosts]

            names = write(0)
            d = _daemon(config, code)
            try:
                figures = []
                for round_ in range(reloads + 1):
                    if round_:
                        names = write(round_)
                        d.proc.send_signal(signal.SIGHUP)
                    end = time.monotonic() + 20
                    while not _up(d, names) and time.monotonic() < end:
                        time.sleep(0.1)
                    if round_ in (0, reloads):
                        time.sleep(0.5)
                        figures.append({"after_reloads": round_, "sessions": established_to(sshd.port),
                                        "daemon_fds": process_status(d.proc.pid)["fds"]})
                return {"reloads": reloads, "hosts_per_config": 3, "figures": figures}
            finally:
                d.stop()


def snmp_walk(code: str | None, mode: str, seconds: float, engine: str = "fast") -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        tmp = Path(tmp)
        counts = tmp / "counts.json"
        agent = subprocess.Popen([sys.executable, "-m", "tests.harness.hostile_snmp", mode, "--counts", str(counts)],
                                 cwd=ROOT, stdout=subprocess.PIPE, text=True,
                                 env={"PYTHONPATH": f"{ROOT / 'exporter'}:{ROOT}"})
        try:
            port = int(agent.stdout.readline())
            community = tmp / "community"
            community.write_text("public\n")
            config = tmp / "fabric.yaml"
            config.write_text(yaml.safe_dump({
                "credentials": {"c": {"type": "snmp", "version": "2c", "community_file": str(community)}},
                "targets": [{"name": "sw", "fabric": "lab", "collector": "snmp_switch", "transport": "snmp",
                             "credentials": "c", "interval": "4s", "timeout": "3s",
                             "hosts": [{"name": "sw1", "address": "127.0.0.1", "port": port}],
                             "options": {"modules": ["if_mib"], "snmp_timeout": "1s", "snmp_retries": 1,
                                         "snmp_engine": engine}}]}))
            d = _daemon(config, code)
            try:
                rss_start = process_status(d.proc.pid)["VmRSS"]
                time.sleep(seconds)
                status = process_status(d.proc.pid)
                _, text = d.get("/metrics")
            finally:
                d.stop()
        finally:
            stop_process(agent)
        errors = {m.group(1): float(m.group(2)) for m in re.finditer(
            r'^fabric_poll_errors_total\{[^}]*reason="([^"]+)"[^}]*\} (\S+)$', text, re.M) if float(m.group(2))}
        polls = sum(errors.values()) or 1
        requests = json.loads(counts.read_text()) if counts.exists() else {}
        return {"mode": mode, "engine": engine, "seconds": seconds, "rss_start_mb": rss_start // 1024,
                "rss_peak_mb": status["VmHWM"] // 1024, "rss_end_mb": status["VmRSS"] // 1024,
                "poll_errors": errors, "agent_requests": requests,
                "misbehaved_requests_per_failed_poll": round(requests.get("misbehaved", 0) / polls, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenario", choices=["reload_sessions", "snmp_walk"])
    ap.add_argument("--code", help="run the daemon from DIR/exporter (a checkout of another revision)")
    ap.add_argument("--reloads", type=int, default=100)
    ap.add_argument("--mode", default="huge_strings")
    ap.add_argument("--seconds", type=float, default=12.0)
    ap.add_argument("--engine", choices=["fast", "pysnmp"], default="fast", help="snmp_walk: the SNMP request path")
    args = ap.parse_args()
    if args.scenario == "reload_sessions":
        result = reload_sessions(args.code, args.reloads)
    else:
        result = snmp_walk(args.code, args.mode, args.seconds, args.engine)
    print(json.dumps({"scenario": args.scenario, "code": args.code or "this checkout", **result}, indent=1))


if __name__ == "__main__":
    main()
