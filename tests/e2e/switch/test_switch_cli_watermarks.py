"""End to end: the lab's SONiC switches (their CLI served over the lab's SSH server, a real ``sh``
running the fake ``show``) -> switch_cli over SSH -> watermark and PFC history series, driven by the
lab's traffic model: the congested rack's switch's watermarks rise under the ``congestion`` scenario
and stay up after it (a peak since the last clear) until a clear; the other rack's do not move."""

from __future__ import annotations

import asyncio
import time

import pytest

from fabric_exporter.lab.run import Lab, LabOptions
from fabric_exporter.lab.ssh_hosts import SimulatedHosts
from fabric_exporter.lab.traffic import LOSSLESS

from tests.harness.switch import make_config
from tests.harness.polling import Poller, series

QWM, PGWM = "fabric_roce_switch_queue_watermark_bytes", "fabric_roce_switch_pg_watermark_bytes"
POOL, HDRM = "fabric_roce_switch_buffer_pool_watermark_bytes", "fabric_roce_switch_headroom_pool_watermark_bytes"
PAUSE = "fabric_roce_switch_pfc_rx_pause_seconds_total"


def target(lab: Lab, name: str, kind: str) -> dict:
    return {"name": name, "fabric": "roce-lab", "collector": "switch_cli", "transport": "ssh", "credentials": "lab",
            "interval": "30s", "timeout": "20s",
            "hosts": [{"name": s, "address": "127.0.0.1", "port": lab.ssh.ports[s]} for s in lab.switches],
            # PG and pool series carry no kind label: one target reads them, the other only the queues
            "options": {"commands": ["queue_watermark", "pg_watermark", "buffer_pool_watermark", "pfc_history"]
                        if kind == "user" else ["queue_watermark"], "watermark_kind": kind}}


