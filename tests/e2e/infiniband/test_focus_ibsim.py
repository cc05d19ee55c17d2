"""The focus set on the simulated fabric (issue 23, item 3): real ibsim + opensm + perfquery.

A step of PortXmitWait set with ibsim's PerformanceSet appears in exactly one focus window; the
top-K selection picks the ports whose PortXmitWait rose the most between two sweeps; the regular
sweep publishes the same series with the focus set on; the per-VL wait counters come from
``perfquery --vlxmitcounters``. One event loop per test, as in the daemon: the focus task lives
between the polls."""

from __future__ import annotations

import asyncio

from fabric_exporter.collectors.base import PollContext
from fabric_exporter.collectors.infiniband import InfinibandCollector
from fabric_exporter.transport.factory import Transports

from tests.harness.infiniband import group_for, needs_ibsim

pytestmark = needs_ibsim

FOCUS_FAMILIES = ("fabric_ib_port_focus_", "fabric_ib_port_bursts_total", "fabric_ib_port_vl_transmit_wait_total",
                  "fabric_ib_focus_")
IBSIM_RATE = 12 * 8e9 / 8  # ibsim links train at 12x QDR: 12 lanes x 8 Gb/s of data


def _collector(options: dict) -> tuple[InfinibandCollector, Transports]:
    group = group_for(options)
    transports = Transports()
    return InfinibandCollector(PollContext(group, group.hosts[0], transports)), transports


def _port(samples, name: str, node: str, port: str, **extra) -> list:
    return [s for s in samples if s.name == name and s.labels.get("node_name") == node
            and s.labels.get("port") == port and all(s.labels.get(k) == v for k, v in extra.items())]


async def _read_wait(fabric, node: str, port: int) -> int:
    """The port's PortXmitWait as perfquery reads it now."""
    sim = fabric.topology.nodes[node]
    lid = fabric.topology.lids()[sim.port_guid(0 if sim.type == "switch" else port)]
    proc = await asyncio.create_subprocess_exec(
        "env", *(f"{k}={v}" for k, v in fabric.env().items()), "perfquery", str(lid), str(port),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    out, _ = await asyncio.wait_for(proc.communicate(), 10)
    return next(int(line.split(".")[-1]) for line in out.decode().splitlines() if line.startswith("PortXmitWait:"))


def test_a_perfset_step_appears_in_exactly_one_focus_window(fabric):
    interval = 0.25
    step = 300_000_000  # ticks: ~0.1 of a 250 ms window at 12 GB/s

    async def scenario():
        col, transports = _collector({"env": fabric.env(), "focus": True, "focus_top_k": 0,
                                      "focus_ports": ["leaf-02:1"], "focus_interval": f"{int(interval * 1000)}ms",
                                      "focus_burst_threshold": 0.001})
        try:
            await asyncio.to_thread(fabric.command,
                                    'PerformanceSet "leaf-02"[1] PortVLXmitWaitCounters.PortVLXmitWaitCounters3=1234')
            await asyncio.to_thread(fabric.command,
                                    'PerformanceSet "leaf-02"[1] PortVLXmitWaitCounters.PortVLXmitWaitCounters5=65535')
            first = await col.poll()
            assert [x.labels["reason"] for x in _port(first.samples, "fabric_ib_port_focus_info", "leaf-02", "1")] \
                == ["configured"]
            assert not _port(first.samples, "fabric_ib_port_focus_xmit_wait_ratio_count", "leaf-02", "1")
            await asyncio.sleep(6 * interval)
            before = await _read_wait(fabric, "leaf-02", 1)
            await asyncio.to_thread(fabric.set_counter, "leaf-02", 1, "PortXmitWait", before + step)
            await asyncio.sleep(6 * interval)
            return await col.poll()
        finally:
            await col.close()
            await transports.close()

    second = asyncio.run(scenario())
    s = second.samples
    info = _port(s, "fabric_ib_port_focus_info", "leaf-02", "1")
    assert [x.labels["reason"] for x in info] == ["configured"]
    buckets = {x.labels["le"]: x.value for x in _port(s, "fabric_ib_port_focus_xmit_wait_ratio_bucket", "leaf-02", "1")}
    count = _port(s, "fabric_ib_port_focus_xmit_wait_ratio_count", "leaf-02", "1")[0].value
    assert count >= 8, count  # ~12 rounds of 250 ms
    assert buckets["+Inf"] == count
    assert count - buckets["1e-05"] == 1  # every other window saw no wait at all
    assert _port(s, "fabric_ib_port_bursts_total", "leaf-02", "1")[0].value == 1
    peak = _port(s, "fabric_ib_port_focus_xmit_wait_peak_ratio", "leaf-02", "1")[0].value
    total = _port(s, "fabric_ib_port_focus_xmit_wait_ratio_sum", "leaf-02", "1")[0].value
    assert total == peak  # the step is all in one window
    # step / (rate x window): the window is one interval give or take a late round
    assert step / (IBSIM_RATE * 3 * interval) < peak < step / (IBSIM_RATE * 0.5 * interval), peak
    vl = {x.labels["vl"]: x.value for x in _port(s, "fabric_ib_port_vl_transmit_wait_total", "leaf-02", "1")}
    assert vl["3"] == 1234 and vl["0"] == 0
    assert "5" not in vl  # latched at 65535: withheld
    reads = {x.labels["result"]: x.value for x in s if x.name == "fabric_ib_focus_reads_total"}
    # every window needs a read at each end; the first -x read finds no PortXmitWait on ibsim (failed,
    # then plain perfquery); one per-VL read per sweep interval
    assert reads["ok"] == count + 1 + 1 and reads["failed"] == 1, (reads, count)


def test_top_k_picks_the_congested_ports_and_the_sweep_is_unchanged(fabric):
    steps = {("leaf-01", 1): 400_000_000, ("spine-01", 2): 100_000_000, ("leaf-03", 2): 1_000_000}

    async def scenario():
        on, t_on = _collector({"env": fabric.env(), "focus": True, "focus_top_k": 2, "focus_interval": "500ms"})
        off, t_off = _collector({"env": fabric.env()})
        try:
            await on.poll()
            await off.poll()
            for (node, port), step in steps.items():
                before = await _read_wait(fabric, node, port)
                await asyncio.to_thread(fabric.set_counter, node, port, "PortXmitWait", before + step)
            await asyncio.sleep(1.5)
            with_focus = await on.poll()
            without = await off.poll()
            return with_focus, without
        finally:
            for col, tr in ((on, t_on), (off, t_off)):
                await col.close()
                await tr.close()

    with_focus, without = asyncio.run(scenario())
    chosen = {(x.labels["node_name"], x.labels["port"], x.labels["reason"])
              for x in with_focus.samples if x.name == "fabric_ib_port_focus_info"}
    assert chosen == {("leaf-01", "1", "top"), ("spine-01", "2", "top")}

    def sweep_series(result):
        return {(x.name, tuple(sorted(x.labels.items()))) for x in result.samples
                if not x.name.startswith(FOCUS_FAMILIES) and x.name != "fabric_ib_sweep_duration_seconds"}

    assert sweep_series(with_focus) == sweep_series(without)
    assert with_focus.problems == without.problems == []
