"""Exposition cost: our per-poll renderer and per-scrape join vs prometheus_client, same run.

    PYTHONPATH=exporter python bench/bench_exposition.py [--samples 100000]

Reports ratios against prometheus_client's generate_latest on the same samples (the baseline
measured in the same run; absolute times on a shared machine are noise).
"""

from __future__ import annotations

import argparse
import time

from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import CollectorRegistry

from fabric_exporter.samples import Sample
from fabric_exporter.store import SnapshotStore, build_snapshot

NAMES = ["fabric_roce_rx_bytes_total", "fabric_roce_tx_bytes_total", "fabric_roce_rx_packets_total",
         "fabric_roce_tx_packets_total"]


def make_samples(n: int, hosts: int) -> dict[str, list[Sample]]:
    per_host: dict[str, list[Sample]] = {}
    per = n // hosts
    for h in range(hosts):
        host = f"gpu-{h:05d}"
        rows = []
        for i in range(per):
            rows.append(Sample(NAMES[i % 4], {"host": host, "device": f"mlx5_{(i // 4) % 8}", "port": "1",
                                              "netdev": f"ens{(i // 4) % 8}np0"}, 10_000_000_000 + i * 7919))
        per_host[host] = rows
    return per_host


class Fixed:
    def __init__(self, per_host):
        self.per_host = per_host

    def collect(self):
        fams = {}
        for host, rows in self.per_host.items():
            for s in rows:
                labels = {"fabric": "bench", **s.labels}
                fam = fams.get(s.name)
                if fam is None:
                    fam = fams[s.name] = CounterMetricFamily(s.name.removesuffix("_total"), "x",
                                                             labels=sorted(labels))
                fam.add_metric([labels[k] for k in sorted(labels)], s.value)
        return list(fams.values())


def timed(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--hosts", type=int, default=250)
    args = ap.parse_args()
    per_host = make_samples(args.samples, args.hosts)
    n = sum(map(len, per_host.values()))

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Fixed(per_host))
    baseline = timed(lambda: generate_latest(registry))

    store = SnapshotStore()

    def render_all():
        for host, rows in per_host.items():
            store.put(("g", host), build_snapshot("bench", rows, 60))

    render = timed(render_all)
    scrape = timed(lambda: store.render(), repeat=5)
    print(f"samples: {n} across {args.hosts} targets")
    print(f"prometheus_client generate_latest (baseline): {baseline:.3f} s CPU, {baseline / n * 1e6:.2f} us/sample")
    print(f"render once per poll (all targets):         {render:.3f} s CPU  = {render / baseline:.2f}x baseline")
    print(f"scrape: join cached bytes:                  {scrape:.4f} s CPU  = {scrape / baseline:.4f}x baseline")


if __name__ == "__main__":
    main()
