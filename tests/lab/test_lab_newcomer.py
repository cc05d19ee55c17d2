"""The lab as a newcomer meets it (issue 16): no warning they cannot act on, Ctrl-C is a normal stop
(not ``level=error``), and every flag of ``fabric-exporter lab --help`` says what it does."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from fabric_exporter.cli import build_parser

from ..harness.daemon import free_port, package_env


def lab_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    lab = sub.choices["lab"]
    lab.format_help()  # a parser may add its arguments lazily, when its help is shown
    return lab


def test_every_lab_flag_has_a_description():
    undocumented = [a.option_strings[0] for a in lab_parser()._actions if a.option_strings and not a.help]  # noqa: SLF001
    assert undocumented == []


@pytest.mark.slow
def test_lab_starts_quietly_and_ctrl_c_is_a_normal_stop(tmp_path):
    port, control, prom = free_port(), free_port(), free_port()
    log_path = tmp_path / "lab.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fabric_exporter", "lab", "--no-ib", "--workdir", str(tmp_path / "lab"),
             "--racks", "1", "--hosts-per-rack", "2", "--nics", "1", "--interval", "2",
             "--web.listen-address", f"127.0.0.1:{port}", "--control-address", f"127.0.0.1:{control}",
             "--prometheus-address", f"127.0.0.1:{prom}"],
            env=package_env(), stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:  # bounded wait for the banner and the first scrape
                assert proc.poll() is None, log_path.read_text()[-3000:]
                if "lab is running" in log_path.read_text():
                    try:
                        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                            if b"fabric_up" in r.read():
                                break
                    except OSError:
                        pass
                time.sleep(0.5)
            else:
                raise AssertionError("lab did not come up:\n" + log_path.read_text()[-3000:])
            proc.send_signal(signal.SIGINT)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    out = log_path.read_text()
    assert proc.returncode == 0, out[-3000:]
    assert "promtool tests need" not in out
    if Path("/usr/bin/prometheus").exists():
        assert "Prometheus: http" in out, out[-3000:]  # the rules were written and Prometheus started
    assert "level=error" not in out, [line for line in out.splitlines() if "level=error" in line]
    assert "stopping the lab" in out and "lab stopped: every process it started is gone" in out


@pytest.mark.parametrize("argv", [["--report", "out"], ["--scenario", "poc", "--no-prometheus", "--report", "out"]])
def test_report_needs_the_poc_and_prometheus(argv, tmp_path, capsys):
    """--report writes the POC's report from the lab's Prometheus: refused at once without either."""
    from fabric_exporter.lab.run import main

    args = lab_parser().parse_args([*argv, "--workdir", str(tmp_path / "lab")])
    assert main(args) == 2
    assert "--report needs --scenario poc and the lab's Prometheus" in capsys.readouterr().err
    assert not (tmp_path / "lab").exists()  # nothing started
