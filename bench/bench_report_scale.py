"""``fabric-exporter report --since 7d`` over a cluster-shaped week backfilled into a real Prometheus
(issue 27 item 4): per cluster size, the backfill's time and TSDB size, the report's wall time, peak
RSS and number of queries, Prometheus's own peak RSS, and whether the report found what was planted.

    PYTHONPATH=exporter:. python bench/bench_report_scale.py [--scales 0.002,0.005,0.01] [--interval 120]
        [--days 7] [--code DIR] [--runs 1]

The data (tests/harness/cluster_week.py) is the report's series for a fraction ``scale`` of a
10,000-GPU cluster (1.0 = 1,250 hosts x 8 NICs, 800 switches x 64 ports, ~40k IB ports), a week of
raw samples every ``--interval`` seconds (30 s in production: a coarser interval keeps a week
within this machine's disk and time; the report's step, and so the points it asks for per series,
do not depend on it). Everything is written under a temp dir and deleted. --code points at another
checkout's exporter/ for a before/after in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "exporter"), str(ROOT)]

from fabric_exporter.lab.ports import free_tcp_port  # noqa: E402
from fabric_exporter.lab.prometheus import PROMETHEUS, Prometheus  # noqa: E402
from tests.harness.cluster_week import Cluster, write  # noqa: E402
from tests.harness.hostile_prometheus import run_measured  # noqa: E402

RULES = ROOT / "alerts" / "fabric-exporter.rules.yaml"


def _vmhwm_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def _du_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def one_size(scale: float, days: float, interval: int, codes: list[str], runs: int) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="report-scale-") as tmp:
        work = Path(tmp)
        end = int(time.time()) // 60 * 60
        cluster = Cluster(scale, end - int(days * 86400), end, interval=interval)
        om = work / "data.om"
        t0 = time.monotonic()
        counts = write(str(om), cluster)
        gen_s = time.monotonic() - t0
        om_mb = om.stat().st_size / 1e6
        t0 = time.monotonic()
        argv = ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=200h", str(om),
                str(work / "data")]
        r = subprocess.run(argv, capture_output=True, text=True)
        backfill_s = time.monotonic() - t0
        if r.returncode:
            raise SystemExit(r.stdout[-2000:] + r.stderr[-2000:])
        om.unlink()
        tsdb_mb = _du_mb(work / "data")
        prom = Prometheus(work, job="nothing", targets=[f"127.0.0.1:{free_tcp_port()}"], rule_files=[str(RULES)],
                          interval="1m")
        prom.start()
        try:
            for i in range(runs):
                for code in codes:
                    env = {**os.environ, "PYTHONPATH": f"{code}:{ROOT}"}
                    out = work / f"out-{i}"
                    run = run_measured([sys.executable, "-m", "fabric_exporter", "report", "--prometheus-url",
                                        prom.base, "--since", f"{days:g}d", "--out", str(out), "--timeout", "600",
                                        "--deadline", "1800"], env=env, cwd=tmp, kill_after=2400)
                    summary = json.loads((out / "summary.json").read_text()) if run.returncode == 0 else None
                    found = None
                    if summary:
                        fab = summary["fabrics"]
                        found = {"episodes": {f: fab[f]["congestion"]["episodes_count"] for f in fab},
                                 "ib_link_downs": fab["ib"]["stability"]["link_downs_count"],
                                 "roce_link_downs": fab["roce"]["stability"]["link_downs_count"],
                                 "ib_flapping_ports": fab["ib"]["stability"]["ports_flapping_count"],
                                 "roce_flapping_ports": fab["roce"]["stability"]["ports_flapping_count"]}
                    rows.append({
                        "scale": scale, "code": code, "series": counts["series"], "samples": counts["samples"],
                        "openmetrics_mb": round(om_mb), "generate_s": round(gen_s, 1),
                        "backfill_s": round(backfill_s, 1), "tsdb_mb": round(tsdb_mb, 1),
                        "report_exit": run.returncode, "report_s": round(run.seconds, 1),
                        "report_peak_rss_mb": round(run.peak_rss_mb),
                        "queries": summary["generated"]["prometheus_queries_count"] if summary else None,
                        "step_s": summary["window"]["step_seconds"] if summary else None,
                        "found_as_planted": found == cluster.planted if found else False,
                        "found": found, "error": None if summary else run.stderr.strip().splitlines()[-1:],
                        "notes": summary["generated"]["notes"] if summary else None,
                    })
                    print(json.dumps(rows[-1]), flush=True)
            prom_rss = _vmhwm_mb(prom.proc.pid)
        finally:
            prom.stop()
        for row in rows:
            row["prometheus_peak_rss_mb"] = round(prom_rss)
    return rows


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--scales", default="0.002,0.005,0.01")
    p.add_argument("--days", type=float, default=7)
    p.add_argument("--interval", type=int, default=120)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--code", action="append", default=[],
                   help="a fabric_exporter package's parent dir (repeatable; default this checkout's exporter/)")
    a = p.parse_args()
    assert PROMETHEUS
    # killed: stop Prometheus and delete the temp dir on the way out
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    codes = a.code or [str(ROOT / "exporter")]
    rows = []
    for scale in (float(s) for s in a.scales.split(",")):
        rows += one_size(scale, a.days, a.interval, codes, a.runs)
    print()
    cols = ("scale", "code", "series", "samples", "backfill_s", "tsdb_mb", "report_exit", "report_s",
            "report_peak_rss_mb", "queries", "prometheus_peak_rss_mb", "found_as_planted")
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r[c]) if c != "code" else Path(r[c]).parent.name for c in cols))


if __name__ == "__main__":
    main()
