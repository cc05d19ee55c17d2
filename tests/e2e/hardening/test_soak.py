"""Issue 16 soak: the faults of the adversarial review, cycled against one running daemon.

One daemon (basic auth on) polls, every few seconds:
- 4 healthy lab GPU hosts (roce_nic over a real sshd)             -> must stay up, within deadline
- a host printing 50 MB per poll (above the 8 MiB output cap)     -> output_too_large, nobody else hurt
- a host whose ethtool hangs                                       -> timeout, nothing left running
- a host whose sshd is killed and restarted each cycle             -> connect/timeout, stale while down,
                                                                      fresh again after
- an snmpsim switch stopped and restarted each cycle               -> same
while wrong-password clients and header-trickling connections hit the web port and a legitimate
scraper (right password) reads /metrics every 0.5 s. Asserted: every legitimate scrape answered;
healthy targets never down and every poll within its deadline; a stale target never publishes
data; the flaky targets go stale when down and recover; the daemon's fds, threads and RSS are flat
from the first cycle to the last; no remote process outlives its deadline.

Bounded: 5 cycles of at most 30 s (down 14 s, then until the flaky targets are fresh again) + setup;
every wait has a deadline. Marked slow; runs in CI.
"""

from __future__ import annotations

import base64
import socket
import threading
import time
import urllib.error
import urllib.request

import bcrypt
import pytest
import yaml

from fabric_exporter.lab.snmp import SimulatedSwitch, SnmpSim
from tests.harness.daemon import DaemonProcess, metric_value
from tests.harness.faultlab import Sampler, gpu_host_sshd, restart_on_same_port
from tests.harness.processes import processes_mentioning

HEALTHY = ["gpu-01", "gpu-02", "gpu-03", "gpu-04"]
CYCLES = 5
CYCLE = 30.0
DOWN = 14.0  # the flaky sshd and the SNMP agent are down for this long each cycle
STALE_AFTER = 8.0
PASSWORD = "soak-scrape-password"


def _fresh(facts: dict[str, float]) -> bool:
    return facts.get("up") == 1 and facts.get("stale") != 1 and facts.get("data", 0) > 0


def _auth(password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"prometheus:{password}".encode()).decode()}


def _attack_web(port: int, stop: threading.Event) -> None:
    """Wrong passwords (20 at a time) and 100 header-trickling connections, until stop is set."""
    def wrong(i: int) -> None:
        while not stop.is_set():
            req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=_auth(f"wrong-{i}"))
            try:
                urllib.request.urlopen(req, timeout=10).read()
            except (urllib.error.HTTPError, OSError):
                pass

    threads = [threading.Thread(target=wrong, args=(i,), daemon=True) for i in range(20)]
    for t in threads:
        t.start()
    socks = []
    try:
        while not stop.is_set():
            while len(socks) < 100:
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=1)
                    s.sendall(b"GET /metrics HTTP/1.1\r\n")
                    socks.append(s)
                except OSError:
                    break
            for s in list(socks):
                try:
                    s.sendall(b"X")
                except OSError:
                    socks.remove(s)
                    s.close()
            stop.wait(1.0)
    finally:
        for s in socks:
            s.close()
        for t in threads:
            t.join(15)


