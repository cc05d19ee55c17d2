"""The collector's pure pieces on the ibsim fixtures (captured from infiniband-diags on ibsim):
join_sweeps (two sweeps -> one record per port) and samples_from_sweep (records + state -> samples)
run without tools, clock or I/O, and give the same samples from the same inputs."""

from __future__ import annotations

import dataclasses

from fabric_exporter.catalog import family_of
from fabric_exporter.collectors.infiniband import FabricState, join_sweeps, samples_from_sweep
from fabric_exporter.collectors.infiniband.counters import latched_counters
from fabric_exporter.parsers import ib_netdiscover, ib_queryerrors

from tests.harness import paths

FIXTURES = paths.FIXTURES / "infiniband"


def _inputs():
    state = FabricState(forget_missing_after=3600.0)
    state.apply_topology(ib_netdiscover.parse((FIXTURES / "ibsim_ibnetdiscover.txt").read_text()))
    counters = ib_queryerrors.parse((FIXTURES / "ibsim_ibqueryerrors_counters_report_port.txt").read_text())
    errors = ib_queryerrors.parse((FIXTURES / "ibsim_ibqueryerrors_errors_zero_threshold.txt").read_text())
    return state, counters, errors


def _poll(state, counters, errors, now):
    problems: list[str] = []
    joined = join_sweeps(counters, errors, "", state.owners, problems)
    state.sweep_names = joined.sweep_names
    latched = {k: latched_counters(p.entry, p.errors, p.errors_extended, p.qp1_dropped) for k, p in joined.ports.items()}
    state.record_sweep(joined.ports, now)
    state.forget_gone(joined.ports, now)
    return joined, samples_from_sweep(joined.ports, latched, state, {"ibqueryerrors_counters": 0.5}, now, problems), \
        problems


def test_mapping_is_repeatable_and_reuses_unchanged_ports():
    state, counters, errors = _inputs()
    joined, first, _problems = _poll(state, counters, errors, 100.0)
    assert joined.ports and all(family_of(s.name) is not None for s in first)
    static_before = {k: v.static for k, v in state.port_static.items()}
    _joined, second, _problems = _poll(state, counters, errors, 101.0)
    assert [(s.name, s.labels, s.value) for s in first] == [(s.name, s.labels, s.value) for s in second]
    # link/health/info samples of unchanged ports are the same objects, not rebuilt
    assert all(state.port_static[k].static is v for k, v in static_before.items())
    ports = sum(1 for s in first if s.name == "fabric_ib_port_state_id")
    assert ports == len(joined.ports)


def test_an_idle_port_hands_out_its_counter_samples_again_and_a_moved_counter_a_new_one():
    state, counters, errors = _inputs()
    _joined, first, _problems = _poll(state, counters, errors, 100.0)
    port = counters.nodes[0].ports[0]
    key = (counters.nodes[0].guid, port.port)

    def data(samples):
        labels = state.port_static[key].labels
        return [s for s in samples if s.labels is labels and s.name.startswith("fabric_ib_port_data_")]

    before = data(first)
    assert before
    _joined, second, _problems = _poll(state, counters, errors, 101.0)  # the same counters: idle
    assert all(a is b for a, b in zip(data(second), before, strict=True))
    port.counters = {**port.counters, "PortXmitData": port.counters["PortXmitData"] + 10}
    _joined, third, _problems = _poll(state, counters, errors, 102.0)
    moved = {s.name: s.value for s in data(third)}
    assert moved["fabric_ib_port_data_transmitted_bytes_total"] == before[0].value + 40  # words: x4
    assert all(a is not b for a, b in zip(data(third), before))


def test_a_port_the_sweep_stops_returning_is_missing_not_gone():
    state, counters, errors = _inputs()
    _poll(state, counters, errors, 100.0)
    node = counters.nodes[0]
    dropped = node.ports.pop()
    _joined, samples, problems = _poll(state, counters, errors, 101.0)
    missing = [s for s in samples if s.name == "fabric_ib_port_sweep_missing" and s.value == 1.0]
    assert [(s.labels["node_guid"], s.labels["port"]) for s in missing] == [(f"0x{node.guid:016x}", str(dropped.port))]
    assert not any(s.name == "fabric_ib_port_data_transmitted_bytes_total" and s.labels["port"] == str(dropped.port)
                   and s.labels["node_guid"] == f"0x{node.guid:016x}" for s in samples)
    # the missing port keeps its peer, named as the topology describes it; the problem names the node
    assert (missing[0].labels["peer_node_name"], missing[0].labels["peer_port"]) == ("leaf-02", "2")
    assert any("missing from the sweep (e.g. gpu-004 mlx5_0)" in p for p in problems)


