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
    assert any("missing from the sweep" in p for p in problems)


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
