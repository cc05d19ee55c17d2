"""End to end, all real: ibsim fabric -> fabric-exporter daemon -> Prometheus (our rules) -> Alertmanager
-> a webhook receiver in this test.

A congestion episode (PortXmitWait climbing on one port, set through ibsim's console) must go
pending -> firing -> delivered with the right labels and annotations, and resolve once cleared. A
target the daemon cannot connect to must page as FabricTargetDown. Every dashboard query whose
metrics the running sources produce must return data from this Prometheus.

Short intervals (scrape/eval 1s, 1s polls, a 5s rate window, 3s for:) keep it well under 2 minutes.
The measured timings are printed (run with -s) and written to e2e-timings.json in the tmp dir.
"""

from __future__ import annotations

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
from fabric_exporter.mixin import dashboards, generate, rules
from fabric_exporter.mixin.panels import queries_of
from fabric_exporter.mixin.settings import Settings
from tests.harness.daemon import DaemonProcess, free_port
from tests.harness.prometheus import ALERTMANAGER, PROMETHEUS, Alertmanager, Prometheus, WebhookReceiver, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("ibsim") is None or not os.path.exists(PROMETHEUS)
                       or not os.path.exists(ALERTMANAGER),
                       reason="needs ibsim-utils, prometheus and prometheus-alertmanager"),
]

