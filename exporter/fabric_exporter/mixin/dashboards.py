"""The five dashboards, built from the settings with our panel factory (``panels.py``).

Congestion, error and latency panels read the recording rules in ``rules/`` (so a panel shows
exactly what an alert evaluates); throughput panels compute their own rates with
``$__rate_interval``. Every panel filters by ``$fabric`` and the dashboard's own variables, and every
host and port panel by the selected job's hosts (``job_views.py``: the ``cluster``, ``job`` and hidden
``job_hosts`` variables every dashboard carries; "All" shows everything).
"""

from __future__ import annotations

from ..promql import quote
from . import job_views as J
from .panels import Query as Q
from .panels import dashboard, heatmap, query_variable, row, stat, table, timeseries
from .settings import Settings

RI = "$__rate_interval"

# Legends naming a series by the labels that identify it in each domain.
IB_PORT = "{{node_name}}:{{port}}"
NIC = "{{host}} {{netdev}}"
RDMA_DEVICE = "{{host}} {{device}}"
SWITCH_IF = "{{switch}} {{interface}}"
GROUP_PAIR = "{{source_group}} -> {{destination_group}}"
TARGET = "{{group}}/{{host}}"


def _uid(s: Settings, name: str) -> str:
    return f"{s['dashboard_uid_prefix']}{name}"


def _link(s: Settings, name: str, params: str) -> str:
    return f"/d/{_uid(s, name)}?${{__url_time_range}}&${{datasource:queryparam}}&{params}"


def _fabric_var(s: Settings):
    return query_variable("fabric", "Fabric", f"label_values(fabric_up{s.sel()}, fabric)")


def _board(s: Settings, name: str, title: str, description: str, panels: list, variables: list = ()) -> dict:
    """A dashboard with the house uid, tags and refresh; its variables follow the fabric and job variables."""
    return dashboard(_uid(s, name), title, description, panels, [_fabric_var(s), *J.variables(s), *variables],
                     tags=s["dashboard_tags"], refresh=s["dashboard_refresh"])


def _rate(metric: str, selector: str, fn: str = "rate") -> str:
    """``fn`` (rate, increase, changes) of a metric over Grafana's rate interval."""
    return f"{fn}({metric}{selector}[{RI}])"


def R(metric: str, fn: str = "rate"):  # noqa: N802  (reads like S in the panel lists)
    """``fn`` of a metric as a job_views Build: selector -> expression."""
    return lambda sel: _rate(metric, sel, fn)


def _fabric_total(metric: str, selector: str, scope, legend: str = "", fn: str = "rate") -> Q:
    """The overview's view of a per-port counter: its rate summed per fabric, over the ports ``scope``
    (a job_views filter: hosts, ib_ports, switch_ifs) keeps."""
    expr = scope(R(metric, fn), selector)
    return Q(f"sum by (fabric) ({expr})", "{{fabric}}" + (f" {legend}" if legend else ""))


