"""The POC sequence and the traffic model behind it (pure: no processes)."""

import pytest

from fabric_exporter.lab.poc import TIMELINE, schedule, total_seconds
from fabric_exporter.lab.traffic import RECOVERY_TIME_CONSTANT_SECONDS, SCENARIOS, TrafficModel


def test_schedule_is_contiguous_and_covers_each_criterion():
    phases = schedule(10)
    assert phases[0]["offset_seconds"] == 0
    for a, b in zip(phases, phases[1:]):
        assert b["offset_seconds"] == a["offset_seconds"] + a["seconds"]
    assert phases[-1]["offset_seconds"] + phases[-1]["seconds"] == total_seconds(10) == 120
    used = {p.scenario for p in TIMELINE} - {None}
    assert used == {"incast_ib", "incast_roce", "link_flap", "latency_regression"} and used <= set(SCENARIOS)
    # each incast is followed by a quiet recovery phase at least as long as itself
    for i, p in enumerate(TIMELINE):
        if p.scenario and p.scenario.startswith("incast"):
            assert TIMELINE[i + 1].scenario is None and TIMELINE[i + 1].length >= p.length


def test_incast_is_per_fabric_and_its_aftermath_decays():
    m = TrafficModel()
    m.start("incast_ib", now=0)
    assert m.congested("ib") and not m.congested("roce")
    assert m.ib_port_rates(host_port_of_congested_leaf=True)["PortXmitWait"] > 100 * \
        TrafficModel().ib_port_rates(host_port_of_congested_leaf=True)["PortXmitWait"]
    assert m.congestion_level("ib", now=5) == 1.0 and m.congestion_level("roce", now=5) == 0.0
    m.stop("incast_ib", now=10)
    tau = RECOVERY_TIME_CONSTANT_SECONDS["ib"]
    assert m.congestion_level("ib", now=10 + tau) == pytest.approx(1 / 2.718281828, rel=1e-6)
    assert m.congestion_level("ib", now=10 + 10 * tau) < 1e-4
    m.stop("incast_roce", now=11)  # never started: no aftermath
    assert m.congestion_level("roce", now=12) == 0.0


def test_latency_into_the_congested_rack_rises_only_on_that_fabric():
    m = TrafficModel(seed=1)
    quiet = m.latency_us(2, 1, "ib")["p99"]
    m.start("incast_roce", now=0)
    assert m.latency_us(2, 1, "ib")["p99"] < 1.5 * quiet
    assert m.latency_us(2, 1, "roce")["p99"] > 3 * quiet
    assert m.latency_us(1, 2, "roce")["p99"] < 1.5 * m.latency_us(1, 2, "ib")["p99"] / 0.7
