"""The fabric overview: InfiniBand and RoCE side by side, one builder per row."""

from __future__ import annotations

from ...promql import quote
from .. import job_views as J
from ..panels import Query as Q
from ..panels import row, stat, table, timeseries
from ..settings import Settings
from .common import board, fabric_total, link

ib, hosts, S = J.ib_ports, J.hosts, J.series


def overview(s: Settings) -> dict:
    f = s.sel('fabric=~"$fabric"')
    panels = [
        *J.job_row(s),
        *_throughput(s, f),
        *_congestion(s, f),
        *_congestion_recovery(s, f),
        *_tail_latency(s, f),
        *_stability(s, f),
    ]
    return board(s, "overview", "Fabric overview",
                 "InfiniBand and RoCE side by side: throughput, congestion, tail latency and stability.",
                 panels)


def _throughput(s: Settings, f: str) -> list:
    """Bytes sent per fabric: IB ports and RoCE NICs (``f``: the selected fabrics)."""
    nic_f = s.sel('fabric=~"$fabric",host!=""')
    return [
        row("Throughput"),
        timeseries("InfiniBand throughput (transmitted)", [
            fabric_total("fabric_ib_port_data_transmitted_bytes_total", f, ib)],
            "Bps", description="Bytes sent by all IB ports (PortXmitData x 4), per fabric.",
            links=[("InfiniBand ports", link(s, "infiniband", "var-fabric=${fabric}"))]),
        timeseries("RoCE throughput (NIC transmit)", [
            fabric_total("fabric_roce_tx_bytes_total", nic_f, hosts)],
            "Bps", description="Bytes sent by all RoCE NIC ports, per fabric.",
            links=[("RoCE congestion", link(s, "roce", "var-fabric=${fabric}"))]),
    ]


def _congestion(s: Settings, f: str) -> list:
    """Worst and average congestion signals per fabric, and the top congested IB and paused RoCE ports."""
    p = s["lossless_priority"]
    lp = s.sel(f'fabric=~"$fabric",priority={quote(p)}')
    n = s["top_n"]
    ib_link = link(s, "infiniband", "var-fabric=${__data.fields.fabric}&var-node=${__data.fields.node_name}")
    roce_link = link(s, "roce", "var-fabric=${__data.fields.fabric}&var-host=${__data.fields.host}")
    return [
        row("Congestion"),
        timeseries("InfiniBand worst transmit-wait ratio", [
            Q(f"max by (fabric) ({ib(S('fabric:ib_port_xmit_wait:ratio'), f)})", "{{fabric}} worst port"),
            Q(f"avg by (fabric) ({ib(S('fabric:ib_port_xmit_wait:ratio'), f)})", "{{fabric}} average")],
            "percentunit", max_one=True, thresholds=[s["thresholds.ib_xmit_wait_ratio"]],
            description="Fraction of time IB ports had data and no credits (PortXmitWait over link rate)."),
        timeseries(f"RoCE worst PFC pause-time fraction (priority {p})", [
            Q(f"max by (fabric) ({hosts(S('fabric:roce_pfc_pause_time:fraction'), lp)})",
              "{{fabric}} worst port"),
            Q(f"max by (fabric) ({J.nic_or_switch(s, S('fabric:roce_ecn_marked:ratio'), f)})",
              "{{fabric}} worst ECN-marked ratio")],
            "percentunit", max_one=True, thresholds=[s["thresholds.pfc_pause_fraction"]],
            description="Fraction of time NIC ports were paused on the lossless priority, and the worst share of "
                        "CE-marked packets."),
        table(f"Top {n} congested InfiniBand ports", [
            Q(f"topk({n}, {ib(S('fabric:ib_port_xmit_wait:ratio'), f)})")],
            "percentunit", hide=["node_guid"], link_field="node_name",
            links=[("Open in InfiniBand ports", ib_link)],
            description="Ports with the highest transmit-wait ratio now, with their peers."),
        table(f"Top {n} paused RoCE ports (priority {p})", [
            Q(f"topk({n}, {hosts(S('fabric:roce_pfc_pause_time:fraction'), lp)})")],
            "percentunit", link_field="host", links=[("Open in RoCE congestion", roce_link)],
            description="NIC ports paused the largest fraction of time on the lossless priority."),
    ]