JOB = "fabric-exporter"
CONGESTED = ("leaf-01", 1)  # leaf-01 port 1 -> gpu-001: the port whose PortXmitWait we drive
E2E_SETTINGS = {
    "selector": f'job="{JOB}"',
    "rate_window": "5s",
    # ibsim has no 64-bit PortXmitWait: keep the injected rate well inside the 32-bit counter for minutes
    "thresholds": {"ib_xmit_wait_ratio": 0.001},
    "for": {"FabricIBXmitWaitHigh": "3s", "FabricTargetDown": "3s"},
}
E2E_SOURCES = {"exporter", "infiniband"}
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
    config = {
        "credentials": {"nobody": {"type": "ssh", "username": "nobody", "private_key_file": str(key),
                                   "known_hosts_file": str(tmp / "known_hosts"), "connect_timeout": "500ms"}},
        "targets": [
            {"name": "ib", "fabric": "lab", "collector": "infiniband", "transport": "local", "interval": "1s",
             "timeout": "900ms", "options": {"env": fabric.env()}},
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
        daemon = DaemonProcess(tmp / "exporter.yaml")
        daemon.wait_http()
        alertmanager = Alertmanager(tmp / "am", webhook.url).start()
        prometheus = Prometheus(tmp / "prom", job=JOB, targets=[f"127.0.0.1:{daemon.port}"],
                                rule_files=[str(rule_file)], alertmanager=f"127.0.0.1:{alertmanager.port}").start()
        TIMINGS["stack_start_s"] = round(time.monotonic() - started, 2)
        yield {"fabric": fabric, "daemon": daemon, "prometheus": prometheus, "alertmanager": alertmanager,
               "webhook": webhook, "settings": settings, "tmp": tmp}
    finally:
        for server in (prometheus, alertmanager):
            if server is not None:
                server.stop()
        if daemon is not None:
            daemon.stop()
        fabric.stop()
        webhook.stop()
        (tmp / "e2e-timings.json").write_text(json.dumps(TIMINGS, indent=2, sort_keys=True))
        print("\ne2e timings:", json.dumps(TIMINGS, sort_keys=True))


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
    wait_until(lambda: prom.query(f'fabric_up{{job="{JOB}",group="ib"}} == 1'), 30, "the IB target to be up")


def test_congestion_episode_fires_is_delivered_and_resolves(stack):
    prom, webhook, fabric = stack["prometheus"], stack["webhook"], stack["fabric"]
    node, port = CONGESTED
    match = {"node_name": node, "port": str(port)}
    wait_until(lambda: prom.query(f'fabric:ib_port_xmit_wait:ratio{{node_name="{node}",port="{port}"}}'), 30,
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
        wait_until(lambda: _prom_alert(prom, "FabricIBXmitWaitHigh", "pending", **match), 40, "pending")
        TIMINGS["congestion_to_pending_s"] = round(time.monotonic() - t0, 2)
        firing = wait_until(lambda: _prom_alert(prom, "FabricIBXmitWaitHigh", "firing", **match), 40, "firing")
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


def test_unreachable_target_pages_as_target_down(stack):
    prom, webhook = stack["prometheus"], stack["webhook"]
    errors = wait_until(lambda: prom.query(f'fabric_poll_errors_total{{job="{JOB}",group="gpu-unreachable"}} > 0'),
                        30, "connect errors to be counted")
    assert {e["metric"]["reason"] for e in errors} == {"connect"}
    t0 = time.monotonic()
    _, alert = webhook.wait_for(lambda a: a["labels"].get("alertname") == "FabricTargetDown"
                                and a["status"] == "firing", 60, "FabricTargetDown at the webhook")
    TIMINGS["target_down_webhook_wait_s"] = round(time.monotonic() - t0, 2)
    assert alert["labels"]["group"] == "gpu-unreachable" and alert["labels"]["host"] == "gpu-404"
    assert alert["labels"]["collector"] == "roce_nic" and alert["labels"]["severity"] == "warning"
    assert "the roce_nic poll of gpu-404 (target group gpu-unreachable)" in alert["annotations"]["description"]
    # the healthy IB target never paged
    assert not [a for _, a in webhook.alerts() if a["labels"].get("alertname") == "FabricTargetDown"
                and a["labels"].get("group") == "ib"]


# --- dashboards against the live Prometheus -----------------------------------------------------

_NAME = re.compile(r"\bfabric[_:][A-Za-z0-9_:]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _sources(expr: str, recorded: dict[str, str], seen=frozenset()) -> set[str]:
    """Collectors whose metrics the expression reads, following recording rules."""
    out: set[str] = set()
    for name in _NAME.findall(_STRING.sub('""', expr)):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if name in recorded and name not in seen:
            out |= _sources(recorded[name], recorded, seen | {name})
        elif base in CATALOG:
            out |= set(CATALOG[base].sources)
        elif name in CATALOG:
            out |= set(CATALOG[name].sources)
    return out


def _grafana_to_promql(expr: str) -> str:
    m = re.fullmatch(r"label_values\((.*),\s*\w+\)", expr)
    if m:
        expr = m.group(1)
    expr = expr.replace("$__rate_interval", "5s").replace("$__interval", "1s").replace("$__range", "1m")
    return re.sub(r"\$\{?\w+\}?", ".*", expr)  # dashboard variables = All


def test_every_dashboard_query_returns_data(stack):
    prom = stack["prometheus"]
    settings = stack["settings"]
    recorded = {r.record: r.expr for r in rules.build(settings).recordings()}
    # let a few scrapes and evaluations accumulate so rates and recordings exist
    wait_until(lambda: prom.query(f"count_over_time(fabric_up{{job=\"{JOB}\",group=\"ib\"}}[30s]) >= 8"), 40,
               "8 scrapes of the IB target")
    now = time.time()
    checked, empty, not_covered = 0, [], []
    for board_name, board in sorted(dashboards.build_all(settings).items()):
        for title, expr in queries_of(board):
            sources = _sources(expr, recorded)
            if not sources or not sources <= E2E_SOURCES:
                not_covered.append((board_name, title, sorted(sources)))
                continue
            checked += 1
            if not prom.query_range(_grafana_to_promql(expr), now - 30, now, 1):
                empty.append((board_name, title, expr))
    TIMINGS["dashboard_queries_checked"] = checked
    TIMINGS["dashboard_queries_needing_other_sources"] = len(not_covered)
    print(f"\ndashboard queries checked against live data: {checked}; not covered by this e2e's sources "
          f"(RoCE NIC/switch, latency probes): {len(not_covered)}")
    assert not empty, empty
    assert checked >= 40
    covered_boards = {b for b, _, _ in not_covered}
    # every panel of the exporter-health and InfiniBand dashboards is covered by this e2e
    assert "fabric-exporter" not in covered_boards and "fabric-infiniband" not in covered_boards
