"""The error-detail read (option error_details) against ibsim: perfquery -E (PortRcvErrorDetails) and
-D (PortXmitDiscardDetails) on the ports whose PortRcvErrors / PortXmitDiscards are non-zero.

ibsim keeps the aggregate and the detail counters apart (PerformanceSet sets each), so the tests
set both, the way a real port counts a malformed packet in both."""

from __future__ import annotations

import pytest

from fabric_exporter.serving.store import build_snapshot

from tests.harness.infiniband import CollectorHarness, group_for, needs_ibsim, values

pytestmark = needs_ibsim

RCV = "PortRcvErrorDetails"
XMIT = "PortXmitDiscardDetails"


@pytest.fixture(scope="module")
def injected(fabric):
    # leaf-02 port 4: a peer sending malformed packets and packets whose SL has no VL
    fabric.set_counter("leaf-02", 4, "PortRcvErrors", 12)
    fabric.command(f'PerformanceSet "leaf-02"[4] {RCV}.PortMalformedPacketErrors=7')
    fabric.command(f'PerformanceSet "leaf-02"[4] {RCV}.PortVLMappingErrors=5')
    # leaf-03 port 2: packets that outlived the switch lifetime limit
    fabric.set_counter("leaf-03", 2, "PortXmitDiscards", 9)
    fabric.command(f'PerformanceSet "leaf-03"[2] {XMIT}.PortSwLifetimeLimitDiscards=9')
    # spine-01 port 2: details set but the aggregate is 0, so the port is not read
    fabric.command(f'PerformanceSet "spine-01"[2] {RCV}.PortMalformedPacketErrors=3')
    return fabric


def test_details_of_the_erroring_ports_come_out_exactly(injected):
    harness = CollectorHarness(group_for({"env": injected.env(), "mad_timeout_ms": 300, "error_details": True}))
    result = harness.poll()
    assert result.problems == []
    build_snapshot("lab", result.samples, 60)  # every new series is in the catalog with its labels
    malformed = values(result, "fabric_ib_port_receive_malformed_packet_errors_total")
    assert malformed == {("leaf-02", "4"): 7.0}  # spine-01 port 2: aggregate 0, not read, nothing invented
    assert values(result, "fabric_ib_port_receive_vl_mapping_errors_total") == {("leaf-02", "4"): 5.0}
    assert values(result, "fabric_ib_port_receive_looping_errors_total") == {("leaf-02", "4"): 0.0}
    assert values(result, "fabric_ib_port_transmit_lifetime_limit_discards_total") == {("leaf-03", "2"): 9.0}
    assert values(result, "fabric_ib_port_transmit_inactive_discards_total") == {("leaf-03", "2"): 0.0}
    # the same labels as the port's sweep series (peer included)
    detail = next(s for s in result.samples if s.name == "fabric_ib_port_receive_malformed_packet_errors_total")
    sweep = next(s for s in result.samples if s.name == "fabric_ib_port_receive_errors_total"
                 and s.labels["node_name"] == "leaf-02" and s.labels["port"] == "4")
    assert detail.labels == sweep.labels and sweep.value == 12
    tools = {s.labels["tool"] for s in result.samples if s.name == "fabric_ib_sweep_duration_seconds"}
    assert {"perfquery_E", "perfquery_D"} <= tools


def test_off_by_default_no_detail_series(injected):
    result = CollectorHarness(group_for({"env": injected.env(), "mad_timeout_ms": 300})).poll()
    assert not values(result, "fabric_ib_port_receive_malformed_packet_errors_total")
    assert not {s.labels["tool"] for s in result.samples
                if s.name == "fabric_ib_sweep_duration_seconds"} & {"perfquery_E", "perfquery_D"}


def test_max_ports_bounds_the_read_and_says_so(injected):
    injected.set_counter("leaf-01", 5, "PortRcvErrors", 1)
    try:
        harness = CollectorHarness(group_for({"env": injected.env(), "mad_timeout_ms": 300, "error_details": True,
                                              "error_details_max_ports": 1}))
        result = harness.poll()
    finally:
        injected.set_counter("leaf-01", 5, "PortRcvErrors", 0)
    # leaf-01 port 5 sorts first (by node GUID, then port): it is read, leaf-02 port 4 is not
    assert len(values(result, "fabric_ib_port_receive_malformed_packet_errors_total")) == 1
    assert any("2 ports with PortRcvErrors, read the first 1" in p for p in result.problems)


def test_a_failing_perfquery_is_a_problem_and_no_series(injected, tmp_path):
    # a perfquery that fails for the detail attributes only (the sweep uses ibqueryerrors)
    fake = tmp_path / "perfquery"
    fake.write_text("#!/bin/sh\necho 'perfquery: iberror: failed: cannot query PortRcvErrorDetails' >&2\nexit 255\n")
    fake.chmod(0o755)
    harness = CollectorHarness(group_for({"env": injected.env(), "mad_timeout_ms": 300, "error_details": True,
                                          "tool_paths": {"perfquery": str(fake)}}))
    result = harness.poll()
    assert not values(result, "fabric_ib_port_receive_malformed_packet_errors_total")
    assert any("error details (-E): perfquery failed on 1 of 1" in p for p in result.problems)
    assert any("error details (-D): perfquery failed on 1 of 1" in p for p in result.problems)
    # the sweep's own series are still published
    assert values(result, "fabric_ib_port_receive_errors_total")[("leaf-02", "4")] == 12
