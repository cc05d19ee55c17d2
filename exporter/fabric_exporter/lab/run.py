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
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from aiohttp import web

from .. import __version__
from ..daemon import Daemon
from . import roce_host
from .perftest import SimulatedPerftest
from .ssh_hosts import SimulatedHosts
from ..mixin.settings import FOR_DEFAULTS
from .traffic import IB_XMIT_WAIT_SCALE, LOSSLESS, SCENARIOS, TrafficModel

log = logging.getLogger("fabric_exporter.lab")

IB_LATENCY_DEVICE = "mlx5_ib0"  # the IB fabric's probes run on this device; lab/perftest answers per device
IB_TOOLS = ("ibsim", "opensm", "ibqueryerrors", "ibnetdiscover", "perfquery")
SNMP_REWRITE_SECONDS = 15.0
GNMI_LEAF = "leaf-cumulus"  # the lab's gNMI-only switch
SLURM_TOOLS = ("munged", "slurmctld", "slurmd", "squeue", "sbatch")
INCASTS = ("congestion", "incast_ib", "incast_roce")
NIC_TICK = 0.05  # seconds between NIC counter updates: well below the burst sampler's 100 ms windows
# The lab's rules: the shipped defaults, except that alerts fire within about a minute of a
# scenario (short rate windows and for: durations) and the IB stall threshold is scaled like the
# lab's transmit-wait counter (see traffic.IB_XMIT_WAIT_SCALE).
LAB_MIXIN_SETTINGS = {
    "rate_window": "1m",
    "thresholds": {"ib_xmit_wait_ratio": 0.1 * IB_XMIT_WAIT_SCALE},
    # congestion marks: the IB stall threshold scaled the same way; PFC at 5% so a short POC incast
    # (30% paused while on) crosses it within one rate window
    "congestion": {"ib_xmit_wait_ratio": 0.05 * IB_XMIT_WAIT_SCALE, "pfc_pause_fraction": 0.05, "bridge_gap": "30s"},
    "for": {name: "30s" for name in FOR_DEFAULTS} | {"FabricLinkFlapping": "0m", "FabricTargetDown": "1m",
                                                    "FabricExporterAbsent": "1m"},
}


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


