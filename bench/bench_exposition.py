"""Exposition cost: our per-poll renderer and per-scrape join vs prometheus_client, same run.

    PYTHONPATH=exporter python bench/bench_exposition.py [--samples 100000]

Reports ratios against prometheus_client's generate_latest on the same samples (the baseline
measured in the same run; absolute times on a shared machine are noise).

The gzip body (``--gzip``): its size against one gzip stream of the same text (gzip.compress of the
plain body at the same level), the CPU of a poll round re-rendering every target (snapshots and
self-metrics), of a gzip scrape right after it and of one between polls, and the RSS; one JSON line.
``--compare DIR`` runs that in fresh processes alternately with this checkout's package and DIR's
(another checkout's ``exporter/``), ``--runs`` times each, and prints min and median of each figure:

    PYTHONPATH=exporter python bench/bench_exposition.py --gzip --samples 1600000 --hosts 10000 \
        --compare /work/main/exporter --runs 5

The patched render (``--kept``, also with ``--compare``): each target's samples as a collector with
kept samples hands them out (one KeptSample per NIC, the same object every poll; its counters new
Sample objects every poll, ``--moving`` of them with a new value, under the NIC's labels dict),
rendered poll after poll by each target's TargetRenderer alone (no gzip, no store): the CPU of a
poll round and the bytes the render caches hold (bench/heldbytes.py); one JSON line.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import CollectorRegistry

from fabric_exporter.samples import KeptSample, Sample
from fabric_exporter.serving.store import SnapshotStore, build_snapshot

NAMES = ["fabric_roce_rx_bytes_total", "fabric_roce_tx_bytes_total", "fabric_roce_rx_packets_total",
         "fabric_roce_tx_packets_total"]


def roce_families(count: int) -> list[str]:
    """``count`` RoCE NIC families of the catalog (a real host has ~50: ~12 lines each)."""
    from fabric_exporter.catalog import CATALOG

    names = [spec.name for spec in CATALOG.values() if spec.name.startswith("fabric_roce_") and spec.exposed_type == "counter"
             and spec.allows_labels(spec.name, ("fabric", "host", "device", "port", "netdev"))]
    return (NAMES + [n for n in names if n not in NAMES])[:count]


def make_samples(n: int, hosts: int, families: int = 4) -> dict[str, list[Sample]]:
    per_host: dict[str, list[Sample]] = {}
    per = n // hosts
    names = roce_families(families)
    for h in range(hosts):
        host = f"gpu-{h:05d}"
        rows = []
        for i in range(per):
            nic = (i // families) % 8 if families == 4 else i // families
            rows.append(Sample(names[i % families], {"host": host, "device": f"mlx5_{nic}", "port": "1",
                                                     "netdev": f"ens{nic}np0"}, 10_000_000_000 + i * 7919))
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


def moved(per_host: dict[str, list[Sample]], poll: int) -> dict[str, list[Sample]]:
    """The next poll: every counter moved (new Sample objects, as a collector hands out)."""
    return {host: [Sample(s.name, s.labels, s.value + poll * 1_000_003) for s in rows] for host, rows in per_host.items()}


def gzip_figures(per_host: dict[str, list[Sample]], rounds: int = 3) -> dict:
    """One process's gzip figures (this package, whichever checkout PYTHONPATH points at)."""
    from fabric_exporter.scheduler import TargetState
    from fabric_exporter.serving.selfmetrics import ReloadStatus, SelfMetrics

    store = SnapshotStore()
    metrics = SelfMetrics(ReloadStatus())
    states = {host: TargetState("g", host, "roce_nic", "bench", "ssh", 30.0, 3600.0) for host in per_host}

    def poll_round(samples: dict[str, list[Sample]]) -> None:
        now = time.monotonic()
        for host, rows in samples.items():
            key = ("g", host)
            snapshot = build_snapshot("bench", rows, 3600, previous=store.get(key))
            store.put(key, snapshot)
            state = states[host]
            state.polls += 1
            state.state, state.samples, state.last_duration = "ok", len(rows), 0.25 + state.polls / 1000
            state.last_poll_end = state.last_success = time.time()
            metrics.target_changed(state, now + 3600)

    def scrape() -> list[bytes]:
        now = time.monotonic()
        return store.parts(now, gzip=True) + metrics.parts(now, gzip=True)

    poll_round(per_host)
    scrape()  # the self-metrics' slot layout, once
    polls, after_polls, between = [], [], []
    body: list[bytes] = []
    for n in range(1, rounds + 1):
        samples = moved(per_host, n)
        t = time.process_time()
        poll_round(samples)
        polls.append(time.process_time() - t)
        t = time.process_time()
        body = scrape()
        after_polls.append(time.process_time() - t)
        t = time.process_time()
        scrape()
        between.append(time.process_time() - t)
    packed = b"".join(body)
    now = time.monotonic()
    plain = store.render(now) + metrics.render(now)
    if gzip.decompress(packed) != plain:
        raise SystemExit("the gzip body does not decode to the plain body")
    t = time.process_time()
    one = gzip.compress(plain, 1, mtime=0)
    one_cpu = time.process_time() - t
    return {"plain_bytes": len(plain), "gzip_bytes": len(packed), "one_stream_bytes": len(one),
            "ratio": len(packed) / len(one), "one_stream_cpu": one_cpu,
            "poll_round_cpu": min(polls), "scrape_after_polls_cpu": min(after_polls),
            "scrape_between_polls_cpu": min(between),
            "rss_mib": int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 1024,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def kept_samples(n: int, hosts: int, families: int) -> dict[str, list[Sample]]:
    """``n`` samples over ``hosts`` targets, ``families`` series per NIC under one labels dict: the
    first a KeptSample (kept by the caller), the others counters."""
    names = roce_families(families)
    per_host: dict[str, list[Sample]] = {}
    for h in range(hosts):
        host = f"gpu-{h:05d}"
        rows: list[Sample] = []
        for nic in range(max(1, n // hosts // families)):
            labels = {"host": host, "device": f"mlx5_{nic}", "port": "1", "netdev": f"ens{nic}np0"}
            rows.append(KeptSample(names[0], labels, 1.0))
            rows += [Sample(name, labels, 10_000_000_000 + (nic * families + i) * 7919)
                     for i, name in enumerate(names[1:])]
        per_host[host] = rows
    return per_host


def kept_figures(per_host: dict[str, list[Sample]], moving: float, rounds: int = 5) -> dict:
    """One process's patched-render figures (this package, whichever checkout PYTHONPATH points at)."""
    from heldbytes import line_cache_bytes
    from fabric_exporter.serving.exposition import TargetRenderer

    renderers = {host: TargetRenderer(("fabric", "bench"), verify=False) for host in per_host}
    every = round(1 / moving) if moving else 0  # every how many counters one moves

    def next_poll(samples: dict[str, list[Sample]], poll: int) -> dict[str, list[Sample]]:
        return {host: [s if type(s) is KeptSample else
                       Sample(s.name, s.labels, s.value + (poll * 1_000_003 if every and k % every == 0 else 0))
                       for k, s in enumerate(rows)] for host, rows in samples.items()}

    for host, rows in per_host.items():
        renderers[host].render(rows)
    rounds_cpu = []
    samples = per_host
    for poll in range(1, rounds + 1):
        samples = next_poll(samples, poll)
        t = time.process_time()
        for host, rows in samples.items():
            renderers[host].render(rows)
        rounds_cpu.append(time.process_time() - t)
    held = [line_cache_bytes(r.lines) for r in renderers.values()]
    n = sum(map(len, samples.values()))
    return {"samples": n, "render_round_cpu": min(rounds_cpu), "render_us_per_sample": min(rounds_cpu) / n * 1e6,
            "cache_chunks_mib": sum(h["chunks"] for h in held) / 2**20,
            "cache_layout_mib": sum(h["layout"] for h in held) / 2**20,
            "cache_layout_bytes_per_sample": sum(h["layout"] for h in held) / n,
            "rss_mib": int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 1024}


def compare(args: argparse.Namespace) -> None:
    """Alternate fresh processes of both checkouts; min and median of each figure."""
    mine = str(Path(__file__).resolve().parent.parent / "exporter")
    runs: dict[str, list[dict]] = {"this": [], "other": []}
    for _ in range(args.runs):
        for name, path in (("other", str(args.compare)), ("this", mine)):
            mode = ["--kept", "--moving", str(args.moving)] if args.kept else ["--gzip"]
            out = subprocess.run([sys.executable, __file__, *mode, "--samples", str(args.samples),
                                  "--hosts", str(args.hosts), "--families", str(args.families)], env={**os.environ, "PYTHONPATH": path},
                                 capture_output=True, text=True, timeout=3600, check=True).stdout
            runs[name].append(json.loads(out.splitlines()[-1]))
    print(f"{args.samples} samples across {args.hosts} targets x {args.families} families, {args.runs} runs each, alternated "
          f"(this: {mine}; other: {args.compare}); min / median")
    for key in runs["this"][0]:
        row = []
        for name in ("other", "this"):
            values = [r[key] for r in runs[name]]
            row.append(f"{name} {min(values):.4g} / {statistics.median(values):.4g}")
        ratio = statistics.median(r[key] for r in runs["this"]) / statistics.median(r[key] for r in runs["other"])
        print(f"  {key:26s} {row[0]:>28s}   {row[1]:>28s}   this/other (medians) {ratio:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--hosts", type=int, default=250)
    ap.add_argument("--families", type=int, default=4, help="families per target (52: a RoCE host's shape)")
    ap.add_argument("--gzip", action="store_true", help="the gzip body's figures, as one JSON line")
    ap.add_argument("--kept", action="store_true", help="the patched render's figures, as one JSON line")
    ap.add_argument("--moving", type=float, default=0.2, help="--kept: the share of counters moving per poll")
    ap.add_argument("--compare", type=Path, help="another checkout's exporter/ dir, run alternately with --gzip "
                                                 "(or --kept)")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    if args.compare is not None:
        compare(args)
        return
    if args.gzip:
        print(json.dumps(gzip_figures(make_samples(args.samples, args.hosts, args.families))))
        return
    if args.kept:
        print(json.dumps(kept_figures(kept_samples(args.samples, args.hosts, args.families), args.moving)))
        return
    per_host = make_samples(args.samples, args.hosts, args.families)
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
