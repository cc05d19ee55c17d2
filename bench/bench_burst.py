"""Benchmark: the roce_nic burst sampler -- its CPU cost, tick lateness, and recall on injected bursts.

    PYTHONPATH=exporter python bench/bench_burst.py cost   [--seconds 20] [--ports 8] [--counters 40]
    PYTHONPATH=exporter python bench/bench_burst.py recall [--seconds 120] [--window 100ms] [--lengths-ms 150]
    PYTHONPATH=exporter python bench/bench_burst.py quiet  [--minutes 10]

cost: the SSH path's host side too (the probe as its own python3 process, streaming to a pipe; its
CPU includes the interpreter's start). The local sampler (``burst.LocalRunner``: the probe + the accumulator on the event loop's
absolute-deadline ticks) reading PORTS x COUNTERS columns, at 100 ms and at 10 ms windows. The
columns are REAL sysfs attributes (``/sys/class/net/*/statistics/*``, each opened once and re-read
with pread, like hw_counters files; the lab tree's entries are symlinks to them), so every read is
a kernel attribute read. A baseline in the same run: the same event loop idling for the same time.
Reported: the sampler's CPU as % of one core (minus the baseline), p50/p99/max tick lateness,
missed ticks. A second figure feeds the accumulator a non-zero delta in EVERY column of every
window (the worst case for its bookkeeping: real counters mostly do not move in 10 ms).

recall: ``lab.burst_injector`` (a separate process) writes bursts of 150-500 ms at random phases
with noise between them into a lab host's fake counters; the local sampler at WINDOW reads them.
Reported: recall for bursts >= 200 ms and < 200 ms, peak error for bursts >= 200 ms, false bursts,
counts conserved (exact), and the 30 s-average view of the same run (what a rate panel shows).

quiet: noise only for MINUTES: the number of false bursts (must be 0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cputime import self_cpu  # noqa: E402

from fabric_exporter.collectors import burst  # noqa: E402
from fabric_exporter.collectors.roce_nic import (ETHTOOL_MAPPER, HW_MAPPER, RoceNicOptions,  # noqa: E402
                                                 _result_and_ports, driver_family)
from fabric_exporter.durations import parse_duration  # noqa: E402
from fabric_exporter.lab.roce_host import RoceHost  # noqa: E402
from fabric_exporter.parsers.rdma import parse_host_dump  # noqa: E402


class Recording(burst.BurstAccumulator):
    """Keeps every tick's lateness (the catalog histogram's buckets are too coarse for a p99)."""

    def __init__(self, columns=()):
        super().__init__(columns)
        self.lateness: list[float] = []

    def window(self, elapsed, deltas, now, missed=0, lateness=0.0):
        self.lateness.append(max(0.0, lateness))
        super().window(elapsed, deltas, now, missed, lateness)


def real_sysfs_tree(root: Path, ports: int, counters: int) -> list[burst.Column]:
    """A lab tree whose hw_counters entries are symlinks to real /sys/class/net statistics files."""
    files = sorted(str(p) for p in Path("/sys/class/net").glob("*/statistics/*"))
    if not files:
        raise SystemExit("no /sys/class/net/*/statistics files to read")
    columns = []
    k = 0
    for d in range(ports):
        hw = root / "class" / "infiniband" / f"mlx5_{d}" / "ports" / "1" / "hw_counters"
        hw.mkdir(parents=True, exist_ok=True)
        for c in range(counters):
            name = f"c{c:02d}"
            (hw / name).symlink_to(os.path.realpath(files[k % len(files)]))  # under /sys/devices
            k += 1
            labels = (("host", "h"), ("device", f"mlx5_{d}"), ("port", "1"), ("netdev", f"n{d}"),
                      ("signal", f"s{c}"))
            columns.append(burst.Column(f"hw/mlx5_{d}/1/{name}", labels, 1.0, 1e9))
    return columns


async def _run_for(runner, seconds: float) -> None:
    runner.start()
    await asyncio.sleep(seconds)
    await runner.close()


async def _idle(seconds: float) -> None:
    await asyncio.sleep(seconds)


def cost(args) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-burst-") as tmp:
        columns = real_sysfs_tree(Path(tmp), args.ports, args.counters)
        print(f"{len(columns)} columns ({args.ports} ports x {args.counters} real sysfs attributes), "
              f"{args.seconds:g} s per run, load average {os.getloadavg()[0]:.2f}")
        for window in (0.1, 0.01):
            c0 = self_cpu()
            asyncio.run(_idle(args.seconds))
            base = self_cpu() - c0
            acc = Recording()
            runner = burst.LocalRunner(columns, burst.BurstOptions(window=window, sysfs_root=tmp), acc)
            c0 = self_cpu()
            asyncio.run(_run_for(runner, args.seconds))
            used = self_cpu() - c0
            late = sorted(acc.lateness)
            p99 = late[int(0.99 * (len(late) - 1))]
            print(f"window {window * 1000:g} ms: {acc.ticks} ticks, {acc.missed} missed, CPU "
                  f"{100 * (used - base) / args.seconds:.2f} % of a core (baseline idle loop "
                  f"{100 * base / args.seconds:.2f} %), lateness p50 {statistics.median(late) * 1e3:.2f} ms "
                  f"p99 {p99 * 1e3:.2f} ms max {late[-1] * 1e3:.2f} ms; missing columns {len(runner.missing)}")
            # worst case for the bookkeeping: every column moves in every window
            acc2 = burst.BurstAccumulator(columns)
            deltas = {i: 1000 + i for i in range(len(columns))}
            n = int(args.seconds / window)
            c0 = self_cpu()
            for t in range(n):
                acc2.window(window, deltas, t * window)
            used2 = self_cpu() - c0
            print(f"    + accumulator with every column non-zero every window: "
                  f"{100 * used2 / args.seconds:.2f} % of a core ({used2 / n * 1e6:.0f} us per window)")
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            text, after = remote_probe_cost(tmp, columns, window, args.seconds)
            used3 = after - (before.ru_utime + before.ru_stime)
            print(f"    + the SSH path's probe process on the host (python3 -c, streaming to a pipe): "
                  f"{100 * used3 / args.seconds:.2f} % of a core, {text}")


def remote_probe_cost(tmp: str, columns: list, window: float, seconds: float) -> str:
    """The SSH path's host side: the probe as ``python3 -c`` runs it (its own process, time.sleep
    ticks, one line per window to a pipe), in a private mount namespace with the tree on /sys/class."""
    argv = burst.command(columns, burst.BurstOptions(window=window))
    inner = f"mount --bind {tmp}/class /sys/class && exec timeout {seconds:g} " + shlex.join(argv)
    proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", inner],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines, late = 0, []
    for raw in proc.stdout:
        if raw.startswith(b"w "):
            lines += 1
            late.append(int(raw.split()[3]) / 1e6)
    proc.communicate(timeout=30)  # reaped: its CPU is now in RUSAGE_CHILDREN
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    late.sort()
    p99 = late[int(0.99 * (len(late) - 1))] if late else float("nan")
    return (f"{lines} windows, lateness p50 {statistics.median(late) * 1e3:.2f} ms p99 {p99 * 1e3:.2f} ms",
            usage.ru_utime + usage.ru_stime)


def _start_injector(tmp: Path, sys_class: Path, ethtool_dir: Path, *extra: str) -> tuple[subprocess.Popen, Path]:
    log = tmp / "truth.json"
    argv = [sys.executable, "-m", "fabric_exporter.lab.burst_injector", "--sys-class", str(sys_class),
            "--ethtool-dir", str(ethtool_dir), "--log", str(log), *extra]
    return subprocess.Popen(argv, env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}), log


def _sample(tmp: Path, window: float, duration: float, *injector_args: str):
    model = RoceHost.build("gpu-001", "mlx5", nics=1)
    model.advance(5)
    model.write_sysfs(tmp / "sys" / "class")
    model.write_tool_outputs(tmp / "data")
    o = burst.BurstOptions(window=window, sysfs_root=str(tmp / "sys"), ethtool_stats_dir=str(tmp / "data" / "ethtool"),
                           signals=tuple(burst.SIGNALS))
    start = time.monotonic() + 1.0
    proc, log = _start_injector(tmp, tmp / "sys" / "class", tmp / "data" / "ethtool", "--duration", str(duration),
                                "--start-at", repr(start), *injector_args)

    async def run():
        await asyncio.sleep(0.5)
        _, ports = _result_and_ports(parse_host_dump(model.render_dump()), "gpu-001", RoceNicOptions(burst=o))
        columns = burst.plan_columns(ports, "gpu-001", o, HW_MAPPER, ETHTOOL_MAPPER, driver_family)
        acc = Recording()
        runner = burst.LocalRunner(columns, o, acc)
        runner.start()
        while proc.poll() is None:
            await asyncio.sleep(0.5)
        await asyncio.sleep(0.5)
        await runner.close()
        return acc, columns

    acc, columns = asyncio.run(run())
    if proc.wait(30) != 0:
        raise SystemExit("injector failed")
    return acc, columns, json.loads(log.read_text())


def recall(args) -> None:
    window = parse_duration(args.window)
    with tempfile.TemporaryDirectory(prefix="bench-burst-") as tmp:
        lengths = ["--lengths-ms", args.lengths_ms] if args.lengths_ms else []
        acc, columns, truth = _sample(Path(tmp), window, args.seconds, "--seed", str(args.seed), "--noise",
                                      "--min-ms", "150", "--max-ms", "500", *lengths)
    pause = next(c.labels for c in columns if dict(c.labels)["signal"] == "pfc_rx_pause_time")
    mine = [e for e in acc.events if e.signal_labels == pause]
    rows = []
    # a burst's counts may land until written_until (the injector's writer held up by the loaded machine)
    spans = [(s, max(e, w)) for (s, e), w in zip(truth["bursts"], truth["written_until"])]
    truth_len = {span: e - s for span, (s, e) in zip(spans, truth["bursts"])}
    for s, e in spans:
        found = [b for b in mine if b.start < e and s < b.end]
        rows.append((truth_len[(s, e)], bool(found), max((b.peak for b in found), default=0.0)))
    false = sum(1 for b in acc.events if not any(b.start < e and s < b.end for s, e in spans))
    long_ = [r for r in rows if r[0] >= 0.2]
    short = [r for r in rows if r[0] < 0.2]
    short150 = [r for r in rows if r[0] < 0.175]
    errors = sorted(abs(1.0 - r[2]) for r in long_)
    totals = acc.totals()
    by_name = {c.probe.rsplit("/", 1)[1]: c.probe for c in columns}
    conserved = all(totals[by_name[n]] == v for n, v in truth["added"].items())
    busy = sum(e - s for s, e in truth["bursts"])
    print(f"window {window * 1000:g} ms, {args.seconds:g} s, {len(rows)} bursts "
          f"({args.lengths_ms or '150-500'} ms, random phases), "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"  recall >= 200 ms: {sum(r[1] for r in long_)}/{len(long_)}; < 200 ms: {sum(r[1] for r in short)}/"
          f"{len(short)} (150-175 ms: {sum(r[1] for r in short150)}/{len(short150)})")
    if errors:
        print(f"  peak error (bursts >= 200 ms): median {statistics.median(errors):.3f}, max {errors[-1]:.3f}")
    print(f"  false bursts (any signal): {false}; counts conserved exactly: {conserved}")
    print(f"  ticks {acc.ticks}, missed {acc.missed}, lateness p99 "
          f"{sorted(acc.lateness)[int(0.99 * (len(acc.lateness) - 1))] * 1e3:.2f} ms")
    one = min(truth["bursts"], key=lambda b: b[1] - b[0]) if truth["bursts"] else None
    if one:
        print(f"  the 30 s-average view: a {1e3 * (one[1] - one[0]):.0f} ms burst alone is "
              f"{100 * (one[1] - one[0]) / 30:.2f} % paused over 30 s; this run's whole {busy:.1f} s of bursts "
              f"average {100 * busy / args.seconds:.1f} % over {args.seconds:g} s")


def quiet(args) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-burst-") as tmp:
        acc, columns, truth = _sample(Path(tmp), 0.1, args.minutes * 60, "--quiet", "--noise")
    totals = acc.totals()
    by_name = {c.probe.rsplit("/", 1)[1]: c.probe for c in columns}
    conserved = all(totals[by_name[n]] == v for n, v in truth["added"].items())
    print(f"quiet {args.minutes:g} min at 100 ms windows ({acc.ticks} ticks, {acc.missed} missed), noise below "
          f"thresholds: false bursts {len(acc.events)} over {len(columns)} signals; counts conserved: {conserved}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("cost")
    c.add_argument("--seconds", type=float, default=20)
    c.add_argument("--ports", type=int, default=8)
    c.add_argument("--counters", type=int, default=40)
    r = sub.add_parser("recall")
    r.add_argument("--seconds", type=float, default=120)
    r.add_argument("--window", default="100ms")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--lengths-ms", default="", help="burst lengths to cycle (e.g. 150), instead of random 150-500")
    q = sub.add_parser("quiet")
    q.add_argument("--minutes", type=float, default=10)
    args = ap.parse_args()
    {"cost": cost, "recall": recall, "quiet": quiet}[args.what](args)


if __name__ == "__main__":
    main()