def overview(s: Settings) -> dict:
    f = s.sel('fabric=~"$fabric"')
    p = s["lossless_priority"]
    lp = s.sel(f'fabric=~"$fabric",priority={quote(p)}')
    n = s["top_n"]
    nic_f = s.sel('fabric=~"$fabric",host!=""')
    ib_link = _link(s, "infiniband", "var-fabric=${__data.fields.fabric}&var-node=${__data.fields.node_name}")
    roce_link = _link(s, "roce", "var-fabric=${__data.fields.fabric}&var-host=${__data.fields.host}")
    ib, hosts, S = J.ib_ports, J.hosts, J.series
    switches = lambda build, sel: J.switch_ifs(s, build, sel)  # noqa: E731
    panels = [
        *J.job_row(s),
        row("Throughput"),
        timeseries("InfiniBand throughput (transmitted)", [
            _fabric_total("fabric_ib_port_data_transmitted_bytes_total", f, ib)],
            "Bps", description="Bytes sent by all IB ports (PortXmitData x 4), per fabric.",
            links=[("InfiniBand ports", _link(s, "infiniband", "var-fabric=${fabric}"))]),
        timeseries("RoCE throughput (NIC transmit)", [
            _fabric_total("fabric_roce_tx_bytes_total", nic_f, hosts)],
            "Bps", description="Bytes sent by all RoCE NIC ports, per fabric.",
            links=[("RoCE congestion", _link(s, "roce", "var-fabric=${fabric}"))]),
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
        *_congestion_recovery(s, f),
        row("Tail latency"),
        timeseries("RDMA p99 latency, worst group pair", [
            Q('max by (fabric) (fabric:rdma_latency_seconds:p99{fabric=~"$fabric"})', "{{fabric}} p99"),
            Q('max by (fabric) (fabric:rdma_latency_seconds:p50{fabric=~"$fabric"})', "{{fabric}} p50")],
            "s", thresholds=[s["thresholds.latency_p99_seconds"]],
            links=[("Tail latency", _link(s, "latency", "var-fabric=${fabric}"))],
            description="Probe latency quantiles of the worst source/destination group pair."),
        timeseries("Latency probe failures", [
            Q(f"max by (fabric) ({hosts(S('fabric:rdma_latency_probe_failures:ratio'), f)})",
              "{{fabric}}")],
            "percentunit", max_one=True, thresholds=[s["thresholds.probe_loss_ratio"]],
            description="Share of probes with no result, worst host."),
        row("Stability"),
        timeseries("InfiniBand errors and link downs", [
            Q(f"sum by (fabric, counter) ({ib(S('fabric:ib_port_errors:rate'), f)})",
              "{{fabric}} {{counter}}"),
            _fabric_total("fabric_ib_symbol_error_total", f, ib, "SymbolErrors"),
            _fabric_total("fabric_ib_link_downed_total", f, ib, "LinkDowned")],
            "cps", description="Error counters per second summed over all IB ports."),
        timeseries("RoCE errors and link downs", [
            Q(f"sum by (fabric, direction) ({switches(S('fabric:roce_switch_if_errors:rate'), f)})",
              "{{fabric}} switch {{direction}} errors"),
            _fabric_total("fabric_roce_nic_rx_crc_errors_total", f, hosts, "NIC CRC errors"),
            _fabric_total("fabric_roce_nic_link_down_events_total", f, hosts, "NIC link downs"),
            _fabric_total("fabric_roce_switch_if_oper_status", f, switches, "switch state changes", fn="changes")],
            "cps", description="Error and link-down events per second over NIC ports and switch interfaces."),
    ]
    return _board(s, "overview", "Fabric overview",
                  "InfiniBand and RoCE side by side: throughput, congestion, tail latency and stability.",
                  panels)


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


