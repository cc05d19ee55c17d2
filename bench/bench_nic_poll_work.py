"""Benchmark: the daemon's own work for one 8-NIC host poll, in process (no SSH, no scheduler).

    PYTHONPATH=exporter python bench/bench_nic_poll_work.py [--moving 0.2] [--polls 300]

Per poll of a lab mlx5 host's filtered dump (as the remote script sends it): split the dump, parse +
map, and build the store's snapshot
from the previous one. ``--moving``: share of the counters that move between polls (the lab model
moves them all; a real host's errors, CNPs and idle priorities stand still); the others keep the
first dump's value (picked by a stable hash). Prints CPU ms per poll for each step. To compare two
checkouts, run it with each one's ``PYTHONPATH`` in turn, alternating (the same dumps: same seed).

The poll goes through the host's kept port label sets as the collector's does (``PortLabels``).
``--held HOSTS``: then polls that many hosts in turn and prints the bytes held per host after the
last poll (tracemalloc, by file: the collector's kept state, the snapshot and its render cache),
for memory per part.
"""

from __future__ import annotations

import argparse
import gc
import re
import time
import tracemalloc
import zlib

from fabric_exporter.collectors.roce_nic import RoceNicOptions, result_from_dump
from fabric_exporter.collectors.roce_nic.ports import PortLabels
from fabric_exporter.lab.roce_host import RoceHost
from fabric_exporter.parsers.rdma import parse_host_dump
from fabric_exporter.serving.store import build_snapshot

COUNTER = re.compile(r"^(\s*[^:@\n][^:\n]*:\s*)(\d+)$")


def dumps(moving: float, epochs: int = 6) -> list[str]:
    host = RoceHost.build("h", "mlx5", nics=8, seed=1)
    host.advance(60)
    out, first = [], {}
    for e in range(epochs):
        host.advance(30)
        section, lines = "", []
        for line in host.render_dump(counters="mapped").split("\n"):
            if line.startswith("@@"):
                section = line
            elif (m := COUNTER.match(line)) is not None:
                key = (section, m.group(1).strip())
                if e == 0:
                    first[key] = m.group(2)
                elif zlib.crc32(repr(key).encode()) % 10_000 >= moving * 10_000 and key in first:
                    line = m.group(1) + first[key]
            lines.append(line)
        out.append("\n".join(lines))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--moving", type=float, default=1.0)
    ap.add_argument("--polls", type=int, default=300)
    ap.add_argument("--held", type=int, metavar="HOSTS", help="bytes held per host after polling this many hosts")
    args = ap.parse_args()
    texts = dumps(args.moving)
    options = RoceNicOptions()
    if args.held:
        held(texts, options, args.held)
        return
    labels, path = PortLabels("h"), "plain"

    def poll(dump):
        return result_from_dump(dump, "h", options, labels)

    snapshot = None
    for e in range(3):  # warm: plans compiled, first render cached
        snapshot = build_snapshot("f", poll(parse_host_dump(texts[e])).samples, 60, previous=snapshot)
    split = work = render = 0.0
    for i in range(args.polls):
        t0 = time.process_time()
        dump = parse_host_dump(texts[i % len(texts)])
        t1 = time.process_time()
        result = poll(dump)
        t2 = time.process_time()
        snapshot = build_snapshot("f", result.samples, 60, previous=snapshot)
        t3 = time.process_time()
        split, work, render = split + t1 - t0, work + t2 - t1, render + t3 - t2
    n = args.polls / 1e3
    print(f"{path} moving={args.moving} samples={len(result.samples)} CPU ms per poll: split {split / n:.3f} "
          f"parse+map {work / n:.3f} render {render / n:.3f} total {(split + work + render) / n:.3f}")


def held(texts: list[str], options: RoceNicOptions, hosts: int) -> None:
    """Poll ``hosts`` hosts 4 times each (the same dumps in turn) and print what stays allocated per
    host after the last poll, from before the first (tracemalloc: Python objects, not RSS)."""
    names = [f"h{i:04d}" for i in range(hosts)]
    state = {name: PortLabels(name) for name in names}
    snapshots: dict = {}
    # one host polled before tracing: plans compiled, family headers and caches made once per process
    build_snapshot("f", result_from_dump(parse_host_dump(texts[0]), "x", options, PortLabels("x")).samples, 60)
    gc.collect()
    tracemalloc.start()
    for e in range(4):
        for name in names:
            result = result_from_dump(parse_host_dump(texts[e % len(texts)]), name, options, state[name])
            snapshots[name] = build_snapshot("f", result.samples, 60, previous=snapshots.get(name))
    del result
    gc.collect()
    total = tracemalloc.get_traced_memory()[0]
    by_file = tracemalloc.take_snapshot().statistics("filename")
    tracemalloc.stop()
    print(f"{hosts} hosts, held per host after 4 polls: {total / hosts / 1024:.1f} KiB")
    for stat in by_file[:8]:
        print(f"  {stat.size / hosts / 1024:7.1f} KiB  {stat.traceback[0].filename.split('fabric_exporter/')[-1]}")


if __name__ == "__main__":
    main()