def test_lab_watermarks_rise_on_the_congested_switch_over_ssh(tmp_path):
    lab = Lab(LabOptions(workdir=tmp_path / "lab", racks=2, hosts_per_rack=2, nics=1, ib=False, snmp=False,
                         prometheus=False))
    lab._start_snmp()  # with snmp off: the SONiC switches exist, served only by their CLI

    async def main():
        lab.ssh = SimulatedHosts(lab.workdir / "ssh", lab._answer)
        await lab.ssh.start(list(lab.switches))
        creds = {"lab": {"type": "ssh", "username": "fabricmon", "private_key_file": str(lab.ssh.client_key),
                         "known_hosts_file": str(lab.ssh.known_hosts), "connect_timeout": "3s"}}
        poller = Poller(make_config(tmp_path, [target(lab, "user", "user"), target(lab, "persistent", "persistent")],
                                    creds))
        try:
            lab.tick(1.0)
            quiet_states, quiet = await asyncio.wait_for(poller.poll(), 60)
            lab.model.start("congestion", time.monotonic())
            for _ in range(3):
                lab.tick(1.0)
            hot_states, hot = await asyncio.wait_for(poller.poll(), 60)
            lab.model.stop("congestion")
            lab.tick(1.0)
            _, after = await asyncio.wait_for(poller.poll(), 60)
            lab.switches["leaf-r1"].buffers.clear("user")  # an operator's sonic-clear queue watermark all
            lab.tick(1.0)
            _, cleared = await asyncio.wait_for(poller.poll(), 60)
            return quiet_states, quiet, hot_states, hot, after, cleared
        finally:
            await poller.close()
            await lab.ssh.stop()

    quiet_states, quiet, hot_states, hot, after, cleared = asyncio.run(main())
    for states in (quiet_states, hot_states):
        for key, state in states.items():
            assert state.state == "ok", (key, state.last_error)
    hot_if = {"fabric": "roce-lab", "switch": "leaf-r1", "interface": "Ethernet0"}
    cool_if = {**hot_if, "switch": "leaf-r2"}
    q = {"queue": f"UC{LOSSLESS}", "kind": "user"}
    pg = {"pg": str(LOSSLESS)}

    # quiet: a few KB; congestion on rack 1: the lossless queue near its threshold, headroom used
    assert series(quiet, QWM, **hot_if, **q) < 50_000
    assert series(hot, QWM, **hot_if, **q) > 1_000_000
    assert series(hot, QWM, **hot_if, queue=f"UC{LOSSLESS}", kind="persistent") > 1_000_000
    assert series(quiet, PGWM, **hot_if, **pg, region="headroom") == 0
    assert series(hot, PGWM, **hot_if, **pg, region="headroom") > 50_000
    assert series(hot, PGWM, **hot_if, **pg, region="shared") > 1_000_000
    for metric, pool in ((POOL, "ingress_lossless_pool"), (HDRM, "ingress_lossless_pool")):
        assert series(hot, metric, fabric="roce-lab", switch="leaf-r1", pool=pool) > \
            series(quiet, metric, fabric="roce-lab", switch="leaf-r1", pool=pool)
    # PFC history: ~30% of 3 s paused on the lossless priority under the incast, ~0.2% before
    paused = series(hot, PAUSE, **hot_if, priority=str(LOSSLESS)) - series(quiet, PAUSE, **hot_if, priority=str(LOSSLESS))
    assert 0.8 < paused < 1.0, paused
    assert series(quiet, PAUSE, **hot_if, priority=str(LOSSLESS)) < 0.01
    # the other rack's switch saw no incast
    assert series(hot, QWM, **cool_if, **q) < 50_000
    assert series(hot, PGWM, **cool_if, **pg, region="headroom") == 0
    # multicast queue watermarks are N/A on the simulated platform: no series at all
    assert not [k for k in hot if k[0] == QWM and dict(k[1]).get("queue", "").startswith("MC")]
    # after the incast the peak stays (it is a peak since the last clear) ...
    assert series(after, QWM, **hot_if, **q) >= series(hot, QWM, **hot_if, **q) > 1_000_000
    # ... until someone clears the user watermarks: the persistent ones keep it
    assert series(cleared, QWM, **hot_if, **q) < 50_000
    assert series(cleared, QWM, **hot_if, queue=f"UC{LOSSLESS}", kind="persistent") > 1_000_000


@pytest.mark.parametrize("flag", [".no-json"])
def test_lab_show_without_json_still_gives_the_watermarks(tmp_path, flag):
    """An older SONiC release without --json: the collector falls back to the tables."""
    lab = Lab(LabOptions(workdir=tmp_path / "lab", racks=1, hosts_per_rack=2, nics=1, ib=False, snmp=False,
                         prometheus=False))
    lab._start_snmp()
    (lab.workdir / "sonic" / "leaf-r1").mkdir(parents=True)
    (lab.workdir / "sonic" / "leaf-r1" / flag).touch()

    async def main():
        lab.ssh = SimulatedHosts(lab.workdir / "ssh", lab._answer)
        await lab.ssh.start(list(lab.switches))
        creds = {"lab": {"type": "ssh", "username": "fabricmon", "private_key_file": str(lab.ssh.client_key),
                         "known_hosts_file": str(lab.ssh.known_hosts), "connect_timeout": "3s"}}
        poller = Poller(make_config(tmp_path, [target(lab, "user", "user")], creds))
        try:
            lab.tick(1.0)
            return await asyncio.wait_for(poller.poll(), 60), poller
        finally:
            await poller.close()
            await lab.ssh.stop()

    (states, samples), poller = asyncio.run(main())
    (state,) = states.values()
    assert state.state == "ok", state.last_error
    assert series(samples, QWM, fabric="roce-lab", switch="leaf-r1", interface="Ethernet4", queue="UC0", kind="user") > 0
    collector = next(iter(poller.collectors.values()))
    assert set(collector._json.values()) == {False}
