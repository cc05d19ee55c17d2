"""snmp_switch against real snmpsim agents: exact values and labels, changes between polls,
v3 authPriv, filters, restarts, Counter32 wraps, silent agents and truncated tables."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from fabric_exporter.lab.snmp import (
    CSQ_STATS_VALUE,
    IF_ENTRY,
    IF_NUMBER,
    INTEGER,
    SimulatedSwitch,
    SnmpSim,
)

from tests.harness.switch import V3, V3_MORE, make_config, run
from tests.harness.polling import Poller, poll_once, series
from tests.harness.snmp_engines import snmp_engine  # noqa: F401  (autouse: both request paths)


def v2c(name):
    return {"type": "snmp", "version": "2c", "community": name}


def group(name, host, port, creds, **options):
    return {"name": name, "fabric": "lab", "collector": "snmp_switch", "transport": "snmp", "credentials": creds,
            "hosts": [{"name": host, "address": "127.0.0.1", "port": port}],
            # generous: one snmpsim process (pure Python) serves every test switch, and a loaded CI
            # machine makes it slow; tests that time out on purpose set their own timings
            "interval": "2m", "timeout": "90s",
            "options": {"snmp_timeout": "5s", "snmp_retries": 1, **options}}


def test_sonic_leaf_values_and_labels_exact_and_changing(snmpsim, switches, tmp_path):
    leaf = switches["leaf1"]
    cfg = make_config(tmp_path, [group("sonic", "leaf1", snmpsim.port, "c", modules=["if_mib", "cisco_pfc", "cisco_qos"])],
                      {"c": v2c("leaf1")})

    async def scenario():
        p = Poller(cfg)
        try:
            states1, s1 = await p.poll()
            before = {i.ifindex: (dict(i.counters), [list(x) for x in i.pfc], {q: dict(v) for q, v in i.queues.items()})
                      for i in leaf.interfaces}
            leaf.advance(2)
            snmpsim.write(leaf)
            states2, s2 = await p.poll()
            return states1, s1, before, states2, s2
        finally:
            await p.close()

    uptime0 = leaf.uptime_ticks / 100  # the module's switches live on between tests (and engines)
    states1, s1, before, states2, s2 = run(scenario())
    st = states1[("sonic", "leaf1")]
    assert st.state == "ok", st.last_error
    names = {k[0] for k in s1}
    assert names == {
        "fabric_roce_switch_snmp_poll_varbinds", "fabric_roce_switch_snmp_poll_requests",
        "fabric_roce_switch_agent_uptime_seconds", "fabric_roce_switch_if_info", "fabric_roce_switch_if_oper_status",
        "fabric_roce_rx_discards_total", "fabric_roce_tx_discards_total", "fabric_roce_switch_if_rx_errors_total",
        "fabric_roce_switch_if_tx_errors_total", "fabric_roce_rx_bytes_total", "fabric_roce_tx_bytes_total",
        "fabric_roce_rx_packets_total", "fabric_roce_tx_packets_total", "fabric_roce_switch_if_speed_bytes_per_second",
        "fabric_roce_pfc_tx_pause_frames_total", "fabric_roce_pfc_rx_pause_frames_total",
        "fabric_roce_switch_queue_tx_packets_total", "fabric_roce_switch_queue_tx_bytes_total",
        "fabric_roce_switch_queue_dropped_packets_total", "fabric_roce_switch_queue_dropped_bytes_total",
    }
    assert sum(1 for k in s1 if k[0] == "fabric_roce_rx_bytes_total") == 64
    assert sum(1 for k in s1 if k[0] == "fabric_roce_pfc_tx_pause_frames_total") == 64 * 8
    assert sum(1 for k in s1 if k[0] == "fabric_roce_switch_queue_dropped_packets_total") == 64 * 16
    assert st.samples == len(s1)

    intf = leaf.interfaces[5]  # Ethernet20, ifIndex 21
    assert (intf.name, intf.ifindex) == ("Ethernet20", 21)
    c, pfc, queues = before[21]
    lab = {"fabric": "lab", "switch": "leaf1", "interface": "Ethernet20"}
    assert series(s1, "fabric_roce_switch_agent_uptime_seconds", fabric="lab", switch="leaf1") == uptime0
    assert series(s1, "fabric_roce_switch_if_info", **lab, ifindex="21", alias="leaf1 port 5 to host005") == 1
    assert series(s1, "fabric_roce_rx_bytes_total", **lab) == c["ifHCInOctets"]
    assert series(s1, "fabric_roce_tx_bytes_total", **lab) == c["ifHCOutOctets"]
    assert series(s1, "fabric_roce_rx_packets_total", **lab) == (
        c["ifHCInUcastPkts"] + c["ifHCInMulticastPkts"] + c["ifHCInBroadcastPkts"])
    assert series(s1, "fabric_roce_tx_packets_total", **lab) == (
        c["ifHCOutUcastPkts"] + c["ifHCOutMulticastPkts"] + c["ifHCOutBroadcastPkts"])
    assert series(s1, "fabric_roce_rx_discards_total", **lab) == c["ifInDiscards"]
    assert series(s1, "fabric_roce_switch_if_tx_errors_total", **lab) == c["ifOutErrors"]
    assert series(s1, "fabric_roce_switch_if_oper_status", **lab) == 1
    assert series(s1, "fabric_roce_switch_if_speed_bytes_per_second", **lab) == 400000 * 125000
    for p in range(8):
        assert series(s1, "fabric_roce_pfc_tx_pause_frames_total", **lab, priority=str(p)) == pfc[p][0]
        assert series(s1, "fabric_roce_pfc_rx_pause_frames_total", **lab, priority=str(p)) == pfc[p][1]
    # CISCO-SWITCH-QOS-MIB queue 4 (1-based) is UC3; queue 12 (after 8 unicast ones) is MC11
    q = queues[3]
    assert series(s1, "fabric_roce_switch_queue_tx_packets_total", **lab, queue="UC3") == q["uc_pkts"]
    assert series(s1, "fabric_roce_switch_queue_tx_bytes_total", **lab, queue="MC11") == q["mc_bytes"]
    assert series(s1, "fabric_roce_switch_queue_dropped_packets_total", **lab, queue="UC3") == q["uc_drop_pkts"]
    assert series(s1, "fabric_roce_switch_queue_dropped_bytes_total", **lab, queue="MC11") == q["mc_drop_bytes"]
    assert not any(dict(k[1]).get("queue") in ("MC3", "UC11") for k in s1)

    # 1 GET (2 varbinds), ifName + ifAlias (64 each) and 17 columns (64 rows each, 16 x 64 queue rows)
    assert series(s1, "fabric_roce_switch_snmp_poll_varbinds", fabric="lab", switch="leaf1") == (
        2 + 2 * 64 + 14 * 64 + 2 * 512 + 4096)
    assert series(s2, "fabric_roce_switch_snmp_poll_varbinds", fabric="lab", switch="leaf1") == (
        2 + 14 * 64 + 2 * 512 + 4096)  # names cached
    assert series(s2, "fabric_roce_switch_snmp_poll_requests", fabric="lab", switch="leaf1") < series(
        s1, "fabric_roce_switch_snmp_poll_requests", fabric="lab", switch="leaf1")

    # second poll: the new values, exactly
    assert states2[("sonic", "leaf1")].state == "ok"
    assert series(s2, "fabric_roce_switch_agent_uptime_seconds", fabric="lab", switch="leaf1") == uptime0 + 60
    assert series(s2, "fabric_roce_rx_bytes_total", **lab) == intf.counters["ifHCInOctets"] != c["ifHCInOctets"]
    assert series(s2, "fabric_roce_pfc_rx_pause_frames_total", **lab, priority="7") == intf.pfc[7][1] != pfc[7][1]
    assert series(s2, "fabric_roce_switch_queue_tx_packets_total", **lab, queue="UC3") == intf.queues[3]["uc_pkts"]
    assert series(s2, "fabric_roce_switch_if_rx_errors_total", **lab) == intf.counters["ifInErrors"]


def test_arista_modules(snmpsim, switches, tmp_path):
    sw = switches["arista1"]
    cfg = make_config(tmp_path, [group("arista", "arista1", snmpsim.port, "c",
                                       modules=["if_mib", "arista_pfc", "arista_queue"])], {"c": v2c("arista1")})

    states, s = run(poll_once(cfg))
    assert states[("arista", "arista1")].state == "ok", states[("arista", "arista1")].last_error
    intf = sw.interfaces[2]
    lab = {"fabric": "lab", "switch": "arista1", "interface": "Ethernet3"}
    assert series(s, "fabric_roce_pfc_tx_pause_frames_total", **lab, priority="3") == intf.pfc[3][0]
    assert series(s, "fabric_roce_pfc_rx_pause_frames_total", **lab, priority="3") == intf.pfc[3][1]
    for qn in (0, 5):
        qs = intf.queues[qn]
        assert series(s, "fabric_roce_switch_pfcwd_storms_detected_total", **lab, queue=f"UC{qn}") == qs["wd_stuck"]
        assert series(s, "fabric_roce_switch_pfcwd_storms_restored_total", **lab, queue=f"UC{qn}") == qs["wd_recovered"]
        assert series(s, "fabric_roce_switch_queue_dropped_packets_total", **lab, queue=f"UC{qn}") == qs["uc_drop_pkts"]
        assert series(s, "fabric_roce_switch_queue_dropped_bytes_total", **lab, queue=f"MC{qn}") == qs["mc_drop_bytes"]
        assert series(s, "fabric_roce_switch_queue_tx_packets_total", **lab, queue=f"MC{qn}") == qs["mc_pkts"]
    assert sum(1 for k in s if k[0] == "fabric_roce_switch_queue_tx_bytes_total") == 16 * 8 * 2


def test_ieee_only_switch_default_modules(snmpsim, switches, tmp_path):
    sw = switches["ieee1"]
    cfg = make_config(tmp_path, [group("ieee", "ieee1", snmpsim.port, "c")], {"c": v2c("ieee1")})

    states, s = run(poll_once(cfg))
    assert states[("ieee", "ieee1")].state == "ok", states[("ieee", "ieee1")].last_error
    intf = sw.interfaces[7]
    lab = {"fabric": "lab", "switch": "ieee1", "interface": "Ethernet8"}
    assert series(s, "fabric_roce_switch_pfc_tx_frames_total", **lab) == intf.ieee_pfc[0]
    assert series(s, "fabric_roce_switch_pfc_rx_frames_total", **lab) == intf.ieee_pfc[1]
    assert not any(k[0] == "fabric_roce_pfc_tx_pause_frames_total" for k in s)


def test_v3_authpriv_and_wrong_password(snmpsim, switches, tmp_path):
    good = {"type": "snmp", "version": "3", "username": V3.user, "auth_protocol": "sha256",
            "auth_password": V3.auth_key, "priv_protocol": "aes256", "priv_password": V3.priv_key,
            "context": "ieee1"}
    bad_auth = {**good, "auth_password": "not-the-secret"}
    bad_priv = {**good, "priv_password": "not-the-secret"}
    cfg = make_config(tmp_path, [
        group("good", "ieee1", snmpsim.port, "good"),
        group("badauth", "ieee1-badauth", snmpsim.port, "bad_auth"),
        group("badpriv", "ieee1-badpriv", snmpsim.port, "bad_priv"),
    ], {"good": good, "bad_auth": bad_auth, "bad_priv": bad_priv})

    states, s = run(poll_once(cfg))
    ok = states[("good", "ieee1")]
    assert ok.state == "ok", ok.last_error
    assert series(s, "fabric_roce_switch_pfc_rx_frames_total", fabric="lab", switch="ieee1",
                  interface="Ethernet1") == switches["ieee1"].interfaces[0].ieee_pfc[1]
    ba = states[("badauth", "ieee1-badauth")]
    assert ba.state == "failed" and ba.errors["auth"] == 1
    assert "WrongDigest" in ba.last_error
    bp = states[("badpriv", "ieee1-badpriv")]
    assert bp.state == "failed" and bp.errors["auth"] == 1
    assert "DecryptionError" in bp.last_error
    assert not any(("switch", "ieee1-badauth") in k[1] for k in s)


@pytest.mark.parametrize("user,auth,priv", [(V3_MORE[0], "sha", "aes128"), (V3_MORE[1], "sha512", "aes128"),
                                            (V3_MORE[2], "md5", "des")])
def test_v3_other_protocols(snmpsim, switches, tmp_path, user, auth, priv):
    cred = {"type": "snmp", "version": "3", "username": user.user, "auth_protocol": auth,
            "auth_password": user.auth_key, "priv_protocol": priv, "priv_password": user.priv_key,
            "context": "ieee1"}
    cfg = make_config(tmp_path, [group("v3", "ieee1", snmpsim.port, "c")], {"c": cred})

    states, s = run(poll_once(cfg))
    assert states[("v3", "ieee1")].state == "ok", states[("v3", "ieee1")].last_error
    assert series(s, "fabric_roce_switch_pfc_tx_frames_total", fabric="lab", switch="ieee1",
                  interface="Ethernet2") == switches["ieee1"].interfaces[1].ieee_pfc[0]


def test_interface_filters(snmpsim, switches, tmp_path):
    leaf = switches["leaf1"]
    down = leaf.interfaces[1]  # Ethernet4
    down.oper_status = 2
    snmpsim.write(leaf)
    try:
        cfg = make_config(tmp_path, [group("f", "leaf1", snmpsim.port, "c", modules=["if_mib", "cisco_pfc"],
                                           interface_include=r"Ethernet([0-9]|[1-2][0-9])",
                                           interface_exclude=r"Ethernet8", oper_up_only=True)],
                          {"c": v2c("leaf1")})

        states, s = run(poll_once(cfg))
    finally:
        down.oper_status = 1
        snmpsim.write(leaf)
    assert states[("f", "leaf1")].state == "ok", states[("f", "leaf1")].last_error
    published = {dict(k[1])["interface"] for k in s if k[0] == "fabric_roce_rx_bytes_total"}
    # Ethernet0..28 match the include; Ethernet8 excluded; Ethernet4 is down
    assert published == {"Ethernet0", "Ethernet12", "Ethernet16", "Ethernet20", "Ethernet24", "Ethernet28"}
    assert {dict(k[1])["interface"] for k in s if k[0] == "fabric_roce_pfc_rx_pause_frames_total"} == published


def test_restart_counter32_wrap_and_label_refresh(tmp_path):
    sw = SimulatedSwitch("wrap1", "ieee", ports=4, seed=9)
    intf = sw.interfaces[0]
    intf.counters["ifInDiscards"] = (1 << 32) - 10
    with SnmpSim([sw], workdir=tmp_path / "sim") as sim:
        cfg = make_config(tmp_path, [group("w", "wrap1", sim.port, "c")], {"c": v2c("wrap1")})

        async def scenario():
            p = Poller(cfg)
            out = []
            try:
                out.append(await p.poll())
                sw.advance()  # ifInDiscards += 3: no wrap yet
                intf.counters["ifInDiscards"] = 25  # wrapped past 2^32 (+35 in all)
                intf.name = "Ethernet1-renamed"  # not picked up: no restart, same ifNumber
                sim.write(sw)
                out.append(await p.poll())
                sw.restart()  # uptime back near zero; counters reset; the name changes now
                sim.write(sw)
                out.append(await p.poll())
                return out
            finally:
                await p.close()

        (st1, s1), (st2, s2), (st3, s3) = run(scenario())
    lab = {"fabric": "lab", "switch": "wrap1"}
    assert series(s1, "fabric_roce_rx_discards_total", **lab, interface="Ethernet1") == (1 << 32) - 10
    # the wrap continues the count instead of dropping to 25
    assert series(s2, "fabric_roce_rx_discards_total", **lab, interface="Ethernet1") == (1 << 32) + 25
    assert st2[("w", "wrap1")].state == "ok"
    assert not any(("interface", "Ethernet1-renamed") in k[1] for k in s2)  # names cached while up
    # after the restart: raw values (a reset Prometheus sees), and the refreshed name
    assert series(s3, "fabric_roce_switch_agent_uptime_seconds", **lab) == 5.0
    assert series(s3, "fabric_roce_rx_discards_total", **lab, interface="Ethernet1-renamed") == 3
    assert not any(("interface", "Ethernet1") in k[1] for k in s3)


def test_counter32_clear_is_a_reset_not_a_wrap(tmp_path):
    sw = SimulatedSwitch("clr1", "ieee", ports=2, seed=4)
    intf = sw.interfaces[0]
    intf.counters["ifOutDiscards"] = 1_000_000_000
    with SnmpSim([sw], workdir=tmp_path / "sim") as sim:
        cfg = make_config(tmp_path, [group("c", "clr1", sim.port, "c")], {"c": v2c("clr1")})

        async def scenario():
            p = Poller(cfg)
            try:
                first = await p.poll()
                intf.counters["ifOutDiscards"] = 100  # cleared: as a wrap it would be +3.3e9, over half the range
                sw.uptime_ticks += 3000
                sim.write(sw)
                return first, await p.poll()
            finally:
                await p.close()

        (_, s1), (_, s2) = run(scenario())
    lab = {"fabric": "lab", "switch": "clr1", "interface": "Ethernet1"}
    assert series(s1, "fabric_roce_tx_discards_total", **lab) == 1_000_000_000
    assert series(s2, "fabric_roce_tx_discards_total", **lab) == 100


def test_if_number_change_refreshes_names(tmp_path):
    sw = SimulatedSwitch("grow1", "ieee", ports=2, seed=5)
    with SnmpSim([sw], workdir=tmp_path / "sim") as sim:
        cfg = make_config(tmp_path, [group("g", "grow1", sim.port, "c")], {"c": v2c("grow1")})

        async def scenario():
            p = Poller(cfg)
            try:
                first = await p.poll()
                sw.interfaces[1].name = "Ethernet2-new"
                sw.overrides[IF_NUMBER] = (INTEGER, 3)  # an interface was added somewhere
                sw.advance()
                sim.write(sw)
                return first, await p.poll()
            finally:
                await p.close()

        (_, s1), (_, s2) = run(scenario())
    names1 = {dict(k[1])["interface"] for k in s1 if k[0] == "fabric_roce_rx_bytes_total"}
    names2 = {dict(k[1])["interface"] for k in s2 if k[0] == "fabric_roce_rx_bytes_total"}
    assert names1 == {"Ethernet1", "Ethernet2"}
    assert names2 == {"Ethernet1", "Ethernet2-new"}


def test_silent_agent_times_out_without_delaying_others(snmpsim, tmp_path):
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))  # receives, never answers
    try:
        targets = [group("silent", "dead1", silent.getsockname()[1], "c", snmp_timeout="1500ms", snmp_retries=1)]
        targets[0]["timeout"] = "20s"
        targets.append(group("alive", "ieee1", snmpsim.port, "c2"))
        cfg = make_config(tmp_path, targets, {"c": v2c("dead1"), "c2": v2c("ieee1")})

        async def scenario():
            p = Poller(cfg)
            done = {}

            async def timed(key, coro):
                await coro
                done[key] = time.monotonic()

            try:
                start = time.monotonic()
                from fabric_exporter.collectors import PollContext

                for key, (g, h, cls) in p.sched.targets(p.sched.config).items():
                    p.collectors[key] = cls(PollContext(g, h, p.transports))
                await asyncio.gather(*(timed(k, p.sched.poll(k, c)) for k, c in p.collectors.items()))
                return start, done, dict(p.sched.states)
            finally:
                await p.close()

        start, done, states = run(scenario())
    finally:
        silent.close()
    dead = states[("silent", "dead1")]
    assert dead.state == "failed" and dead.errors["timeout"] == 1, dead.last_error
    assert "no response after 2 requests of 1.5s" in dead.last_error
    assert 2.9 < done[("silent", "dead1")] - start < 10  # 2 requests x 1.5 s, then given up
    assert states[("alive", "ieee1")].state == "ok"
    # not held up by the silent one: done well before the silent one's requests ran out
    assert done[("alive", "ieee1")] < done[("silent", "dead1")] - 1.0


def test_truncated_table_is_reported_not_published_as_complete(tmp_path):
    sw = SimulatedSwitch("trunc1", "sonic", ports=4, seed=6, queues=2)
    # ifInErrors (ifTable col 14) lost its last two rows: the table is incomplete
    for intf in sw.interfaces[2:]:
        sw.overrides[IF_ENTRY + (14, intf.ifindex)] = None
    with SnmpSim([sw], workdir=tmp_path / "sim") as sim:
        cfg = make_config(tmp_path, [group("t", "trunc1", sim.port, "c", modules=["if_mib", "cisco_qos"])],
                          {"c": v2c("trunc1")})

        states, s = run(poll_once(cfg))
    st = states[("t", "trunc1")]
    assert st.state == "partial" and st.errors["partial"] == 1
    assert "table ifTable incomplete: 4 rows, but ifInErrors has 2" in st.last_error
    errs = {dict(k[1])["interface"] for k in s if k[0] == "fabric_roce_switch_if_rx_errors_total"}
    assert errs == {"Ethernet0", "Ethernet4"}


def test_walk_cut_off_by_timeout_drops_the_table(tmp_path):
    sw = SimulatedSwitch("slow1", "sonic", ports=4, seed=7, queues=8)
    # The agent stalls 3 s on one OID deep inside the queue table (snmpsim's delay variation):
    # the walk has pages already, then times out. That table must not be published at all.
    stall = CSQ_STATS_VALUE + (sw.interfaces[2].ifindex, 2, 1, 1)
    sw.overrides[stall] = (f"{70}:delay", "value=5,wait=3000")
    with SnmpSim([sw], workdir=tmp_path / "sim") as sim:
        cfg = make_config(tmp_path, [group("s", "slow1", sim.port, "c", modules=["if_mib", "cisco_qos"],
                                           snmp_timeout="1s", snmp_retries=0, max_repetitions=10)],
                          {"c": v2c("slow1")})

        states, s = run(poll_once(cfg))
    st = states[("s", "slow1")]
    assert st.state == "partial", st.last_error
    assert "table csqIfQosGroupStatsTable not published" in st.last_error
    assert "table incomplete" in st.last_error
    assert not any(k[0].startswith("fabric_roce_switch_queue_") for k in s)
    assert sum(1 for k in s if k[0] == "fabric_roce_rx_bytes_total") == 4


def test_exposition_passes_promtool_lint(snmpsim, tmp_path):
    import subprocess

    from tests.conftest import require_tool

    promtool = require_tool("promtool")
    cfg = make_config(tmp_path, [
        group("sonic", "leaf1", snmpsim.port, "c1", modules=["if_mib", "cisco_pfc", "cisco_qos"],
              interface_include="Ethernet(0|4)"),
        group("arista", "arista1", snmpsim.port, "c2", modules=["if_mib", "arista_pfc", "arista_queue"]),
        group("ieee", "ieee1", snmpsim.port, "c3"),
    ], {"c1": v2c("leaf1"), "c2": v2c("arista1"), "c3": v2c("ieee1")})

    async def scenario():
        p = Poller(cfg)
        try:
            states = await p.poll_states()
            return states, p.store.render()
        finally:
            await p.close()

    states, text = run(scenario())
    assert all(s.state == "ok" for s in states.values()), [s.last_error for s in states.values()]
    lint = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, timeout=60)
    assert lint.returncode == 0, lint.stdout.decode() + lint.stderr.decode()


def test_restart_forgets_the_wrap_even_when_the_raw_value_comes_back_the_same(tmp_path):
    """A restart keeps each series' static mapping but never its counting: a Counter32 that had
    wrapped, and reads the very raw value after the restart, is published raw (no 2^32 added, no
    sample kept from before), and counts up from there."""
    sw = SimulatedSwitch("wrap2", "ieee", ports=2, seed=11)
    intf = sw.interfaces[0]
    intf.counters["ifInDiscards"] = (1 << 32) - 10
    with SnmpSim([sw], workdir=tmp_path / "sim") as sim:
        cfg = make_config(tmp_path, [group("w", "wrap2", sim.port, "c")], {"c": v2c("wrap2")})

        async def scenario():
            p = Poller(cfg)
            out = []
            try:
                out.append(await p.poll())
                sw.advance()
                intf.counters["ifInDiscards"] = 25  # wrapped
                sim.write(sw)
                out.append(await p.poll())
                sw.restart()
                intf.counters["ifInDiscards"] = 25  # the same raw value as before the restart
                sim.write(sw)
                out.append(await p.poll())
                sw.advance()
                intf.counters["ifInDiscards"] = 40
                sim.write(sw)
                out.append(await p.poll())
                return out
            finally:
                await p.close()

        results = run(scenario())
    lab = {"fabric": "lab", "switch": "wrap2", "interface": "Ethernet1"}
    got = [series(s, "fabric_roce_rx_discards_total", **lab) for _, s in results]
    assert got == [(1 << 32) - 10, (1 << 32) + 25, 25, 40]
    assert all(st[("w", "wrap2")].state == "ok" for st, _ in results)
