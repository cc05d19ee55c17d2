"""Fixtures of the report's tests: the hostile Prometheus (tests/harness/hostile_prometheus.py) and a
runner of the real ``fabric-exporter report`` CLI that measures the process's time and peak RSS.
(matplotlib's font cache goes to a temp ``$MPLCONFIGDIR``: tests/conftest.py sets it for every test.)"""

from __future__ import annotations

import os
import sys

import pytest

from tests.conftest import ROOT
from tests.harness.hostile_prometheus import HostilePrometheus, Run, run_measured


@pytest.fixture
def hostile_prometheus(request):
    """A HostilePrometheus in the mode given by indirect parametrization (``request.param``)."""
    with HostilePrometheus(request.param) as prom:
        yield prom


@pytest.fixture
def report_cli(tmp_path):
    """run(url, *args, kill_after=120) -> Run: the report CLI in a subprocess, writing under tmp_path."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'exporter'}:{ROOT}"}

    def run(url: str, *args: str, kill_after: float = 120.0) -> Run:
        argv = [sys.executable, "-m", "fabric_exporter", "report", "--prometheus-url", url,
                "--out", str(tmp_path / "out"), *args]
        return run_measured(argv, env=env, cwd=str(tmp_path), kill_after=kill_after)

    return run