class Lab:
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
        self._ib_given_up = False  # ibsim died more often than MAX_IBSIM_RESTARTS
        self.ib_counters: dict[tuple[str, int], dict[str, float]] = {}
        self.ssh: SimulatedHosts | None = None
        self.perftest = SimulatedPerftest(server_wait=30.0)
        self.services: list = []  # Prometheus, Alertmanager
        self.daemon: Daemon | None = None
        self.notes: list[str] = []
        self._stop = asyncio.Event()
        self._flap_state = False
        self._snmp_written = 0.0
        self._report_task: asyncio.Future | None = None  # --report: writing the POC report
        self.slurm = None  # lab.slurm.SlurmLab
        # hosts an incast congests (POST /scenarios/NAME?hosts= or ?job=); None: rack 1
        self.congested_hosts: frozenset[str] | None = None
        # each host's counters as files, rewritten in place every NIC tick (the burst probe reads them)
        self.counter_files: dict[str, roce_host.CounterFiles] = {}
        self._nic_thread: threading.Thread | None = None
        self._nic_stop = threading.Event()

    # -- the parts ------------------------------------------------------------------------------

    def _build_roce(self) -> None:
        for rack in range(1, self.opts.racks + 1):
            for n in range(1, self.opts.hosts_per_rack + 1):
                # one name per host for NICs, IB HCA (ibsim numbers its CAs leaf by leaf the same
                # way) and Slurm node: gpu-001, gpu-002, ...
                name = f"gpu-{(rack - 1) * self.opts.hosts_per_rack + n:03d}"
                host = roce_host.RoceHost.build(name, "mlx5", nics=self.opts.nics, pfc_priorities=(LOSSLESS,),
                                                seed=rack * 100 + n)
                self.hosts[name] = host
                self.rack_of[name] = rack

    def _start_ib(self) -> None:
        missing = [t for t in IB_TOOLS if not shutil.which(t)]
        if not self.opts.ib or missing:
            self.notes.append("InfiniBand: off" + (f" ({', '.join(missing)} not installed: run scripts/setup-deps)"
                                                   if missing else ""))
            return
        from .ibsim import FatTree, IbsimFabric

        tree = FatTree(spines=self.opts.ib_spines, leaves=self.opts.racks, hcas_per_leaf=self.opts.hosts_per_rack)
        self.ib = IbsimFabric(tree, self.workdir / "ib").start(timeout=90)
        for link in tree.links:
            for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
                self.ib_counters[(node, port)] = {}
        self.notes.append(f"InfiniBand: ibsim fat tree, {len(tree.switches)} switches, {len(tree.cas)} HCAs "
                          f"(IBSIM_SOCKNAME={self.ib.sockname})")

    def _start_snmp(self) -> None:
        from .snmp import SimulatedSwitch, SnmpSim

        for rack in range(1, self.opts.racks + 1):
            name = f"leaf-r{rack}"
            self.switches[name] = SimulatedSwitch(name, "arista" if self.eos else "sonic",
                                                  ports=max(8, self.opts.hosts_per_rack * self.opts.nics),
                                                  queues=8, seed=rack)
        self._cable_hosts()
        if not self.opts.snmp:
            self.notes.append("switches over SNMP: off")
            return
        import importlib.util

        if importlib.util.find_spec("snmpsim") is None:
            self.notes.append("switches over SNMP: off (snmpsim is not installed: pip install 'fabric-exporter[lab]'); "
                              "the switches' CLI is still served over SSH")
            return
        for name, sw in self.switches.items():
            self.snmp_agents[name] = SnmpSim([sw], self.workdir / f"snmp-{name}").start(timeout=60)
        self.notes.append(f"switches: {len(self.switches)} {'EOS' if self.eos else 'SONiC'}-like leaves over SNMP "
                          f"(snmpsim) and CLI (SSH)")

    async def _start_gnmi(self) -> None:
        """The gNMI-only Cumulus leaf: its own simulated switch (not cabled to the GPU hosts), whose
        counters the target moves on by itself every poll interval."""
        import importlib.util

        if not self.opts.gnmi:
            return
        if importlib.util.find_spec("grpc") is None or importlib.util.find_spec("gnmi_pb") is None:
            self.notes.append("switches over gNMI: off (grpcio/gnmi-pb are not installed: "
                              "pip install 'fabric-exporter[gnmi]')")
            return
        from .gnmi_target import GnmiTarget
        from .snmp import SimulatedSwitch

        sw = SimulatedSwitch(GNMI_LEAF, "sonic", ports=8, queues=8, seed=77)
        target = GnmiTarget(sw, "cumulus", advance_every=max(1.0, self.opts.interval))
        await target.serve()  # in this loop: the target's switch is only touched here
        self.gnmi_targets[GNMI_LEAF] = target
        self.notes.append(f"switches over gNMI: {GNMI_LEAF}, Cumulus-like, on 127.0.0.1:{target.port} "
                          f"(insecure; try: gnmic -a 127.0.0.1:{target.port} --insecure subscribe --mode once "
                          f"--path /qos)")

    def _cable_hosts(self) -> None:
        """Each rack's hosts on its leaf, NIC by NIC in order: the leaf's LLDP neighbours (SNMP and CLI)
        name the lab's hosts as they are named, so the neighbour map joins the NIC and job series."""
        for rack, sw in enumerate(self.switches.values(), start=1):
            ports = [(name, p.netdev) for name, host in self.hosts.items() if self.rack_of[name] == rack
                     for p in host.ports]
            for index, (name, netdev) in enumerate(ports[:len(sw.interfaces)]):
                sw.connect(index, name, netdev)

    def _start_slurm(self) -> None:
        missing = [t for t in SLURM_TOOLS if not shutil.which(t) and not Path(f"/usr/sbin/{t}").exists()]
        if missing:
            self.notes.append(f"Slurm: off ({', '.join(missing)} not installed: run scripts/setup-deps)")
            return
        from .slurm import SlurmLab

        self.slurm = SlurmLab(self.workdir / "slurm", tuple(self.hosts))
        try:
            self.slurm.start()
        except BaseException:
            self.slurm.stop()
            self.slurm = None
            raise
        # the daemon's slurm_jobs target (transport local) and anything the lab runs find it here
        os.environ["SLURM_CONF"] = str(self.slurm.conf)
        self.notes.append(f"Slurm: {len(self.hosts)} nodes ({', '.join(list(self.hosts)[:2])}, ...), partition "
                          f"{self.slurm.partition}; in a shell: export SLURM_CONF={self.slurm.conf}\n"
                          f"               then e.g. sbatch -N2 --wrap='sleep 600'; squeue")

    def _is_congested(self, host: str) -> bool:
        """Is ``host`` in the incast's path (its hosts, else rack 1)?"""
        if self.congested_hosts is not None:
            return host in self.congested_hosts
        return self.rack_of.get(host) == 1

    def congest_hosts(self, query) -> frozenset[str] | None:
        """The host set of POST /scenarios/NAME?hosts=a,b or ?job=ID (None: neither given).
        Raises ValueError naming an unknown host or job."""
        if "hosts" in query and "job" in query:
            raise ValueError("give hosts= or job=, not both")
        if "hosts" in query:
            hosts = frozenset(h for h in query["hosts"].split(",") if h)
            unknown = sorted(hosts - set(self.hosts))
            if unknown or not hosts:
                raise ValueError(f"unknown hosts {unknown} (known: {', '.join(self.hosts)})")
            return hosts
        if "job" in query:
            if self.slurm is None:
                raise ValueError("job= needs the lab's Slurm (not running)")
            nodes = self.slurm.running().get(query["job"])
            if not nodes:
                raise ValueError(f"job {query['job']!r} is not running")
            return frozenset(nodes)
        return None

    def _start_counter_files(self) -> None:
        for name, host in self.hosts.items():
            self.counter_files[name] = roce_host.CounterFiles(host, self.workdir / "hosts" / name)

    def _stream(self, host: str, argv: list[str]) -> list[str] | None:
        """A GPU host runs the roce_nic burst sampler's probe for real, on its own counter files."""
        if host not in self.counter_files:
            return None
        from ..collectors.burst import PROBE_SOURCE

        return roce_host.burst_probe_argv(self.counter_files[host], argv, PROBE_SOURCE)

    async def _answer(self, host: str, argv: list[str]) -> tuple[int, str, str]:
        if host in self.hosts:
            if "fabric-roce" in argv or argv == ["true"]:
                return roce_host.answer(self.hosts[host], shlex.join(argv))
            return await self.perftest.answer(host, argv)
        if host in self.switches:
            return await self._switch_cli(host, argv)
        return 127, "", f"sh: 1: {argv[0] if argv else ''}: not found\n"

    @property
    def eos(self) -> bool:
        return self.opts.switch_os == "eos"

    async def _eos_cli(self, name: str, line: str) -> tuple[int, str, str]:
        """One line typed at the switch's EOS CLI (its SSH lands there, not in a shell)."""
        from .eos_cli import answer

        return answer(self.switches[name], line)

    def ssh_hosts(self) -> SimulatedHosts:
        """The lab's SSH server: GPU hosts and SONiC leaves answer shell commands, EOS leaves CLI lines."""
        return SimulatedHosts(self.workdir / "ssh", self._answer, line_answer=self._eos_cli,
                              cli_hosts=frozenset(self.switches) if self.eos else frozenset(), streamer=self._stream)

    async def _switch_cli(self, name: str, argv: list[str]) -> tuple[int, str, str]:
        """Run the collector's command with a real sh, the fake SONiC ``show`` first on PATH."""
        from .sonic_cli import install_fake_show, write_outputs

        data = self.workdir / "sonic" / name
        bin_dir = self.workdir / "sonic" / "bin"
        if not (bin_dir / "show").exists():
            install_fake_show(bin_dir, data)
        write_outputs(self.switches[name], data)
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                 "FABRIC_FAKE_SONIC_DIR": str(data)})
        out, err = await proc.communicate()
        return proc.returncode, out.decode(), err.decode()

    # -- the daemon's config --------------------------------------------------------------------

    def _config(self) -> dict:
        interval = f"{self.opts.interval:g}s"
        timeout = f"{self.opts.interval * 0.8:g}s"
        ports = self.ssh.ports
        creds = {"lab-ssh": {"type": "ssh", "username": "fabricmon", "private_key_file": str(self.ssh.client_key),
                             "known_hosts_file": str(self.ssh.known_hosts), "connect_timeout": "3s"}}
        targets = []
        if self.ib is not None:
            targets.append({"name": "ib-fabric", "fabric": "ib-lab", "collector": "infiniband", "transport": "local",
                            "interval": interval, "timeout": timeout,
                            "options": {"env": self.ib.env(), "topology_interval": "1m",
                                        "use_discovery_cache": False,
                                        # the focus set, its burst threshold scaled like the lab's
                                        # transmit-wait counter (traffic.IB_XMIT_WAIT_SCALE)
                                        "focus": True, "focus_top_k": 8,
                                        "focus_burst_threshold": 0.1 * IB_XMIT_WAIT_SCALE}})
        gpu_hosts = [{"name": h, "address": "127.0.0.1", "port": ports[h]} for h in self.hosts]
        targets.append({"name": "gpu-nics", "fabric": "roce-lab", "collector": "roce_nic", "transport": "ssh",
                        "credentials": "lab-ssh", "interval": interval, "timeout": timeout, "hosts": gpu_hosts,
                        # the sub-second sampler: one streaming probe per host on its counter files
                        "options": {"burst": {"window": "100ms"}}})
        for name, agent in self.snmp_agents.items():
            creds[f"snmp-{name}"] = {"type": "snmp", "version": "2c", "community": name}
            targets.append({"name": f"snmp-{name}", "fabric": "roce-lab", "collector": "snmp_switch",
                            "transport": "snmp", "credentials": f"snmp-{name}", "interval": interval,
                            "timeout": timeout,
                            "hosts": [{"name": name, "address": "127.0.0.1", "port": agent.port}],
                            # the LLDP neighbour map comes over SNMP when the agents run, else over the CLI
                            "options": {"modules": (["if_mib", "arista_pfc", "arista_queue"] if self.eos
                                                    else ["if_mib", "cisco_pfc", "cisco_qos"]) + ["lldp"]}})
        for name, target in self.gnmi_targets.items():
            targets.append({"name": f"gnmi-{name}", "fabric": "roce-lab", "collector": "gnmi_switch",
                            "transport": "gnmi", "interval": interval, "timeout": timeout,
                            "hosts": [{"name": name, "address": "127.0.0.1", "port": target.port}],
                            "options": {"dialect": "cumulus", "mode": "stream", "insecure": True,
                                        "sample_interval": f"{max(1.0, self.opts.interval):g}s"}})
        targets.append({"name": "switch-cli", "fabric": "roce-lab", "collector": "switch_cli", "transport": "ssh",
                        "credentials": "lab-ssh", "interval": interval, "timeout": timeout,
                        "hosts": [{"name": s, "address": "127.0.0.1", "port": ports[s]} for s in self.switches],
                        "options": self._switch_cli_options()})
        racks = {f"rack{r}": [h for h in self.hosts if self.rack_of[h] == r] for r in range(1, self.opts.racks + 1)}
        targets.append({"name": "latency", "fabric": "roce-lab", "collector": "latency_probe", "transport": "ssh",
                        "credentials": "lab-ssh", "interval": interval, "timeout": timeout, "hosts": gpu_hosts,
                        "options": {"host_groups": racks, "probe_timeout": "2s"}})
        if self.ib is not None and "poc" in self.opts.scenarios:
            # the same hosts probed over their IB adapters: the IB fabric's latency (POC only: it doubles
            # the probing work, which a small shared machine feels in every other poll)
            targets.append({"name": "latency-ib", "fabric": "ib-lab", "collector": "latency_probe",
                            "transport": "ssh", "credentials": "lab-ssh", "interval": interval, "timeout": timeout,
                            "hosts": gpu_hosts, "options": {"host_groups": racks, "probe_timeout": "2s",
                                                            "device": IB_LATENCY_DEVICE,
                                                            "port_range": [20000, 20999]}})
        if self.slurm is not None:
            targets.append({"name": "slurm", "fabric": "slurm-lab", "collector": "slurm_jobs", "transport": "local",
                            "interval": interval, "timeout": timeout, "options": {"cluster": "fabriclab"}})
        return {"web": {"listen_address": self.opts.listen},
                "defaults": {"interval": interval, "timeout": timeout}, "credentials": creds, "targets": targets}

    def _switch_cli_options(self) -> dict:
        """What the CLI reads: what SNMP does not give when the leaves are also polled over SNMP
        (one source per series)."""
        if self.eos:  # discards and queue drops are if_mib's and arista_queue's; PFC totals and ECN only here
            return {"dialect": "eos",
                    "commands": ["pfc", "ecn"] if self.snmp_agents else ["discards", "queue", "pfc", "ecn"]}
        commands = ["wred", "pfcwd"] if self.snmp_agents else ["pfc", "queue", "wred", "pfcwd", "lldp"]
        return {"commands": commands + ["queue_watermark", "pg_watermark", "buffer_pool_watermark", "pfc_history"]}

    # -- time passing ---------------------------------------------------------------------------

    def tick(self, dt: float) -> None:
        now = time.monotonic()
        congested_rack = 1
        hosts = list(self.hosts)
        flap_host = hosts[-1] if hosts else None
        self._flap_state = int(now / 4) % 2 == 1 if self.model.on("link_flap") else False
        if self._nic_thread is None:  # else the NIC timer moves them
            self.tick_nics(dt, now)
        for name, host in self.hosts.items():
            port0 = host.ports[0]
            port0.state = "DOWN" if (self._flap_state and name == flap_host) else "ACTIVE"
        self._advance_switches(dt, congested_rack)
        self._latency_fixture()

    def tick_nics(self, dt: float, now: float) -> None:
        """Move the NICs' counters by ``dt`` seconds of traffic ending at ``now`` and write the
        changed ones to the hosts' counter files."""
        hosts = list(self.hosts)
        storm_host = hosts[0] if hosts else None
        flap_host = hosts[-1] if hosts else None
        for name, host in self.hosts.items():
            for i, port in enumerate(host.ports):
                self.model.advance_nic(
                    port, dt, in_congested_rack=self._is_congested(name), now=now,
                    storming=self.model.on("pause_storm") and name == storm_host and i == 0,
                    flapping=self.model.on("link_flap") and name == flap_host and i == 0 and self._flap_state,
                    bit_errors=self.model.on("bit_errors") and name == flap_host and i == 0)
            files = self.counter_files.get(name)
            if files is not None:
                files.update()

    def _nic_timer(self) -> None:
        """NIC counters move every NIC_TICK (not once a second), so a burst shorter than a second is
        in the files as it happens, for the burst probe's 100 ms windows to see. A thread, not a task
        of the lab's event loop: a NIC's counters keep moving while the in-process daemon holds the
        loop (a catch-up write after a stalled loop would look like a burst). The counters it moves
        are only read by the loop (values change, never the tables' keys)."""
        last = time.monotonic()
        next_tick = last + NIC_TICK
        while not self._nic_stop.wait(max(0.0, next_tick - time.monotonic())):
            next_tick = max(next_tick + NIC_TICK, time.monotonic())
            now = time.monotonic()
            self.tick_nics(now - last, now)
            last = now

    def _advance_switches(self, dt: float, congested_rack: int) -> None:
        for rack, (name, sw) in enumerate(self.switches.items(), start=1):
            # an incast on a host set congests those hosts' ports, not a whole leaf
            congested = self.model.congested("roce") and rack == congested_rack and self.congested_hosts is None
            for i, intf in enumerate(sw.interfaces):
                load = (0.9 if congested else 0.5) * intf.high_speed * 1e6 / 8 * dt
                for counter, share in (("ifHCInOctets", 1.0), ("ifHCOutOctets", 0.97)):
                    intf.counters[counter] += int(load * share * self.model.jitter())
                for counter, share in (("ifHCInUcastPkts", 1.0), ("ifHCOutUcastPkts", 0.97)):
                    intf.counters[counter] += int(load * share / 4096)
                pauses = (4000 if congested else 2) * dt
                intf.pfc[LOSSLESS][0] += int(pauses)  # sent (requests)
                intf.pfc[LOSSLESS][1] += int(pauses * 0.5)  # received (indications)
                sw.buffers.tick(i, LOSSLESS, self.model.switch_buffer_peaks(congested=congested), dt,
                                int(time.time() * 1e6))
                q = intf.queues.get(LOSSLESS)
                if q is not None:
                    q["uc_pkts"] += int(load / 4096)
                    q["uc_bytes"] += int(load)
                    q["ecn_pkts"] += int((1_000_000 if congested else 50) * dt)
                    q["ecn_bytes"] += int((1_000_000 if congested else 50) * dt * 4096)
            storming = self.model.on("pause_storm")
            if rack == 1 and sw.interfaces:
                wd = sw.interfaces[0].pfcwd.get(LOSSLESS)
                if wd is not None:
                    if storming and wd["status"] != "stormed":
                        sw.storm(0, LOSSLESS)
                    elif not storming and wd["status"] == "stormed":
                        sw.storm_over(0, LOSSLESS)
                    if storming:
                        wd["tx_drop"] += int(5000 * dt)
            sw.uptime_ticks = (sw.uptime_ticks + int(dt * 100)) & 0xFFFFFFFF
        # snmpsim re-indexes a data file when it changes, and a walk that spans the re-index sees
        # OIDs repeat (the collector rightly reports that table as incomplete): rewrite rarely.
        now = time.monotonic()
        if now - self._snmp_written >= SNMP_REWRITE_SECONDS:
            self._snmp_written = now
            for name, agent in self.snmp_agents.items():
                agent.write(self.switches[name])

    def _latency_fixture(self) -> None:
        pairs = {}
        for a in self.hosts:
            for b in self.hosts:
                if a != b:
                    pairs[f"{a}>{b}"] = self.model.latency_us(self.rack_of[a], self.rack_of[b])
        ib_pairs = {pair: self.model.latency_us(self.rack_of[pair.split(">")[0]], self.rack_of[pair.split(">")[1]], "ib")
                    for pair in pairs}
        self.perftest.fixture = {"default": self.model.latency_us(1, 2), "pairs": pairs, "devices": {
            IB_LATENCY_DEVICE: {"default": self.model.latency_us(1, 2, "ib"), "pairs": ib_pairs}}}

    MAX_IBSIM_RESTARTS = 5

    async def _ib_tick_supervised(self, dt: float) -> None:
        """``_ib_tick``, and ibsim (with its opensm) brought back when it died by itself, so one
        ibsim panic does not end a lab that runs for hours: the daemon's IB target fails for the
        polls in between, as it would on a real fabric whose SM restarts. After
        MAX_IBSIM_RESTARTS the IB target is left down and everything else keeps running."""
        if self.ib is None or self._ib_given_up:
            return
        from .ibsim import IbsimError

        try:
            if self.ib.exited() is None:
                await self._ib_tick(dt)
                return
        except IbsimError:
            if self.ib.exited() is None:
                raise
        why = self.ib.exited()
        if self.ib.restarts >= self.MAX_IBSIM_RESTARTS:
            log.error("ibsim died again; not restarting it any more, the IB target stays down",
                      extra={"fields": {"restarts": self.ib.restarts, "why": why}})
            self._ib_given_up = True
            return
        log.error("ibsim died; restarting it", extra={"fields": {"restarts": self.ib.restarts, "why": why}})
        n = await asyncio.to_thread(self.ib.restart, 90)
        self._ib_link_down = False  # a fresh fabric has every link up
        await self._ib_tick(0.0)  # the counters' totals again at once, so no poll reads a fresh fabric's zeros
        log.warning("ibsim restarted", extra={"fields": {"restarts": n}})

    async def _ib_tick(self, dt: float) -> None:
        if self.ib is None:
            return
        lines = []
        congested_leaf = "leaf-01"
        tree = self.ib.topology
        for (node, port), totals in self.ib_counters.items():
            peer = tree.peer(node, port)
            if self.congested_hosts is not None:  # the hosts' HCA ports and the leaf ports facing them
                host_port = node in self.congested_hosts or (peer is not None and peer[0] in self.congested_hosts)
            else:
                host_port = node == congested_leaf and peer is not None and peer[0].startswith("gpu")
            for field_name, rate in self.model.ib_port_rates(host_port_of_congested_leaf=host_port).items():
                totals[field_name] = totals.get(field_name, 0) + rate * dt
                if field_name == "PortXmitWait":
                    value = min(int(totals[field_name]), 0xFFFFFFFF)
                    lines.append(f'PerformanceSet "{node}"[{port}] PortCounters.{field_name}={value}')
                else:
                    lines.append(f'PerformanceSet "{node}"[{port}] PortCountersExtended.{field_name}='
                                 f'{int(totals[field_name])}')
            if self.model.on("bit_errors") and node == "leaf-02" and peer and peer[0].startswith("spine"):
                totals["SymbolErrorCounter"] = min(totals.get("SymbolErrorCounter", 0) + 3 * dt, 0xFFFF)
                lines.append(f'PerformanceSet "{node}"[{port}] PortCounters.SymbolErrorCounter='
                             f'{int(totals["SymbolErrorCounter"])}')
        # One console write for the whole batch: ibsim applies the lines in order.
        await asyncio.to_thread(self.ib.command, "\n".join(lines), 30.0)
        uplink = next(((n, p) for (n, p) in self.ib_counters if n == "leaf-01" and (tree.peer(n, p) or ("",))[0]
                       .startswith("spine")), None)
        if uplink is not None:
            want_down = self.model.on("link_flap") and self._flap_state
            if want_down != getattr(self, "_ib_link_down", False):
                await asyncio.to_thread(self.ib.unlink if want_down else self.ib.relink, *uplink)
                self._ib_link_down = want_down

    # -- control endpoint -----------------------------------------------------------------------

    MAX_SCHEDULE_SECONDS = 7 * 86400.0

    @classmethod
    def scenario_schedule(cls, query) -> tuple[float, float | None]:
        """``?after=`` (default 0) and ``?seconds=`` (default: until stopped) of POST /scenarios/NAME.

        Each must be a finite number of seconds, after >= 0 and 0 < seconds, both within a week: a
        NaN or infinite timer put into the event loop the lab's daemon shares misorders its timer
        heap (a 0.25 s sleep took 3.85 s), so a bad value is refused with a 400 naming it."""
        limit = cls.MAX_SCHEDULE_SECONDS
        values: dict[str, float] = {}
        for name in ("after", "seconds"):
            if name not in query:
                continue
            text = query[name]
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"{name}={text!r} is not a number of seconds") from None
            if not math.isfinite(value) or value < 0 or value > limit or (name == "seconds" and value == 0):
                low = "0 <= after" if name == "after" else "0 < seconds"
                raise ValueError(f"{name}={text!r}: expected a finite number of seconds, {low} <= {limit:g} (a week)")
            values[name] = value
        return values.get("after", 0.0), values.get("seconds")

    def control_app(self) -> web.Application:
        async def index(request):
            return web.json_response({
                "scenarios": {n: {"summary": s.summary, "active": self.model.on(n)} for n, s in SCENARIOS.items()},
                "ibsim_restarts": self.ib.restarts if self.ib is not None else None,
                "usage": "POST /scenarios/NAME to start it (optional ?after=SECONDS to schedule it, "
                         "?seconds=N to end it by itself; an incast on ?hosts=a,b or the hosts of ?job=ID only), "
                         "DELETE /scenarios/NAME to stop it"})

        async def start(request):
            name = request.match_info["name"]
            if name not in SCENARIOS:
                return web.json_response({"error": f"unknown scenario {name!r}",
                                          "known": sorted(SCENARIOS)}, status=404)
            try:
                after, seconds = self.scenario_schedule(request.query)
                hosts = await asyncio.to_thread(self.congest_hosts, request.query)
                if hosts is not None and name not in INCASTS:
                    raise ValueError(f"hosts=/job= apply to the incast scenarios ({', '.join(INCASTS)})")
            except ValueError as e:
                return web.json_response({"error": str(e)}, status=400)
            if hosts is not None or name in INCASTS:
                self.congested_hosts = hosts
            loop = asyncio.get_running_loop()
            loop.call_later(after, self.model.start, name, loop.time() + after)
            if seconds is not None:
                loop.call_later(after + seconds, self.model.stop, name)
            log.info("scenario scheduled", extra={"fields": {
                "scenario": name, "after": after, "seconds": seconds if seconds is not None else "until stopped"}})
            return web.json_response({"scheduled": name, "after": after, "seconds": seconds,
                                      **({"hosts": sorted(hosts)} if hosts is not None else {})})

        async def stop(request):
            name = request.match_info["name"]
            self.model.stop(name)
            if name in INCASTS and not any(self.model.on(n) for n in INCASTS):
                self.congested_hosts = None
            log.info("scenario stopped", extra={"fields": {"scenario": name}})
            return web.json_response({"stopped": name})

        app = web.Application()
        app.router.add_get("/", index)
        app.router.add_get("/scenarios", index)
        app.router.add_post("/scenarios/{name}", start)
        app.router.add_delete("/scenarios/{name}", stop)
        return app

    # -- run ------------------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stop.set()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_stop)
        # libumad2sim writes a ./sys-<pid> tree for every tool run: keep it in the lab's directory.
        os.chdir(self.workdir)
        control_runner = None
        daemon_task = None
        try:
            self._build_roce()
            await asyncio.to_thread(self._start_ib)
            await asyncio.to_thread(self._start_snmp)
            await self._start_gnmi()
            if self.opts.slurm:
                await asyncio.to_thread(self._start_slurm)
            self.ssh = self.ssh_hosts()
            await self.ssh.start(list(self.hosts) + list(self.switches))
            for scenario in self.opts.scenarios:
                if scenario != "poc":
                    self.model.start(scenario, time.monotonic())
            self.tick(1.0)
            await self._ib_tick_supervised(1.0)
            self._start_counter_files()
            self._nic_thread = threading.Thread(target=self._nic_timer, name="lab-nics", daemon=True)
            self._nic_thread.start()
            config_path = self.workdir / "fabric-lab.yaml"
            config_path.write_text(yaml.safe_dump(self._config(), sort_keys=False))
            self.daemon = Daemon(str(config_path), listen_address=self.opts.listen)
            daemon_task = asyncio.create_task(self.daemon.run(), name="daemon")
            chost, _, cport = self.opts.control.rpartition(":")
            control_runner = web.AppRunner(self.control_app(), access_log=None)
            await control_runner.setup()
            await web.TCPSite(control_runner, chost, int(cport)).start()
            if self.opts.prometheus:
                await asyncio.to_thread(self._start_prometheus)
            self._banner(config_path)
            if "poc" in self.opts.scenarios:
                self._schedule_poc()
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
        finally:
            await self._shutdown(daemon_task, control_runner)

    async def _shutdown(self, daemon_task, control_runner) -> None:
        if self._nic_thread is not None:
            self._nic_stop.set()
            self._nic_thread.join(5)
        if self.daemon is not None:
            self.daemon.request_stop()
        if daemon_task is not None:
            try:
                await asyncio.wait_for(daemon_task, 6)
            except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - best effort, then stop the rest
                daemon_task.cancel()
        if control_runner is not None:
            await control_runner.cleanup()
        if self.ssh is not None:
            await self.ssh.stop()
        for files in self.counter_files.values():
            files.close()
        for service in self.services:
            service.stop()
        for agent in self.snmp_agents.values():
            agent.stop()
        for target in self.gnmi_targets.values():
            await target.close()
        if self.ib is not None:
            self.ib.stop()
        if self.slurm is not None:
            self.slurm.stop()
        print("lab stopped: every process it started is gone", file=sys.stderr)

    def _start_prometheus(self) -> None:
        """Prometheus scraping the daemon with the generated rules, and Alertmanager, if installed."""
        from ..mixin import rules as mixin_rules
        from ..mixin.generate import RULE_FILE, dump_yaml
        from ..mixin.settings import load_settings
        from .prometheus import ALERTMANAGER, PROMETHEUS, Alertmanager, Prometheus

        if not Path(PROMETHEUS).exists():
            self.notes.append("Prometheus: not installed (scripts/setup-deps installs it) - skipped")
            return
        mixin = self.workdir / "mixin"
        settings = self.workdir / "lab-mixin-settings.yaml"
        settings.write_text(yaml.safe_dump({**LAB_MIXIN_SETTINGS, "rate_window": self.opts.rules_rate_window},
                                           sort_keys=False))
        # Only the rules: Prometheus needs nothing else, and `generate` would warn that promtool
        # tests need a rate window of whole minutes (the lab's is short on purpose) - noise a
        # newcomer cannot act on.
        (mixin / "alerts").mkdir(parents=True, exist_ok=True)
        rule_file = mixin / "alerts" / RULE_FILE
        rule_file.write_text(dump_yaml(mixin_rules.to_prometheus(mixin_rules.build(load_settings(str(settings))))))
        rules = [str(rule_file)]
        alertmanager = None
        if Path(ALERTMANAGER).exists():
            alertmanager = Alertmanager(self.workdir / "alertmanager", None, group_wait="10s",
                                        group_interval="30s").start()
            self.services.append(alertmanager)
        host, _, port = self.opts.prometheus_listen.rpartition(":")
        interval = f"{max(self.opts.interval, 1):g}s"
        prometheus = Prometheus(self.workdir / "prometheus", job="fabric-exporter", targets=[self.opts.listen],
                                rule_files=rules, interval=interval, port=int(port),
                                alertmanager=f"127.0.0.1:{alertmanager.port}" if alertmanager else None).start()
        self.services.append(prometheus)
        self.notes.append(f"Prometheus: {prometheus.base}/alerts (our rules, scraping every {interval})"
                          + (f"; Alertmanager: {alertmanager.base}/" if alertmanager else ""))

    def _schedule_poc(self) -> None:
        """Switch the POC's scenarios on and off on time; write the timeline beside the config."""
        import json

        from .poc import schedule, total_seconds

        loop, now = asyncio.get_running_loop(), time.time()
        total = total_seconds(self.opts.poc_phase)
        phases = schedule(self.opts.poc_phase)
        for p in phases:
            p["start"], p["end"] = now + p["offset_seconds"], now + p["offset_seconds"] + p["seconds"]
            loop.call_later(p["offset_seconds"], log.info, f"POC phase: {p['phase']}")
            if p["scenario"]:
                loop.call_later(p["offset_seconds"], self.model.start, p["scenario"], time.monotonic())
                loop.call_later(p["offset_seconds"] + p["seconds"], self.model.stop, p["scenario"])
        (self.workdir / "poc-timeline.json").write_text(json.dumps(
            {"phase_seconds": self.opts.poc_phase, "start": now, "end": now + total, "phases": phases}, indent=2))
        # No --settings: the report reads the settings from the rules this lab's Prometheus loaded.
        report_argv = ["--prometheus-url", f"http://{self.opts.prometheus_listen}", "--from", f"{now:.0f}",
                       "--to", f"{now + total:.0f}", "--out", str(self.opts.report or "poc-report")]
        print(f"POC running for {total:.0f} s (timeline: {self.workdir / 'poc-timeline.json'}); "
              + (f"the report goes to {self.opts.report} when it is over" if self.opts.report else
                 f"then:\n  fabric-exporter report {shlex.join(report_argv)}"), file=sys.stderr, flush=True)
        loop.call_later(total, self._poc_over, phases, report_argv)

    def _poc_over(self, phases: list[dict], report_argv: list[str]) -> None:
        """Say that the POC sequence is over, what ran and how to get the report; write it with --report."""
        ran = ", ".join(f"{p['phase']} ({p['seconds']:g} s)" for p in phases)
        print(f"POC sequence over: {ran}; timeline: {self.workdir / 'poc-timeline.json'}\n"
              + (f"  writing the report to {self.opts.report} once Prometheus has recorded the last phase"
                 if self.opts.report else f"  report: fabric-exporter report {shlex.join(report_argv)}"),
              file=sys.stderr, flush=True)
        if self.opts.report:
            self._report_task = asyncio.ensure_future(self._write_report(report_argv))

    async def _write_report(self, report_argv: list[str]) -> None:
        """``fabric-exporter report`` itself (same parser, same code), in a thread: it blocks on HTTP."""
        from ..report.main import add_arguments as report_arguments, main as report_main
        from .prometheus import Prometheus

        if not any(isinstance(s, Prometheus) for s in self.services):
            print("POC report not written: the lab's Prometheus is not running (scripts/setup-deps installs it)",
                  file=sys.stderr, flush=True)
            return
        # the last phase's samples: two scrapes and one rule evaluation after the sequence's end
        await asyncio.sleep(3 * max(self.opts.interval, 1.0) + 1.0)
        parser = argparse.ArgumentParser(prog="fabric-exporter report")
        report_arguments(parser)
        status = await asyncio.to_thread(report_main, parser.parse_args(report_argv))
        print(f"POC report {'written to ' + str(self.opts.report) if status == 0 else 'failed (see above)'}; "
              f"the same again: fabric-exporter report {shlex.join(report_argv)}", file=sys.stderr, flush=True)

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


def main(args: argparse.Namespace) -> int:
    from ..logsetup import setup_logging

    setup_logging(args.log_level, "text")
    if args.report and ("poc" not in args.scenario or args.no_prometheus):
        print("fabric-exporter lab: --report needs --scenario poc and the lab's Prometheus (no --no-prometheus)",
              file=sys.stderr)
        return 2
    opts = LabOptions(listen=args.listen, control=args.control, workdir=args.workdir, racks=args.racks,
                      hosts_per_rack=args.hosts_per_rack, nics=args.nics, ib=not args.no_ib,
                      ib_spines=args.ib_spines, prometheus=not args.no_prometheus, slurm=not args.no_slurm,
                      gnmi=not args.no_gnmi,
                      prometheus_listen=args.prometheus_address, interval=args.interval,
                      scenarios=args.scenario, duration=args.duration, poc_phase=args.poc_phase,
                      rules_rate_window=args.rules_rate_window, switch_os=args.switch_os,
                      # absolute now: the lab changes into its work directory before the POC ends
                      report=args.report.resolve() if args.report else None)
    return asyncio.run(Lab(opts).run())
