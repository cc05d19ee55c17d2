"""What ``fabric-exporter lab`` takes: its command line (``add_arguments``) and the ``LabOptions`` the
lab runs with. Cheap to import: ``fabric-exporter --help`` builds this parser."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from .traffic import SCENARIOS


@dataclass
class LabOptions:
    listen: str = "127.0.0.1:9315"
    control: str = "127.0.0.1:9316"
    workdir: Path | None = None
    racks: int = 2
    hosts_per_rack: int = 4
    nics: int = 2
    ib: bool = True
    ib_spines: int = 2
    snmp: bool = True
    gnmi: bool = True
    slurm: bool = True
    prometheus: bool = True
    prometheus_listen: str = "127.0.0.1:9090"
    interval: float = 5.0
    scenarios: list[str] = field(default_factory=list)
    duration: float | None = None  # stop by itself after this many seconds (demos, tests)
    poc_phase: float = 120.0  # --scenario poc: seconds per phase unit (lab/poc.py)
    rules_rate_window: str = "1m"  # rate window of the lab's generated rules
    report: Path | None = None  # --scenario poc: write the POC report here when the sequence is over
    switch_os: str = "sonic"  # the leaves' OS: "sonic" (a shell with sonic-utilities' show) or "eos" (Arista's CLI)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--web.listen-address", dest="listen", default="127.0.0.1:9315", metavar="HOST:PORT",
                   help="where the lab's daemon serves /metrics and its status page (default: %(default)s)")
    p.add_argument("--control-address", dest="control", default="127.0.0.1:9316", metavar="HOST:PORT",
                   help="the scenario control endpoint: POST /scenarios/NAME starts one (default: %(default)s)")
    p.add_argument("--scenario", action="append", default=[], choices=sorted(SCENARIOS) + ["poc"],
                   help="start with this scenario on (repeatable); 'poc' runs the timed POC sequence "
                        "(baseline, incast on each fabric, recovery, link flap, latency regression)")
    p.add_argument("--rules-rate-window", default="1m", metavar="DURATION",
                   help="rate window of the lab's generated rules (at least 4 poll intervals; shorter for short "
                        "POC phases; default: %(default)s)")
    p.add_argument("--poc-phase", type=float, default=120.0, metavar="SECONDS",
                   help="--scenario poc: length of one phase unit (the sequence is 12 units; default: %(default)s)")
    p.add_argument("--report", type=Path, metavar="DIR",
                   help="--scenario poc: when the sequence is over, write the POC report (index.html, summary.json) "
                        "into DIR, as `fabric-exporter report` does")
    p.add_argument("--racks", type=int, default=2, help="racks (= leaves) in both fabrics (default: %(default)s)")
    p.add_argument("--hosts-per-rack", type=int, default=4, help="GPU hosts per rack (default: %(default)s)")
    p.add_argument("--nics", type=int, default=2, help="RoCE NICs per GPU host (default: %(default)s)")
    p.add_argument("--ib-spines", type=int, default=2, help="spine switches of the InfiniBand fat tree (default: %(default)s)")
    p.add_argument("--no-ib", action="store_true", help="skip the InfiniBand fabric")
    p.add_argument("--no-gnmi", action="store_true", help="skip the gNMI-only Cumulus leaf")
    p.add_argument("--no-slurm", action="store_true", help="skip the Slurm cluster (slurmctld, slurmd, munged)")
    p.add_argument("--switch-os", choices=("sonic", "eos"), default="sonic",
                   help="the leaves' OS as switch_cli sees it: SONiC's show commands in a shell, or Arista EOS's "
                        "CLI (default: %(default)s)")
    p.add_argument("--no-prometheus", action="store_true", help="do not start Prometheus even if installed")
    p.add_argument("--prometheus-address", default="127.0.0.1:9090", metavar="HOST:PORT",
                   help="where the lab's Prometheus listens, when installed (default: %(default)s)")
    p.add_argument("--interval", type=float, default=5.0, help="poll interval in seconds (default: %(default)s)")
    p.add_argument("--workdir", type=Path, help="where the lab keeps its files (default: a new temp dir)")
    p.add_argument("--duration", type=float, help="stop by itself after this many seconds")
    p.add_argument("--log.level", dest="log_level", default="info", choices=["debug", "info", "warning", "error"],
                   help="log verbosity (default: %(default)s)")


def options_from_args(args: argparse.Namespace) -> LabOptions:
    """The options ``main`` runs the lab with, from the parsed command line."""
    return LabOptions(listen=args.listen, control=args.control, workdir=args.workdir, racks=args.racks,
                      hosts_per_rack=args.hosts_per_rack, nics=args.nics, ib=not args.no_ib,
                      ib_spines=args.ib_spines, prometheus=not args.no_prometheus, slurm=not args.no_slurm,
                      gnmi=not args.no_gnmi,
                      prometheus_listen=args.prometheus_address, interval=args.interval,
                      scenarios=args.scenario, duration=args.duration, poc_phase=args.poc_phase,
                      rules_rate_window=args.rules_rate_window, switch_os=args.switch_os,
                       # absolute now: the lab changes into its work directory before the POC ends
                      report=args.report.resolve() if args.report else None)