def test_rediscovering_the_same_fabric_keeps_the_port_memo_and_a_changed_one_drops_it():
    state, counters, errors = _inputs()
    _poll(state, counters, errors, 100.0)
    memo = dict(state.port_static)
    text = (FIXTURES / "ibsim_ibnetdiscover.txt").read_text()
    state.apply_topology(ib_netdiscover.parse(text))  # topology_interval: the same fabric again
    assert state.port_static == memo and all(state.port_static[k] is v for k, v in memo.items())
    changed = ib_netdiscover.parse(text)
    node = next(n for n in changed.nodes.values() if n.type == "ca" and n.ports)
    old_port = next(iter(node.ports.values()))
    # a CA port with another port GUID (an HCA swapped): port_info must change
    port = node.ports[old_port.port] = dataclasses.replace(old_port, port_guid=old_port.port_guid ^ 0xFF)
    state.apply_topology(changed)
    assert state.port_static == {}
    _joined, samples, _problems = _poll(state, counters, errors, 101.0)
    infos = [s for s in samples if s.name == "fabric_ib_port_info" and s.labels["node_guid"] == f"0x{node.guid:016x}"
             and s.labels["port"] == str(port.port)]
    assert [i.labels["port_guid"] for i in infos] == [f"0x{port.port_guid:016x}"]


def _port_gauges(samples, node_guid: int, port: int) -> dict[str, float]:
    return {s.name: s.value for s in samples if s.name.startswith("fabric_ib_port_") and "node_guid" in s.labels
            and s.labels["node_guid"] == f"0x{node_guid:016x}" and s.labels["port"] == str(port)
            and s.name != "fabric_ib_port_info"}


def _labels_of(samples, node_guid: int, port: int):
    return next(s.labels for s in samples if s.name == "fabric_ib_port_state_id"
                and s.labels["node_guid"] == f"0x{node_guid:016x}" and s.labels["port"] == str(port))


def test_link_gauges_follow_width_speed_and_counter_kind_on_the_ndr_fabric():
    state = FabricState(forget_missing_after=3600.0)
    state.apply_topology(ib_netdiscover.parse((FIXTURES / "ndr_fabric_ibnetdiscover.txt").read_text()))
    counters = ib_queryerrors.parse((FIXTURES / "ndr_fabric_counters.txt").read_text())
    errors = ib_queryerrors.parse((FIXTURES / "ndr_fabric_errors.txt").read_text())
    _joined, samples, _problems = _poll(state, counters, errors, 100.0)
    ndr_lane = 100e9 / 8  # NDR: 100 Gb/s a lane, in bytes
    # leaf-01 port 1: 4X NDR, 64-bit counters, to a CA the topology links it to
    leaf_to_dgx = _port_gauges(samples, 0xa088c20300f3e1c0, 1)
    assert {k: leaf_to_dgx[k] for k in (
        "fabric_ib_port_active_width_lanes", "fabric_ib_port_active_lane_rate_bytes_per_second",
        "fabric_ib_port_rate_bytes_per_second", "fabric_ib_port_supported_width_lanes",
        "fabric_ib_port_supported_lane_rate_bytes_per_second", "fabric_ib_port_degraded",
        "fabric_ib_port_link_down_unexpected", "fabric_ib_port_latched", "fabric_ib_port_extended_counters",
    )} == {"fabric_ib_port_active_width_lanes": 4.0, "fabric_ib_port_active_lane_rate_bytes_per_second": ndr_lane,
           "fabric_ib_port_rate_bytes_per_second": 4 * ndr_lane, "fabric_ib_port_supported_width_lanes": 4.0,
           "fabric_ib_port_supported_lane_rate_bytes_per_second": ndr_lane, "fabric_ib_port_degraded": 0.0,
           "fabric_ib_port_link_down_unexpected": 0.0, "fabric_ib_port_latched": 0.0,
           "fabric_ib_port_extended_counters": 1.0}
    # leaf-01 port 65: 2X of a 4X-capable NDR link ("Could be 4X"): degraded, supported 4 lanes
    narrow = _port_gauges(samples, 0xa088c20300f3e1c0, 65)
    assert (narrow["fabric_ib_port_active_width_lanes"], narrow["fabric_ib_port_supported_width_lanes"],
            narrow["fabric_ib_port_supported_lane_rate_bytes_per_second"], narrow["fabric_ib_port_degraded"]) == (
        2.0, 4.0, ndr_lane, 1.0)
    # the old QDR HCA: 4 32-bit data counters, PortXmitData sitting at 2^32-1: latched, not extended
    qdr = _port_gauges(samples, 0x0002c903004a7b10, 1)
    assert (qdr["fabric_ib_port_active_lane_rate_bytes_per_second"], qdr["fabric_ib_port_latched"],
            qdr["fabric_ib_port_extended_counters"]) == (8e9 / 8, 1.0, 0.0)


