"""The page's parts: ports named as an operator names them, counts that are whole counts, and
throughput per host adapter port beside the fabric total.

Counts and throughput run the report's own queries against a real Prometheus whose TSDB was
backfilled (``promtool tsdb create-blocks-from openmetrics``) with counters whose exact increase is
known: a steady one, one that resets inside the window, one born inside it, one that ended before
it, and one the selector excludes.
"""

from __future__ import annotations

import time

import pytest

from fabric_exporter.mixin.settings import Settings
from fabric_exporter.report import collect, page
from fabric_exporter.report.ports import port_name
from tests.harness.prometheus import backfilled_prometheus


@pytest.mark.parametrize("labels, name", [
    ({"__name__": "fabric_ib_link_downed_total", "job": "fabric-exporter", "instance": "x", "fabric": "ib",
      "node_guid": "0x0002c90300000001", "node_name": "sw-leaf-01", "port": "12", "peer_node_name": "spine-1",
      "peer_port": "3"}, "sw-leaf-01 port 12"),
    ({"fabric": "ib", "node_guid": "0x0002c90300000009", "node_name": "", "port": "1"}, "0x0002c90300000009 port 1"),
    ({"fabric": "roce", "host": "host-3", "device": "mlx5_0", "port": "1", "netdev": "eth2"}, "host-3 mlx5_0/1"),
    ({"fabric": "roce", "switch": "leaf-r1", "interface": "Ethernet8"}, "leaf-r1 Ethernet8"),
    ({"fabric": "roce", "group": "gpu-nics", "target": "x"}, "group=gpu-nics,target=x"),  # nothing better to say
])
def test_ports_are_named_by_node_and_port(labels, name):
    assert port_name(labels) == name