def infiniband(s: Settings) -> dict:
    f = s.sel('fabric=~"$fabric"')
    fp = s.sel('fabric=~"$fabric",node_name=~"$node",port=~"$port"')
    n = s["top_n"]
    port_link = _link(s, "infiniband", "var-fabric=${__data.fields.fabric}&var-node=${__data.fields.node_name}"
                                       "&var-port=${__data.fields.port}")
    ib, S = J.ib_ports, J.series
    panels = [
        row("Congestion"),
        heatmap("Transmit-wait ratio across ports", Q(ib(S("fabric:ib_port_xmit_wait:ratio"), f)), "percentunit",
                buckets=False, description="Distribution of the transmit-wait ratio over every port in the fabric."),
        table(f"Top {n} ports by transmit-wait ratio", [Q(f"topk({n}, {ib(S('fabric:ib_port_xmit_wait:ratio'), f)})")],
              "percentunit", hide=["node_guid"], link_field="node_name",
              links=[("Select this port", port_link)],
              description="Most congested ports now, with their peer; click a node to select it."),
        timeseries("Transmit-wait ratio (selected ports)", [
            Q(ib(S("fabric:ib_port_xmit_wait:ratio"), fp), IB_PORT + " -> {{peer_node_name}}:{{peer_port}}")],
            "percentunit", max_one=True, thresholds=[s["thresholds.ib_xmit_wait_ratio"]],
            description="Fraction of time the port had data to send but no credits."),
        timeseries("Transmit wait ticks (selected ports)", [
            Q(ib(R("fabric_ib_port_transmit_wait_total"), fp), IB_PORT)],
            "cps", description="Raw PortXmitWait ticks per second (not comparable across link generations)."),
        row("Bursts (focus set)"),
        timeseries("Peak vs average transmit-wait (focus ports)", [
            Q(ib(S("fabric_ib_port_focus_xmit_wait_peak_ratio"), fp), IB_PORT + " peak"),
            Q(ib(lambda sel: f"fabric:ib_port_xmit_wait:ratio{sel} and on (fabric, node_guid, port) "
                             f"fabric_ib_port_focus_info{sel}", fp), IB_PORT + " average")],
            "percentunit", max_one=True, thresholds=[s["thresholds.ib_xmit_wait_ratio"]],
            description="Side by side for the ports the collector reads every focus_interval: the highest "
                        "stall ratio of one focus window since the previous sweep (peak) and the rate-window "
                        "average the other panels show. A peak far above the average is a burst the average hides."),
        timeseries("Bursts (focus ports)", [
            Q(ib(R("fabric_ib_port_bursts_total", "increase"), fp), IB_PORT)],
            "short", description="Runs of focus windows at or above the collector's focus_burst_threshold, "
                                 "per rate interval."),
        heatmap("Focus window stall ratios", Q(
            f"sum by (le) ({ib(R('fabric_ib_port_focus_xmit_wait_ratio_bucket'), fp)})"), "percentunit",
            description="How the focus ports' windows (one focus_interval each) spread over stall ratios."),
        table("Focus set", [Q(ib(S("fabric_ib_port_focus_info"), f))], "short", hide=["node_guid"],
              description="The ports the collector reads every focus_interval, and why: top (highest stall "
                          "ratio at the last sweep) or configured (focus_ports)."),
        row("Traffic"),
        timeseries("Transmitted (selected ports)", [
            Q(ib(R("fabric_ib_port_data_transmitted_bytes_total"), fp), IB_PORT)],
            "Bps", description="PortXmitData x 4 per second."),
        timeseries("Received (selected ports)", [
            Q(ib(R("fabric_ib_port_data_received_bytes_total"), fp), IB_PORT)],
            "Bps", description="PortRcvData x 4 per second."),
        timeseries("Packets (selected ports)", [
            Q(ib(R("fabric_ib_port_packets_transmitted_total"), fp), IB_PORT + " tx"),
            Q(ib(R("fabric_ib_port_packets_received_total"), fp), IB_PORT + " rx")],
            "pps", description="PortXmitPkts and PortRcvPkts per second."),
        timeseries("Utilisation (selected ports)", [
            Q(ib(lambda x: f"{_rate('fabric_ib_port_data_transmitted_bytes_total', x)}"
                           f" / (fabric_ib_port_rate_bytes_per_second{x} > 0)", fp), IB_PORT)],
            "percentunit", max_one=True, description="Transmitted bytes over the link's effective rate."),
        row("Errors"),
        timeseries("Port errors by counter (selected ports)", [
            Q(ib(S("fabric:ib_port_errors:rate"), fp), IB_PORT + " {{counter}}")],
            "cps", description="PortRcvErrors, remote physical, link integrity, buffer overrun, link recoveries."),
        timeseries("Symbol errors and link downs (selected ports)", [
            Q(ib(R("fabric_ib_symbol_error_total"), fp), IB_PORT + " symbol"),
            Q(ib(R("fabric_ib_link_downed_total"), fp), IB_PORT + " link downed")],
            "cps", description="SymbolErrorCounter and LinkDownedCounter per second."),
        timeseries("Transmit discards (selected ports)", [
            Q(ib(S("fabric:ib_port_transmit_discards:rate"), fp), IB_PORT)],
            "pps", description="PortXmitDiscards per second: link down or congestion timeouts."),
        timeseries("Receive errors by cause (selected ports, error_details)", [
            Q(ib(R(f"fabric_ib_port_receive_{cause}_total"), fp), IB_PORT + " " + legend)
            for cause, legend in (("malformed_packet_errors", "malformed"), ("vl_mapping_errors", "VL mapping"),
                                  ("dlid_mapping_errors", "DLID mapping"), ("looping_errors", "looping"),
                                  ("local_physical_errors", "local physical"),
                                  ("buffer_overrun_errors", "buffer overrun"))],
            "pps", description="PortRcvErrorDetails per second (infiniband option error_details; only ports whose "
                               "PortRcvErrors is non-zero are read). Malformed, VL/DLID mapping and looping errors "
                               "are configuration faults (FabricIBPortMalformedOrMisrouted); local physical and "
                               "buffer overrun are the link's."),
        timeseries("Transmit discards by cause (selected ports, error_details)", [
            Q(ib(R(f"fabric_ib_port_transmit_{cause}_total"), fp), IB_PORT + " " + legend)
            for cause, legend in (("inactive_discards", "port inactive"), ("neighbor_mtu_discards", "neighbour MTU"),
                                  ("lifetime_limit_discards", "switch lifetime"),
                                  ("head_of_queue_lifetime_discards", "head-of-queue lifetime"))],
            "pps", description="PortXmitDiscardDetails per second (error_details; ports whose PortXmitDiscards is "
                               "non-zero). Head-of-queue lifetime discards: a credit-starved or stuck downstream "
                               "link; neighbour MTU: an MTU mismatch."),
        table("Ports with latched 32-bit counters or missing from the sweep", [
            Q(ib(lambda x: f"fabric_ib_port_latched{x} + fabric_ib_port_sweep_missing{x}", f))],
            "short", hide=["node_guid"],
            description="Value 1+: a counter is pinned at its maximum (rates meaningless) or the port did not answer."),
        row("Link state, width and speed"),
        table("Links (selected ports)", [
            Q(ib(S("fabric_ib_port_rate_bytes_per_second"), fp))],
            "Bps", hide=["node_guid"],
            description="Effective rate of every selected link with its peer (0 = down)."),
        table("Degraded or unexpectedly down links", [
            Q(ib(lambda x: f"fabric_ib_port_degraded{x} + fabric_ib_port_link_down_unexpected{x}", f))],
            "short", hide=["node_guid"],
            description="1: the link runs below what both ends support, or is down while the topology had it up."),
        timeseries("Active width and lane rate (selected ports)", [
            Q(ib(S("fabric_ib_port_active_width_lanes"), fp), IB_PORT + " lanes"),
            Q(ib(S("fabric_ib_port_supported_width_lanes"), fp), IB_PORT + " supported lanes")],
            "short", description="LinkWidthActive against the widest width both ends support."),
        timeseries("Port state (selected ports)", [
            Q(ib(S("fabric_ib_port_state_id"), fp), IB_PORT + " logical"),
            Q(ib(S("fabric_ib_port_physical_state_id"), fp), IB_PORT + " physical")],
            "short", description="Logical 1 Down .. 4 Active; physical 5 LinkUp."),
        table("Port identity and peers (selected ports)", [Q(ib(S("fabric_ib_port_info"), fp))], "short",
              description="LID, GUIDs, peer and the width/speed strings as the tools print them."),
    ]
    fn = s.sel('fabric=~"$fabric",node_name=~"$node"')
    variables = [
        query_variable("node", "Node", f'label_values(fabric_ib_port_rate_bytes_per_second{f}, node_name)'),
        query_variable("port", "Port", f"label_values(fabric_ib_port_rate_bytes_per_second{fn}, port)"),
    ]
    return _board(s, "infiniband", "Fabric / InfiniBand ports",
                  "Per-port congestion (PortXmitWait), traffic, errors and link state of an InfiniBand fabric.",
                  panels, variables)


