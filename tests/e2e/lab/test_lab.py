"""`fabric-exporter lab` as a newcomer runs it: everything up, scenarios move the right signals,
Ctrl-C leaves nothing behind."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml

from tests.conftest import require_tool
from tests.harness.daemon import free_port, package_env
from tests.harness.processes import processes_mentioning


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def values(text: str, name: str, **labels) -> list[float]:
    out = []
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            out.append(float(line.rsplit(" ", 1)[1]))
    return out


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    for tool in ("ibsim", "opensm", "ibqueryerrors", "slurmctld", "slurmd", "munged"):
        require_tool(tool)
    workdir = tmp_path_factory.mktemp("lab")
    port, control = free_port(), free_port()
    log = open(workdir.parent / "lab.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fabric_exporter", "lab", "--no-prometheus", "--workdir", str(workdir),
         "--interval", "2", "--racks", "2", "--hosts-per-rack", "2", "--web.listen-address", f"127.0.0.1:{port}",
         "--control-address", f"127.0.0.1:{control}"],
        env=package_env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        text = ""
        while time.monotonic() < deadline:
            assert proc.poll() is None, (workdir.parent / "lab.log").read_text()
            try:
                text = scrape(port)
                ups = values(text, "fabric_up")
                # 4 NIC hosts, IB, 2 SNMP, 2 CLI, the gNMI leaf, probes, Slurm
                if len(ups) == 12 and all(v == 1 for v in ups):
                    break
            except OSError:
                pass
            time.sleep(1)
        else:
            raise AssertionError(f"lab targets not all up:\n{[l for l in text.splitlines() if 'fabric_up' in l]}\n"
                                 + (workdir.parent / "lab.log").read_text()[-3000:])
        yield proc, port, control, workdir
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()


def rate(port: int, name: str, seconds: float, **labels) -> float:
    a = sum(values(scrape(port), name, **labels))
    time.sleep(seconds)
    b = sum(values(scrape(port), name, **labels))
    return (b - a) / seconds


def control(port: int, method: str, path: str) -> tuple[int, dict]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_every_collector_publishes_from_the_simulated_fabric(lab):
    proc, port, _, _ = lab
    text = scrape(port)
    assert values(text, "fabric_ib_port_data_transmitted_bytes_total", node_name="leaf-01")
    assert values(text, "fabric_roce_nic_pfc_rx_pause_seconds_total", host="gpu-001", priority="3")
    assert values(text, "fabric_roce_pfc_tx_pause_frames_total", switch="leaf-r1", priority="3")
    assert values(text, "fabric_roce_ecn_marked_packets_total", switch="leaf-r2")
    assert re.search(r'fabric_rdma_latency_seconds_bucket\{[^}]*le="\+Inf"', text)
    # one host vocabulary: each leaf's LLDP neighbours are the lab's hosts of its rack, NIC by NIC
    for rack in (1, 2):
        for n in (1, 2):
            host = f"gpu-{(rack - 1) * 2 + n:03d}"  # two hosts per rack, numbered across racks
            assert len(values(text, "fabric_roce_switch_if_neighbor_info", switch=f"leaf-r{rack}",
                              neighbor_host=host)) == 2, host
    assert values(text, "fabric_ib_node_host_info", host="gpu-001")


def test_the_gnmi_only_leaf_streams_what_only_gnmi_gives(lab):
    proc, port, _, _ = lab
    # tx-wait and the PFC pause durations exist only over gNMI on Cumulus; the stream keeps them moving
    wait = "fabric_roce_switch_if_tx_wait_byte_times_total"
    assert len(values(scrape(port), wait, switch="leaf-cumulus")) == 8
    assert values(scrape(port), "fabric_roce_switch_pfc_rx_pause_seconds_total", switch="leaf-cumulus", priority="3")
    assert rate(port, wait, 5.0, switch="leaf-cumulus") > 0
    text = scrape(port)
    assert values(text, "fabric_roce_switch_gnmi_stream_updates", switch="leaf-cumulus")[0] > 0
    # one source per series: the gNMI leaf is no SNMP or CLI target's, and those leaves have no tx-wait
    assert not values(text, wait, switch="leaf-r1")


def test_the_ib_focus_set_publishes_windows(lab):
    """The lab's IB target runs the focus set (its burst threshold scaled like the lab's slow
    transmit-wait counter): within a few sweeps the top ports have windows and a peak."""
    _, port, _, _ = lab
    deadline = time.monotonic() + 30
    while True:
        text = scrape(port)
        if values(text, "fabric_ib_port_focus_xmit_wait_peak_ratio") or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert values(text, "fabric_ib_port_focus_info", reason="top")
    assert values(text, "fabric_ib_port_focus_xmit_wait_peak_ratio")
    assert sum(values(text, "fabric_ib_port_focus_xmit_wait_ratio_count")) > 0


def test_congestion_scenario_moves_the_correlated_signals(lab):
    proc, port, ctl, _ = lab
    status, body = control(ctl, "POST", "/scenarios/nope")
    assert status == 404 and "congestion" in body["known"]
    metric = "fabric_roce_nic_pfc_rx_pause_seconds_total"
    before = rate(port, metric, 4.5, host="gpu-001", priority="3")
    ecn_before = rate(port, "fabric_roce_ecn_marked_packets_total", 4.5, host="gpu-001")
    assert control(ctl, "POST", "/scenarios/congestion")[0] == 200
    assert control(ctl, "GET", "/")[1]["scenarios"]["congestion"]["active"] is True
    time.sleep(4.5)  # two polls
    after = rate(port, metric, 4.5, host="gpu-001", priority="3")
    ecn_after = rate(port, "fabric_roce_ecn_marked_packets_total", 4.5, host="gpu-001")
    other_rack = rate(port, metric, 4.5, host="gpu-003", priority="3")
    text = scrape(port)
    control(ctl, "DELETE", "/scenarios/congestion")
    # the congested rack's switch: its lossless queue's peak occupancy (user watermark) near the threshold
    wm = "fabric_roce_switch_queue_watermark_bytes"
    assert min(values(text, wm, switch="leaf-r1", queue="UC3", kind="user")) > 1_000_000
    assert max(values(text, wm, switch="leaf-r2", queue="UC3", kind="user")) < 100_000
    # paused ~0.2% of the time when healthy, ~30% under incast (per NIC, 2 NICs per host)
    assert after > 20 * max(before, 1e-4), (before, after)
    assert ecn_after > 100 * max(ecn_before, 1), (ecn_before, ecn_after)
    assert other_rack < after / 20, (other_rack, after)


def test_one_name_per_host_for_nics_ib_cas_and_slurm_nodes(lab):
    _, port, _, workdir = lab
    text = scrape(port)
    slurm_nodes = set(subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True, timeout=20,
                                     env={**package_env(), "SLURM_CONF": str(workdir / "slurm" / "slurm.conf")},
                                     check=True).stdout.split())
    nic_hosts = {m for m in re.findall(r'fabric_roce_nic_pfc_rx_pause_seconds_total\{[^}]*host="([^"]+)"', text)}
    ca_names = {m.split()[0] for m in re.findall(r'fabric_ib_port_data_transmitted_bytes_total\{[^}]*node_name="([^"]+)"',
                                                   text) if m.startswith("gpu")}
    assert slurm_nodes == nic_hosts == ca_names == {"gpu-001", "gpu-002", "gpu-003", "gpu-004"}


def test_congestion_on_the_hosts_of_one_job_only(lab):
    _, port, ctl, workdir = lab
    env = {**package_env(), "SLURM_CONF": str(workdir / "slurm" / "slurm.conf")}
    job = subprocess.run(["sbatch", "--parsable", "-N2", "-w", "gpu-001,gpu-003", f"--chdir={workdir}",
                          f"--output={workdir}/job-%j.out", "--wrap=sleep 300"],
                         capture_output=True, text=True, timeout=20, env=env, check=True).stdout.strip()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(values(scrape(port), "fabric_job_node_info", job_id=job)) < 2:
            time.sleep(0.5)
        assert {re.search(r'node="([^"]+)"', line)[1] for line in scrape(port).splitlines()
                if line.startswith("fabric_job_node_info{") and f'job_id="{job}"' in line} == {"gpu-001", "gpu-003"}
        assert control(ctl, "POST", "/scenarios/congestion?hosts=nope")[0] == 400
        status, body = control(ctl, "POST", f"/scenarios/congestion?job={job}")
        assert status == 200 and body["hosts"] == ["gpu-001", "gpu-003"], body
        time.sleep(4.5)  # two polls
        metric = "fabric_roce_nic_pfc_rx_pause_seconds_total"
        inside = [rate(port, metric, 4.5, host=h, priority="3") for h in ("gpu-001", "gpu-003")]
        outside = [rate(port, metric, 4.5, host=h, priority="3") for h in ("gpu-002", "gpu-004")]
        # the IB HCA ports of the job's hosts stall; the others do not
        stall_in = rate(port, "fabric_ib_port_transmit_wait_total", 4.5, node_name="gpu-001 mlx5_0")
        stall_out = rate(port, "fabric_ib_port_transmit_wait_total", 4.5, node_name="gpu-002 mlx5_0")
    finally:
        control(ctl, "DELETE", "/scenarios/congestion")
        subprocess.run(["scancel", job], env=env, timeout=20)
    assert min(inside) > 20 * max(outside), (inside, outside)
    assert stall_in > 20 * max(stall_out, 1e-3), (stall_in, stall_out)


def test_scenarios_can_be_scheduled_and_end_by_themselves(lab):
    _, _, ctl, _ = lab
    status, body = control(ctl, "POST", "/scenarios/bit_errors?after=1&seconds=2")
    assert status == 200 and body == {"scheduled": "bit_errors", "after": 1.0, "seconds": 2.0}

    def active():
        return control(ctl, "GET", "/")[1]["scenarios"]["bit_errors"]["active"]

    assert active() is False
    time.sleep(1.8)
    assert active() is True
    time.sleep(2.0)
    assert active() is False
    assert control(ctl, "POST", "/scenarios/bit_errors?after=soon")[0] == 400


@pytest.mark.parametrize("query, named", [
    ("after=nan", "after"), ("after=inf", "after"), ("after=-1", "after"), ("after=1e300", "after"),
    ("seconds=nan", "seconds"), ("seconds=-inf", "seconds"), ("seconds=0", "seconds"), ("seconds=1e9", "seconds"),
    ("after=1&seconds=NaN", "seconds"), ("after=", "after"),
])
def test_a_schedule_that_is_not_a_sane_number_of_seconds_is_refused(lab, query, named):
    _, _, ctl, _ = lab
    status, body = control(ctl, "POST", f"/scenarios/bit_errors?{query}")
    assert status == 400, body
    assert body["error"].startswith(f"{named}="), body  # names the parameter and what it should be
    assert "seconds" in body["error"]
    assert control(ctl, "GET", "/")[1]["scenarios"]["bit_errors"]["active"] is False


def test_the_lab_config_cannot_turn_on_the_query_that_crashes_its_sm(lab, tmp_path):
    """read_tick_multiplier sends perfquery -c, on which ibsim's opensm segfaults: the lab does not
    turn it on, and a lab config edited to turn it on is refused by check-config (and so by a reload)."""
    proc, _, _, workdir = lab
    config = yaml.safe_load((workdir / "fabric-lab.yaml").read_text())
    ib = next(t for t in config["targets"] if t["collector"] == "infiniband")
    assert not ib["options"].get("read_tick_multiplier")
    ib["options"]["read_tick_multiplier"] = True
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump(config))
    r = subprocess.run([sys.executable, "-m", "fabric_exporter", "check-config", "--config", str(edited)],
                       env=package_env(), capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode != 0
    assert "read_tick_multiplier" in r.stdout + r.stderr and "ibsim" in r.stdout + r.stderr, r.stdout + r.stderr
    assert any("opensm" in line for line in processes_mentioning(str(workdir))), "the lab's opensm is gone"


def test_the_lab_brings_ibsim_back_when_it_dies(lab):
    """ibsim sometimes panics by itself (a tool run killed while ibsim connects back to it): the lab
    restarts it with its opensm on the same socket, re-applies the counters, and the IB target
    publishes moving counters again; the lab keeps running."""
    proc, port, ctl, workdir = lab
    ibsim = [line for line in processes_mentioning(str(workdir)) if line.split(": ", 1)[1].startswith("ibsim ")]
    assert len(ibsim) == 1, ibsim
    before = sum(values(scrape(port), "fabric_ib_port_data_transmitted_bytes_total", node_name="leaf-01"))
    os.kill(int(ibsim[0].split(":")[0]), signal.SIGKILL)
    deadline = time.monotonic() + 120
    while control(ctl, "GET", "/")[1]["ibsim_restarts"] != 1:
        assert proc.poll() is None, (workdir.parent / "lab.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "the lab did not restart ibsim"
        time.sleep(0.5)
    assert (workdir / "ib" / "ibsim.log.crash-1").exists()
    moved = False
    while not moved and time.monotonic() < deadline:
        time.sleep(1)
        now = sum(values(scrape(port), "fabric_ib_port_data_transmitted_bytes_total", node_name="leaf-01"))
        moved = now > before
    assert moved, "IB counters did not move again after the restart"
    assert proc.poll() is None
    assert "ibsim died; restarting it" in (workdir.parent / "lab.log").read_text()


def test_ctrl_c_stops_everything_the_lab_started(lab):
    proc, port, _, workdir = lab
    assert processes_mentioning(str(workdir)), "the lab's ibsim/opensm/snmpsim should be running now"
    proc.send_signal(signal.SIGINT)
    proc.wait(20)
    assert proc.returncode == 0
    deadline = time.monotonic() + 5
    while processes_mentioning(str(workdir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_mentioning(str(workdir)) == []
