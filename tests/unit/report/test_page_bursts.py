"""The report's congestion section counts sub-second bursts (roce_nic burst sampler, IB focus set):
the report's own queries against a real Prometheus backfilled with burst counters whose exact
counts in the window are known -- a steady one, one that resets inside the window, an IB focus
port's -- and a fabric without any burst series (None, not 0)."""

from __future__ import annotations

import pytest

from fabric_exporter.report import collect, page
from tests.harness.prometheus import backfilled_prometheus

from tests.unit.report.test_page_parts import _collector, _counter


def _openmetrics() -> str:
    nic = "fabric_roce_nic_bursts"
    lines = [f"# TYPE {nic} counter"]
    port = 'fabric="roce",device="mlx5_0",port="1",netdev="eth0"'
    # steady: 6 bursts counted at the window's start (sample 30), 14 at its end (sample 70): 8
    lines += _counter(nic, f'{port},host="h1",signal="pfc_rx_pause_time"', ((i, i // 5) for i in range(81)))
    # resets at sample 50 (driver reload): 7 -> 12 (5), then 0 -> 10 (10): 15
    lines += _counter(nic, f'{port},host="h2",signal="ecn_marked"',
                      ((i, i // 4 if i < 50 else (i - 50) // 2) for i in range(81)))
    # a port that never burst in the window
    lines += _counter(nic, f'{port},host="h3",signal="pfc_rx_pause_time"', ((i, 2) for i in range(81)))
    ib = "fabric_ib_port_bursts"
    lines.append(f"# TYPE {ib} counter")
    lines += _counter(ib, 'fabric="ib",node_guid="0x1",node_name="leaf-1",port="3"', ((i, i) for i in range(81)))
    # the fabric "quiet" has a NIC but no burst sampler
    lines.append("# TYPE fabric_roce_tx_bytes counter")
    lines += _counter("fabric_roce_tx_bytes", 'fabric="quiet",host="q",device="mlx5_0",port="1",netdev="eth0"',
                      ((i, 100 * i) for i in range(81)))
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    prom = backfilled_prometheus(tmp_path_factory.mktemp("prom-bursts"), _openmetrics()).start()
    try:
        yield collect.PrometheusClient(prom.base)
    finally:
        prom.stop()


def test_bursts_are_counted_whole_per_fabric_and_port(backfilled):
    c = _collector(backfilled)
    roce = c.bursts(c.s.sel('fabric="roce"'))
    assert roce["roce_nic_bursts_count"] == 8 + 15
    assert roce["ib_port_bursts_count"] is None  # no IB focus set here: not a zero
    assert roce["burst_ports_count"] == 2
    assert roce["bursts_by_port"] == [{"port": "h2 mlx5_0/1", "signal": "ecn_marked", "bursts_count": 15},
                                      {"port": "h1 mlx5_0/1", "signal": "pfc_rx_pause_time", "bursts_count": 8}]
    ib = c.bursts(c.s.sel('fabric="ib"'))
    assert ib["ib_port_bursts_count"] == 40 and ib["roce_nic_bursts_count"] is None
    assert ib["bursts_by_port"] == [{"port": "leaf-1 port 3", "signal": "xmit_wait", "bursts_count": 40}]
    quiet = c.bursts(c.s.sel('fabric="quiet"'))
    assert quiet == {"roce_nic_bursts_count": None, "ib_port_bursts_count": None, "burst_ports_count": 0,
                     "bursts_by_port": []}


def test_the_congestion_section_carries_the_bursts(backfilled):
    c = _collector(backfilled)
    figures, _ = c.congestion("roce", c.s.sel('fabric="roce"'), [])
    assert figures["roce_nic_bursts_count"] == 23
    report = collect.FabricReport("roce", {"kind": "roce", "throughput": {}, "latency": {}, "stability": {},
                                           "completeness": {}, "congestion": figures})
    table = page.summary_table([report])
    assert '<td>sub-second bursts: RoCE NIC / IB focus (ports)</td><td class="n">23 / n/a (2)</td>' in table
    detail = page._detail("congestion", report)
    assert '<table id="bursts">' in detail and "<td>h2 mlx5_0/1</td><td>ecn_marked</td><td class='n'>15</td>" in detail
    quiet = dict(figures, roce_nic_bursts_count=None, ib_port_bursts_count=None, bursts_by_port=[])
    assert "No burst sampler in this fabric" in page._detail("congestion", collect.FabricReport(
        "q", {"kind": "roce", "congestion": quiet}))