def _switch_buffer_bursts(s: Settings) -> list:
    """Peak beside average: a switch buffer's watermark (the highest occupancy since it was last
    cleared, SONiC watermarkstat) next to the same queue's average rate, so a burst the average hides
    shows as a watermark step while the rate stays flat."""
    lq = s.sel(f'fabric=~"$fabric",switch=~"$switch",interface=~"$interface",queue={quote(s["lossless_queue"])}')
    lpg = s.sel(f'fabric=~"$fabric",switch=~"$switch",interface=~"$interface",pg={quote(s["lossless_priority"])}')
    swp = s.sel('fabric=~"$fabric",switch=~"$switch",interface=~"$interface",priority=~"$priority"')
    fsw = s.sel('fabric=~"$fabric",switch=~"$switch"')
    S = J.series
    ifs = lambda build, sel: J.switch_ifs(s, build, sel)  # noqa: E731
    whole = lambda build, sel: J.switches(s, build, sel)  # noqa: E731
    return [
        row("Switch buffers: bursts (peak vs average)"),
        timeseries(f"Queue {s['lossless_queue']} peak occupancy (watermark)", [
            Q(ifs(S("fabric_roce_switch_queue_watermark_bytes"), lq), SWITCH_IF + " {{queue}} {{kind}} peak")],
            "bytes", description="Highest occupancy of the lossless egress queue since its watermark was last "
            "cleared (user: anyone's sonic-clear; persistent: only an explicit persistent clear). A step up is a "
            "new, higher burst; a drop to near 0 is a clear. Read it beside the average rate on the right."),
        timeseries(f"Queue {s['lossless_queue']} average send rate", [
            Q(ifs(R("fabric_roce_switch_queue_tx_bytes_total"), lq), SWITCH_IF + " {{queue}} average")],
            "Bps", description="The same queue's bytes sent, averaged over the rate interval: a burst that "
            "filled the buffer for 200 ms barely moves it."),
        timeseries(f"Priority group {s['lossless_priority']} peak occupancy: shared and headroom", [
            Q(ifs(S("fabric_roce_switch_pg_watermark_bytes"), lpg), SWITCH_IF + " PG{{pg}} {{region}} peak")],
            "bytes", description="Ingress watermarks of the lossless PG: shared-pool use, and XOFF headroom "
            "(what arrived after the switch sent PFC pause). Headroom near its configured size means the next "
            "burst drops lossless packets."),
        timeseries("Switch time paused (PFC history)", [
            Q(ifs(R("fabric_roce_switch_pfc_rx_pause_seconds_total"), swp), SWITCH_IF + " prio {{priority}} paused")],
            "percentunit", max_one=True, thresholds=[s["thresholds.pfc_pause_fraction"]],
            description="Fraction of time the interface was paused by received PFC (show pfc counters --history; "
            "only platforms whose PFC watchdog or SAI measures pause durations)."),
        timeseries("Buffer pool peak occupancy", [
            Q(whole(S("fabric_roce_switch_buffer_pool_watermark_bytes"), fsw), "{{switch}} {{pool}} shared peak"),
            Q(whole(S("fabric_roce_switch_headroom_pool_watermark_bytes"), fsw), "{{switch}} {{pool}} headroom peak")],
            "bytes", width=24, description="Watermarks of the switch's shared buffer pools and of the lossless "
            "pool's shared headroom (multi-ASIC: <asic>/<pool>)."),
    ]


