"""``fabric-exporter lab``: a living, simulated mixed fabric on 127.0.0.1 and the daemon polling it.

What starts (each part only where its tools are installed, and said so when not):

- InfiniBand: ibsim + opensm on a generated fat tree, read by the real infiniband-diags tools;
- RoCE GPU hosts: one in-process SSH server port per host, answering the roce_nic collector and
  perftest from a counter model (``roce_host.RoceHost``) in the real output formats;
- switches: one snmpsim agent per SONiC-like leaf (IF-MIB, CISCO-PFC-EXT, CISCO-SWITCH-QOS) and
  the SONiC CLI over SSH (WRED/ECN and PFC watchdog), from one counter state per switch; with
  ``--switch-os eos`` the leaves are Arista-like instead (IF-MIB, ARISTA-PFC, ARISTA-QUEUE over SNMP;
  the EOS CLI over SSH, ``lab/eos_cli.py``: PFC frames and ECN marks);
- a Cumulus-like leaf served over gNMI only (``gnmi_target.py``, grpc.aio in the lab's loop), read by
  the gnmi_switch collector in stream mode: the series only gNMI gives on Cumulus (tx-wait, PFC pause
  durations, instant queue length) next to the ones every leaf has (a switch of its own, so that
  each series of a switch keeps one source);
- latency probes between the GPU hosts (full mesh in a rack, sampled across racks);
- a real Slurm (``slurm.py``: munged, slurmctld, one ``slurmd -N`` per GPU host on 127.0.0.1) whose
  node names are the GPU hosts' names and the IB HCAs' (``gpu-001``...), read by the slurm_jobs
  collector; ``export SLURM_CONF=...`` from the banner makes ``sbatch``/``squeue`` work against it;
- the daemon itself (in this process), and Prometheus with the generated rules when installed.

A traffic model (``traffic.py``) moves every counter each second; scenarios are switched on with
``--scenario NAME`` or the control endpoint (``POST /scenarios/NAME``, ``DELETE /scenarios/NAME``).
An incast scenario congests rack 1, or only the hosts given (``?hosts=gpu-001,gpu-002``) or the
hosts of one Slurm job (``?job=ID``): their NIC ports and their IB HCA ports and the leaf ports facing them.
Ctrl-C (or SIGTERM) stops everything this process started.

One module per job: ``options`` (the command line), ``services`` (building the hosts and leaves,
starting and stopping the simulators), ``roce_ticks`` and ``ib_ticks`` (time passing on each side),
``answers`` (what the SSH hosts answer), ``daemon_config`` (the daemon's targets), ``control`` (the
scenario endpoint), ``poc_run`` (the timed POC); this module holds the lab's state and runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

from .. import __version__
from ..daemon import Daemon
from . import answers, control, poc_run, roce_host, roce_ticks, services
from .daemon_config import daemon_config
from .ib_ticks import IbTicks
from .options import LabOptions, add_arguments, options_from_args
from .perftest import SimulatedPerftest
from .services import LAB_MIXIN_SETTINGS
from .ssh_hosts import SimulatedHosts
from .traffic import SCENARIOS, TrafficModel

# What cli.py and tests import from here.
__all__ = ["LAB_MIXIN_SETTINGS", "Lab", "LabOptions", "add_arguments", "main"]

log = logging.getLogger("fabric_exporter.lab")


class Lab:
    """The lab's state, shared by its parts (the modules named above), and its run."""

    def __init__(self, opts: LabOptions):
        self.opts = opts
        self.model = TrafficModel()
        self.workdir = Path(opts.workdir or tempfile.mkdtemp(prefix="fabric-lab-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.hosts: dict[str, roce_host.RoceHost] = {}
        self.rack_of: dict[str, int] = {}
        self.switches: dict[str, object] = {}  # name -> lab.snmp.SimulatedSwitch
        self.snmp_agents: dict[str, object] = {}  # name -> lab.snmp.SnmpSim
        self.gnmi_targets: dict[str, object] = {}  # name -> lab.gnmi_target.GnmiTarget (gNMI-only leaves)
        self.ib = None  # lab.ibsim.IbsimFabric
        self.ib_ticks: IbTicks | None = None  # its counters and supervision, once it runs
        self.ssh: SimulatedHosts | None = None
        self.perftest = SimulatedPerftest(server_wait=30.0)
        self.services: list = []  # Prometheus, Alertmanager
        self.daemon: Daemon | None = None
        self.daemon_task: asyncio.Task | None = None
        self.control_runner = None  # aiohttp AppRunner of the control endpoint
        self.notes: list[str] = []
        self._stop = asyncio.Event()
        self.flap_state = False  # the link-flap scenario has its links down now
        self.snmp_written = 0.0  # when the snmpsim data files were last rewritten (monotonic)
        self.report_task: asyncio.Future | None = None  # --report: writing the POC report
        self.slurm = None  # lab.slurm.SlurmLab
        # hosts an incast congests (POST /scenarios/NAME?hosts= or ?job=); None: rack 1
        self.congested_hosts: frozenset[str] | None = None
        # each host's counters as files, rewritten in place every NIC tick (the burst probe reads them)
        self.counter_files: dict[str, roce_host.CounterFiles] = {}
        self.nic_thread: threading.Thread | None = None
        self.nic_stop = threading.Event()

    @property
    def eos(self) -> bool:
        return self.opts.switch_os == "eos"

    # -- the parts, as tests drive them one by one ----------------------------------------------

    def _build_roce(self) -> None:
        services.build_roce(self)

    def _start_snmp(self) -> None:
        services.start_snmp(self)

    def _config(self) -> dict:
        return daemon_config(self)

    async def _answer(self, host: str, argv: list[str]) -> tuple[int, str, str]:
        return await answers.answer(self, host, argv)

    def ssh_hosts(self) -> SimulatedHosts:
        return answers.ssh_hosts(self)

    def congest_hosts(self, query) -> frozenset[str] | None:
        return control.congest_hosts(self, query)

    def tick(self, dt: float) -> None:
        roce_ticks.tick(self, dt)

    def tick_nics(self, dt: float, now: float) -> None:
        roce_ticks.tick_nics(self, dt, now)

    async def _ib_tick_supervised(self, dt: float) -> None:
        if self.ib_ticks is not None:
            await self.ib_ticks.supervised_tick(dt, self.congested_hosts, self.flap_state)

    # -- run ------------------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stop.set()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_stop)
        # libumad2sim writes a ./sys-<pid> tree for every tool run: keep it in the lab's directory.
        os.chdir(self.workdir)
        try:
            config_path = await self._start()
            self._banner(config_path)
            if "poc" in self.opts.scenarios:
                poc_run.schedule_poc(self)
            return await self._run_until_stopped()
        finally:
            await self._shutdown()

    async def _start(self) -> Path:
        """Every part, then the daemon polling them, the control endpoint and Prometheus; returns the
        daemon's config file."""
        services.build_roce(self)
        await asyncio.to_thread(services.start_ib, self)
        await asyncio.to_thread(services.start_snmp, self)
        await services.start_gnmi(self)
        if self.opts.slurm:
            await asyncio.to_thread(services.start_slurm, self)
        self.ssh = self.ssh_hosts()
        await self.ssh.start(list(self.hosts) + list(self.switches))
        for scenario in self.opts.scenarios:
            if scenario != "poc":
                self.model.start(scenario, time.monotonic())
        self.tick(1.0)
        await self._ib_tick_supervised(1.0)
        roce_ticks.start_counter_files(self)
        roce_ticks.start_nic_timer(self)
        config_path = self.workdir / "fabric-lab.yaml"
        config_path.write_text(yaml.safe_dump(daemon_config(self), sort_keys=False))
        self.daemon = Daemon(str(config_path), listen_address=self.opts.listen)
        self.daemon_task = asyncio.create_task(self.daemon.run(), name="daemon")
        self.control_runner = await control.start_control(self)
        if self.opts.prometheus:
            await asyncio.to_thread(services.start_prometheus, self)
        return config_path

    async def _run_until_stopped(self) -> int:
        """Tick once a second until a stop request, the daemon's end or ``--duration``; the exit status."""
        daemon_task = self.daemon_task
        started = time.monotonic()
        last = started
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), 1.0)
            except asyncio.TimeoutError:
                pass
            if daemon_task.done():
                # The daemon handles SIGINT/SIGTERM itself: exit status 0 is Ctrl-C (or a
                # stop request), a normal end; anything else is a failure worth an error.
                failed = daemon_task.cancelled() or daemon_task.exception() is not None \
                    or daemon_task.result() != 0
                if failed:
                    log.error("the daemon stopped; stopping the lab")
                else:
                    log.info("stopping the lab")
                break
            now = time.monotonic()
            self.tick(now - last)
            await self._ib_tick_supervised(now - last)
            last = now
            if self.opts.duration and now - started >= self.opts.duration:
                break
        return 0 if not daemon_task.done() or daemon_task.result() == 0 else 1

    async def _shutdown(self) -> None:
        roce_ticks.stop_nic_timer(self)
        if self.daemon is not None:
            self.daemon.request_stop()
        if self.daemon_task is not None:
            try:
                await asyncio.wait_for(self.daemon_task, 6)
            except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - best effort, then stop the rest
                self.daemon_task.cancel()
        if self.control_runner is not None:
            await self.control_runner.cleanup()
        await services.stop_services(self)
        print("lab stopped: every process it started is gone", file=sys.stderr)

    def _banner(self, config_path: Path) -> None:
        lines = [
            f"fabric-exporter {__version__} lab is running (Ctrl-C stops it and everything it started)",
            f"  metrics:     http://{self.opts.listen}/metrics",
            f"  status page: http://{self.opts.listen}/",
            f"  scenarios:   curl -X POST http://{self.opts.control}/scenarios/congestion   "
            f"(list: curl http://{self.opts.control}/)",
            f"               known: {', '.join(SCENARIOS)}",
            f"  config:      {config_path}",
            f"  workdir:     {self.workdir}",
            *[f"  {n}" for n in self.notes],
        ]
        print("\n".join(lines), file=sys.stderr, flush=True)



def main(args: argparse.Namespace) -> int:
    from ..logsetup import setup_logging

    setup_logging(args.log_level, "text")
    if args.report and ("poc" not in args.scenario or args.no_prometheus):
        print("fabric-exporter lab: --report needs --scenario poc and the lab's Prometheus (no --no-prometheus)",
              file=sys.stderr)
        return 2
    return asyncio.run(Lab(options_from_args(args)).run())
