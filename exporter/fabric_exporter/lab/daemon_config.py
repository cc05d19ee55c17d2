"""The in-process daemon's config for the lab: one target per simulated source, on the ports and
credentials the lab's simulators serve."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .traffic import IB_XMIT_WAIT_SCALE

if TYPE_CHECKING:
    from .run import Lab

IB_LATENCY_DEVICE = "mlx5_ib0"  # the IB fabric's probes run on this device; lab/perftest answers per device


def daemon_config(lab: Lab) -> dict:
    interval = f"{lab.opts.interval:g}s"
    timeout = f"{lab.opts.interval * 0.8:g}s"
    ports = lab.ssh.ports
    creds = {"lab-ssh": {"type": "ssh", "username": "fabricmon", "private_key_file": str(lab.ssh.client_key),
                         "known_hosts_file": str(lab.ssh.known_hosts), "connect_timeout": "3s"}}
    targets = []
    if lab.ib is not None:
        targets.append({"name": "ib-fabric", "fabric": "ib-lab", "collector": "infiniband", "transport": "local",
                        "interval": interval, "timeout": timeout,
                        "options": {"env": lab.ib.env(), "topology_interval": "1m",
                                    "use_discovery_cache": False,
                                    # the focus set, its burst threshold scaled like the lab's
                                    # transmit-wait counter (traffic.IB_XMIT_WAIT_SCALE)
                                    "focus": True, "focus_top_k": 8,
                                    "focus_burst_threshold": 0.1 * IB_XMIT_WAIT_SCALE}})
    gpu_hosts = [{"name": h, "address": "127.0.0.1", "port": ports[h]} for h in lab.hosts]
    targets.append({"name": "gpu-nics", "fabric": "roce-lab", "collector": "roce_nic", "transport": "ssh",
                    "credentials": "lab-ssh", "interval": interval, "timeout": timeout, "hosts": gpu_hosts,
                    # the sub-second sampler: one streaming probe per host on its counter files
                    "options": {"burst": {"window": "100ms"}}})
    for name, agent in lab.snmp_agents.items():
        creds[f"snmp-{name}"] = {"type": "snmp", "version": "2c", "community": name}
        targets.append({"name": f"snmp-{name}", "fabric": "roce-lab", "collector": "snmp_switch",
                        "transport": "snmp", "credentials": f"snmp-{name}", "interval": interval,
                        "timeout": timeout,
                        "hosts": [{"name": name, "address": "127.0.0.1", "port": agent.port}],
                        # the LLDP neighbour map comes over SNMP when the agents run, else over the CLI
                        "options": {"modules": (["if_mib", "arista_pfc", "arista_queue"] if lab.eos
                                                else ["if_mib", "cisco_pfc", "cisco_qos"]) + ["lldp"]}})
    for name, target in lab.gnmi_targets.items():
        targets.append({"name": f"gnmi-{name}", "fabric": "roce-lab", "collector": "gnmi_switch",
                        "transport": "gnmi", "interval": interval, "timeout": timeout,
                        "hosts": [{"name": name, "address": "127.0.0.1", "port": target.port}],
                        "options": {"dialect": "cumulus", "mode": "stream", "insecure": True,
                                    "sample_interval": f"{max(1.0, lab.opts.interval):g}s"}})
    targets.append({"name": "switch-cli", "fabric": "roce-lab", "collector": "switch_cli", "transport": "ssh",
                    "credentials": "lab-ssh", "interval": interval, "timeout": timeout,
                    "hosts": [{"name": s, "address": "127.0.0.1", "port": ports[s]} for s in lab.switches],
                    "options": switch_cli_options(lab)})
    racks = {f"rack{r}": [h for h in lab.hosts if lab.rack_of[h] == r] for r in range(1, lab.opts.racks + 1)}
    targets.append({"name": "latency", "fabric": "roce-lab", "collector": "latency_probe", "transport": "ssh",
                    "credentials": "lab-ssh", "interval": interval, "timeout": timeout, "hosts": gpu_hosts,
                    "options": {"host_groups": racks, "probe_timeout": "2s"}})
    if lab.ib is not None and "poc" in lab.opts.scenarios:
        # the same hosts probed over their IB adapters: the IB fabric's latency (POC only: it doubles
        # the probing work, which a small shared machine feels in every other poll)
        targets.append({"name": "latency-ib", "fabric": "ib-lab", "collector": "latency_probe",
                        "transport": "ssh", "credentials": "lab-ssh", "interval": interval, "timeout": timeout,
                        "hosts": gpu_hosts, "options": {"host_groups": racks, "probe_timeout": "2s",
                                                        "device": IB_LATENCY_DEVICE,
                                                        "port_range": [20000, 20999]}})
    if lab.slurm is not None:
        targets.append({"name": "slurm", "fabric": "slurm-lab", "collector": "slurm_jobs", "transport": "local",
                        "interval": interval, "timeout": timeout, "options": {"cluster": "fabriclab"}})
    return {"web": {"listen_address": lab.opts.listen},
            "defaults": {"interval": interval, "timeout": timeout}, "credentials": creds, "targets": targets}


def switch_cli_options(lab: Lab) -> dict:
    """What the CLI reads: what SNMP does not give when the leaves are also polled over SNMP
    (one source per series)."""
    if lab.eos:  # discards and queue drops are if_mib's and arista_queue's; PFC totals and ECN only here
        return {"dialect": "eos",
                "commands": ["pfc", "ecn"] if lab.snmp_agents else ["discards", "queue", "pfc", "ecn"]}
    commands = ["wred", "pfcwd"] if lab.snmp_agents else ["pfc", "queue", "wred", "pfcwd", "lldp"]
    return {"commands": commands + ["queue_watermark", "pg_watermark", "buffer_pool_watermark", "pfc_history"]}