def roce(s: Settings) -> dict:
    f = s.sel('fabric=~"$fabric"')
    nic = s.sel('fabric=~"$fabric",host=~"$host"')
    nicp = s.sel('fabric=~"$fabric",host=~"$host",priority=~"$priority"')
    sw = s.sel('fabric=~"$fabric",switch=~"$switch",interface=~"$interface"')
    swp = s.sel('fabric=~"$fabric",switch=~"$switch",interface=~"$interface",priority=~"$priority"')
    lq = s.sel(f'fabric=~"$fabric",switch=~"$switch",interface=~"$interface",queue={quote(s["lossless_queue"])}')
    nic_link = _link(s, "roce", "var-fabric=${__data.fields.fabric}&var-host=${__data.fields.host}")
    lossless = s.sel(f'fabric=~"$fabric",priority={quote(s["lossless_priority"])}')
    hosts, S = J.hosts, J.series
    switches = lambda build, sel: J.switch_ifs(s, build, sel)  # noqa: E731
    lossless_nic = s.sel(f'fabric=~"$fabric",host=~"$host",priority={quote(s["lossless_priority"])}')
    burst_nic = s.sel('fabric=~"$fabric",host=~"$host"')
    burst_pause = s.sel('fabric=~"$fabric",host=~"$host",signal=~"pfc_rx_pause_time|pfc_tx_pause_time"')
    panels = [
        row("PFC on NIC ports"),
        timeseries("NIC PFC pause frames per priority", [
            Q(hosts(S("fabric:roce_pfc_pause_frames:rate"), nicp), NIC + " prio {{priority}} {{direction}}")],
            "pps", thresholds=[s["thresholds.pfc_pause_frames_per_second"]],
            description="rx: the fabric pauses this NIC; tx: the NIC cannot absorb and pauses its switch."),
        timeseries("NIC time paused per priority", [
            Q(hosts(S("fabric:roce_pfc_pause_time:fraction"), nicp), NIC + " prio {{priority}} {{direction}}")],
            "percentunit", max_one=True, thresholds=[s["thresholds.pfc_pause_fraction"]],
            description="Fraction of time paused (pause duration counters); near 100% is a storm."),
        row("Bursts (sub-second sampler, roce_nic option burst)"),
        timeseries(f"NIC time paused: peak window vs {s['rate_window']} average (priority {s['lossless_priority']})", [
            Q(hosts(S("fabric_roce_nic_burst_peak_ratio"), burst_pause), NIC + " {{signal}} peak window"),
            Q(hosts(S("fabric:roce_pfc_pause_time:fraction"), lossless_nic), NIC + " {{direction}} average")],
            "percentunit", max_one=True, thresholds=[s["thresholds.pfc_pause_fraction"]],
            description="Side by side: the highest fraction paused in one sampler window (e.g. 100 ms) during "
            "each poll interval, and the rate-window average of the same counter. A peak near 100% over a "
            "flat average is a burst the average hides."),
        timeseries("NIC pause bursts per interval", [
            Q(f"sum by (host, netdev, signal) ({hosts(R('fabric_roce_nic_bursts_total', 'increase'), burst_nic)})",
              NIC + " {{signal}}")],
            "short", thresholds=[s["thresholds.bursts_per_window"]],
            description="Bursts (runs of windows at or above the sampler's threshold) started per interval, "
            "per signal; FabricRoceRepeatedBursts fires on repeated pause-time bursts."),
        timeseries("p99 of windowed values vs their average", [
            Q(f"histogram_quantile(0.99, sum by (le, host, netdev, signal) "
              f"({hosts(R('fabric_roce_nic_burst_window_ratio_bucket'), burst_pause)}))", NIC + " {{signal}} p99 window"),
            Q(f"sum by (host, netdev, signal) ({hosts(R('fabric_roce_nic_burst_window_ratio_sum'), burst_pause)})"
              f" / sum by (host, netdev, signal) ({hosts(R('fabric_roce_nic_burst_window_ratio_count'), burst_pause)})",
              NIC + " {{signal}} mean window")],
            "percentunit", max_one=True,
            description="The distribution of every window's fraction paused: its 99th percentile next to its mean."),
        row("PFC on switch interfaces"),
        timeseries("Switch PFC pause frames per priority", [
            Q(switches(S("fabric:roce_pfc_pause_frames:rate"), swp), SWITCH_IF + " prio {{priority}} {{direction}}")],
            "pps", thresholds=[s["thresholds.pfc_pause_frames_per_second"]],
            description="Per-priority PFC frames received (rx) and sent (tx) by switch interfaces."),
        timeseries("Switch PFC frames, all priorities", [
            Q(switches(R("fabric_roce_switch_pfc_rx_frames_total"), sw), SWITCH_IF + " rx"),
            Q(switches(R("fabric_roce_switch_pfc_tx_frames_total"), sw), SWITCH_IF + " tx")],
            "pps", description="IEEE8021-PFC-MIB totals, for switches without per-priority counters."),
        *_switch_buffer_bursts(s),
        row("ECN and congestion notification"),
        timeseries("ECN-marked packets", [
            Q(hosts(S("fabric:roce_ecn_marked_packets:rate"), nic), NIC + " received"),
            Q(switches(S("fabric:roce_ecn_marked_packets:rate"), sw), SWITCH_IF + " {{queue}} marked")],
            "pps", description="CE-marked packets a NIC received, and packets a switch queue marked."),
        timeseries("ECN-marked share", [
            Q(hosts(S("fabric:roce_ecn_marked:ratio"), nic), NIC),
            Q(switches(S("fabric:roce_ecn_marked:ratio"), sw), SWITCH_IF + " {{queue}}")],
            "percentunit", max_one=True, thresholds=[s["thresholds.ecn_marked_ratio"]],
            description="Marked packets over received (NIC) or sent from the queue (switch)."),
        timeseries("CNPs sent / received / handled / ignored", [
            Q(hosts(S("fabric:roce_cnp:rate"), nic), RDMA_DEVICE + " {{kind}}")],
            "pps", thresholds=[s["thresholds.cnp_ignored_per_second"]],
            description="DCQCN: receivers send CNPs, senders handle them; ignored CNPs mean misconfiguration."),
        table(f"Most paused NIC ports now (priority {s['lossless_priority']})", [
            Q(f"topk({s['top_n']}, {hosts(S('fabric:roce_pfc_pause_time:fraction'), lossless)})")],
            "percentunit", link_field="host", links=[("Select this host", nic_link)],
            description="Click a host to select it on this dashboard."),
        row("Retransmits and drops"),
        timeseries("Retransmits and sequence errors", [
            Q(hosts(S("fabric:roce_retransmits:rate"), nic), RDMA_DEVICE + " {{kind}}")],
            "cps", thresholds=[s["thresholds.retransmit_timeouts_per_second"]],
            description="ACK timeouts (tail latency), sequence NAKs and out-of-sequence drops (go-back-N)."),
        timeseries("Port discards", [
            Q(hosts(S("fabric:roce_port_discards:rate"), nic), NIC + " {{direction}}"),
            Q(switches(S("fabric:roce_port_discards:rate"), sw), SWITCH_IF + " {{direction}}")],
            "pps", thresholds=[s["thresholds.port_discards_per_second"]],
            description="Packets dropped by ports for lack of buffer."),
        timeseries(f"Lossless drops (switch queue {s['lossless_queue']}, NIC priority)", [
            Q(switches(S("fabric:roce_switch_queue_dropped_packets:rate"), lq), SWITCH_IF + " {{queue}}"),
            Q(hosts(R("fabric_roce_nic_priority_rx_discards_total"), nicp), NIC + " prio {{priority}}")],
            "pps", description="Any drop in the lossless class is a fault: PFC did not protect it."),
        timeseries("Host-side receive drops", [
            Q(hosts(R("fabric_roce_nic_rx_out_of_buffer_packets_total"), nic), NIC + " no rx buffer"),
            Q(hosts(R("fabric_roce_nic_rdma_out_of_buffer_total"), nic), RDMA_DEVICE + " no RDMA WQE")],
            "pps", description="Drops because the host did not post buffers: not the fabric's fault."),
        timeseries("RDMA completion errors", [
            Q(hosts(R("fabric_roce_nic_requester_cqe_errors_total", "increase"), nic), RDMA_DEVICE + " requester"),
            Q(hosts(R("fabric_roce_nic_responder_cqe_errors_total", "increase"), nic), RDMA_DEVICE + " responder"),
            Q(hosts(R("fabric_roce_nic_requester_cqe_flush_errors_total", "increase"), nic),
              RDMA_DEVICE + " requester flushed"),
            Q(hosts(R("fabric_roce_nic_responder_cqe_flush_errors_total", "increase"), nic),
              RDMA_DEVICE + " responder flushed")],
            "short", description="Work completions with an error status, per interval. Flushed = queued work "
            "cancelled after its QP failed (or its process exited): read with the errors, not as errors."),
        row("PFC storm watchdog"),
        timeseries("Switch PFC watchdog", [
            Q(switches(S("fabric_roce_switch_pfcwd_storm_active"), sw), SWITCH_IF + " {{queue}} stormed"),
            Q(switches(R("fabric_roce_switch_pfcwd_storms_detected_total", "increase"), sw),
              SWITCH_IF + " {{queue}} detected")],
            "short", description="1 while the watchdog holds a queue in a storm; storms detected per interval."),
        timeseries("NIC pause-storm events", [
            Q(hosts(R("fabric_roce_nic_pause_storm_error_events_total", "increase"), nic), NIC + " error"),
            Q(hosts(R("fabric_roce_nic_pause_storm_warning_events_total", "increase"), nic), NIC + " warning")],
            "short", description="The NIC's own stall watchdog: warning = paused too long, error = stopped pausing."),
    ]
    fsw = s.sel('fabric=~"$fabric",switch=~"$switch"')
    variables = [
        # with a job selected, the host list is the job's hosts
        query_variable("host", "Host", f"label_values(fabric_roce_nic_port_active{J.with_matcher(f, J.HOST)}, host)"),
        query_variable("switch", "Switch", f"label_values(fabric_roce_switch_if_oper_status{f}, switch)"),
        query_variable("interface", "Interface",
                       f"label_values(fabric_roce_switch_if_oper_status{fsw}, interface)"),
        query_variable("priority", "Priority", f"label_values(fabric_roce_pfc_rx_pause_frames_total{f}, priority)",
                       default=s["lossless_priority"]),
    ]
    return _board(s, "roce", "Fabric / RoCE congestion",
                  "PFC per priority on NICs and switches, ECN marks, CNPs, retransmits, drops and storm watchdogs.",
                  panels, variables)


