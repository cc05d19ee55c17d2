"""The InfiniBand ports dashboard, one builder per row. ``f`` selects the fabric (tops, heatmaps,
problem tables), ``fp`` the ports picked with the node and port variables."""

from __future__ import annotations

from .. import job_views as J
from ..panels import Query as Q
from ..panels import heatmap, query_variable, row, table, timeseries
from ..settings import Settings
from .common import IB_PORT, R, board, link, rate

ib, S = J.ib_ports, J.series


def infiniband(s: Settings) -> dict:
    f = s.sel('fabric=~"$fabric"')
    fp = s.sel('fabric=~"$fabric",node_name=~"$node",port=~"$port"')
    panels = [
        *_congestion(s, f, fp),
        *_bursts(s, f, fp),
        *_traffic(fp),
        *_errors(f, fp),
        *_link_state(f, fp),
    ]
    fn = s.sel('fabric=~"$fabric",node_name=~"$node"')
    variables = [
        query_variable("node", "Node", f'label_values(fabric_ib_port_rate_bytes_per_second{f}, node_name)'),
        query_variable("port", "Port", f"label_values(fabric_ib_port_rate_bytes_per_second{fn}, port)"),
    ]
    return board(s, "infiniband", "Fabric / InfiniBand ports",
                 "Per-port congestion (PortXmitWait), traffic, errors and link state of an InfiniBand fabric.",
                 panels, variables)


def _congestion(s: Settings, f: str, fp: str) -> list:
    """Transmit-wait (PortXmitWait) across the fabric, its top ports, and the selected ports'."""
    n = s["top_n"]
    port_link = link(s, "infiniband", "var-fabric=${__data.fields.fabric}&var-node=${__data.fields.node_name}"
                                      "&var-port=${__data.fields.port}")
    return [
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
    ]


def _bursts(s: Settings, f: str, fp: str) -> list:
    """The focus set read every focus_interval: peaks beside averages, bursts, window ratios."""
    return [
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
    ]


def _traffic(fp: str) -> list:
    """Bytes, packets and utilisation of the selected ports."""
    return [
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
            Q(ib(lambda x: f"{rate('fabric_ib_port_data_transmitted_bytes_total', x)}"
                           f" / (fabric_ib_port_rate_bytes_per_second{x} > 0)", fp), IB_PORT)],
            "percentunit", max_one=True, description="Transmitted bytes over the link's effective rate."),
    ]


def _errors(f: str, fp: str) -> list:
    """Error and discard counters, by cause where error_details reads them; latched and missing ports."""
    return [
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
    ]


def _link_state(f: str, fp: str) -> list:
    """Rates, degraded or down links, widths, states and identities."""
    return [
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
