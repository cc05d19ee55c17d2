"""The LLDP neighbour map (fabric_roce_switch_if_neighbor_info) end to end: LLDP-MIB and LLDP-V2-MIB
served by a real snmpsim and walked by snmp_switch (both request engines), ``show lldp table`` run by
switch_cli over a real sshd whose key is pinned to the SSH guard, the lab's switches naming the lab's
hosts, and the varbind mapping fuzzed."""

from __future__ import annotations

import re
import os
import shlex
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric_exporter.collectors import lldp
from fabric_exporter.errors import ParseError
from fabric_exporter.lab.run import Lab, LabOptions
from fabric_exporter.lab.snmp import SimulatedSwitch, SnmpSim
from fabric_exporter.lab.sonic_cli import install_fake_show, render_lldp_table, write_outputs
from fabric_exporter.parsers.sonic_cli import parse_lldp_table
from fabric_exporter.transport.snmp_ber import Varbind

from tests.harness import paths
from tests.harness.sshd import SSHD
from tests.harness.switch import make_config, run
from tests.harness.polling import Poller, poll_once

NEIGHBOR = "fabric_roce_switch_if_neighbor_info"
GUARD = paths.ROOT / "deploy" / "ssh" / "fabric-exporter-ssh-guard"


def cable(sw: SimulatedSwitch, hosts: list[str], nics: int = 2) -> set[tuple[str, str, str]]:
    """Each host's NICs on consecutive interfaces; the expected (interface, host, port) set."""
    expected = set()
    for h, host in enumerate(hosts):
        for j in range(nics):
            index = h * nics + j
            sw.connect(index, host, f"ens{j + 1}f0np0")
            expected.add((sw.interfaces[index].name, host, f"ens{j + 1}f0np0"))
    return expected


def neighbors(samples: dict, switch: str) -> set[tuple[str, str, str]]:
    out = set()
    for (name, labels), value in samples.items():
        d = dict(labels)
        if name == NEIGHBOR and d["switch"] == switch:
            assert value == 1 and d["fabric"] == "lab"
            out.add((d["interface"], d["neighbor_host"], d["neighbor_port"]))
    return out


# -- SNMP: snmpsim serving LLDP-MIB (a SONiC-like leaf) and LLDP-V2-MIB --------------------------------

HOSTS_V1 = ["gpu-node-001", "gpu-node-002.cluster.example", "gpu-node-003"]
HOSTS_V2 = ["gpu-node-101", "gpu-node-102"]


@pytest.fixture(scope="module")
def lldp_agents(tmp_path_factory):
    v1 = SimulatedSwitch("leaf-lldp", "sonic", ports=8, queues=2, seed=5)
    v2 = SimulatedSwitch("ieee-lldp", "ieee", ports=6, queues=2, seed=6)
    v2.lldp_mib = "v2"
    expected = {"leaf-lldp": cable(v1, HOSTS_V1), "ieee-lldp": cable(v2, HOSTS_V2)}
    sim = SnmpSim([v1, v2], workdir=tmp_path_factory.mktemp("snmpsim-lldp"))
    sim.start()
    try:
        yield sim, expected
    finally:
        sim.stop()


def snmp_group(name, port, modules, **options):
    return {"name": name, "fabric": "lab", "collector": "snmp_switch", "transport": "snmp", "credentials": name,
            "hosts": [{"name": name, "address": "127.0.0.1", "port": port}], "interval": "2m", "timeout": "90s",
            "options": {"modules": modules, "snmp_timeout": "5s", "snmp_retries": 1, **options}}