def latency(s: Settings) -> dict:
    g = ('fabric=~"$fabric",source_group=~"$source_group",destination_group=~"$destination_group",'
         'tool=~"$tool",message_bytes=~"$message_bytes"')
    n = s["top_n"]
    gs = s.sel(g)
    lv = s.sel('fabric=~"$fabric"')
    pair_link = _link(s, "latency", "var-fabric=${__data.fields.fabric}"
                                    "&var-source_group=${__data.fields.source_group}"
                                    "&var-destination_group=${__data.fields.destination_group}")
    baseline = ("fabric:rdma_latency_seconds:p99_median_7d" if s["latency_baseline"] == "median_7d"
                else "fabric:rdma_latency_seconds:p99_1d_ago")
    panels = [
        row("Quantiles against baseline"),
        timeseries("p50 / p99 / p99.9 and the p99 baseline", [
            Q(f"fabric:rdma_latency_seconds:p50{{{g}}}", GROUP_PAIR + " p50"),
            Q(f"fabric:rdma_latency_seconds:p99{{{g}}}", GROUP_PAIR + " p99"),
            Q(f"fabric:rdma_latency_seconds:p999{{{g}}}", GROUP_PAIR + " p99.9"),
            Q(f"{baseline}{{{g}}}", GROUP_PAIR + " p99 baseline"),
            Q(f"{s['thresholds.latency_regression_factor']} * {baseline}{{{g}}}",
              GROUP_PAIR + " regression threshold")],
            "s", width=24, height=10, thresholds=[s["thresholds.latency_p99_seconds"]],
            description="Quantiles from the probe histogram per group pair; the baseline is what the regression "
                        "alert compares with."),
        heatmap("Latency distribution", Q(
            f"sum by (le) ({_rate('fabric_rdma_latency_seconds_bucket', gs)})"), "s",
            description="All probe exchanges of the selected group pairs, by latency bucket."),
        timeseries("p99 against the same time yesterday", [
            Q(f"fabric:rdma_latency_seconds:p99{{{g}}}", GROUP_PAIR + " now"),
            Q(f"fabric:rdma_latency_seconds:p99_1d_ago{{{g}}}", GROUP_PAIR + " yesterday")],
            "s", description="Day-over-day view of the p99."),
        row("Who is slow"),
        table("p99 by source group (rows) and destination group (columns)", [
            Q(f"fabric:rdma_latency_seconds:p99{{{g}}}")], "s", width=12,
            transformations=[{"id": "groupingToMatrix", "options": {
                "columnField": "destination_group", "rowField": "source_group", "valueField": "Value"}}],
            description="Group-to-group matrix of the p99 now."),
        table(f"Worst {n} group pairs by p99", [
            Q(f"topk({n}, fabric:rdma_latency_seconds:p99{{{g}}})")], "s", width=12,
            link_field="source_group", links=[("Select this pair", pair_link)],
            description="Group pairs with the highest p99 now."),
        table(f"Worst {n} host pairs by last probe p99", [
            Q(f"topk({n}, {J.host_pairs(J.series('fabric_rdma_latency_p99_seconds'), gs)})")], "s", width=12,
            description="From each pair's last probe (per-pair series must be on in the probe config); with a "
                        "job selected, the pairs with one end on its hosts."),
        timeseries("Probe failures", [
            Q(J.hosts(J.series("fabric:rdma_latency_probe_failures:ratio"), lv),
              "{{host}} {{role}}")],
            "percentunit", max_one=True, thresholds=[s["thresholds.probe_loss_ratio"]],
            description="Share of probes with no latency result, per host and role."),
    ]
    variables = [
        query_variable("source_group", "Source group",
                       f"label_values(fabric_rdma_latency_seconds_count{lv}, source_group)"),
        query_variable("destination_group", "Destination group",
                       f"label_values(fabric_rdma_latency_seconds_count{lv}, destination_group)"),
        query_variable("tool", "Tool", f"label_values(fabric_rdma_latency_seconds_count{lv}, tool)"),
        query_variable("message_bytes", "Message size",
                       f"label_values(fabric_rdma_latency_seconds_count{lv}, message_bytes)"),
    ]
    return _board(s, "latency", "Fabric / Tail latency",
                  "RDMA probe latency: quantiles against their baseline, distribution, group matrix, worst pairs.",
                  panels, variables)