def test_a_link_gone_down_keeps_its_peer_by_the_name_the_sweep_printed():
    state = FabricState(forget_missing_after=3600.0)
    state.apply_topology(ib_netdiscover.parse((FIXTURES / "ibsim_ibnetdiscover.txt").read_text()))
    # leaf-02 renamed since the discovery: the sweeps print its new NodeDescription
    counter_text = (FIXTURES / "ibsim_ibqueryerrors_counters_report_port.txt").read_text().replace(
        '0x2c90300a10100 "leaf-02"', '0x2c90300a10100 "leaf-02b"')
    errors = ib_queryerrors.parse((FIXTURES / "ibsim_ibqueryerrors_errors_zero_threshold.txt").read_text().replace(
        '0x2c90300a10100 "leaf-02"', '0x2c90300a10100 "leaf-02b"'))
    _poll(state, ib_queryerrors.parse(counter_text), errors, 100.0)
    up_line = ('Link info:    127   1[  ] ==(12X          10.0 Gbps Active/  LinkUp)==>  0x0002c90300a10100'
               '     10    2[  ] "leaf-02" ( )')
    assert up_line in counter_text
    down = counter_text.replace(up_line, 'Link info:    127   1[  ] ==(                Down/ Polling)==>'
                                         '             [  ] "" ( )')
    _joined, samples, _problems = _poll(state, ib_queryerrors.parse(down), errors, 101.0)
    gpu4 = _labels_of(samples, 0x2c90300b00040, 1)
    assert (gpu4["peer_node_name"], gpu4["peer_port"]) == ("leaf-02b", "2")
    assert _labels_of(samples, 0x2c90300a10100, 2)["node_name"] == "leaf-02b"  # the same name at both ends
    gauges = _port_gauges(samples, 0x2c90300b00040, 1)
    assert (gauges["fabric_ib_port_link_down_unexpected"], gauges["fabric_ib_port_active_lane_rate_bytes_per_second"]
            ) == (1.0, 0.0)


def test_a_new_node_name_map_renames_the_ports_already_mapped(tmp_path):
    state, counters, errors = _inputs()
    _poll(state, counters, errors, 100.0)
    name_map = tmp_path / "node-name-map"
    name_map.write_text('0x0002c90300b00040 "gpu-004-renamed"\n')
    problems: list[str] = []
    state.load_name_map(str(name_map), problems)
    assert problems == []
    _joined, samples, _problems = _poll(state, counters, errors, 101.0)
    assert _labels_of(samples, 0x2c90300b00040, 1)["node_name"] == "gpu-004-renamed"
    assert _labels_of(samples, 0x2c90300a10100, 2)["peer_node_name"] == "gpu-004-renamed"


def test_the_same_counters_parsed_again_give_the_same_samples_not_new_ones():
    state, counters, errors = _inputs()
    _joined, first, _problems = _poll(state, counters, errors, 100.0)
    # a fresh parse of the same capture: new dicts, equal values (an idle fabric, another sweep)
    again = ib_queryerrors.parse((FIXTURES / "ibsim_ibqueryerrors_counters_report_port.txt").read_text())
    _joined, second, _problems = _poll(state, again, errors, 101.0)
    data_first = [s for s in first if s.name.startswith("fabric_ib_port_data_")]
    data_second = [s for s in second if s.name.startswith("fabric_ib_port_data_")]
    assert data_first and all(a is b for a, b in zip(data_first, data_second, strict=True))


def test_node_info_carries_the_system_guid_the_topology_gives():
    state, counters, errors = _inputs()
    _joined, samples, _problems = _poll(state, counters, errors, 100.0)
    infos = {s.labels["node_guid"]: s.labels["system_guid"] for s in samples if s.name == "fabric_ib_node_info"}
    expected = {f"0x{n.guid:016x}": f"0x{n.system_guid:016x}" if n.system_guid is not None else ""
                for n in state.topology.nodes.values()}
    assert infos == expected and any(infos.values())
