"""Transports.prepare, before the first poll: it warns of an SNMP agent address and port that many
targets share (several switches behind one proxy): they share its bound of requests in flight, and
their polls queue behind each other (bench_cluster's switches did, on one replay port)."""

import logging

from fabric_exporter.transport.factory import SHARED_AGENT_WARN_TARGETS, Transports, shared_snmp_agents
from fabric_exporter.transport.snmp_fast import MAX_IN_FLIGHT_PER_AGENT
from tests.harness.configs import parse_config


def _config(ports: list[int | None]) -> object:
    return parse_config({
        "credentials": {"c": {"type": "snmp", "version": "2c", "community": "public"}},
        "targets": [{"name": "sw", "fabric": "f", "collector": "snmp_switch", "transport": "snmp", "credentials": "c",
                     "hosts": [{"name": f"sw{i}", "address": "127.0.0.1", **({"port": p} if p else {})}
                               for i, p in enumerate(ports)]}]})


def test_an_agent_shared_by_many_targets_is_warned_of_once_per_load(caplog):
    shared = [1161] * SHARED_AGENT_WARN_TARGETS + [None] * (SHARED_AGENT_WARN_TARGETS - 1)
    config = _config(shared + list(range(2000, 2010)))
    assert shared_snmp_agents(config) == {("127.0.0.1", 1161): SHARED_AGENT_WARN_TARGETS}
    with caplog.at_level(logging.WARNING, logger="fabric_exporter.transport"):
        Transports().prepare(config)
    warnings = [r for r in caplog.records if r.name == "fabric_exporter.transport"]
    assert len(warnings) == 1 and "share one agent address and port" in warnings[0].getMessage()
    assert warnings[0].fields == {"agent": "127.0.0.1:1161", "targets": SHARED_AGENT_WARN_TARGETS,
                                  "in_flight": MAX_IN_FLIGHT_PER_AGENT}


def test_the_default_port_counts_as_161_and_a_port_per_switch_is_not_warned_of(caplog):
    assert shared_snmp_agents(_config([None] * (SHARED_AGENT_WARN_TARGETS - 1) + [161])) == {
        ("127.0.0.1", 161): SHARED_AGENT_WARN_TARGETS}
    with caplog.at_level(logging.WARNING, logger="fabric_exporter.transport"):
        Transports().prepare(_config(list(range(3000, 3000 + 4 * SHARED_AGENT_WARN_TARGETS))))
    assert not [r for r in caplog.records if r.name == "fabric_exporter.transport"]
