"""Where a switch poll's CPU goes, in process: SNMP transport, BER, USM, row mapping, store, GC.

    PYTHONPATH=exporter python bench/bench_snmp_poll_split.py [--switches 200] [--rounds 3]
        [--v3-share 0.5] [--max-repetitions N]

The bench_cluster setting without the daemon around it: ``lab.replay_snmp`` (a subprocess) answers
``--switches`` switches x 64 ports (IF-MIB + IEEE8021-PFC-MIB, half SNMPv2c, half SNMPv3 authPriv
SHA/AES-128), polled through the Scheduler with the samples built into the store, as the daemon
does, after a warm-up poll and ``daemon.freeze_long_lived`` as the daemon calls it. Each measured
round waits for the agent's next recording, so counters move as on a busy switch.

Each part is timed by wrapping its function with ``time.process_time`` (in-process CPU timers, not
cProfile, which inflates call-heavy code several times over); GC pauses through ``gc.callbacks``.
Indented parts run inside the one above them (decoding and USM inside the datagram's handling); a
GC pause is counted on its own line and in whatever part allocated. Figures are ms per switch
poll, averaged over every switch (SNMPv2c and SNMPv3 together); ``rest`` is the poll's CPU no timer
holds: the event loop (select, datagram reads, futures, timers, task switches), the walk loop and
the scheduler. To compare checkouts, run it with each one's ``PYTHONPATH`` in turn, alternating.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from inprocess_polls import in_process_polls

V3_USER, V3_AUTH, V3_PRIV = "bench", "bench-auth-pass", "bench-priv-pass"
RECORDINGS = 8

cpu: dict[str, float] = defaultdict(float)
calls: dict[str, int] = defaultdict(int)
#: the parts in the order they are shown (a sub-part, indented, after the part it runs in)
LABELS: list[str] = []


def _timed(owner, name: str, label: str) -> None:
    """Replace ``owner.name`` (a function or method) by one that adds its CPU seconds to ``label``."""
    inner = getattr(owner, name)
    LABELS.append(label)
    clock = time.process_time

    def timed(*args, **kwargs):
        t = clock()
        try:
            return inner(*args, **kwargs)
        finally:
            cpu[label] += clock() - t
            calls[label] += 1

    setattr(owner, name, timed)


def instrument() -> None:
    from fabric_exporter import scheduler
    from fabric_exporter.collectors.snmp_switch import rows
    from fabric_exporter.transport import snmp_fast, snmp_fast_v3, snmp_session, snmp_usm

    _timed(snmp_fast.UdpSession, "_received", "datagram in: decode, USM, hand-over")
    _timed(snmp_fast, "decode_response", "  v2c: BER decode")
    _timed(snmp_fast_v3, "decode_v3_message", "  v3: BER decode, message wrapper")
    _timed(snmp_fast_v3, "decode_scoped_pdu", "  v3: BER decode, scoped PDU")
    _timed(snmp_usm, "decrypt", "  v3: AES decrypt")
    _timed(snmp_usm, "verify", "  v3: HMAC verify")
    _timed(snmp_fast_v3.FastV3Session, "_encode", "v3 request encode: BER, AES, HMAC")
    _timed(snmp_usm, "encrypt", "  v3: AES encrypt")
    _timed(snmp_usm, "sign", "  v3: HMAC sign")
    _timed(snmp_fast, "encode_message", "v2c request encode (message)")
    _timed(snmp_fast, "encode_pdu", "v2c request encode (PDU)")
    _timed(snmp_fast_v3, "encode_pdu", "v3 request encode (PDU)")
    _timed(snmp_session, "response_size", "walk: bytes charged to the budget")
    _timed(rows.RowMapper, "map_table", "rows: map_table")
    _timed(rows.RowMapper, "tables_samples", "rows: tables_samples")
    _timed(scheduler, "build_snapshot", "store: build_snapshot (serving/)")
    started = [0.0]
    LABELS.extend(f"GC generation {g}" for g in range(3))

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.process_time()
        else:
            label = f"GC generation {info['generation']}"
            cpu[label] += time.process_time() - started[0]
            calls[label] += 1

    gc.callbacks.append(on_gc)


def record(tmp: Path, rounds: int, interval: int) -> None:
    from fabric_exporter.lab.snmp import SimulatedSwitch

    for r in range(RECORDINGS):
        sw = SimulatedSwitch(f"rec{r}", "ieee", ports=64, seed=r + 1)
        (tmp / "walks" / f"rec{r}").mkdir(parents=True, exist_ok=True)
        for e in range(rounds + 4):
            sw.advance(interval)
            (tmp / "walks" / f"rec{r}" / f"{e:03d}.snmprec").write_text(sw.render())


def config(names: list[str], port: int, v3_share: float, max_repetitions: int | None):
    from fabric_exporter.collectors import registry
    from fabric_exporter.config.loader import parse_config

    creds, targets = {}, []
    v3_count = round(len(names) * v3_share)
    for i, name in enumerate(names):
        creds[f"c-{name}"] = ({"type": "snmp", "version": "3", "username": V3_USER, "auth_protocol": "sha",
                               "auth_password": V3_AUTH, "priv_protocol": "aes128", "priv_password": V3_PRIV,
                               "context": name} if i < v3_count else
                              {"type": "snmp", "version": "2c", "community": name})
        options: dict = {"modules": ["if_mib", "ieee8021_pfc"]}
        if max_repetitions:
            options["max_repetitions"] = max_repetitions
        targets.append({"name": f"sw-{name}", "fabric": "roce", "collector": "snmp_switch", "transport": "snmp",
                        "credentials": f"c-{name}", "interval": "30s", "timeout": "27s",
                        "hosts": [{"name": name, "address": "127.0.0.1", "port": port}], "options": options})
    return parse_config({"credentials": creds, "targets": targets,
                         "limits": {"max_concurrent_polls": 256, "per_transport": {"snmp": 128}}},
                        base_dir=Path("."), options_parsers=registry())


async def measure(cfg, rounds: int, epoch: float, started: float) -> list[dict]:
    from fabric_exporter.daemon import freeze_long_lived

    transports, _, collectors, poll = in_process_polls(cfg)
    out = []
    try:
        await asyncio.gather(*(poll(k, c) for k, c in collectors.items()))  # warm-up: discovery, names
        freeze_long_lived()
        for _ in range(rounds):
            await asyncio.sleep(epoch - (time.monotonic() - started) % epoch + 0.05)  # the next recording
            cpu.clear()
            calls.clear()
            before = {k: (c._session.requests, c._session.varbinds) for k, c in collectors.items()}
            t0 = time.process_time()
            await asyncio.gather(*(poll(k, c) for k, c in collectors.items()))
            total = time.process_time() - t0
            n = len(collectors)
            parts = {k: round(v / n * 1e3, 3) for k, v in cpu.items()}
            held = sum(v for k, v in parts.items() if not k.startswith((" ", "GC")))
            out.append({
                "ms_per_poll": round(total / n * 1e3, 3),
                "requests_per_poll": sum(c._session.requests - before[k][0] for k, c in collectors.items()) / n,
                "varbinds_per_poll": sum(c._session.varbinds - before[k][1] for k, c in collectors.items()) / n,
                "parts_ms": parts, "calls_per_poll": {k: round(v / n, 2) for k, v in calls.items()},
                "rest_ms": round(total / n * 1e3 - held, 3)})
    finally:
        await transports.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--switches", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--v3-share", type=float, default=0.5)
    ap.add_argument("--epoch", type=float, default=8.0, help="seconds between the agent's recordings")
    ap.add_argument("--max-repetitions", type=int, help="the targets' max_repetitions (default: the option's)")
    ap.add_argument("--no-timers", action="store_true", help="the poll's CPU alone, nothing wrapped")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-snmp-split-"))
    record(tmp, args.rounds, 30)
    names = [f"sw{i:04d}" for i in range(args.switches)]
    (tmp / "aliases.json").write_text(json.dumps({n: f"rec{i % RECORDINGS}" for i, n in enumerate(names)}))
    agent = subprocess.Popen([sys.executable, "-m", "fabric_exporter.lab.replay_snmp", "--snmprec-dir",
                              str(tmp / "walks"), "--aliases-file", str(tmp / "aliases.json"), "--port-file",
                              str(tmp / "port"), "--epoch-seconds", str(args.epoch),
                              "--v3-user", f"{V3_USER}:sha:{V3_AUTH}:aes128:{V3_PRIV}"], stdin=subprocess.DEVNULL)
    try:
        while not (tmp / "port").exists():
            if agent.poll() is not None:
                raise SystemExit("the replay agent did not start")
            time.sleep(0.1)
        started = time.monotonic()
        port = int((tmp / "port").read_text())
        if not args.no_timers:
            instrument()
        results = asyncio.run(measure(config(names, port, args.v3_share, args.max_repetitions), args.rounds,
                                      args.epoch, started))
    finally:
        agent.terminate()
        agent.wait()
    for i, r in enumerate(results):
        print(f"round {i}: {r['ms_per_poll']:.2f} ms CPU a switch poll, {r['requests_per_poll']:.1f} requests, "
              f"{r['varbinds_per_poll']:.0f} varbinds")
        for label in [x for x in LABELS if x in r["parts_ms"]]:
            print(f"   {label:45s} {r['parts_ms'][label]:7.3f} ms  ({r['calls_per_poll'][label]:g} calls)")
        if r["parts_ms"]:
            print(f"   {'rest: event loop, walk loop, scheduler':45s} {r['rest_ms']:7.3f} ms")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
