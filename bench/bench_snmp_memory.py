"""Where the snmp_switch poll's memory goes, per published sample: tracemalloc over real polls.

N switches (half SNMPv2c, half SNMPv3 authPriv) of the lab's switch model (64 ports, IF-MIB +
IEEE8021-PFC-MIB), answered by ``lab.replay_snmp`` in a subprocess from two recorded epochs (so
counters move, and go back every other poll as after a restart, as in bench_cluster), polled through
the Scheduler into the store: a warm-up poll and three more, all traced. Prints the bytes still held
per published sample, by file and by the lines that allocated them (the collector's kept state,
the store's rendered lines and caches, the decoder's values). Writes only in a temp dir.

    PYTHONPATH=exporter python bench/bench_snmp_memory.py --switches 40
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "exporter"))

from inprocess_polls import in_process_polls  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--switches", type=int, default=40)
    ap.add_argument("--top", type=int, default=20, help="allocating lines shown")
    args = ap.parse_args()
    from fabric_exporter.lab.snmp import SimulatedSwitch

    tmp = Path(tempfile.mkdtemp(prefix="bench-snmp-memory-"))
    srv = None
    try:
        for r in range(2):
            sw = SimulatedSwitch(f"rec{r}", "ieee", ports=64, seed=r + 1)
            (tmp / "walks" / f"rec{r}").mkdir(parents=True)
            for e in range(2):
                sw.advance(30)
                (tmp / "walks" / f"rec{r}" / f"{e}.snmprec").write_text(sw.render())
        names = [f"sw{i:04d}" for i in range(args.switches)]
        (tmp / "aliases.json").write_text(json.dumps({n: f"rec{i % 2}" for i, n in enumerate(names)}))
        srv = subprocess.Popen([sys.executable, "-m", "fabric_exporter.lab.replay_snmp", "--snmprec-dir",
                                str(tmp / "walks"), "--aliases-file", str(tmp / "aliases.json"), "--port-file",
                                str(tmp / "port"), "--epoch-seconds", "1",
                                "--v3-user", "u:sha:authpass1:aes128:privpass1"],
                               env={"PYTHONPATH": str(ROOT / "exporter"), "PATH": "/usr/bin:/bin"},
                               stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not (tmp / "port").exists():
            if srv.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the SNMP replay did not start")
            time.sleep(0.1)
        asyncio.run(measure(names, int((tmp / "port").read_text()), args.top))
    finally:
        if srv is not None:
            srv.terminate()
            srv.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


async def measure(names: list[str], port: int, top: int) -> None:
    from fabric_exporter.collectors import registry
    from fabric_exporter.config.loader import parse_config

    creds, targets = {}, []
    for i, n in enumerate(names):
        creds[f"c{n}"] = ({"type": "snmp", "version": "3", "username": "u", "auth_protocol": "sha",
                           "auth_password": "authpass1", "priv_protocol": "aes128", "priv_password": "privpass1",
                           "context": n} if i % 2 else {"type": "snmp", "version": "2c", "community": n})
        targets.append({"name": f"sw-{n}", "fabric": "roce", "collector": "snmp_switch", "transport": "snmp",
                        "credentials": f"c{n}", "interval": "30s", "timeout": "27s",
                        "hosts": [{"name": n, "address": "127.0.0.1", "port": port}],
                        "options": {"modules": ["if_mib", "ieee8021_pfc"]}})
    cfg = parse_config({"credentials": creds, "targets": targets}, base_dir=Path("."), options_parsers=registry())
    transports, sched, collectors, one = in_process_polls(cfg)
    try:
        gc.collect()
        tracemalloc.start(1)
        for r in range(4):
            if r:
                await asyncio.sleep(1.05)  # the next epoch
            await asyncio.gather(*(one(k, c) for k, c in collectors.items()))
        gc.collect()
        snap = tracemalloc.take_snapshot()
        tracemalloc.stop()
    finally:
        await transports.close()
    samples = sum(s.samples for s in sched.states.values())
    stats = snap.statistics("lineno")
    total = sum(s.size for s in stats)
    print(f"{len(names)} switches, {samples} samples published; {total / 1e6:.1f} MB held = "
          f"{total / samples:.0f} B per sample\n")
    by_file: dict[str, int] = {}
    for s in stats:
        name = s.traceback[0].filename.split("fabric_exporter/")[-1]
        by_file[name] = by_file.get(name, 0) + s.size
    print("| file | B per sample |\n|---|---|")
    for name, size in sorted(by_file.items(), key=lambda x: -x[1])[:6]:
        print(f"| {name} | {size / samples:.0f} |")
    print("\n| line | B per sample | blocks |\n|---|---|---|")
    for s in stats[:top]:
        frame = s.traceback[0]
        print(f"| {frame.filename.split('fabric_exporter/')[-1]}:{frame.lineno} | {s.size / samples:.0f} | {s.count} |")


if __name__ == "__main__":
    main()
