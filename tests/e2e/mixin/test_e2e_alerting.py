"""End to end, all real: simulated sources -> fabric-exporter daemon -> Prometheus (our rules) ->
Alertmanager -> a webhook receiver in this test.

Sources: an ibsim fabric (infiniband collector, real infiniband-diags), a simulated GPU host behind
the lab's SSH server (roce_nic collector over SSH), a simulated SONiC switch served by snmpsim
(snmp_switch collector), and an SSH target on a dead port.

A congestion episode on InfiniBand (PortXmitWait climbing on one port through ibsim's console) and a
PFC pause storm on a NIC (pause time on the lossless priority climbing at 1 s/s) must each go
pending -> firing -> delivered with the right labels and annotations, and resolve once cleared. The
dead target must page as FabricTargetDown. Every dashboard query whose metrics the running sources
produce must return data from this Prometheus.

Short intervals (scrape/eval 1s, 1s polls, a 5s rate window, 3s for:) keep it well under 2 minutes.
The measured timings are printed (run with -s) and written to e2e-timings.json in the tmp dir.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import threading
import time

import pytest
import yaml

from fabric_exporter.catalog import CATALOG
from fabric_exporter.lab.ibsim import FatTree, IbsimFabric
from fabric_exporter.lab.roce_host import RoceHost
from fabric_exporter.lab.snmp import SimulatedSwitch, SnmpSim
from fabric_exporter.lab.sonic_cli import install_fake_show, write_outputs
from fabric_exporter.mixin import dashboards, generate, job_views, rules
from fabric_exporter.mixin.panels import queries_of
from fabric_exporter.mixin.settings import Settings
from tests.harness.daemon import DaemonProcess, free_port
from tests.harness.latency_sshd import LatencyLab
from tests.harness.nic_hosts import NicHosts
from tests.harness.sshd import SSHD
from tests.harness.prometheus import ALERTMANAGER, PROMETHEUS, Alertmanager, Prometheus, WebhookReceiver, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("ibsim") is None or not os.path.exists(PROMETHEUS)
                       or not os.path.exists(ALERTMANAGER),
                       reason="needs ibsim-utils, prometheus and prometheus-alertmanager"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the sshd harness (latency hosts, switch CLI) needs root"),
]

JOB = "fabric-exporter"
CONGESTED = ("leaf-01", 1)  # leaf-01 port 1 -> gpu-001: the port whose PortXmitWait we drive
E2E_SETTINGS = {
    "selector": f'job="{JOB}"',
    # a latency round lands every ~3s: 10s always holds one
    "rate_window": "10s",
    # ibsim has no 64-bit PortXmitWait: keep the injected rate well inside the 32-bit counter for minutes
    # The NIC lab adds pause time in 0.5 s ticks and polls land every 2 s, so a 10 s rate of a port paused
    # 100% of the time reads 0.8-1.0: alert at 0.5 here (the 0.9 default is unit-tested by promtool).
    "thresholds": {"ib_xmit_wait_ratio": 0.001, "pfc_pause_fraction": 0.5},
    "for": {"FabricIBXmitWaitHigh": "3s", "FabricTargetDown": "3s", "FabricRocePfcPauseStorm": "3s",
            "FabricLatencyP99High": "3s"},
}
E2E_SOURCES = {"exporter", "infiniband", "roce_nic", "snmp_switch", "switch_cli", "latency_probe"}
BURST_SAMPLER_METRICS = ("fabric_roce_nic_burst_peak_ratio", "fabric_roce_nic_burst_window_ratio",
                         "fabric_roce_nic_bursts_total", "fabric_roce_nic_burst_seconds_total")
CLI_SWITCH = "leaf-cli"
LATENCY_GROUPS = {"rack-a": ["lat-a1", "lat-a2"], "rack-b": ["lat-b1", "lat-b2"]}
NORMAL_LATENCY = {"min": 1.9, "typical": 2.1, "avg": 2.2, "p99": 2.9, "p999": 4.4, "max": 9.8}  # µs
SLOW_LATENCY = {"min": 20.0, "typical": 30.0, "avg": 31.0, "p99": 60.0, "p999": 80.0, "max": 95.0}
NIC_HOST, NIC_DEVICE = "gpu-001", "mlx5_0"


class NicLab(NicHosts):
    """The lab's SSH server for one simulated GPU host, whose counters move as busy traffic
    between polls."""

    def __init__(self, tmp):
        self.host = RoceHost.build(NIC_HOST, "mlx5", nics=1, seed=7)
        self.host.advance(10)
        self.storm = threading.Event()
        super().__init__(tmp, [self.host])
        self._ticker = asyncio.run_coroutine_threadsafe(self._tick(), self.loop)

    async def _tick(self):
        port = self.host.port(NIC_DEVICE)
        # The lab's traffic model moves every counter named *pause*, the NIC's storm-watchdog events
        # included; a healthy NIC never counts those, so hold them still.
        watchdog = {k: v for k, v in port.ethtool.items() if "pause_storm" in k}
        while True:
            self.host.advance(0.5)
            port.ethtool.update(watchdog)
            if self.storm.is_set():  # paused the whole time on the lossless priority: +0.5 s per 0.5 s
                port.ethtool["rx_prio3_pause_duration"] += 500_000
            await asyncio.sleep(0.5)

    def credential(self) -> dict:
        return {**super().credential(), "connect_timeout": "2s"}

    def stop(self):
        self._ticker.cancel()
        super().stop()
        self.loop.close()


# One simulated switch per SNMP flavour, with the collector modules that read it.
SWITCHES = {"leaf-sw1": ("sonic", ["if_mib", "cisco_pfc", "cisco_qos"]),
            "leaf-sw2": ("arista", ["if_mib", "arista_pfc", "arista_queue"]),
            "leaf-sw3": ("ieee", ["if_mib", "ieee8021_pfc"])}


class SwitchLab:
    """Simulated switches (SONiC, Arista, IEEE PFC MIB) over one snmpsim, and a SONiC switch whose CLI
    (a fake ``show`` on the PATH of a real sshd) the switch_cli collector reads; counters advance ~1/s."""

    def __init__(self, tmp):
        self.switches = [SimulatedSwitch(name, model, ports=4, seed=3 + i)
                         for i, (name, (model, _)) in enumerate(SWITCHES.items())]
        self.sim = SnmpSim(self.switches, workdir=tmp / "snmpsim").start()
        self.cli_switch = SimulatedSwitch(CLI_SWITCH, "sonic", ports=4, queues=4, seed=9)
        self.cli_data = tmp / "sonic-cli" / "data"
        write_outputs(self.cli_switch, self.cli_data)
        install_fake_show(tmp / "sonic-cli" / "bin", self.cli_data)
        try:
            self.sshd = SSHD(tmp / "sonic-cli", path_dirs=[tmp / "sonic-cli" / "bin"]).start()
        except BaseException:
            self.sim.stop()
            raise
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="switch-lab", daemon=True)
        self._thread.start()

    def _tick(self):
        while not self._stop.wait(1.0):
            for sw in self.switches:
                sw.advance(1)
                self.sim.write(sw)
            self.cli_switch.advance(1)
            write_outputs(self.cli_switch, self.cli_data)

    def stop(self):
        self._stop.set()
        self._thread.join(5)
        self.sim.stop()
        self.sshd.stop()
TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("e2e")
    started = time.monotonic()
    settings = Settings(E2E_SETTINGS)
    rule_file = tmp / "rules.yaml"
    rule_file.write_text(generate.dump_yaml(rules.to_prometheus(rules.build(settings))))

    fabric = IbsimFabric(FatTree(spines=1, leaves=2, hcas_per_leaf=1, switch_ports=8), tmp / "ibsim",
                         sockname=f"mixe2e{free_port()}")
    # An SSH target on a loopback port nobody listens on: every poll fails to connect.
    key = tmp / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30)
    (tmp / "known_hosts").write_text("")
    nic = NicLab(tmp)
    switch = latency = None
    try:
        switch = SwitchLab(tmp)
        latency = LatencyLab(tmp, [h for hosts in LATENCY_GROUPS.values() for h in hosts],
                             {"default": NORMAL_LATENCY}).start()
    except BaseException:
        nic.stop()
        if switch is not None:
            switch.stop()
        raise
    config = {
        "credentials": {"nobody": {"type": "ssh", "username": "nobody", "private_key_file": str(key),
                                   "known_hosts_file": str(tmp / "known_hosts"), "connect_timeout": "500ms"},
                        "nic-lab": nic.credential(),
                        **{name: {"type": "snmp", "version": "2c", "community": name} for name in SWITCHES},
                        "latency-lab": latency.credential(), "sonic-cli": switch.sshd.credential()},
        "targets": [
            {"name": "latency", "fabric": "lab", "collector": "latency_probe", "transport": "ssh",
             "credentials": "latency-lab", "hosts": latency.hosts(), "interval": "3s", "timeout": "2500ms",
             "options": {"host_groups": LATENCY_GROUPS, "plan": {"full_mesh": True, "sampled_peers": 1},
                         "probe_timeout": "2s", "server_start_wait": "100ms"}},
            {"name": "cli-switch", "fabric": "roce-lab", "collector": "switch_cli", "transport": "ssh",
             "credentials": "sonic-cli", "interval": "2s", "timeout": "1800ms",
             "hosts": [{"name": CLI_SWITCH, "address": "127.0.0.1", "port": switch.sshd.port}],
             "options": {"commands": ["pfc", "queue", "wred", "pfcwd", "queue_watermark", "pg_watermark",
                                      "buffer_pool_watermark", "pfc_history"]}},
            {"name": "gpu", "fabric": "roce-lab", "collector": "roce_nic", "transport": "ssh",
             "credentials": "nic-lab", "interval": "2s", "timeout": "1800ms",
             "hosts": [{"name": name, "address": "127.0.0.1", "port": port} for name, port in nic.ports.items()]},
            *({"name": f"snmp-{name}", "fabric": "roce-lab", "collector": "snmp_switch", "transport": "snmp",
               "credentials": name, "interval": "2s", "timeout": "1800ms",
               "hosts": [{"name": name, "address": "127.0.0.1", "port": switch.sim.port}],
               "options": {"modules": modules, "snmp_timeout": "500ms", "snmp_retries": 0}}
              for name, (_, modules) in SWITCHES.items()),
            # 2 s polls with 1.8 s deadlines: two shared cores also run the probes, sshd and Prometheus
            {"name": "ib", "fabric": "lab", "collector": "infiniband", "transport": "local", "interval": "2s",
             "timeout": "1800ms", "options": {"env": fabric.env(), "focus": True, "focus_top_k": 2,
                                              "focus_ports": [f"{CONGESTED[0]}:{CONGESTED[1]}"],
                                              "focus_interval": "500ms", "focus_burst_threshold": 0.001,
                                              "error_details": True}},
            {"name": "gpu-unreachable", "fabric": "lab-roce", "collector": "roce_nic", "transport": "ssh",
             "credentials": "nobody", "interval": "1s", "timeout": "900ms",
             "hosts": [{"name": "gpu-404", "address": "127.0.0.1", "port": free_port()}]},
        ],
    }
    (tmp / "exporter.yaml").write_text(yaml.safe_dump(config))

    webhook = WebhookReceiver().start()
    alertmanager = prometheus = daemon = None
    try:
        fabric.start()
        # A port with receive errors and transmit discards (static: no error rate, no error alert), so
        # error_details reads its PortRcvErrorDetails / PortXmitDiscardDetails for the dashboards.
        errored = ("leaf-02", 2)
        fabric.set_counter(*errored, "PortRcvErrors", 12)
        fabric.command(f'PerformanceSet "{errored[0]}"[{errored[1]}] PortRcvErrorDetails.PortMalformedPacketErrors=7')
        fabric.set_counter(*errored, "PortXmitDiscards", 9)
        fabric.command(f'PerformanceSet "{errored[0]}"[{errored[1]}] '
                       "PortXmitDiscardDetails.PortSwLifetimeLimitDiscards=9")
        daemon = DaemonProcess(tmp / "exporter.yaml")
        daemon.wait_http()
        alertmanager = Alertmanager(tmp / "am", webhook.url).start()
        prometheus = Prometheus(tmp / "prom", job=JOB, targets=[f"127.0.0.1:{daemon.port}"],
                                rule_files=[str(rule_file)], alertmanager=f"127.0.0.1:{alertmanager.port}").start()
        TIMINGS["stack_start_s"] = round(time.monotonic() - started, 2)
        yield {"fabric": fabric, "daemon": daemon, "prometheus": prometheus, "alertmanager": alertmanager,
               "webhook": webhook, "settings": settings, "tmp": tmp, "nic": nic, "switch": switch,
               "latency": latency, "started": started}
    finally:
        for server in (prometheus, alertmanager):
            if server is not None:
                server.stop()
        if daemon is not None:
            daemon.stop()
        fabric.stop()
        nic.stop()
        switch.stop()
        latency.stop()
        webhook.stop()
        (tmp / "e2e-timings.json").write_text(json.dumps(TIMINGS, indent=2, sort_keys=True))
        print("\ne2e timings:", json.dumps(TIMINGS, sort_keys=True))


def _diagnose(prom: Prometheus) -> str:
    """Target health as Prometheus sees it, for timeout messages."""
    try:
        up = {r["metric"]["group"] + "/" + r["metric"]["host"]: r["value"][1] for r in prom.query("fabric_up")}
        errors = {f'{r["metric"]["group"]}:{r["metric"]["reason"]}': r["value"][1]
                  for r in prom.query("fabric_poll_errors_total > 0")}
        return f"fabric_up={up} poll_errors={errors}"
    except (OSError, ValueError) as e:
        return f"(no diagnosis: {e})"


def _wait(prom: Prometheus, predicate, deadline: float, what: str):
    try:
        return wait_until(predicate, deadline, what)
    except TimeoutError as e:
        raise TimeoutError(f"{e}; {_diagnose(prom)}") from None


def _prom_alert(prom: Prometheus, name: str, state: str, **labels) -> dict | None:
    for a in prom.alerts():
        if a["labels"].get("alertname") == name and a["state"] == state and \
                all(a["labels"].get(k) == v for k, v in labels.items()):
            return a
    return None


def test_rules_load_and_evaluate_without_errors(stack):
    prom = stack["prometheus"]
    # every rule evaluated at least once and healthy (an expression error shows as health "err")
    health = wait_until(lambda: (h := prom.rule_health()) and all(x[1] == "ok" for x in h) and h, 30,
                        "every rule to be evaluated and healthy")
    loaded = rules.to_prometheus(rules.build(stack["settings"]))
    assert len(health) == sum(len(g["rules"]) for g in loaded["groups"])
    for group in ("ib", "gpu", "latency", "cli-switch", *(f"snmp-{name}" for name in SWITCHES)):
        _wait(prom, lambda: prom.query(f'fabric_up{{job="{JOB}",group="{group}"}} == 1'), 30, f"target {group} to be up")


def test_congestion_episode_fires_is_delivered_and_resolves(stack):
    prom, webhook, fabric = stack["prometheus"], stack["webhook"], stack["fabric"]
    node, port = CONGESTED
    match = {"node_name": node, "port": str(port)}
    _wait(prom, lambda: prom.query(f'fabric:ib_port_xmit_wait:ratio{{node_name="{node}",port="{port}"}}'), 30,
               "the transmit-wait ratio of the congested port to be recorded")
    assert not _prom_alert(prom, "FabricIBXmitWaitHigh", "firing", **match)

    stop = threading.Event()
    failures: list[Exception] = []

    def congest():
        # ~3e7 ticks/s on a 12x QDR link (1.2e10 B/s): a transmit-wait ratio of ~0.0025
        value = 0
        while not stop.is_set():
            value += 15_000_000
            try:
                fabric.set_counter(node, port, "PortXmitWait", value)
            except Exception as e:  # surfaced by the assertion below
                failures.append(e)
                return
            stop.wait(0.5)

    injector = threading.Thread(target=congest, name="congest", daemon=True)
    t0 = time.monotonic()
    injector.start()
    try:
        _wait(prom, lambda: _prom_alert(prom, "FabricIBXmitWaitHigh", "pending", **match), 40, "pending")
        TIMINGS["congestion_to_pending_s"] = round(time.monotonic() - t0, 2)
        firing = _wait(prom, lambda: _prom_alert(prom, "FabricIBXmitWaitHigh", "firing", **match), 40, "firing")
        TIMINGS["congestion_to_firing_s"] = round(time.monotonic() - t0, 2)
        t_delivered, delivered = webhook.wait_for(
            lambda a: a["labels"].get("alertname") == "FabricIBXmitWaitHigh" and a["status"] == "firing"
            and all(a["labels"].get(k) == v for k, v in match.items()), 40, "the firing alert at the webhook")
        TIMINGS["congestion_to_webhook_s"] = round(t_delivered - t0, 2)
    finally:
        stop.set()
        injector.join(5)
    assert not failures, failures
    assert float(firing["value"]) > 0.001

    labels = delivered["labels"]
    assert labels["severity"] == "warning" and labels["component"] == "infiniband"
    assert labels["fabric"] == "lab" and labels["job"] == JOB
    assert (labels["peer_node_name"], labels["peer_port"]) == ("gpu-001 mlx5_0", "1")
    assert labels["node_guid"] == fabric.topology.nodes[node].guid_hex
    ann = delivered["annotations"]
    assert ann["summary"] == "An InfiniBand port is congested: it often has data to send and no credits."
    assert f"fabric lab: {node} ({labels['node_guid']}) port {port} -> gpu-001 mlx5_0 port 1" in ann["description"]
    assert ann["runbook_url"].endswith("/docs/runbooks/FabricIBXmitWaitHigh.md")
    # only the congested port alerts
    others = [a for _, a in webhook.alerts() if a["labels"].get("alertname") == "FabricIBXmitWaitHigh"
              and (a["labels"]["node_name"], a["labels"]["port"]) != (node, str(port))]
    assert not others, others

    t_clear = time.monotonic()
    t_resolved, _ = webhook.wait_for(
        lambda a: a["labels"].get("alertname") == "FabricIBXmitWaitHigh" and a["status"] == "resolved"
        and all(a["labels"].get(k) == v for k, v in match.items()), 60, "the resolved notification")
    TIMINGS["clear_to_resolved_webhook_s"] = round(t_resolved - t_clear, 2)
    assert not _prom_alert(prom, "FabricIBXmitWaitHigh", "firing", **match)


def test_pfc_pause_storm_fires_is_delivered_and_resolves(stack):
    prom, webhook, nic = stack["prometheus"], stack["webhook"], stack["nic"]
    match = {"host": NIC_HOST, "device": NIC_DEVICE, "priority": "3", "direction": "rx"}
    selector = ",".join(f'{k}="{v}"' for k, v in match.items())
    _wait(prom, lambda: prom.query(f"fabric:roce_pfc_pause_time:fraction{{{selector}}} < 0.1"), 30,
               "the NIC's (small) pause-time fraction to be recorded")
    t0 = time.monotonic()
    nic.storm.set()
    try:
        _wait(prom, lambda: _prom_alert(prom, "FabricRocePfcPauseStorm", "pending", **match), 40, "pending")
        TIMINGS["pfc_storm_to_pending_s"] = round(time.monotonic() - t0, 2)
        _wait(prom, lambda: _prom_alert(prom, "FabricRocePfcPauseStorm", "firing", **match), 40, "firing")
        TIMINGS["pfc_storm_to_firing_s"] = round(time.monotonic() - t0, 2)
        t_delivered, delivered = webhook.wait_for(
            lambda a: a["labels"].get("alertname") == "FabricRocePfcPauseStorm" and a["status"] == "firing"
            and all(a["labels"].get(k) == v for k, v in match.items()), 40, "the pause storm at the webhook")
        TIMINGS["pfc_storm_to_webhook_s"] = round(t_delivered - t0, 2)
    finally:
        nic.storm.clear()
    labels = delivered["labels"]
    assert {k: labels[k] for k in match} == match
    assert labels["severity"] == "critical" and labels["component"] == "roce_nic"
    assert labels["fabric"] == "roce-lab" and labels["netdev"] == nic.host.port(NIC_DEVICE).netdev
    assert delivered["annotations"]["description"].startswith(
        f"fabric roce-lab: host {NIC_HOST} {NIC_DEVICE} port 1 ({labels['netdev']}) is in a PFC pause storm")
    t_clear = time.monotonic()
    webhook.wait_for(lambda a: a["labels"].get("alertname") == "FabricRocePfcPauseStorm"
                     and a["status"] == "resolved" and all(a["labels"].get(k) == v for k, v in match.items()),
                     60, "the resolved pause storm")
    # the storm was the only reason: no other pause-storm alert reached the webhook
    assert {a["labels"].get("priority") for _, a in webhook.alerts()
            if a["labels"].get("alertname") == "FabricRocePfcPauseStorm"} == {"3"}
    TIMINGS["pfc_storm_clear_to_resolved_webhook_s"] = round(time.monotonic() - t_clear, 2)


def test_tail_latency_episode_fires_is_delivered_and_resolves(stack):
    prom, webhook, lab = stack["prometheus"], stack["webhook"], stack["latency"]
    match = {"source_group": "rack-a", "destination_group": "rack-b", "tool": "ib_write_lat"}
    selector = ",".join(f'{k}="{v}"' for k, v in match.items())
    normal = _wait(prom, lambda: prom.query(f"fabric:rdma_latency_seconds:p99{{{selector}}} < 0.00001"), 40,
                        "the normal p99 (< 10 us) of rack-a -> rack-b to be recorded")
    assert float(normal[0]["value"][1]) > 1e-6
    t0 = time.monotonic()
    lab.write_fixture({"default": NORMAL_LATENCY, "pairs": {
        f"{s}>{d}": SLOW_LATENCY for s in LATENCY_GROUPS["rack-a"] for d in LATENCY_GROUPS["rack-b"]}})
    try:
        _wait(prom, lambda: _prom_alert(prom, "FabricLatencyP99High", "firing", **match), 60, "firing")
        TIMINGS["latency_to_firing_s"] = round(time.monotonic() - t0, 2)
        t_delivered, delivered = webhook.wait_for(
            lambda a: a["labels"].get("alertname") == "FabricLatencyP99High" and a["status"] == "firing"
            and all(a["labels"].get(k) == v for k, v in match.items()), 40, "the latency alert at the webhook")
        TIMINGS["latency_to_webhook_s"] = round(t_delivered - t0, 2)
    finally:
        lab.write_fixture({"default": NORMAL_LATENCY})
    assert delivered["labels"]["severity"] == "warning" and delivered["labels"]["component"] == "latency"
    assert delivered["annotations"]["description"].startswith(
        "fabric lab: p99 latency of ib_write_lat (2 B) from rack-a to rack-b is above 20 us")
    # only the slow direction alerted
    assert {(a["labels"]["source_group"], a["labels"]["destination_group"]) for _, a in webhook.alerts()
            if a["labels"].get("alertname") == "FabricLatencyP99High"} == {("rack-a", "rack-b")}
    t_clear = time.monotonic()
    webhook.wait_for(lambda a: a["labels"].get("alertname") == "FabricLatencyP99High" and a["status"] == "resolved",
                     60, "the resolved latency alert")
    TIMINGS["latency_clear_to_resolved_webhook_s"] = round(time.monotonic() - t_clear, 2)


def test_unreachable_target_pages_as_target_down(stack):
    prom, webhook = stack["prometheus"], stack["webhook"]
    errors = wait_until(lambda: prom.query(f'fabric_poll_errors_total{{job="{JOB}",group="gpu-unreachable"}} > 0'),
                        30, "connect errors to be counted")
    assert {e["metric"]["reason"] for e in errors} == {"connect"}
    # this target's page (under load another lab target may time out and page too: not this test's matter)
    t_delivered, alert = webhook.wait_for(lambda a: a["labels"].get("alertname") == "FabricTargetDown"
                                          and a["labels"].get("group") == "gpu-unreachable"
                                          and a["status"] == "firing", 60, "FabricTargetDown at the webhook")
    TIMINGS["target_down_webhook_after_stack_start_s"] = round(t_delivered - stack["started"], 2)
    assert alert["labels"]["group"] == "gpu-unreachable" and alert["labels"]["host"] == "gpu-404"
    assert alert["labels"]["collector"] == "roce_nic" and alert["labels"]["severity"] == "warning"
    assert "the roce_nic poll of gpu-404 (target group gpu-unreachable)" in alert["annotations"]["description"]
    # the healthy IB target never paged
    assert not [a for _, a in webhook.alerts() if a["labels"].get("alertname") == "FabricTargetDown"
                and a["labels"].get("group") == "ib"]


# --- dashboards against the live Prometheus -----------------------------------------------------

_NAME = re.compile(r"\bfabric[_:][A-Za-z0-9_:]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _metric_sources(expr: str, recorded: dict[str, str], seen=frozenset()) -> list[set[str]]:
    """For each catalog metric the expression reads (following recording rules), its collectors."""
    out: list[set[str]] = []
    for name in _NAME.findall(_STRING.sub('""', expr)):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if name in recorded and name not in seen:
            out += _metric_sources(recorded[name], recorded, seen | {name})
        elif name in CATALOG or base in CATALOG:
            out.append(set(CATALOG[name if name in CATALOG else base].sources))
    return out


def _expected_to_have_data(expr: str, recorded: dict[str, str]) -> bool:
    """True if every metric the query reads has a collector running in this e2e; a query that
    selects switch interfaces (or NIC hosts) needs that side's collector specifically."""
    metrics = _metric_sources(expr, recorded)
    # A fresh Prometheus has no day-old samples, and the 7-day median (a 5m-step subquery) appears
    # at the first 5-minute boundary with data: both baselines need more history than this test.
    if not metrics or "p99_1d_ago" in expr or "p99_median_7d" in expr:
        return False
    # The NIC hosts here answer the roce_nic poll in-process and cannot run the burst probe (the lab's
    # SSH hosts can): the burst panels are checked with data against the lab's Prometheus in
    # tests/e2e/report/test_report_microburst.py::test_every_burst_panel_has_data_from_the_lab instead.
    if any(m in _STRING.sub('""', expr) for m in BURST_SAMPLER_METRICS):
        return False
    running = set(E2E_SOURCES)
    if 'switch=~"$switch"' in expr:
        running -= {"roce_nic"}
    if 'host=~"$host"' in expr:
        running -= {"snmp_switch", "switch_cli"}
    return all(sources & running for sources in metrics)


