"""The lab's simulated parts: the GPU hosts and leaves built and cabled, and the simulators started,
each only where its tools are installed (and a note saying so when not): ibsim with opensm, snmpsim
agents, the gNMI-only leaf, Slurm, Prometheus with the lab's rules and Alertmanager; and all of them
stopped."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from ..mixin.settings import FOR_DEFAULTS
from . import roce_host
from .ib_ticks import IbTicks
from .traffic import IB_XMIT_WAIT_SCALE, LOSSLESS

if TYPE_CHECKING:
    from .run import Lab

IB_TOOLS = ("ibsim", "opensm", "ibqueryerrors", "ibnetdiscover", "perfquery")
GNMI_LEAF = "leaf-cumulus"  # the lab's gNMI-only switch
SLURM_TOOLS = ("munged", "slurmctld", "slurmd", "squeue", "sbatch")
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


def build_roce(lab: Lab) -> None:
    """The GPU hosts, ``hosts_per_rack`` per rack, each with its RoCE NICs."""
    for rack in range(1, lab.opts.racks + 1):
        for n in range(1, lab.opts.hosts_per_rack + 1):
            # one name per host for NICs, IB HCA (ibsim numbers its CAs leaf by leaf the same
            # way) and Slurm node: gpu-001, gpu-002, ...
            name = f"gpu-{(rack - 1) * lab.opts.hosts_per_rack + n:03d}"
            host = roce_host.RoceHost.build(name, "mlx5", nics=lab.opts.nics, pfc_priorities=(LOSSLESS,),
                                            seed=rack * 100 + n)
            lab.hosts[name] = host
            lab.rack_of[name] = rack


def start_ib(lab: Lab) -> None:
    """ibsim and opensm on a fat tree of ``racks`` leaves, and the ticks that move its counters."""
    missing = [t for t in IB_TOOLS if not shutil.which(t)]
    if not lab.opts.ib or missing:
        lab.notes.append("InfiniBand: off" + (f" ({', '.join(missing)} not installed: run scripts/setup-deps)"
                                              if missing else ""))
        return
    from .ibsim import FatTree, IbsimFabric

    tree = FatTree(spines=lab.opts.ib_spines, leaves=lab.opts.racks, hcas_per_leaf=lab.opts.hosts_per_rack)
    lab.ib = IbsimFabric(tree, lab.workdir / "ib").start(timeout=90)
    lab.ib_ticks = IbTicks(lab.ib, lab.model)
    lab.notes.append(f"InfiniBand: ibsim fat tree, {len(tree.switches)} switches, {len(tree.cas)} HCAs "
                     f"(IBSIM_SOCKNAME={lab.ib.sockname})")


def start_snmp(lab: Lab) -> None:
    """The leaves, cabled to their rack's hosts, and one snmpsim agent per leaf."""
    from .snmp import SimulatedSwitch, SnmpSim

    for rack in range(1, lab.opts.racks + 1):
        name = f"leaf-r{rack}"
        lab.switches[name] = SimulatedSwitch(name, "arista" if lab.eos else "sonic",
                                             ports=max(8, lab.opts.hosts_per_rack * lab.opts.nics),
                                             queues=8, seed=rack)
    cable_hosts(lab)
    if not lab.opts.snmp:
        lab.notes.append("switches over SNMP: off")
        return
    import importlib.util

    if importlib.util.find_spec("snmpsim") is None:
        lab.notes.append("switches over SNMP: off (snmpsim is not installed: pip install 'fabric-exporter[lab]'); "
                         "the switches' CLI is still served over SSH")
        return
    for name, sw in lab.switches.items():
        lab.snmp_agents[name] = SnmpSim([sw], lab.workdir / f"snmp-{name}").start(timeout=60)
    lab.notes.append(f"switches: {len(lab.switches)} {'EOS' if lab.eos else 'SONiC'}-like leaves over SNMP "
                     f"(snmpsim) and CLI (SSH)")


async def start_gnmi(lab: Lab) -> None:
    """The gNMI-only Cumulus leaf: its own simulated switch (not cabled to the GPU hosts), whose
    counters the target moves on by itself every poll interval."""
    import importlib.util

    if not lab.opts.gnmi:
        return
    if importlib.util.find_spec("grpc") is None or importlib.util.find_spec("gnmi_pb") is None:
        lab.notes.append("switches over gNMI: off (grpcio/gnmi-pb are not installed: "
                         "pip install 'fabric-exporter[gnmi]')")
        return
    from .gnmi_target import GnmiTarget
    from .snmp import SimulatedSwitch

    sw = SimulatedSwitch(GNMI_LEAF, "sonic", ports=8, queues=8, seed=77)
    target = GnmiTarget(sw, "cumulus", advance_every=max(1.0, lab.opts.interval))
    await target.serve()  # in this loop: the target's switch is only touched here
    lab.gnmi_targets[GNMI_LEAF] = target
    lab.notes.append(f"switches over gNMI: {GNMI_LEAF}, Cumulus-like, on 127.0.0.1:{target.port} "
                     f"(insecure; try: gnmic -a 127.0.0.1:{target.port} --insecure subscribe --mode once "
                     f"--path /qos)")