def _congestion_recovery(s: Settings, f: str) -> list:
    """Overview row: congestion episodes as the POC report counts them (mixin/rules/congestion.py); the
    per-episode recovery times need the episode arithmetic of `fabric-exporter report`."""
    return [
        row("Congestion recovery"),
        timeseries("Congestion severity, worst port (1 = threshold)", [
            Q(f"max by (fabric) (fabric:fabric_congestion:severity{f})", "{{fabric}} severity"),
            Q(f"max by (fabric) (fabric:fabric_congested_ports:count{f})", "{{fabric}} congested ports")],
            "short", thresholds=[1], width=12,
            description="Worst port's congestion signal over its threshold (IB transmit-wait, RoCE PFC pause time or "
                        "ECN share); above 1 the fabric is in a congestion episode. Recovery is the time from the "
                        "severity falling below 1 until it and the p99 are back near baseline: per episode in "
                        "`fabric-exporter report` (docs/poc.md)."),
        stat("Time congested (dashboard range)", [
            Q(f"avg by (fabric) (avg_over_time(fabric:fabric_congested:bool{f}[$__range]))", "{{fabric}}")],
            "percentunit", width=6, height=8, thresholds=[0.01, 0.1],
            description="Share of the range during which at least one port of the fabric was congested."),
        stat("Congestion episodes (dashboard range)", [
            Q(f"ceil(max by (fabric) (changes(fabric:fabric_congested:bool{f}[$__range])) / 2)", "{{fabric}}")],
            "short", width=6, height=8, thresholds=[1, 5],
            description="Starts and ends of congestion within the range, halved (a stretch cut by the range's edge "
                        "counts as one episode)."),
    ]


def _tail_latency(s: Settings, f: str) -> list:
    """The worst group pair's probe quantiles and the probe failure share."""
    return [
        row("Tail latency"),
        timeseries("RDMA p99 latency, worst group pair", [
            Q('max by (fabric) (fabric:rdma_latency_seconds:p99{fabric=~"$fabric"})', "{{fabric}} p99"),
            Q('max by (fabric) (fabric:rdma_latency_seconds:p50{fabric=~"$fabric"})', "{{fabric}} p50")],
            "s", thresholds=[s["thresholds.latency_p99_seconds"]],
            links=[("Tail latency", link(s, "latency", "var-fabric=${fabric}"))],
            description="Probe latency quantiles of the worst source/destination group pair."),
        timeseries("Latency probe failures", [
            Q(f"max by (fabric) ({hosts(S('fabric:rdma_latency_probe_failures:ratio'), f)})",
              "{{fabric}}")],
            "percentunit", max_one=True, thresholds=[s["thresholds.probe_loss_ratio"]],
            description="Share of probes with no result, worst host."),
    ]


def _stability(s: Settings, f: str) -> list:
    """Error counters and link-down events per fabric, IB and RoCE."""
    switches = lambda build, sel: J.switch_ifs(s, build, sel)  # noqa: E731
    return [
        row("Stability"),
        timeseries("InfiniBand errors and link downs", [
            Q(f"sum by (fabric, counter) ({ib(S('fabric:ib_port_errors:rate'), f)})",
              "{{fabric}} {{counter}}"),
            fabric_total("fabric_ib_symbol_error_total", f, ib, "SymbolErrors"),
            fabric_total("fabric_ib_link_downed_total", f, ib, "LinkDowned")],
            "cps", description="Error counters per second summed over all IB ports."),
        timeseries("RoCE errors and link downs", [
            Q(f"sum by (fabric, direction) ({switches(S('fabric:roce_switch_if_errors:rate'), f)})",
              "{{fabric}} switch {{direction}} errors"),
            fabric_total("fabric_roce_nic_rx_crc_errors_total", f, hosts, "NIC CRC errors"),
            fabric_total("fabric_roce_nic_link_down_events_total", f, hosts, "NIC link downs"),
            fabric_total("fabric_roce_switch_if_oper_status", f, switches, "switch state changes", fn="changes")],
            "cps", description="Error and link-down events per second over NIC ports and switch interfaces."),
    ]
