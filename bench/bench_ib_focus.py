"""What the IB focus set costs the regular sweep (issue 23: the sweep's duration grows <= 10 %).

    PYTHONPATH=exporter python bench/bench_ib_focus.py [--spines 8 --leaves 32 --hcas-per-leaf 10] [--rounds 7]

Starts a simulated fat tree (ibsim + opensm; default 40 switches, 320 HCAs) and one infiniband
collector with ``focus: true``: ``focus_top_k`` 16 plus 16 configured ports on 16 different nodes
(the costly shape: one perfquery per node, plus one ``--vlxmitcounters`` per port), read every
``focus_interval`` (1 s). Then, in the same run, rounds alternate (the order of the two phases
alternates too):

- off: the focus task is stopped, a quiet second, one poll (the sweeps) timed;
- on: the focus task runs (started a second before, so its rounds overlap the sweep), one poll timed.

Reports the poll wall time (the sweep the daemon runs every interval) off and on, min and median over
the rounds, and their ratio; the focus task's own figures (reads, late rounds). Prints figures only:
absolute times on a shared machine are noise, the same-run ratio is the result.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fabric_exporter.collectors.base import PollContext  # noqa: E402
from fabric_exporter.collectors.infiniband import InfinibandCollector  # noqa: E402
from fabric_exporter.collectors.infiniband.focus import FocusTask  # noqa: E402
from fabric_exporter.lab.ibsim import FatTree, IbsimFabric  # noqa: E402
from fabric_exporter.transport.factory import Transports  # noqa: E402
from tests.harness.infiniband import group_for  # noqa: E402


async def _stop(col: InfinibandCollector) -> None:
    task, col._focus_task = col._focus_task, None  # noqa: SLF001 - the bench pauses the task it measures
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def _start(col: InfinibandCollector) -> None:
    col._focus_task = asyncio.get_running_loop().create_task(FocusTask(col.tools, col.focus).run())  # noqa: SLF001


async def run(fabric: IbsimFabric, topo: FatTree, rounds: int, extra: dict, verbose: bool = False) -> None:
    nodes = [n.description for n in topo.node_order()][:16]
    options = {"env": fabric.env(), "focus": True, "focus_top_k": 16, "focus_interval": "1s",
               "focus_ports": [f"{name}:1" for name in nodes], **extra}
    group = group_for(options, timeout="25s")
    transports = Transports()
    col = InfinibandCollector(PollContext(group, group.hosts[0], transports))
    loop = asyncio.get_running_loop()
    try:
        for _ in range(2):  # discovery, then a steady-state poll that picks the focus set
            await col.poll()
        await _stop(col)
        print(f"focus set: {len(col.focus.ports)} ports on {len({k[0] for k in col.focus.ports})} nodes")
        off: list[float] = []
        on: list[float] = []
        for i in range(rounds):
            phases = (("off", off), ("on", on))
            for phase, rows in phases if i % 2 == 0 else phases[::-1]:  # alternate the order: no position bias
                if phase == "on":
                    _start(col)
                await asyncio.sleep(1.2)  # on: a focus round or more before the sweep starts
                started = loop.time()
                result = await col.poll()
                rows.append(loop.time() - started)
                tools = {x.labels["tool"]: round(x.value * 1000) for x in result.samples
                         if x.name == "fabric_ib_sweep_duration_seconds"}
                if verbose:
                    print(f"  {phase}: poll {rows[-1] * 1000:.0f} ms, tools (ms) {tools}")
                await _stop(col)  # the poll restarts the task at its end: stopped between phases
                if result.problems:
                    print("partial poll:", result.problems[:2])
        reads = dict(col.focus.reads)
        late = col.focus.late_rounds
    finally:
        await _stop(col)
        await col.close()
        await transports.close()
    for stat in ("min", "median"):
        fn = min if stat == "min" else statistics.median
        a, b = fn(off), fn(on)
        print(f"{stat:>6}: sweep poll off {a * 1000:7.1f} ms   on {b * 1000:7.1f} ms   on/off {b / a:5.3f}")
    print(f"focus reads: {reads}, late rounds: {late}, rounds: {rounds}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spines", type=int, default=8)
    ap.add_argument("--leaves", type=int, default=32)
    ap.add_argument("--hcas-per-leaf", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-vl", action="store_true", help="focus_vl_xmit_wait: false")
    ap.add_argument("--no-yield", action="store_true", help="focus_yield_to_sweep: false")
    ap.add_argument("--verbose", action="store_true", help="print each poll")
    ap.add_argument("--concurrency", type=int, default=2, help="focus_concurrency")
    args = ap.parse_args()
    extra = {"focus_concurrency": args.concurrency, "focus_vl_xmit_wait": not args.no_vl,
             "focus_yield_to_sweep": not args.no_yield}
    print("options:", extra)
    topo = FatTree(spines=args.spines, leaves=args.leaves, hcas_per_leaf=args.hcas_per_leaf)
    with tempfile.TemporaryDirectory() as tmp, IbsimFabric(topo, tmp, sockname=f"bfocus{os.getpid()}") as fabric:
        os.chdir(tmp)  # the tools run here: libumad2sim writes ./sys-<pid> into their working directory
        time.sleep(3)  # opensm keeps the fabric busy for a while after SUBNET UP
        asyncio.run(run(fabric, topo, args.rounds, extra, args.verbose))


if __name__ == "__main__":
    main()
