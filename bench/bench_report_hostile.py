"""``fabric-exporter report`` against every mode of the hostile Prometheus (tests/harness): exit
status, wall time, peak RSS of the report process, whether it printed a traceback.

    PYTHONPATH=exporter:. python bench/bench_report_hostile.py [--timeout 5] [--extra "--deadline 20"] [MODE...]

The same runs the parametrized test asserts on; this prints the figures. For a before/after, point
--code at another checkout's exporter/ (e.g. `git archive main exporter | tar -x -C /tmp/before`).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
from pathlib import Path

from tests.harness.hostile_prometheus import MODES, HostilePrometheus, run_measured

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--timeout", default="5")
    p.add_argument("--extra", default="", help="more report arguments")
    p.add_argument("--kill-after", type=float, default=300.0)
    p.add_argument("--code", default=str(ROOT / "exporter"), help="the fabric_exporter package's parent directory")
    p.add_argument("modes", nargs="*", default=list(MODES))
    a = p.parse_args()
    env = {**os.environ, "PYTHONPATH": f"{a.code}:{ROOT}"}
    print(f"{'mode':22} {'exit':>4} {'seconds':>8} {'peak RSS MB':>11}  traceback  last stderr line")
    for mode in a.modes:
        with tempfile.TemporaryDirectory() as tmp, HostilePrometheus(mode) as prom:
            argv = [sys.executable, "-m", "fabric_exporter", "report", "--prometheus-url", prom.url, "--since", "1h",
                    "--out", str(Path(tmp) / "out"), "--timeout", a.timeout, *shlex.split(a.extra)]
            r = run_measured(argv, env=env, cwd=tmp, kill_after=a.kill_after)
        lines = r.stderr.strip().splitlines() or [""]
        print(f"{mode:22} {r.returncode:>4} {r.seconds:>8.1f} {r.peak_rss_mb:>11.0f}  "
              f"{'yes' if 'Traceback' in r.stderr else 'no':9}  {lines[-1][:110]}", flush=True)


if __name__ == "__main__":
    main()
