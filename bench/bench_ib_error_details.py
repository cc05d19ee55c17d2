"""What the error-detail read (option ``error_details``) adds to an infiniband poll, same fabric, same run.

    PYTHONPATH=exporter python bench/bench_ib_error_details.py [--spines 2 --leaves 4 --hcas-per-leaf 4]
                                                             [--erroring 0,4,16] [--rounds 5]

Starts a simulated fat tree (ibsim + opensm), then for each count K of erroring ports (PortRcvErrors
and PortXmitDiscards set non-zero on K ports, so each is read with both ``perfquery -E`` and ``-D``)
alternates polls with ``error_details`` off and on. Prints, per K, the poll wall and CPU time
(tools + exporter) off and on, the ratio on/off, and the detail reads' own wall time per port (the
``perfquery_E``/``perfquery_D`` durations the collector records). Absolute times on a shared machine
are noise; the ratios and the per-port figure are the result.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fabric_exporter.lab.ibsim import FatTree, IbsimFabric  # noqa: E402
from tests.harness.infiniband import CollectorHarness, group_for  # noqa: E402

from cputime import children_cpu  # noqa: E402


def timed(harness: CollectorHarness):
    c0, p0, t0 = children_cpu(), time.process_time(), time.perf_counter()
    result = harness.poll()
    return time.perf_counter() - t0, children_cpu() - c0 + time.process_time() - p0, result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spines", type=int, default=2)
    ap.add_argument("--leaves", type=int, default=4)
    ap.add_argument("--hcas-per-leaf", type=int, default=4)
    ap.add_argument("--erroring", default="0,4,16", help="comma-separated counts of erroring ports")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    topo = FatTree(spines=args.spines, leaves=args.leaves, hcas_per_leaf=args.hcas_per_leaf)
    with tempfile.TemporaryDirectory() as tmp, IbsimFabric(topo, tmp, sockname=f"bench{os.getpid()}") as fabric:
        env = fabric.env()
        os.chdir(tmp)  # libumad2sim writes ./sys-<pid> into the tools' working directory
        off = CollectorHarness(group_for({"env": env, "mad_timeout_ms": 300}, timeout="25s"))
        on = CollectorHarness(group_for({"env": env, "mad_timeout_ms": 300, "error_details": True,
                                         "error_details_max_ports": 100000}, timeout="25s"))
        off.poll(), on.poll()  # topology, memos
        candidates = [(link.a, link.a_port) for link in topo.links]  # linked ports: the MADs reach them
        set_ports: list[tuple[str, int]] = []
        total_ports = None
        print(f"fabric: {len(topo.nodes)} nodes; rounds {args.rounds}; median")
        print(f"{'erroring':>8} {'wall off':>9} {'wall on':>9} {'ratio':>6} {'cpu off':>8} {'cpu on':>8} "
              f"{'ratio':>6} {'detail s/port':>13}")
        for k in (int(x) for x in args.erroring.split(",")):
            for name, port in candidates[len(set_ports):k]:
                fabric.set_counter(name, port, "PortRcvErrors", 1)
                fabric.set_counter(name, port, "PortXmitDiscards", 1)
                set_ports.append((name, port))
            rows_off, rows_on, per_port = [], [], []
            for _ in range(args.rounds):
                w, c, r = timed(off)
                rows_off.append((w, c))
                w, c, r = timed(on)
                rows_on.append((w, c))
                total_ports = sum(1 for s in r.samples if s.name == "fabric_ib_port_state_id")
                durations = {s.labels["tool"]: s.value for s in r.samples if s.name == "fabric_ib_sweep_duration_seconds"}
                if k:
                    per_port.append((durations.get("perfquery_E", 0) + durations.get("perfquery_D", 0)) / k)
                if r.problems:
                    print("  partial poll:", r.problems[:2])
            wo, co = (statistics.median(x[i] for x in rows_off) for i in (0, 1))
            wn, cn = (statistics.median(x[i] for x in rows_on) for i in (0, 1))
            pp = f"{statistics.median(per_port):.4f}" if per_port else "-"
            print(f"{k:>8} {wo:>9.3f} {wn:>9.3f} {wn / wo:>6.2f} {co:>8.3f} {cn:>8.3f} {cn / co:>6.2f} {pp:>13}")
        print(f"ports in the fabric: {total_ports}")


if __name__ == "__main__":
    main()