def exporter(s: Settings) -> dict:
    t = s.sel('fabric=~"$fabric",group=~"$group",collector=~"$collector"')
    panels = [
        row("Targets"),
        stat("Targets up", [Q(f"sum(fabric_up{t})")], "short", width=6),
        stat("Targets down", [Q(f"count(fabric_up{t} == 0) or vector(0)")], "short", width=6, thresholds=[1]),
        stat("Targets stale", [Q(f"sum(fabric_target_stale{t})")], "short", width=6, thresholds=[1]),
        stat("Config reload OK", [Q(f"min(fabric_config_last_reload_successful{s.sel()})")], "bool", width=6),
        table("Target status", [Q(f"fabric_up{t}")], "short", width=24,
              description="1 = last poll succeeded and fresh."),
        row("Polls"),
        timeseries("Poll duration over interval", [
            Q(f"fabric:poll_duration_over_interval:ratio{t}", TARGET)],
            "percentunit", thresholds=[s["thresholds.poll_slow_ratio"]],
            description="Average poll time as a share of the poll interval; near 100% times out."),
        timeseries("Poll duration", [Q(f"fabric_poll_duration_seconds{t}", TARGET)], "s"),
        timeseries("Poll errors by reason", [
            Q(f"sum by (group, reason) ({_rate('fabric_poll_errors_total', t)})", "{{group}} {{reason}}")],
            "ops", description="Failed (and partial) polls per second by reason."),
        timeseries("Failed poll share", [Q(f"fabric:poll_failures:ratio{t}", TARGET)],
                   "percentunit", max_one=True, thresholds=[s["thresholds.poll_error_ratio"]]),
        timeseries("Age of last successful poll", [
            Q(f"time() - fabric_last_success_timestamp_seconds{t}", TARGET)], "s"),
        timeseries("Backoff", [Q(f"fabric_poll_backoff_seconds{t}", TARGET)], "s",
                   description="Extra delay after consecutive failures (0 when healthy)."),
        timeseries("Samples per target", [Q(f"fabric_samples{t}", TARGET)], "short"),
        timeseries("Skipped unknown lines", [
            Q(f"sum by (collector, source) ({_rate('fabric_parse_skipped_lines_total', t)})",
              "{{collector}} {{source}}")], "ops",
            description="Lines of tool output a parser did not know and skipped (values on them are not "
                        "published): a tool, firmware or driver printing something new. The exporter's debug "
                        "log shows each distinct line once."),
        timeseries("Targets by collector", [Q(f"fabric_targets{s.sel()}", "{{collector}}")], "short"),
        table("Build", [Q(f"fabric_build_info{s.sel()}")], "short", width=24),
    ]
    f = s.sel('fabric=~"$fabric"')
    variables = [
        query_variable("group", "Target group", f"label_values(fabric_up{f}, group)"),
        query_variable("collector", "Collector", f"label_values(fabric_up{f}, collector)"),
    ]
    return _board(s, "exporter", "Fabric / Exporter health",
                  "Is fabric-exporter polling every target on time? Status, durations, errors, staleness.",
                  panels, variables)


BUILDERS = {"overview": overview, "infiniband": infiniband, "roce": roce, "latency": latency,
            "exporter": exporter}


def build_all(s: Settings) -> dict[str, dict]:
    """File stem -> dashboard JSON."""
    return {f"fabric-{name}": build(s) for name, build in BUILDERS.items()}