@pytest.mark.parametrize("engine", ["fast", "pysnmp"])
def test_snmp_lldp_and_lldp_v2_neighbours_exactly(lldp_agents, tmp_path, engine):
    sim, expected = lldp_agents
    cfg = make_config(tmp_path, [
        snmp_group("leaf-lldp", sim.port, ["if_mib", "lldp"], snmp_engine=engine),
        snmp_group("ieee-lldp", sim.port, ["lldp_v2"], snmp_engine=engine)],
        {n: {"type": "snmp", "version": "2c", "community": n} for n in ("leaf-lldp", "ieee-lldp")})
    states, samples = run(poll_once(cfg))
    for key, state in states.items():
        assert state.state == "ok", (key, state.last_error)
    # the hosts as they announce themselves; a MAC port ID gives way to the netdev description
    assert neighbors(samples, "leaf-lldp") == expected["leaf-lldp"] and len(expected["leaf-lldp"]) == 6
    assert neighbors(samples, "ieee-lldp") == expected["ieee-lldp"] and len(expected["ieee-lldp"]) == 4


def test_snmp_neighbor_name_and_interface_filter(lldp_agents, tmp_path):
    sim, expected = lldp_agents
    cfg = make_config(tmp_path, [snmp_group("leaf-lldp", sim.port, ["lldp"], interface_exclude="Ethernet[04]",
                                            neighbor_name={"regex": r"^([^.]+)"})],
                      {"leaf-lldp": {"type": "snmp", "version": "2c", "community": "leaf-lldp"}})
    states, samples = run(poll_once(cfg))
    assert all(s.state == "ok" for s in states.values()), [s.last_error for s in states.values()]
    want = {(i, h.split(".")[0], p) for i, h, p in expected["leaf-lldp"] if i not in ("Ethernet0", "Ethernet4")}
    assert neighbors(samples, "leaf-lldp") == want
    assert ("Ethernet8", "gpu-node-002", "ens1f0np0") in want  # the FQDN, as the scheduler names the node


def test_snmp_agent_without_lldp_publishes_no_neighbours_and_stays_ok(tmp_path):
    plain = SimulatedSwitch("plain", "ieee", ports=4, seed=9)
    with SnmpSim([plain], workdir=tmp_path / "sim") as sim:
        cfg = make_config(tmp_path, [snmp_group("plain", sim.port, ["if_mib", "lldp", "lldp_v2"])],
                          {"plain": {"type": "snmp", "version": "2c", "community": "plain"}})
        states, samples = run(poll_once(cfg))
    assert [s.state for s in states.values()] == ["ok"]
    assert neighbors(samples, "plain") == set()


# -- the SONiC CLI over a real sshd, the client key pinned to the SSH guard ------------------------------

def _force_guard(sshd: SSHD) -> None:
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    key = sshd.authorized_keys.read_text().strip()
    sshd.authorized_keys.write_text(f'restrict,command="{python} {GUARD}" {key}\n')