@pytest.mark.slow
def test_soak_faults_against_a_running_daemon(tmp_path):
    _, healthy = gpu_host_sshd(tmp_path, "healthy")
    _, flood = gpu_host_sshd(tmp_path, "flood", extra_ethtool_bytes=50_000_000)
    _, hung = gpu_host_sshd(tmp_path, "hung", hang=True)
    _, flaky = gpu_host_sshd(tmp_path, "flaky")
    switch = SimulatedSwitch("leaf1", "sonic", ports=16, seed=1)
    snmp = SnmpSim([switch], workdir=tmp_path / "snmpsim")
    web_config = tmp_path / "web.yaml"
    web_config.write_text(yaml.safe_dump({"basic_auth_users": {
        "prometheus": bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=10)).decode()}}))

    def roce(name, sshd, hosts, interval="6s", timeout="5s", stale_after=f"{STALE_AFTER:g}s"):
        return {"name": name, "fabric": "f1", "collector": "roce_nic", "transport": "ssh", "credentials": name,
                "interval": interval, "timeout": timeout, "stale_after": stale_after,
                "hosts": [{"name": h, "address": "127.0.0.1", "port": sshd.port} for h in hosts]}

    started = []
    try:
        for s in (healthy, flood, hung, flaky):
            s.start()
            started.append(s)
        snmp.start()
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump({
            "limits": {"max_output_bytes": "8MiB"},
            "defaults": {"max_backoff": "6s"},  # failed targets come back within a quiet window
            "web": {"header_timeout": "3s", "idle_timeout": "10s", "max_connections": 64},
            "credentials": {"healthy": healthy.credential(), "flood": flood.credential(), "hung": hung.credential(),
                            "flaky": flaky.credential(),
                            "snmp": {"type": "snmp", "version": "2c", "community": "leaf1"}},
            "targets": [
                roce("healthy", healthy, HEALTHY, interval="4s", timeout="3s"),
                # expose_unmapped: the host sends every counter (its filter would keep the flood at home)
                {**roce("flood", flood, ["gpu-flood"], interval="10s", stale_after="20s"),
                 "options": {"expose_unmapped": True}},
                roce("hung", hung, ["gpu-hung"]),
                roce("flaky", flaky, ["gpu-flaky"], interval="3s", timeout="2s"),
                {"name": "switch", "fabric": "f1", "collector": "snmp_switch", "transport": "snmp",
                 "credentials": "snmp", "interval": "3s", "timeout": "2s", "stale_after": f"{STALE_AFTER:g}s",
                 "hosts": [{"name": "leaf1", "address": "127.0.0.1", "port": snmp.port}],
                 "options": {"snmp_timeout": "500ms", "snmp_retries": 0}},
            ]}))
        with DaemonProcess(config, args=("--web.config.file", str(web_config))) as d:
            d.wait_http(30)
            watched = set(HEALTHY) | {"gpu-flood", "gpu-hung", "gpu-flaky", "leaf1"}
            down_windows: list[tuple[float, dict[str, float]]] = []
            cycle_status = []
            with Sampler(d.base, d.proc.pid, watched, every=0.5, scrape_timeout=10.0,
                         headers=_auth(PASSWORD)) as sampler:
                # every target polled at least once (its last poll's duration published), at most 10 s
                give_up = time.monotonic() + 10
                while time.monotonic() < give_up and not (
                        sampler.views and all("duration" in sampler.views[-1][1].get(h, {}) for h in watched)):
                    time.sleep(0.25)
                warm = time.monotonic()
                for _ in range(CYCLES):
                    cycle_start = time.monotonic()
                    stop = threading.Event()
                    attacker = threading.Thread(target=_attack_web, args=(d.port, stop), daemon=True)
                    attacker.start()
                    flaky.stop()  # kills its session processes too: commands die mid-flight
                    snmp.stop()
                    went_down = time.monotonic()
                    time.sleep(DOWN)
                    back = {"gpu-flaky": time.monotonic()}
                    restart_on_same_port(flaky)
                    back["leaf1"] = time.monotonic()
                    snmp.start()
                    down_windows.append((went_down, back))
                    stop.set()
                    attacker.join(30)
                    # until both are fresh again (the next cycle needs them up), at most the cycle's end
                    while time.monotonic() < cycle_start + CYCLE and not all(
                            _fresh(sampler.views[-1][1].get(h, {})) for h in ("gpu-flaky", "leaf1")):
                        time.sleep(0.25)
                    cycle_status.append(sampler.status[-1])
                soaked = time.monotonic() - warm
            body = d.get("/metrics", headers=_auth(PASSWORD), timeout=10)[1]
            logs = d.logs()
        # The remote `timeout -k 2 N` wrappers end what the daemon left behind: a hung command
        # started just before the stop lives at most the hung group's 5 s timeout + 2 s kill grace.
        give_up = time.monotonic() + 5 + 2 + 3
        while (leftovers := processes_mentioning("sleep 611")) and time.monotonic() < give_up:
            time.sleep(0.5)
    finally:
        for s in started:
            s.stop()
        snmp.stop()

    # Every legitimate scrape answered (basic auth, under the storm and the tricklers).
    assert sampler.failures == [], sampler.failures[:5]
    views = [(t, v) for t, v in sampler.views if t >= warm]
    assert len(views) > soaked  # ~2 scrapes a second

    # Healthy targets: never down, and every poll within its 3 s deadline.
    for t, view in views:
        for host in HEALTHY:
            assert view[host].get("up") == 1, (host, t - warm, view[host])
            assert view[host]["duration"] < 3.0, (host, view[host])

    # Staleness is truthful: a stale target publishes no data, anywhere in the run.
    for t, view in sampler.views:
        for host, facts in view.items():
            if facts.get("stale") == 1:
                assert facts["data"] == 0 and facts.get("up") == 0, (host, facts)

    # The flaky sshd and the SNMP agent: stale while down (after stale_after), fresh again after.
    for host in ("gpu-flaky", "leaf1"):
        for went_down, back in down_windows:
            during = [v[host] for t, v in views if went_down + STALE_AFTER + 4 < t < back[host]]
            assert during and all(f.get("stale") == 1 for f in during), (host, during[:3])
        assert views[-1][1][host].get("up") == 1 and views[-1][1][host]["data"] > 0, (host, views[-1][1][host])

    # The faulty hosts fail for the right reasons, and alone.
    def errors(host, reason):
        group = {"gpu-flood": "flood", "gpu-hung": "hung", "gpu-flaky": "flaky"}[host]
        return metric_value(body, f'fabric_poll_errors_total{{collector="roce_nic",fabric="f1",group="{group}",'
                                  f'host="{host}",reason="{reason}"}}') or 0
    assert errors("gpu-flood", "output_too_large") >= CYCLES
    assert errors("gpu-hung", "timeout") >= CYCLES
    assert errors("gpu-flaky", "connect") + errors("gpu-flaky", "timeout") >= CYCLES
    assert errors("gpu-flaky", "parse") == 0  # a killed sshd is never a parse error
    assert "Traceback" not in logs

    # Flat: fds, threads and RSS at the end of the first cycle vs the last.
    first, last = cycle_status[0], cycle_status[-1]
    assert last["fds"] <= first["fds"] + 8, cycle_status
    assert last["Threads"] <= first["Threads"] + 4, cycle_status
    assert last["VmRSS"] <= first["VmRSS"] * 1.25 + 20 * 1024, cycle_status
    assert max(s["VmHWM"] for s in sampler.status) < 500 * 1024  # kB

    # Nothing the daemon started on a host outlives its deadline.
    assert leftovers == [], leftovers
