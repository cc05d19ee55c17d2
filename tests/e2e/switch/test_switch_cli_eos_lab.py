"""End to end: the lab's leaves as Arista EOS switches (their CLI served over the lab's asyncssh
server, each exec request one CLI line, no shell) -> switch_cli's eos dialect over SSH -> the four
commands' series, rendered from the same simulated counters the SNMP agent serves and driven by the
lab's traffic model: the congested rack's switch's PFC frames and ECN marks rise under the
``congestion`` scenario, the other rack's hardly move."""

from __future__ import annotations

import asyncio
import time

from fabric_exporter.lab import eos_cli
from fabric_exporter.lab.run import Lab, LabOptions
from fabric_exporter.lab.traffic import LOSSLESS
from fabric_exporter.parsers import eos_cli as parsers

from tests.harness.switch import make_config
from tests.harness.polling import Poller, series

ECN, PFC_TX = "fabric_roce_ecn_marked_packets_total", "fabric_roce_switch_pfc_tx_frames_total"


def eos_lab(tmp_path, racks: int = 2) -> Lab:
    lab = Lab(LabOptions(workdir=tmp_path / "lab", racks=racks, hosts_per_rack=2, nics=1, ib=False, snmp=False,
                         prometheus=False, switch_os="eos"))
    lab._start_snmp()  # with snmp off: the switches exist, served only by their CLI
    return lab


def test_lab_eos_leaves_over_ssh_follow_the_traffic_model(tmp_path):
    lab = eos_lab(tmp_path)
    lines: list[tuple[str, str]] = []

    async def main():
        lab.ssh = lab.ssh_hosts()
        served = lab.ssh.line_answer

        async def logged(host, line):  # what the EOS CLI was sent, as sent
            lines.append((host, line))
            return await served(host, line)
        lab.ssh.line_answer = logged
        await lab.ssh.start(list(lab.switches))
        config = lab._config()
        (target,) = [t for t in config["targets"] if t["collector"] == "switch_cli"]
        poller = Poller(make_config(tmp_path, [target], config["credentials"]))
        try:
            lab.tick(1.0)
            quiet_states, quiet = await asyncio.wait_for(poller.poll(), 60)
            lab.model.start("congestion", time.monotonic())
            for _ in range(3):
                lab.tick(1.0)
            hot_states, hot = await asyncio.wait_for(poller.poll(), 60)
            return quiet_states, quiet, hot_states, hot
        finally:
            await poller.close()
            await lab.ssh.stop()

    quiet_states, quiet, hot_states, hot = asyncio.run(main())
    for states in (quiet_states, hot_states):
        for key, state in states.items():
            assert state.state == "ok", (key, state.last_error)
            assert not any(state.skipped_lines.values()), state.skipped_lines
    hot_if = {"fabric": "roce-lab", "switch": "leaf-r1", "interface": "Ethernet1"}
    cool_if = {**hot_if, "switch": "leaf-r2"}
    sw1 = lab.switches["leaf-r1"]
    intf = sw1.interfaces[0]
    # the last poll shows the simulated switch's counters exactly (the same state SNMP would serve)
    assert series(hot, ECN, **hot_if, queue=f"UC{LOSSLESS}") == intf.queues[LOSSLESS]["ecn_pkts"]
    assert series(hot, PFC_TX, **hot_if) == sum(p[0] for p in intf.pfc)
    assert series(hot, "fabric_roce_switch_pfc_rx_frames_total", **hot_if) == sum(p[1] for p in intf.pfc)
    assert series(hot, "fabric_roce_rx_discards_total", **hot_if) == intf.counters["ifInDiscards"]
    assert series(hot, "fabric_roce_switch_queue_enqueued_bytes_total", **hot_if, queue=f"UC{LOSSLESS}") == \
        intf.queues[LOSSLESS]["uc_bytes"]
    assert series(hot, "fabric_roce_switch_queue_dropped_packets_total", **hot_if, queue=f"MC{LOSSLESS}") == \
        intf.queues[LOSSLESS]["mc_drop_pkts"]
    # ECN counted on the lossless queues only: the others print '-' and have no series
    assert [dict(k[1])["queue"] for k in hot if k[0] == ECN and dict(k[1])["interface"] == "Ethernet1"
            and dict(k[1])["switch"] == "leaf-r1"] == ["UC3", "UC4"]
    # congestion on rack 1: ~1M marks/s and 4000 pauses/s on its leaf; rack 2's leaf ~50 and 2
    marked = series(hot, ECN, **hot_if, queue="UC3") - series(quiet, ECN, **hot_if, queue="UC3")
    assert 2_500_000 < marked < 3_500_000, marked
    assert series(hot, ECN, **cool_if, queue="UC3") - series(quiet, ECN, **cool_if, queue="UC3") < 1000
    assert series(hot, PFC_TX, **hot_if) - series(quiet, PFC_TX, **hot_if) > 10_000
    assert series(hot, PFC_TX, **cool_if) - series(quiet, PFC_TX, **cool_if) < 100
    # every exec was one of the dialect's CLI lines, as typed (no sh -c, no timeout wrapper), per switch per poll
    expected = [eos_cli.DISCARDS, eos_cli.QUEUE, eos_cli.PFC, eos_cli.ECN]
    for name in lab.switches:
        assert [line for host, line in lines if host == name] == expected * 2


def test_lab_eos_cli_refuses_what_is_not_a_cli_line(tmp_path):
    sw = eos_lab(tmp_path, racks=1).switches["leaf-r1"]
    for line in ("sh -c 'show interfaces counters queue'", "timeout -k 2 30 show interfaces counters queue",
                 "show interfaces counters queue --json", "show queue counters"):
        assert eos_cli.answer(sw, line) == (1, eos_cli.INVALID, "")


def test_lab_eos_outputs_read_back_with_the_parsers(tmp_path):
    """The simulator's layouts are the ones the readers take from the real captures."""
    sw = eos_lab(tmp_path, racks=1).switches["leaf-r1"]
    skipped: list = []
    rows = parsers.parse_queue_counters(eos_cli.answer(sw, eos_cli.QUEUE)[1], skipped=skipped)
    assert skipped == [] and len(rows) == len(sw.interfaces) * sw.queue_count * 2
    q0 = sw.interfaces[0].queues[0]
    assert rows[0] == parsers.QueueCounters("Ethernet1", "UC0", {
        "OutEnqPkts": q0["uc_pkts"], "OutEnqOctets": q0["uc_bytes"],
        "OutDropPkts": q0["uc_drop_pkts"], "OutDropOctets": q0["uc_drop_bytes"]})
    discards = parsers.parse_discards_json(eos_cli.answer(sw, eos_cli.DISCARDS)[1])
    assert discards[1] == parsers.Discards("Ethernet2", {"inDiscards": sw.interfaces[1].counters["ifInDiscards"],
                                                         "outDiscards": sw.interfaces[1].counters["ifOutDiscards"]})
    pfc = parsers.parse_pfc_counters_json(eos_cli.answer(sw, eos_cli.PFC)[1])
    assert len(pfc) == len(sw.interfaces)
    ecn = parsers.parse_ecn_counters_json(eos_cli.answer(sw, eos_cli.ECN)[1])
    assert {r.queue for r in ecn} == {"UC3", "UC4"}
