"""Every bench script still starts: its imports resolve and it answers --help. Benches run by hand,
not in the suite, so a move in exporter/ or tests/harness/ once left two of them failing at import
unnoticed (walk_files, bench_report_scale)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.harness import paths
from tests.harness.daemon import package_env

BENCH = paths.ROOT / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name.startswith("bench_") or p.name == "walk_files.py")


def test_the_benches_are_found():
    assert len(SCRIPTS) >= 20


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_bench_script_answers_help(script):
    env = package_env()
    env["PYTHONPATH"] = f"{env['PYTHONPATH']}:{BENCH}"
    run = subprocess.run([sys.executable, str(BENCH / script), "--help"], cwd=paths.ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "usage" in run.stdout.lower(), run.stderr[-2000:]