def _grafana_to_promql(expr: str) -> str:
    m = re.fullmatch(r"label_values\((.*),\s*\w+\)", expr) or re.fullmatch(r"query_result\((.*)\)", expr)
    if m:
        expr = m.group(1)
    expr = expr.replace("$__rate_interval", "5s").replace("$__interval", "1s").replace("$__range", "1m")
    return re.sub(r"\$\{\w+(?::\w+)?\}|\$\w+", ".*", expr)  # dashboard variables = All (${job_hosts:pipe} too)


def test_every_dashboard_query_returns_data(stack):
    prom = stack["prometheus"]
    settings = stack["settings"]
    recorded = {r.record: r.expr for r in rules.build(settings).recordings()}
    # let a few scrapes and evaluations accumulate so rates and recordings exist
    wait_until(lambda: prom.query(f"count_over_time(fabric_up{{job=\"{JOB}\",group=\"ib\"}}[30s]) >= 8"), 40,
               "8 scrapes of the IB target")
    now = time.time()
    expected, empty, no_data_elsewhere, with_data = 0, [], [], 0
    panels_with_data: dict[tuple[str, str], bool] = {}
    for board_name, board in sorted(dashboards.build_all(settings).items()):
        for title, expr in queries_of(board):
            has_data = bool(prom.query_range(_grafana_to_promql(expr), now - 30, now, 1))
            with_data += has_data
            if not title.startswith("variable "):
                panels_with_data[(board_name, title)] = panels_with_data.get((board_name, title), False) or has_data
            if _expected_to_have_data(expr, recorded):
                expected += 1
                if not has_data:
                    empty.append((board_name, title, expr))
            elif not has_data:
                no_data_elsewhere.append(f"{board_name}: {title}")
    TIMINGS["dashboard_queries_expected_and_checked"] = expected
    TIMINGS["dashboard_queries_with_data"] = with_data
    TIMINGS["dashboard_panels_with_data"] = sum(panels_with_data.values())
    TIMINGS["dashboard_panels"] = len(panels_with_data)
    print(f"\ndashboard queries with data: {with_data}; expected and checked: {expected}; "
          f"panels with data: {sum(panels_with_data.values())}/{len(panels_with_data)}; "
          f"queries without data (baselines that need more history than this test has):\n  "
          + "\n  ".join(no_data_elsewhere))
    assert not empty, empty
    # every panel of every dashboard shows something (some of its queries may need the switch CLI)
    # ... except the per-job row (no scheduler runs in this e2e, so no job series exist) and the burst
    # sampler's panels (checked with data in tests/e2e/report/test_report_microburst.py)
    job_series = (job_views.JOB_SEVERITY, job_views.JOB_ROLE_SCORE, job_views.JOB_HOST_SEVERITY,
                  *BURST_SAMPLER_METRICS)
    job_panels = {(b, title) for b, board in dashboards.build_all(settings).items() for title, expr in queries_of(board)
                  if any(name in expr for name in job_series)}
    missing = [k for k, v in panels_with_data.items() if not v and k not in job_panels]
    assert not missing, missing
