"""The lab as a newcomer meets it (issue 16): no warning they cannot act on, Ctrl-C is a normal stop
(not ``level=error``), and every flag of ``fabric-exporter lab --help`` says what it does."""

from __future__ import annotations

import argparse
from pathlib import Path

import shutil

import pytest

from fabric_exporter.cli import build_parser

from tests.harness.lab_process import running_lab


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
    def banner_and_first_scrape(lab) -> bool:
        return "lab is running" in lab.log() and "fabric_up" in lab.metrics()

    with running_lab(tmp_path, "--no-ib", "--racks", "1", "--hosts-per-rack", "2", "--nics", "1", "--interval", "2",
                     ready=banner_and_first_scrape, up_within=90, stop_within=30) as lab:
        pass  # up: now Ctrl-C, as a person stops it
    out = lab.log()
    assert lab.proc.returncode == 0, out[-3000:]
    assert "promtool tests need" not in out
    if Path("/usr/bin/prometheus").exists():
        assert "Prometheus: http" in out, out[-3000:]  # the rules were written and Prometheus started
    assert "level=error" not in out, [line for line in out.splitlines() if "level=error" in line]
    assert "stopping the lab" in out and "lab stopped: every process it started is gone" in out
    if shutil.which("slurmctld") or Path("/usr/sbin/slurmctld").exists():
        # sbatch/squeue against the lab's Slurm: the banner says how
        assert f"export SLURM_CONF={tmp_path / 'lab' / 'slurm' / 'slurm.conf'}" in out, out[-3000:]


@pytest.mark.parametrize("argv", [["--report", "out"], ["--scenario", "poc", "--no-prometheus", "--report", "out"]])
def test_report_needs_the_poc_and_prometheus(argv, tmp_path, capsys):
    """--report writes the POC's report from the lab's Prometheus: refused at once without either."""
    from fabric_exporter.lab.run import main

    args = lab_parser().parse_args([*argv, "--workdir", str(tmp_path / "lab")])
    assert main(args) == 2
    assert "--report needs --scenario poc and the lab's Prometheus" in capsys.readouterr().err
    assert not (tmp_path / "lab").exists()  # nothing started
