"""Golden /metrics (node_exporter's e2e-output.txt idea): the real daemon, every collector, fixed inputs,
the whole exposition compared with ``metrics.golden.txt`` — so any change in a name, label, HELP
text, order or value shows up in review as a diff of that file.

Fixed inputs, all on 127.0.0.1 and none of them moving while the test runs:
- infiniband: an ibsim fat tree read by the real infiniband-diags tools (transport local);
- roce_nic: two simulated GPU hosts (mlx5, bnxt_re) behind the lab's SSH server;
- snmp_switch: three simulated switches (SONiC, Arista, IEEE PFC MIB) served by snmpsim;
- switch_cli: a simulated SONiC switch's ``show`` outputs behind a real OpenSSH sshd;
- gnmi_switch: a simulated switch served by the lab's gNMI target in the cumulus dialect (poll mode);
- latency_probe: four hosts with the lab's fake perftest (fixed latencies) behind real sshd;
- and one SSH target on a dead port, so a failing target's series are in the file too.

Every target polls once (interval 1h), the daemon reports /ready, and /metrics is read once.
What cannot be fixed is masked, explicitly — see ``MASKED_VALUES``/``MASKED_LABELS`` and
tests/e2e/golden/README.md. The raw text (before masking) must also pass ``promtool check metrics``.

Regenerate after an intended change:  FABRIC_UPDATE_GOLDEN=1 pytest tests/e2e/golden
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from fabric_exporter.lab.ibsim import FatTree, IbsimFabric
from fabric_exporter.lab.roce_host import RoceHost
from fabric_exporter.lab.gnmi_target import GnmiTarget
from fabric_exporter.lab.slurm import SlurmLab
from fabric_exporter.lab.snmp import SimulatedSwitch, SnmpSim
from fabric_exporter.lab.sonic_cli import install_fake_show, write_outputs
from tests.harness.golden import check_golden
from tests.harness.daemon import DaemonProcess, free_port
from tests.harness.latency_sshd import LatencyLab
from tests.harness.nic_hosts import NicHosts
from tests.harness.sshd import SSHD

GOLDEN = Path(__file__).with_name("metrics.golden.txt")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("ibsim") is None, reason="needs ibsim-utils and infiniband-diags"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the sshd harness (switch CLI, latency hosts) needs root"),
]

# Series whose value is a clock reading or a measured time: the value becomes <masked>, the series
# (name and labels) stays, so a series appearing or going away still shows.
MASKED_VALUES = {
    "fabric_poll_duration_seconds": "wall time of the poll",
    "fabric_last_poll_timestamp_seconds": "wall clock",
    "fabric_last_success_timestamp_seconds": "wall clock",
    "fabric_config_last_reload_success_timestamp_seconds": "wall clock",
    "fabric_ib_sweep_duration_seconds": "wall time of each infiniband-diags run",
    "fabric_ib_topology_last_refresh_timestamp_seconds": "wall clock",
    "fabric_rdma_latency_last_probe_timestamp_seconds": "wall clock of the probe",
    # ibsim counts the MADs of opensm's sweeps and of the tools' own queries in these four, so they
    # depend on timing; their mapping (x4 words -> bytes) is tested with set values in
    # tests/e2e/infiniband/test_collector_ibsim.py.
    "fabric_ib_port_data_received_bytes_total": "ibsim counts management traffic",
    "fabric_ib_port_data_transmitted_bytes_total": "ibsim counts management traffic",
    "fabric_ib_port_packets_received_total": "ibsim counts management traffic",
    "fabric_ib_port_packets_transmitted_total": "ibsim counts management traffic",
    # a late answer to a retried SNMP request counts as unmatched: timing again; the counting itself is
    # tested in tests/unit/transport/test_snmp_fast.py and tests/unit/serving/test_selfmetrics.py
    "fabric_snmp_datagrams_dropped_total": "late SNMP answers depend on timing",
    "fabric_job_start_time_seconds": "wall clock of the job's start",
    # how late the daemon's loop woke, and how many times: tested in tests/unit/test_looplag.py
    "fabric_event_loop_lag_seconds": "measured lateness of the event loop",
}
# Label values that depend on the machine, not on the exporter's behaviour.
MASKED_LABELS = {
    ("fabric_build_info", "version"): "changes with every release",
    ("fabric_build_info", "python_version"): "the interpreter running the test",
}
# Families the daemon does not own (none today: the exporter does not register prometheus_client's
# process/platform collectors on /metrics). Listed here so adding one is a visible decision.
EXCLUDED_PREFIXES: tuple[str, ...] = ()

LATENCY = {"min": 1.9, "typical": 2.1, "avg": 2.2, "p99": 2.9, "p999": 4.4, "max": 9.8}  # µs, every pair
LATENCY_GROUPS = {"rack-a": ["lat-a1", "lat-a2"], "rack-b": ["lat-b1", "lat-b2"]}
SNMP_SWITCHES = {"leaf-sw1": ("sonic", ["if_mib", "cisco_pfc", "cisco_qos", "lldp"]),
                 "leaf-sw2": ("arista", ["if_mib", "arista_pfc", "arista_queue"]),
                 "leaf-sw3": ("ieee", ["if_mib", "ieee8021_pfc", "lldp_v2"])}

_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?P<labels>\{.*\})? (?P<value>\S+)$")
_LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')


def _family(name: str) -> str:
    for suffix in ("_bucket", "_count", "_sum", "_created"):
        if name.endswith(suffix) and name[:-len(suffix)] in MASKED_VALUES:
            return name[:-len(suffix)]
    return name


def mask(text: str) -> str:
    """The exposition with ``MASKED_VALUES``/``MASKED_LABELS`` replaced by <masked>; order kept."""
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) > 2 and parts[2].startswith(EXCLUDED_PREFIXES or ("\0",)):
                continue
            out.append(line)
            continue
        m = _SAMPLE.match(line)
        assert m, f"not an exposition line: {line!r}"
        name, labels, value = m["name"], m["labels"] or "", m["value"]
        if EXCLUDED_PREFIXES and name.startswith(EXCLUDED_PREFIXES):
            continue
        if _family(name) in MASKED_VALUES:
            value = "<masked>"
        if labels:
            labels = _LABEL.sub(lambda lm: f'{lm["key"]}="<masked>"' if (name, lm["key"]) in MASKED_LABELS
                                else lm[0], labels)
        out.append(f"{name}{labels} {value}")
    return "\n".join(out) + "\n"


def test_masked_names_are_catalog_metrics():
    """The mask list cannot go stale: each entry names a metric the catalog still has."""
    from fabric_exporter.catalog import CATALOG

    assert sorted((set(MASKED_VALUES) | {name for name, _ in MASKED_LABELS}) - set(CATALOG)) == []


def test_mask_replaces_only_the_listed_values_and_labels():
    text = ('# HELP fabric_poll_duration_seconds x\n# TYPE fabric_poll_duration_seconds gauge\n'
            'fabric_poll_duration_seconds{group="g",host="h"} 0.123\n'
            'fabric_polls_total{group="g",host="h"} 1.0\n'
            'fabric_build_info{python_version="3.11.2",version="0.4.0"} 1.0\n')
    assert mask(text) == ('# HELP fabric_poll_duration_seconds x\n# TYPE fabric_poll_duration_seconds gauge\n'
                          'fabric_poll_duration_seconds{group="g",host="h"} <masked>\n'
                          'fabric_polls_total{group="g",host="h"} 1.0\n'
                          'fabric_build_info{python_version="<masked>",version="<masked>"} 1.0\n')


class Sources:
    """Every collector's fixed input, started together and stopped in reverse order."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self._stops: list = []
        self.env: dict[str, str] = {}  # the daemon's environment (SLURM_CONF for slurm_jobs)

    def start(self) -> dict:
        tmp = self.tmp
        fabric = IbsimFabric(FatTree(spines=1, leaves=2, hcas_per_leaf=2, switch_ports=8), tmp / "ibsim",
                             sockname=f"golden{free_port()}")
        fabric.start()
        self._stops.append(fabric.stop)

        gpus = [RoceHost.build("gpu-001", "mlx5", nics=2, seed=7), RoceHost.build("gpu-002", "bnxt", nics=1, seed=8)]
        for h in gpus:
            h.advance(10)
        nics = NicHosts(tmp, gpus)
        self._stops.append(nics.stop)

        switches = [SimulatedSwitch(name, model, ports=4, seed=3 + i)
                    for i, (name, (model, _)) in enumerate(SNMP_SWITCHES.items())]
        for sw in switches:
            sw.advance(5)
        # LLDP neighbours: the GPU hosts' NICs (LLDP-MIB on the SONiC leaf, LLDP-V2-MIB on the IEEE one)
        switches[0].connect(0, gpus[0].name, gpus[0].ports[0].netdev)
        switches[0].connect(1, gpus[0].name, gpus[0].ports[1].netdev)
        switches[2].lldp_mib = "v2"
        switches[2].connect(2, gpus[1].name, gpus[1].ports[0].netdev)
        sim = SnmpSim(switches, workdir=tmp / "snmpsim").start()
        self._stops.append(sim.stop)

        cli_switch = SimulatedSwitch("leaf-cli", "sonic", ports=4, queues=4, seed=9)
        cli_switch.advance(5)
        cli_switch.connect(3, gpus[1].name, gpus[1].ports[0].netdev)
        write_outputs(cli_switch, tmp / "sonic-cli" / "data")
        install_fake_show(tmp / "sonic-cli" / "bin", tmp / "sonic-cli" / "data")
        sshd = SSHD(tmp / "sonic-cli", path_dirs=[tmp / "sonic-cli" / "bin"]).start()
        self._stops.append(sshd.stop)

        gnmi_switch = SimulatedSwitch("leaf-gnmi", "sonic", ports=2, queues=2, seed=11)
        gnmi_switch.advance(5)
        gnmi = GnmiTarget(gnmi_switch, "cumulus").start()
        self._stops.append(gnmi.stop)

        latency = LatencyLab(tmp, [h for hosts in LATENCY_GROUPS.values() for h in hosts], {"default": LATENCY}).start()
        self._stops.append(latency.stop)

        # a real Slurm: one job on both nodes, one array task on the first (ids fixed: fresh state)
        slurm = SlurmLab(tmp / "slurm", ("gpu-001", "gpu-002"))
        slurm.start()
        self._stops.append(slurm.stop)
        jobs = [slurm.submit(["gpu-001", "gpu-002"], name="allreduce")]
        jobs.append(slurm.run("sbatch", "--parsable", "--array=0", "-N1", "-w", "gpu-001", "--job-name=sweep",
                              f"--output={tmp}/slurm/log/x.out", f"--chdir={tmp}", "--wrap=sleep 600").stdout.strip())
        slurm.wait_running(["1", "2_0"])
        self.env = {"SLURM_CONF": str(slurm.conf)}

        key = tmp / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30)
        (tmp / "known_hosts").write_text("")
        once = {"interval": "1h", "timeout": "30s"}
        return {
            "credentials": {
                "nobody": {"type": "ssh", "username": "nobody", "private_key_file": str(key),
                           "known_hosts_file": str(tmp / "known_hosts"), "connect_timeout": "1s"},
                "nic-lab": nics.credential(), "sonic-cli": sshd.credential(), "latency-lab": latency.credential(),
                **{name: {"type": "snmp", "version": "2c", "community": name} for name in SNMP_SWITCHES}},
            "targets": [
                {"name": "ib", "fabric": "ib-lab", "collector": "infiniband", "transport": "local", **once,
                 "options": {"env": fabric.env()}},
                {"name": "gpu", "fabric": "roce-lab", "collector": "roce_nic", "transport": "ssh",
                 "credentials": "nic-lab", "hosts": nics.targets(), **once},
                *({"name": f"snmp-{name}", "fabric": "roce-lab", "collector": "snmp_switch", "transport": "snmp",
                   "credentials": name, "hosts": [{"name": name, "address": "127.0.0.1", "port": sim.port}],
                   "options": {"modules": modules, "snmp_timeout": "5s", "snmp_retries": 2}, **once}
                  for name, (_, modules) in SNMP_SWITCHES.items()),
                {"name": "cli-switch", "fabric": "roce-lab", "collector": "switch_cli", "transport": "ssh",
                 "credentials": "sonic-cli", "hosts": [{"name": "leaf-cli", "address": "127.0.0.1", "port": sshd.port}],
                 "options": {"commands": ["pfc", "queue", "wred", "pfcwd", "queue_watermark", "pg_watermark",
                                          "buffer_pool_watermark", "pfc_history", "lldp"]},
                 **once},
                {"name": "gnmi-switch", "fabric": "roce-lab", "collector": "gnmi_switch", "transport": "gnmi",
                 "hosts": [{"name": "leaf-gnmi", "address": "127.0.0.1", "port": gnmi.port}], **once,
                 "options": {"dialect": "cumulus", "mode": "poll", "insecure": True}},
                {"name": "latency", "fabric": "roce-lab", "collector": "latency_probe", "transport": "ssh",
                 "credentials": "latency-lab", "hosts": latency.hosts(), **once,
                 "options": {"host_groups": LATENCY_GROUPS, "plan": {"full_mesh": True, "sampled_peers": 1},
                             "probe_timeout": "10s", "server_start_wait": "200ms"}},
                {"name": "slurm", "fabric": "slurm-lab", "collector": "slurm_jobs", "transport": "local", **once,
                 "options": {"cluster": "golden", "drop_labels": ["user"]}},
                {"name": "gpu-unreachable", "fabric": "roce-lab", "collector": "roce_nic", "transport": "ssh",
                 "credentials": "nobody", **once,
                 "hosts": [{"name": "gpu-404", "address": "127.0.0.1", "port": free_port()}]},
            ],
        }

    def stop(self) -> None:
        while self._stops:
            try:
                self._stops.pop()()
            except Exception as e:  # keep stopping the others
                print(f"stopping a source failed: {e}")


def scrape_once(tmp: Path) -> str:
    sources = Sources(tmp)
    try:
        config = sources.start()
        (tmp / "exporter.yaml").write_text(yaml.safe_dump(config))
        # every snapshot's render checked against a whole render (a mismatch fails the poll, loudly)
        with DaemonProcess(tmp / "exporter.yaml", env={**sources.env, "FABRIC_VERIFY_RENDER": "1"}) as daemon:
            return daemon.metrics_when_ready(90)
    finally:
        sources.stop()


def test_whole_metrics_output_matches_the_golden_file(tmp_path):
    text = scrape_once(tmp_path)
    promtool = shutil.which("promtool")
    if promtool is not None:
        lint = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
        assert lint.returncode == 0, lint.stdout + lint.stderr
    got = mask(text)
    check_golden(GOLDEN, got)