@pytest.fixture(scope="module")
def guarded_sonic(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the sshd harness needs root (mount namespace)")
    base = tmp_path_factory.mktemp("sonic-lldp")
    sw = SimulatedSwitch("leaf-cli", "sonic", ports=8, queues=2, seed=7)
    expected = cable(sw, ["gpu-node-201", "gpu-node-202.cluster.example"])
    data, bin_dir = base / "data", base / "bin"
    write_outputs(sw, data)
    install_fake_show(bin_dir, data)
    sshd = SSHD(base, path_dirs=[bin_dir])
    _force_guard(sshd)
    with sshd:
        yield sw, expected, sshd


def cli_config(tmp_path, sshd, **options):
    group = {"name": "sonic", "fabric": "lab", "collector": "switch_cli", "transport": "ssh", "credentials": "ssh",
             "hosts": [{"name": "leaf-cli", "address": "127.0.0.1", "port": sshd.port}], "interval": "30s",
             "timeout": "20s", "options": options}
    return make_config(tmp_path, [group], {"ssh": sshd.credential()})


def test_show_lldp_table_through_the_guard(guarded_sonic, tmp_path):
    sw, expected, sshd = guarded_sonic
    cfg = cli_config(tmp_path, sshd, commands=["pfc", "lldp"], neighbor_name={"regex": r"^([^.]+)"})
    states, samples = run(poll_once(cfg))
    (state,) = states.values()
    assert state.state == "ok", state.last_error
    assert neighbors(samples, "leaf-cli") == {(i, h.split(".")[0], p) for i, h, p in expected}
    assert len(expected) == 4
    # the guard ran the batch and refused nothing
    assert "refused" not in sshd.log().lower()


def test_the_guard_refuses_other_lldp_commands(guarded_sonic):
    import subprocess

    _sw, _expected, sshd = guarded_sonic
    for command in ("show lldp table --json", "show lldp neighbors", "show lldp table -d"):
        r = subprocess.run(sshd.ssh_argv(command), capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 126, (command, r.returncode, r.stderr)
    r = subprocess.run(sshd.ssh_argv(shlex.join(["show", "lldp", "table"])), capture_output=True, text=True,
                       timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and "Total entries displayed:  4" in r.stdout, (r.returncode, r.stderr)


def test_an_lldp_table_cut_off_is_partial_never_a_shorter_map(guarded_sonic, tmp_path):
    sw, _expected, sshd = guarded_sonic
    data = next(p for p in Path(sshd.dir).parents[0].rglob("lldp_table.txt"))
    whole = data.read_text()
    try:
        data.write_text("\n".join(whole.splitlines()[:4]) + "\n")  # header, dashes, one row: no total
        states, samples = run(poll_once(cli_config(tmp_path, sshd, commands=["pfc", "lldp"])))
        (state,) = states.values()
        assert state.state == "partial" and "output cut off" in state.last_error, state.last_error
        assert neighbors(samples, "leaf-cli") == set()
    finally:
        data.write_text(whole)


# -- the lab: its leaves name the lab's own hosts ------------------------------------------------------

def test_the_lab_cables_every_host_nic_to_its_racks_leaf(tmp_path):
    lab = Lab(LabOptions(workdir=tmp_path, racks=2, hosts_per_rack=3, nics=2, snmp=False, ib=False,
                         prometheus=False))
    lab._build_roce()
    lab._start_snmp()
    served = set()
    for rack, (name, sw) in enumerate(lab.switches.items(), start=1):
        for row in parse_lldp_table(render_lldp_table(sw)):
            assert lab.rack_of[row.remote_device] == rack
            served.add((row.remote_device, row.remote_port_descr))
    assert served == {(h, p.netdev) for h, host in lab.hosts.items() for p in host.ports}
    assert any(t["collector"] == "switch_cli" and "lldp" in t["options"]["commands"] for t in lab_config(lab))


def lab_config(lab):
    lab.ssh = type("S", (), {"ports": {n: 1 for n in [*lab.hosts, *lab.switches]}, "client_key": "k",
                             "known_hosts": "kh"})()
    return lab._config()["targets"]


def test_the_lab_leaf_over_snmp_names_the_lab_hosts(tmp_path):
    lab = Lab(LabOptions(workdir=tmp_path, racks=1, hosts_per_rack=2, nics=2, snmp=False, ib=False,
                         prometheus=False))
    lab._build_roce()
    lab._start_snmp()
    (name, sw), = lab.switches.items()
    with SnmpSim([sw], workdir=tmp_path / "sim") as sim:
        cfg = make_config(tmp_path, [snmp_group(name, sim.port, ["if_mib", "lldp"])],
                          {name: {"type": "snmp", "version": "2c", "community": name}})
        states, samples = run(poll_once(cfg))
    assert [s.state for s in states.values()] == ["ok"]
    assert {h for _i, h, _p in neighbors(samples, name)} == set(lab.hosts)
    assert len(neighbors(samples, name)) == sum(len(h.ports) for h in lab.hosts.values())


# -- the varbind mapping, fuzzed: never an exception, never a neighbour without a name -----------------

_value = st.one_of(st.binary(max_size=20), st.integers(-5, 10), st.none(), st.text(max_size=5))
_index = st.lists(st.integers(0, 70), min_size=0, max_size=6).map(tuple)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=st.sampled_from([lldp.LLDP_MIB, lldp.LLDP_V2_MIB]),
       rows=st.lists(st.tuples(st.sampled_from(list(lldp.LLDP_MIB.columns + lldp.LLDP_V2_MIB.columns)), _index, _value),
                     max_size=40),
       if_names=st.dictionaries(st.integers(0, 70), st.text(max_size=8), max_size=8))
def test_neighbors_from_fuzzed_walks(table, rows, if_names):
    walks: dict = {}
    for column, index, value in rows:
        walks.setdefault(column, []).append(Varbind(column + index, "STRING", value))
    problems: list[str] = []
    found = lldp.neighbors_from_walks(table, walks, if_names, problems)
    for nb in found:
        assert nb.host and nb.interface and isinstance(nb.port, str)
    samples = lldp.neighbor_samples("sw", found, lambda _n: True, None)
    assert len({tuple(sorted(s.labels.items())) for s in samples}) == len(samples)


# -- the show lldp table parser on its edges --------------------------------------------------------------

REAL = paths.FIXTURES / "real"
HEADER = ("Capability codes: (R) Router, (B) Bridge, (O) Other\n"
          "LocalPort    RemoteDevice    RemotePortID       Capability    RemotePortDescr\n"
          "-----------  --------------  -----------------  ------------  -----------------\n")
FOOTER = "--------------------------------------------------\nTotal entries displayed:  {}\n"


def test_lldp_table_empty_and_rows_that_do_not_fit():
    assert parse_lldp_table(HEADER + FOOTER.format(0)) == []
    skipped: list = []
    rows = parse_lldp_table(HEADER + "Ethernet0    host-a          ens1f0np0          O             ens1f0np0\n"
                            "Ethernet4    host-b-with-a-much-too-long-name ens2 O  x\n" + FOOTER.format(2),
                            skipped=skipped)
    assert [(r.local_port, r.remote_device) for r in rows] == [("Ethernet0", "host-a")]
    assert len(skipped) == 1 and skipped[0].source == "sonic_lldp_table" and "host-b" in skipped[0].text


@pytest.mark.parametrize("text, message", [
    ("", "no neighbour table (empty output)"),
    ("Error: [Errno 2] No such file or directory: 'docker'\n", "no neighbour table (\"Error: [Errno 2]"),
    (HEADER + "Ethernet0    host-a          ens1f0np0          O             ens1f0np0\n", "output cut off"),
    (HEADER + "Ethernet0    host-a          ens1f0np0          O             ens1f0np0\n" + FOOTER.format(2),
     "2 entries announced, 1 rows printed"),
    (HEADER.replace("RemotePortID      ", "RemotePort        "), "no neighbour table"),
])
def test_lldp_table_never_a_shorter_map(text, message):
    with pytest.raises(ParseError, match=re.escape(message)):
        parse_lldp_table(text)


def test_lldp_table_real_capture_cells_with_spaces_and_empty_cells():
    rows = parse_lldp_table((REAL / "sonic_lldp_table.txt").read_text())
    assert rows[2].remote_port_id == "GigabitEthernet 0/2" and rows[2].remote_port_descr == ""
    assert rows[2].capability == "OBR"


def test_lldp_table_a_cell_running_into_the_next_column_is_skipped_not_cut():
    # "gpu-node-042.example" is wider than RemoteDevice's column: the row does not fit the dash line
    skipped: list = []
    text = HEADER + ("Ethernet0    gpu-node-042.example ens1f0np0     O             ens1f0np0\n"
                     "Ethernet4    gpu-node-043    0c:42:a1:00:00:04  lowercase     ens2f0np0\n"
                     "Ethernet8                    0c:42:a1:00:00:08  O             ens3f0np0\n") + FOOTER.format(3)
    rows = parse_lldp_table(text, skipped=skipped)
    assert [r.local_port for r in rows] == ["Ethernet8"] and rows[0].remote_device == ""
    assert [s.line_no for s in skipped] == [4, 5]
    # a neighbour that sent no system name names no host
    assert lldp.neighbors_from_cli(rows) == []


# -- the varbind mapping, case by case ----------------------------------------------------------------

def _walks(rows: dict[tuple[int, ...], dict[tuple[int, ...], object]]) -> dict:
    return {column: [Varbind(column + index, "STRING", value) for index, value in cells.items()]
            for column, cells in rows.items()}


def test_lldp_mib_local_port_named_by_its_interface_name_subtype_before_ifname():
    """A bridge numbering its ports (lldpLocPortNum 3 is not ifIndex 3): lldpLocPortId with subtype
    interfaceName names the port; ifName of the same number would name the wrong one."""
    walks = _walks({lldp.LLDP_LOC_PORT_ID_SUBTYPE: {(3,): 5}, lldp.LLDP_LOC_PORT_ID: {(3,): b"Ethernet8"},
                    lldp.LLDP_REM_SYS_NAME: {(0, 3, 1): b"gpu-node-007", (0, 4, 1): b"gpu-node-008",
                                             (0, 9, 1): b"gpu-node-009", (0, 5, 1): b"  "},
                    lldp.LLDP_REM_PORT_ID_SUBTYPE: {(0, 3, 1): 5, (0, 4, 1): 3, (0, 9, 1): 3},
                    # an interface name with a description: the ID names the port
                    lldp.LLDP_REM_PORT_ID: {(0, 3, 1): b"ens1f0np0", (0, 4, 1): bytes.fromhex("0c42a1000004"),
                                            (0, 9, 1): bytes.fromhex("0c42a1000009")},
                    lldp.LLDP_REM_PORT_DESC: {(0, 3, 1): b"Mellanox ConnectX-7", (0, 4, 1): b"",
                                              (0, 9, 1): b"ens2f0np0"}})
    problems: list[str] = []
    found = lldp.neighbors_from_walks(lldp.LLDP_MIB, walks, {3: "Ethernet2", 4: "Ethernet3"}, problems)
    assert found == [lldp.Neighbor("Ethernet8", "gpu-node-007", "ens1f0np0"),
                     # a MAC port ID without a description: the MAC, written as one
                     lldp.Neighbor("Ethernet3", "gpu-node-008", "0c:42:a1:00:00:04")]
    # local port 9: no name anywhere -> left out and said; local port 5: a blank system name -> no host
    assert problems == ["LLDP-MIB: neighbours on local port(s) 9 left out: no interface name for them "
                        "(neither lldpLocPortId nor ifName)"]


def test_neighbor_samples_one_series_per_neighbour_after_mapping():
    from fabric_exporter.hostnames import NameRule

    same = [lldp.Neighbor("Ethernet0", "gpu-node-001", "ens1f0np0"),
            lldp.Neighbor("Ethernet0", "gpu-node-001.cluster.example", "ens1f0np0"),
            lldp.Neighbor("Ethernet0", "gpu-node-001", "ens1f0np0")]
    assert len(lldp.neighbor_samples("sw", same, lambda _n: True, None)) == 2
    mapped = lldp.neighbor_samples("sw", same, lambda _n: True, NameRule(re.compile(r"^([^.]+)")))
    assert [s.labels["neighbor_host"] for s in mapped] == ["gpu-node-001"]
    again = lldp.map_neighbor_hosts(lldp.neighbor_samples("sw", same, lambda _n: True, None),
                                    NameRule(re.compile(r"^([^.]+)")))
    assert [(s.name, s.labels) for s in again] == [(s.name, s.labels) for s in mapped]


def test_snmp_oper_up_only_keeps_neighbours_of_up_interfaces(tmp_path):
    sw = SimulatedSwitch("updown", "sonic", ports=4, queues=1, seed=8)
    expected = cable(sw, ["gpu-node-301", "gpu-node-302"])
    sw.interfaces[1].oper_status = 2  # down: its neighbour entry may linger in the agent
    with SnmpSim([sw], workdir=tmp_path / "sim") as sim:
        cfg = make_config(tmp_path, [snmp_group("updown", sim.port, ["lldp"], oper_up_only=True)],
                          {"updown": {"type": "snmp", "version": "2c", "community": "updown"}})
        states, samples = run(poll_once(cfg))
    assert [s.state for s in states.values()] == ["ok"]
    assert neighbors(samples, "updown") == {n for n in expected if n[0] != sw.interfaces[1].name}


def test_lldp_v2_bad_indexes_counted_and_unnamed_ports_said_by_the_mib_name():
    """LLDP-V2-MIB: the local port is an ifIndex (index position 1 of 4); a varbind with a short index
    is counted once, and the problems name the MIB they come from."""
    walks = _walks({lldp.LLDP_V2_REM_SYS_NAME: {(0, 7, 1, 1): b"gpu-node-101", (0, 8, 1, 1): b"gpu-node-102",
                                                (0, 7, 1): b"short-index"},
                    lldp.LLDP_V2_REM_PORT_ID_SUBTYPE: {(0, 7, 1, 1): 5},
                    lldp.LLDP_V2_REM_PORT_ID: {(0, 7, 1, 1): b"ens1f0np0"}})
    problems: list[str] = []
    found = lldp.neighbors_from_walks(lldp.LLDP_V2_MIB, walks, {7: "Ethernet7"}, problems)
    assert found == [lldp.Neighbor("Ethernet7", "gpu-node-101", "ens1f0np0")]
    assert problems == ["LLDP-V2-MIB: 1 varbinds with an unexpected index skipped",
                        "LLDP-V2-MIB: neighbours on local port(s) 8 left out: no interface name for them "
                        "(neither lldpLocPortId nor ifName)"]


def test_lldp_mib_port_ids_by_subtype_and_wrong_types():
    """A macAddress port ID of 6 bytes is written as a MAC even when its bytes happen to be printable;
    one of another length (an agent sending the MAC as text) is kept as text; a port ID that is not
    an OCTET STRING names no port ("")."""
    rows = {(0, 1, 1): (3, b"abcdef"), (0, 2, 1): (3, b"0c:42:a1:00:00:04"), (0, 3, 1): (5, 42)}
    walks = _walks({lldp.LLDP_REM_SYS_NAME: {i: f"gpu-node-00{i[1]}".encode() for i in rows},
                    lldp.LLDP_REM_PORT_ID_SUBTYPE: {i: subtype for i, (subtype, _v) in rows.items()},
                    lldp.LLDP_REM_PORT_ID: {i: value for i, (_s, value) in rows.items()},
                    lldp.LLDP_REM_PORT_DESC: {i: 7 for i in rows}})  # a description of the wrong type: none
    problems: list[str] = []
    found = lldp.neighbors_from_walks(lldp.LLDP_MIB, walks, {1: "Ethernet0", 2: "Ethernet4", 3: "Ethernet8"},
                                      problems)
    assert found == [lldp.Neighbor("Ethernet0", "gpu-node-001", "61:62:63:64:65:66"),
                     lldp.Neighbor("Ethernet4", "gpu-node-002", "0c:42:a1:00:00:04"),
                     lldp.Neighbor("Ethernet8", "gpu-node-003", "")]
    assert problems == []


def test_lldp_table_mac_port_ids_named_by_their_description():
    """``show lldp table``: a MAC-shaped port ID (lldpd on a Linux host) with a description -> the
    description (the NIC's netdev); without one -> the MAC; a name-shaped ID stays."""
    text = HEADER + ("Ethernet0    gpu-node-001    0c:42:a1:00:00:00  O             ens1f0np0\n"
                     "Ethernet4    gpu-node-002    0C-42-A1-00-00-04  O\n"
                     "Ethernet8    gpu-node-003    ens3f0np0          O             Mellanox\n") + FOOTER.format(3)
    found = lldp.neighbors_from_cli(parse_lldp_table(text))
    assert found == [lldp.Neighbor("Ethernet0", "gpu-node-001", "ens1f0np0"),
                     lldp.Neighbor("Ethernet4", "gpu-node-002", "0C-42-A1-00-00-04"),
                     lldp.Neighbor("Ethernet8", "gpu-node-003", "ens3f0np0")]
    assert [lldp.looks_like_mac(t) for t in ("0c:42:a1:00:00:00", "0c:42-a1:00:00:00", "ens1f0np0")] == \
        [True, False, False]
