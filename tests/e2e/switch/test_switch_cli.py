"""switch_cli over a real OpenSSH sshd on 127.0.0.1, with a fake SONiC ``show`` (and Cumulus
``ethtool``) first on the session's PATH printing outputs rendered from simulated counters."""

from __future__ import annotations

import os
import re

import pytest

from fabric_exporter.lab.snmp import SimulatedSwitch
from fabric_exporter.lab.sonic_cli import install_fake_show, write_outputs

from tests.harness import paths
from tests.harness.sshd import SSHD
from tests.harness.switch import make_config, run
from tests.harness.polling import Poller, polls, series


@pytest.fixture(scope="module")
def sonic_env(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the sshd harness needs root (mount namespace)")
    base = tmp_path_factory.mktemp("sonic-cli")
    sw = SimulatedSwitch("leaf9", "sonic", ports=8, queues=4, seed=11)
    data, bin_dir = base / "data", base / "bin"
    write_outputs(sw, data)
    install_fake_show(bin_dir, data)
    with SSHD(base, path_dirs=[bin_dir]) as sshd:
        yield sw, data, sshd


def cli_group(sshd, name="sonic", host="leaf9", **options):
    return {"name": name, "fabric": "lab", "collector": "switch_cli", "transport": "ssh", "credentials": "ssh",
            "hosts": [{"name": host, "address": "127.0.0.1", "port": sshd.port}], "interval": "30s",
            "timeout": "15s", "options": options}


def config(tmp_path, sshd, **options):
    return make_config(tmp_path, [cli_group(sshd, **options)], {"ssh": sshd.credential()})


def test_sonic_all_commands_exact_values_and_changes(sonic_env, tmp_path):
    sw, data, sshd = sonic_env
    accepted_before = sshd.log().count("Accepted publickey")

    def change():
        sw.advance(3)
        sw.storm(2, 3, dropped=777)
        write_outputs(sw, data)

    (first, second), poller = run(polls(config(tmp_path, sshd), change))
    try:
        (st1, s1), (st2, s2) = first, second
        key = ("sonic", "leaf9")
        assert st1[key].state == "ok", st1[key].last_error
        lab = {"fabric": "lab", "switch": "leaf9", "interface": "Ethernet8"}
        intf = sw.interfaces[2]
        # second poll: the values after the change, exactly
        assert st2[key].state == "ok", st2[key].last_error
        for p_ in range(8):
            assert series(s2, "fabric_roce_pfc_rx_pause_frames_total", **lab, priority=str(p_)) == intf.pfc[p_][1]
            assert series(s2, "fabric_roce_pfc_tx_pause_frames_total", **lab, priority=str(p_)) == intf.pfc[p_][0]
        q1 = intf.queues[1]
        assert series(s2, "fabric_roce_switch_queue_tx_packets_total", **lab, queue="UC1") == q1["uc_pkts"]
        assert series(s2, "fabric_roce_switch_queue_dropped_bytes_total", **lab, queue="MC5") == q1["mc_drop_bytes"]
        assert series(s2, "fabric_roce_ecn_marked_packets_total", **lab, queue="UC1") == q1["ecn_pkts"]
        assert series(s2, "fabric_roce_switch_queue_ecn_marked_bytes_total", **lab, queue="UC1") == q1["ecn_bytes"]
        assert series(s2, "fabric_roce_switch_queue_wred_dropped_packets_total", **lab, queue="UC1") == q1["wred_drop_pkts"]
        # WRED/ECN on multicast queues is N/A: no series, not a zero
        assert ("fabric_roce_ecn_marked_packets_total", frozenset({**lab, "queue": "MC5"}.items())) not in s2
        wd = intf.pfcwd[3]
        assert series(s2, "fabric_roce_switch_pfcwd_storm_active", **lab, queue="UC3") == 1
        assert series(s1, "fabric_roce_switch_pfcwd_storm_active", **lab, queue="UC3") == 0
        assert series(s2, "fabric_roce_switch_pfcwd_storms_detected_total", **lab, queue="UC3") == wd["detected"]
        assert series(s2, "fabric_roce_switch_pfcwd_tx_dropped_packets_total", **lab, queue="UC3") == 777
        assert series(s2, "fabric_roce_switch_pfcwd_rx_dropped_packets_total", **lab, queue="UC3") == 388
        assert series(s1, "fabric_roce_switch_queue_tx_packets_total", **lab, queue="UC1") != q1["uc_pkts"]
        # 8 ports: 16 PFC series each, 8 queues x 4 stats, 4 unicast queues x 4 WRED/ECN, 2 wd queues x 5
        assert len(s2) == 8 * (16 + 32 + 16 + 10)
        # one SSH connection for both polls (pooled), --json used
        assert sshd.log().count("Accepted publickey") - accepted_before == 1
        collector = next(iter(poller.collectors.values()))
        assert collector._json == {"queue": True, "wred": True}
    finally:
        sw.storm_over(2, 3)
        write_outputs(sw, data)


def test_release_without_json_falls_back_to_tables_once(sonic_env, tmp_path):
    sw, data, sshd = sonic_env
    flag = data / ".no-json"
    flag.touch()
    try:
        (first, second), poller = run(polls(config(tmp_path, sshd), lambda: None))
    finally:
        flag.unlink()
    (st1, s1), (st2, s2) = first, second
    assert st1[("sonic", "leaf9")].state == "ok", st1[("sonic", "leaf9")].last_error
    assert s1 == s2
    collector = next(iter(poller.collectors.values()))
    assert collector._json == {"queue": False, "wred": False}
    lab = {"fabric": "lab", "switch": "leaf9", "interface": "Ethernet0"}
    assert series(s1, "fabric_roce_ecn_marked_packets_total", **lab, queue="UC2") == sw.interfaces[0].queues[2]["ecn_pkts"]


def test_failing_and_garbage_commands_make_the_poll_partial(sonic_env, tmp_path):
    sw, data, sshd = sonic_env
    (data / "pfcwd_stats.txt").unlink()  # fake show exits 1 for it
    (data / "pfc_counters.txt").write_text("Traceback (most recent call last):\n  oops\n")
    try:
        (only,), _ = run(polls(config(tmp_path, sshd, interface_include="Ethernet(0|4)")))
    finally:
        write_outputs(sw, data)
    st, s = only
    state = st[("sonic", "leaf9")]
    assert state.state == "partial"
    assert "show pfcwd stats: exit status 1" in state.last_error
    assert "show pfc counters: " in state.last_error and "no table" in state.last_error
    # the two lines it could not place are counted for fabric_parse_skipped_lines_total
    assert {k: v for k, v in state.skipped_lines.items() if v} == {"sonic_pfc_counters": 2}
    names = {k[0] for k in s}
    assert not any("pfc" in n for n in names)  # neither PFC nor watchdog series
    assert {dict(k[1])["interface"] for k in s} == {"Ethernet0", "Ethernet4"}  # the include filter


def test_every_command_failing_fails_the_poll(sonic_env, tmp_path):
    sw, data, sshd = sonic_env
    cfg = config(tmp_path, sshd, commands=["pfc", "pfcwd"])
    for f in ("pfc_counters.txt", "pfcwd_stats.txt"):
        (data / f).unlink()
    try:
        (only,), _ = run(polls(cfg))
    finally:
        write_outputs(sw, data)
    state = only[0][("sonic", "leaf9")]
    assert state.state == "failed" and state.errors["command_failed"] == 1
    assert "fake show:" in state.last_error


def test_cumulus_ethtool_dialect(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the sshd harness needs root (mount namespace)")
    bin_dir, stats, sysfs = tmp_path / "bin", tmp_path / "stats", tmp_path / "sysclass"
    bin_dir.mkdir()
    stats.mkdir()
    for port in ("swp1", "swp2", "swp51", "eth0"):
        (sysfs / "net" / port).mkdir(parents=True)
    (stats / "swp1").write_text("NIC statistics:\n     HwIfInPfc3Pkt: 15\n     HwIfOutPfc3Pkt: 7\n"
                                "     HwIfOutQ3WredDrops: 42\n")
    (stats / "swp2").write_text("NIC statistics:\n     HwIfInPfc0Pkt: 1\n     HwIfOutPfc0Pkt: 2\n")
    # a real capture: an MLAG peer link dropping (tests/fixtures/real/README.md)
    (stats / "swp51").write_text((paths.FIXTURES / "real" /
                                  "ethtool_cumulus_37_mlag_swp51_trimmed.txt").read_text())
    ethtool = bin_dir / "ethtool"
    ethtool.write_text(f"#!/bin/sh\n[ \"$1\" = -S ] && exec cat {stats}/\"$2\"\nexit 1\n")
    ethtool.chmod(0o755)
    with SSHD(tmp_path, path_dirs=[bin_dir], sysfs_tree=sysfs) as sshd:
        cfg = make_config(tmp_path, [cli_group(sshd, name="cl", host="cumulus1", dialect="cumulus")],
                          {"ssh": sshd.credential()})
        (only,), _ = run(polls(cfg))
    st, s = only
    assert st[("cl", "cumulus1")].state == "ok", st[("cl", "cumulus1")].last_error
    lab = {"fabric": "lab", "switch": "cumulus1"}
    assert series(s, "fabric_roce_pfc_rx_pause_frames_total", **lab, interface="swp1", priority="3") == 15
    assert series(s, "fabric_roce_pfc_tx_pause_frames_total", **lab, interface="swp1", priority="3") == 7
    assert series(s, "fabric_roce_switch_queue_wred_dropped_packets_total", **lab, interface="swp1", queue="UC3") == 42
    assert series(s, "fabric_roce_pfc_tx_pause_frames_total", **lab, interface="swp2", priority="0") == 2
    assert series(s, "fabric_roce_rx_discards_total", **lab, interface="swp51") == 2129675
    assert len(s) == 6 and not any(("interface", "eth0") in k[1] for k in s)


def test_cumulus_nvue_roce_counters_beside_ethtool(tmp_path):
    """commands: [ethtool, nvue_roce]: both loops in one sh run; NVUE's answer is the real capture
    (swp16), an interface whose nv fails is a problem of the poll, not a failed poll."""
    if os.geteuid() != 0:
        pytest.skip("the sshd harness needs root (mount namespace)")
    bin_dir, stats, sysfs = tmp_path / "bin", tmp_path / "stats", tmp_path / "sysclass"
    bin_dir.mkdir()
    stats.mkdir()
    for port in ("swp16", "swp17"):
        (sysfs / "net" / port).mkdir(parents=True)
        (stats / port).write_text("NIC statistics:\n     HwIfInDiscards: 9\n")
    (stats / "swp16.roce").write_text((paths.FIXTURES / "real" /
                                       "nvue_qos_roce_counters_swp16.txt").read_text())
    calls = tmp_path / "nv-calls.log"
    (bin_dir / "ethtool").write_text(f"#!/bin/sh\n[ \"$1\" = -S ] && exec cat {stats}/\"$2\"\nexit 1\n")
    (bin_dir / "nv").write_text(
        f"#!/bin/sh\necho \"$*\" >> {calls}\n"
        f"[ \"$1 $2 $4 $5 $6 $#\" = \"show interface qos roce counters 6\" ] && [ -f {stats}/\"$3\".roce ] "
        f"&& exec cat {stats}/\"$3\".roce\necho 'Error: not found' >&2\nexit 1\n")
    for tool in ("ethtool", "nv"):
        (bin_dir / tool).chmod(0o755)
    with SSHD(tmp_path, path_dirs=[bin_dir], sysfs_tree=sysfs) as sshd:
        cfg = make_config(tmp_path, [cli_group(sshd, name="cl", host="cumulus1", dialect="cumulus",
                                               commands=["ethtool", "nvue_roce"])], {"ssh": sshd.credential()})
        (only,), _ = run(polls(cfg))
    st, s = only
    state = st[("cl", "cumulus1")]
    assert state.state == "partial" and "nv show interface qos roce counters swp17: exit status 1" in state.last_error
    port = {"fabric": "lab", "switch": "cumulus1", "interface": "swp16"}
    assert series(s, "fabric_roce_switch_if_ecn_marked_packets_total", **port) == 693777677344
    assert series(s, "fabric_roce_switch_if_tx_no_buffer_discards_total", **port, traffic="roce") == 663060754115
    assert series(s, "fabric_roce_switch_if_rx_traffic_packets_total", **port, traffic="non_roce") == 462975
    assert series(s, "fabric_roce_rx_discards_total", **port) == 9
    assert series(s, "fabric_roce_rx_discards_total", **{**port, "interface": "swp17"}) == 9
    assert len(s) == 9 + 2
    assert calls.read_text().splitlines() == ["show interface swp16 qos roce counters",
                                              "show interface swp17 qos roce counters"]


def test_batched_script_sections_roundtrip():
    from fabric_exporter.collectors.switch_cli import build_script
    from fabric_exporter.parsers.batched import split_sections
    from fabric_exporter.errors import ParseError

    script = build_script([("a", ("printf", "x\\ny")), ("b", ("sh", "-c", "echo hi; exit 3"))], "n0nce")
    import subprocess

    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10).stdout
    sections = split_sections(out, "n0nce")
    assert [(s.name, s.exit_status, s.text) for s in sections] == [("a", 0, "x\ny"), ("b", 3, "hi\n")]
    with pytest.raises(ParseError, match="cut off"):
        split_sections(out.rsplit("@@n0nce end", 1)[0], "n0nce")
    assert re.search(r"^printf '@@%s begin %s\\n' n0nce a$", script, re.M)


def test_snmp_and_cli_name_the_same_queues_the_same_way(sonic_env, tmp_path):
    """One simulated SONiC switch, polled over SNMP (CISCO-SWITCH-QOS-MIB, CISCO-PFC-EXT-MIB) and over
    the CLI: the queue and PFC series must carry identical label sets and values. (Which is also why
    one switch must not have both sources for them in one exporter: the series would be duplicates;
    see docs/collectors/switch_cli.md.)"""
    from fabric_exporter.lab.snmp import SnmpSim

    sw, data, sshd = sonic_env
    with SnmpSim([sw], workdir=tmp_path / "sim") as sim:
        cfg = make_config(tmp_path, [
            cli_group(sshd, commands=["pfc", "queue"]),
            {"name": "snmp", "fabric": "lab", "collector": "snmp_switch", "transport": "snmp", "credentials": "snmp",
             "hosts": [{"name": "leaf9", "address": "127.0.0.1", "port": sim.port}],
             "options": {"modules": ["cisco_pfc", "cisco_qos"], "snmp_timeout": "2s"}},
        ], {"ssh": sshd.credential(), "snmp": {"type": "snmp", "version": "2c", "community": "leaf9"}})

        async def both():
            p = Poller(cfg)
            try:
                states = await p.poll_states()
                snaps = {key[0]: p.store.get(key) for key in states}
                return states, snaps
            finally:
                await p.close()

        states, snaps = run(both())
    assert all(s.state == "ok" for s in states.values()), [s.last_error for s in states.values()]
    from tests.harness.polling import parse_exposition

    def family(group, name):
        return parse_exposition(snaps[group].chunks[name])

    for name in ("fabric_roce_switch_queue_tx_packets_total", "fabric_roce_switch_queue_dropped_bytes_total",
                 "fabric_roce_pfc_rx_pause_frames_total", "fabric_roce_pfc_tx_pause_frames_total"):
        via_snmp, via_cli = family("snmp", name), family("sonic", name)
        assert via_snmp == via_cli and len(via_snmp) >= 8 * 8