def cable_hosts(lab: Lab) -> None:
    """Each rack's hosts on its leaf, NIC by NIC in order: the leaf's LLDP neighbours (SNMP and CLI)
    name the lab's hosts as they are named, so the neighbour map joins the NIC and job series."""
    for rack, sw in enumerate(lab.switches.values(), start=1):
        ports = [(name, p.netdev) for name, host in lab.hosts.items() if lab.rack_of[name] == rack
                 for p in host.ports]
        for index, (name, netdev) in enumerate(ports[:len(sw.interfaces)]):
            sw.connect(index, name, netdev)


def start_slurm(lab: Lab) -> None:
    """munged, slurmctld and one slurmd per GPU host; SLURM_CONF set for the daemon and the shell."""
    missing = [t for t in SLURM_TOOLS if not shutil.which(t) and not Path(f"/usr/sbin/{t}").exists()]
    if missing:
        lab.notes.append(f"Slurm: off ({', '.join(missing)} not installed: run scripts/setup-deps)")
        return
    from .slurm import SlurmLab

    lab.slurm = SlurmLab(lab.workdir / "slurm", tuple(lab.hosts))
    try:
        lab.slurm.start()
    except BaseException:
        lab.slurm.stop()
        lab.slurm = None
        raise
    # the daemon's slurm_jobs target (transport local) and anything the lab runs find it here
    os.environ["SLURM_CONF"] = str(lab.slurm.conf)
    lab.notes.append(f"Slurm: {len(lab.hosts)} nodes ({', '.join(list(lab.hosts)[:2])}, ...), partition "
                     f"{lab.slurm.partition}; in a shell: export SLURM_CONF={lab.slurm.conf}\n"
                     f"               then e.g. sbatch -N2 --wrap='sleep 600'; squeue")


def start_prometheus(lab: Lab) -> None:
    """Prometheus scraping the daemon with the generated rules, and Alertmanager, if installed."""
    from ..mixin import rules as mixin_rules
    from ..mixin.generate import RULE_FILE, dump_yaml
    from ..mixin.settings import load_settings
    from .prometheus import ALERTMANAGER, PROMETHEUS, Alertmanager, Prometheus

    if not Path(PROMETHEUS).exists():
        lab.notes.append("Prometheus: not installed (scripts/setup-deps installs it) - skipped")
        return
    mixin = lab.workdir / "mixin"
    settings = lab.workdir / "lab-mixin-settings.yaml"
    settings.write_text(yaml.safe_dump({**LAB_MIXIN_SETTINGS, "rate_window": lab.opts.rules_rate_window},
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
        alertmanager = Alertmanager(lab.workdir / "alertmanager", None, group_wait="10s",
                                    group_interval="30s").start()
        lab.services.append(alertmanager)
    host, _, port = lab.opts.prometheus_listen.rpartition(":")
    interval = f"{max(lab.opts.interval, 1):g}s"
    prometheus = Prometheus(lab.workdir / "prometheus", job="fabric-exporter", targets=[lab.opts.listen],
                            rule_files=rules, interval=interval, port=int(port),
                            alertmanager=f"127.0.0.1:{alertmanager.port}" if alertmanager else None).start()
    lab.services.append(prometheus)
    lab.notes.append(f"Prometheus: {prometheus.base}/alerts (our rules, scraping every {interval})"
                     + (f"; Alertmanager: {alertmanager.base}/" if alertmanager else ""))


async def stop_services(lab: Lab) -> None:
    """Stop every simulator this lab started (the daemon and the control app are stopped before)."""
    if lab.ssh is not None:
        await lab.ssh.stop()
    for files in lab.counter_files.values():
        files.close()
    for service in lab.services:
        service.stop()
    for agent in lab.snmp_agents.values():
        agent.stop()
    for target in lab.gnmi_targets.values():
        await target.close()
    if lab.ib is not None:
        lab.ib.stop()
    if lab.slurm is not None:
        lab.slurm.stop()