STEP = 15  # seconds between backfilled samples
T0 = (int(time.time()) // 3600 - 3) * 3600  # three hours ago, on the hour: outside the head block
WINDOW = (T0 + 30 * STEP + 7, T0 + 70 * STEP + 7)  # samples 30..70 (mid-step edges: increase() extrapolates)
JOB = 'job="fabric-exporter"'


def _counter(family: str, labels: str, values) -> list[str]:
    return [f"{family}_total{{{JOB},{labels}}} {v} {T0 + i * STEP}" for i, v in values]


def _openmetrics() -> str:
    probes = "fabric_rdma_latency_probes"
    clients = 'fabric="ib",role="client"'
    lines = [f"# TYPE {probes} counter"]
    # steady: 1210 at the window's start, 1490 at its end: 280
    lines += _counter(probes, f'{clients},source_group="a"', ((i, 1000 + 7 * i) for i in range(81)))
    # resets at sample 50: 590 -> 647 (57), then 0 -> 40 (40): 97
    lines += _counter(probes, f'{clients},source_group="b"',
                      ((i, 500 + 3 * i if i < 50 else 2 * (i - 50)) for i in range(81)))
    # first seen at sample 60 with 5 already counted, 15 at the window's end: 10 seen counted
    lines += _counter(probes, f'{clients},source_group="c"', ((i, 5 + (i - 60)) for i in range(60, 81)))
    # missing for more than 5 minutes around the start (`x @ start` has nothing): from its last value
    # before the start (105) to 170: 65, not 170
    lines += _counter(probes, f'{clients},source_group="e"', ((i, 100 + i) for i in (*range(6), *range(40, 81))))
    # ended before the window: nothing
    lines += _counter(probes, f'{clients},source_group="d"', ((i, 10 * i) for i in range(10)))
    # a server's counter: not a probe run by a client
    lines += _counter(probes, 'fabric="ib",role="server",source_group="a"', ((i, 99 * i) for i in range(81)))
    # throughput: two HCA ports (100 and 300 B/s) and a switch port (1000 B/s) on IB; two NIC ports (200, 600 B/s)
    # and a switch interface (5000 B/s) on RoCE
    ib = "fabric_ib_port_data_transmitted_bytes"
    lines.append(f"# TYPE {ib} counter")
    for guid, rate in (("0x1", 100), ("0x2", 300), ("0x3", 1000)):
        lines += _counter(ib, f'fabric="ib",node_guid="{guid}",port="1"', ((i, rate * STEP * i) for i in range(81)))
    lines.append("# TYPE fabric_ib_node_info gauge")
    for guid, kind in (("0x1", "ca"), ("0x2", "ca"), ("0x3", "switch")):
        lines += [f'fabric_ib_node_info{{{JOB},fabric="ib",node_guid="{guid}",node_type="{kind}"}} 1 {T0 + i * STEP}'
                  for i in range(81)]
    roce = "fabric_roce_tx_bytes"
    lines.append(f"# TYPE {roce} counter")
    for host, rate in (("h1", 200), ("h2", 600)):
        lines += _counter(roce, f'fabric="roce",host="{host}",device="mlx5_0",port="1",netdev="eth0"',
                          ((i, rate * STEP * i) for i in range(81)))
    lines += _counter(roce, 'fabric="roce",switch="sw",interface="Ethernet0"', ((i, 5000 * STEP * i) for i in range(81)))
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    prom = backfilled_prometheus(tmp_path_factory.mktemp("prom"), _openmetrics()).start()
    try:
        yield collect.PrometheusClient(prom.base)
    finally:
        prom.stop()


def _collector(client) -> collect.Collector:
    return collect.Collector(client, Settings({"rate_window": "1m"}), collect.Window(*WINDOW, STEP))


def test_counts_are_whole_and_exact(backfilled):
    c = _collector(backfilled)
    clients = c.fsel("ib", 'role="client"')
    assert c.counted(("fabric_rdma_latency_probes_total",), clients) == 280 + 97 + 10 + 65
    assert c.counted(("fabric_rdma_latency_probes_total", "fabric_rdma_latency_probe_failures_total"), clients) \
        == 280 + 97 + 10 + 65  # a metric without series adds nothing
    assert c.counted(("fabric_rdma_latency_probe_failures_total",), clients) is None
    # what the report used to show: increase() extrapolates to the edges and is no count at all
    extrapolated = backfilled.query(
        f"sum(increase(fabric_rdma_latency_probes_total{clients}[{c.w.range}]))", c.w.end)[0].samples[0][1]
    assert extrapolated != int(extrapolated)


def test_throughput_per_host_adapter_port_beside_the_fabric_total(backfilled):
    c = _collector(backfilled)
    for fabric, ports, total in (("ib", 2, 400.0), ("roce", 2, 800.0)):
        figures, plot = c.throughput(fabric, c.s.sel(f'fabric="{fabric}"'))
        assert figures["host_adapter_ports_count"] == ports, fabric
        assert figures["host_transmit_mean_bytes_per_second"] == pytest.approx(total, rel=1e-6), fabric
        assert figures["host_transmit_per_adapter_port_mean_bytes_per_second"] == pytest.approx(total / ports, rel=1e-6)
        assert plot["per_adapter"] and all(v == pytest.approx(total / ports, rel=1e-6) for _, v in plot["per_adapter"])


def test_summary_table_shows_per_adapter_throughput_and_whole_counts():
    figures = {
        "kind": "roce",
        "throughput": {"host_transmit_mean_bytes_per_second": 800e9 / 8, "host_transmit_peak_bytes_per_second": 1e12 / 8,
                       "host_transmit_per_adapter_port_mean_bytes_per_second": 100e9 / 8,
                       "host_transmit_per_adapter_port_peak_bytes_per_second": 125e9 / 8, "host_adapter_ports_count": 8},
        "latency": {}, "congestion": {}, "completeness": {},
        "stability": {"probe_loss_ratio": 0.001, "probe_failures_count": 3, "probes_count": 3000},
    }
    table = page.summary_table([collect.FabricReport("roce-lab", figures)])
    assert "<td>per host adapter port, mean / peak</td><td class=\"n\">100 / 125 Gb/s</td>" in table
    assert "<td>host transmit, mean / peak</td><td class=\"n\">800 / 1000 Gb/s</td>" in table
    assert "<td class=\"n\">8</td>" in table
    assert "0.1 % (3 / 3000)" in table


def test_plot_legends_stay_off_the_plotted_area_and_the_recovery_labels(monkeypatch):
    from fabric_exporter.report import episodes, plots

    drawn = []
    monkeypatch.setattr(plots, "_svg", lambda fig: drawn.append(fig) or "<svg/>")  # keep the figure to measure it
    t0 = 1.8e9
    severity = [(t0 + 3 * i, 5.0 if 20 <= i < 30 else 0.05) for i in range(60)]
    episode = episodes.Episode(t0 + 60, t0 + 90, 5.0, True, recovered_at=t0 + 99)
    plots.congestion({"severity": severity, "ports": [], "episodes": [episode]})
    plots.latency({k: [(t0 + 3 * i, 1e-6 * (1 + i % 3)) for i in range(60)] for k in ("p50", "p99", "p999")})
    for fig in drawn:
        fig.tight_layout()
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[0]
        legend = ax.get_legend().get_window_extent(renderer)
        assert not legend.overlaps(ax.get_window_extent(renderer)), "the legend covers the plot"
        for text in ax.texts:  # "recovered in 9 s"
            assert not legend.overlaps(text.get_window_extent(renderer)), text.get_text()
        assert legend.y0 >= 0, "the legend is cut off the figure"
    assert any("recovered in 9 s" in t.get_text() for t in drawn[0].axes[0].texts)
