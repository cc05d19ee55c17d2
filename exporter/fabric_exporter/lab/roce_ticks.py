"""Time passing on the Ethernet side: the traffic model moves the NICs' counters (every NIC_TICK, in a
thread, into the hosts' counter files), the switches' (and their snmpsim data, rarely) and the
latency probes' fixture."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from . import roce_host
from .daemon_config import IB_LATENCY_DEVICE
from .traffic import LOSSLESS

if TYPE_CHECKING:
    from .run import Lab

SNMP_REWRITE_SECONDS = 15.0
NIC_TICK = 0.05  # seconds between NIC counter updates: well below the burst sampler's 100 ms windows


def tick(lab: Lab, dt: float) -> None:
    """One second (``dt``) of the lab's Ethernet side: the link-flap state, the NICs (unless their
    timer moves them), the switches and the latency fixture."""
    now = time.monotonic()
    congested_rack = 1
    hosts = list(lab.hosts)
    flap_host = hosts[-1] if hosts else None
    lab.flap_state = int(now / 4) % 2 == 1 if lab.model.on("link_flap") else False
    if lab.nic_thread is None:  # else the NIC timer moves them
        tick_nics(lab, dt, now)
    for name, host in lab.hosts.items():
        port0 = host.ports[0]
        port0.state = "DOWN" if (lab.flap_state and name == flap_host) else "ACTIVE"
    advance_switches(lab, dt, congested_rack)
    latency_fixture(lab)


def is_congested(lab: Lab, host: str) -> bool:
    """Is ``host`` in the incast's path (its hosts, else rack 1)?"""
    if lab.congested_hosts is not None:
        return host in lab.congested_hosts
    return lab.rack_of.get(host) == 1


def start_counter_files(lab: Lab) -> None:
    """Each host's counters as files (the burst probe reads them), rewritten every NIC tick."""
    for name, host in lab.hosts.items():
        lab.counter_files[name] = roce_host.CounterFiles(host, lab.workdir / "hosts" / name)


def tick_nics(lab: Lab, dt: float, now: float) -> None:
    """Move the NICs' counters by ``dt`` seconds of traffic ending at ``now`` and write the
    changed ones to the hosts' counter files."""
    hosts = list(lab.hosts)
    storm_host = hosts[0] if hosts else None
    flap_host = hosts[-1] if hosts else None
    for name, host in lab.hosts.items():
        for i, port in enumerate(host.ports):
            lab.model.advance_nic(
                port, dt, in_congested_rack=is_congested(lab, name), now=now,
                storming=lab.model.on("pause_storm") and name == storm_host and i == 0,
                flapping=lab.model.on("link_flap") and name == flap_host and i == 0 and lab.flap_state,
                bit_errors=lab.model.on("bit_errors") and name == flap_host and i == 0)
        files = lab.counter_files.get(name)
        if files is not None:
            files.update()


def nic_timer(lab: Lab) -> None:
    """NIC counters move every NIC_TICK (not once a second), so a burst shorter than a second is
    in the files as it happens, for the burst probe's 100 ms windows to see. A thread, not a task
    of the lab's event loop: a NIC's counters keep moving while the in-process daemon holds the
    loop (a catch-up write after a stalled loop would look like a burst). The counters it moves
    are only read by the loop (values change, never the tables' keys)."""
    last = time.monotonic()
    next_tick = last + NIC_TICK
    while not lab.nic_stop.wait(max(0.0, next_tick - time.monotonic())):
        next_tick = max(next_tick + NIC_TICK, time.monotonic())
        now = time.monotonic()
        tick_nics(lab, now - last, now)
        last = now


def start_nic_timer(lab: Lab) -> None:
    lab.nic_thread = threading.Thread(target=nic_timer, args=(lab,), name="lab-nics", daemon=True)
    lab.nic_thread.start()


def stop_nic_timer(lab: Lab) -> None:
    if lab.nic_thread is not None:
        lab.nic_stop.set()
        lab.nic_thread.join(5)


def advance_switches(lab: Lab, dt: float, congested_rack: int) -> None:
    for rack, (name, sw) in enumerate(lab.switches.items(), start=1):
        # an incast on a host set congests those hosts' ports, not a whole leaf
        congested = lab.model.congested("roce") and rack == congested_rack and lab.congested_hosts is None
        for i, intf in enumerate(sw.interfaces):
            load = (0.9 if congested else 0.5) * intf.high_speed * 1e6 / 8 * dt
            for counter, share in (("ifHCInOctets", 1.0), ("ifHCOutOctets", 0.97)):
                intf.counters[counter] += int(load * share * lab.model.jitter())
            for counter, share in (("ifHCInUcastPkts", 1.0), ("ifHCOutUcastPkts", 0.97)):
                intf.counters[counter] += int(load * share / 4096)
            pauses = (4000 if congested else 2) * dt
            intf.pfc[LOSSLESS][0] += int(pauses)  # sent (requests)
            intf.pfc[LOSSLESS][1] += int(pauses * 0.5)  # received (indications)
            sw.buffers.tick(i, LOSSLESS, lab.model.switch_buffer_peaks(congested=congested), dt,
                            int(time.time() * 1e6))
            q = intf.queues.get(LOSSLESS)
            if q is not None:
                q["uc_pkts"] += int(load / 4096)
                q["uc_bytes"] += int(load)
                q["ecn_pkts"] += int((1_000_000 if congested else 50) * dt)
                q["ecn_bytes"] += int((1_000_000 if congested else 50) * dt * 4096)
        storming = lab.model.on("pause_storm")
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
    if now - lab.snmp_written >= SNMP_REWRITE_SECONDS:
        lab.snmp_written = now
        for name, agent in lab.snmp_agents.items():
            agent.write(lab.switches[name])


def latency_fixture(lab: Lab) -> None:
    pairs = {}
    for a in lab.hosts:
        for b in lab.hosts:
            if a != b:
                pairs[f"{a}>{b}"] = lab.model.latency_us(lab.rack_of[a], lab.rack_of[b])
    ib_pairs = {pair: lab.model.latency_us(lab.rack_of[pair.split(">")[0]], lab.rack_of[pair.split(">")[1]], "ib")
                for pair in pairs}
    lab.perftest.fixture = {"default": lab.model.latency_us(1, 2), "pairs": pairs, "devices": {
        IB_LATENCY_DEVICE: {"default": lab.model.latency_us(1, 2, "ib"), "pairs": ib_pairs}}}
