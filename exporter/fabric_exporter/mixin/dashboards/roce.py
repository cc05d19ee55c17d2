"""The RoCE congestion dashboard, one builder per row; the selectors they share are made once in
``RoceSelectors``."""

from __future__ import annotations

from dataclasses import dataclass

from ...promql import quote
from .. import job_views as J
from ..panels import Query as Q
from ..panels import query_variable, row, table, timeseries
from ..settings import Settings
from .common import NIC, RDMA_DEVICE, SWITCH_IF, R, board, link

hosts, S = J.hosts, J.series


@dataclass(frozen=True)
class RoceSelectors:
    """The dashboard's selectors: NIC ports (``nic``, per priority ``nicp``), switch interfaces (``sw``,
    per priority ``swp``), the switch lossless queue (``lq``) and the lossless priority (``lossless``
    fabric-wide, ``lossless_nic`` on the selected hosts), and the burst sampler's series."""
    f: str
    nic: str
    nicp: str
    sw: str
    swp: str
    lq: str
    lossless: str
    lossless_nic: str
    burst_nic: str
    burst_pause: str

    @classmethod
    def of(cls, s: Settings) -> RoceSelectors:
        return cls(
            f=s.sel('fabric=~"$fabric"'),
            nic=s.sel('fabric=~"$fabric",host=~"$host"'),
            nicp=s.sel('fabric=~"$fabric",host=~"$host",priority=~"$priority"'),
            sw=s.sel('fabric=~"$fabric",switch=~"$switch",interface=~"$interface"'),
            swp=s.sel('fabric=~"$fabric",switch=~"$switch",interface=~"$interface",priority=~"$priority"'),
            lq=s.sel(f'fabric=~"$fabric",switch=~"$switch",interface=~"$interface",'
                     f'queue={quote(s["lossless_queue"])}'),
            lossless=s.sel(f'fabric=~"$fabric",priority={quote(s["lossless_priority"])}'),
            lossless_nic=s.sel(f'fabric=~"$fabric",host=~"$host",priority={quote(s["lossless_priority"])}'),
            burst_nic=s.sel('fabric=~"$fabric",host=~"$host"'),
            burst_pause=s.sel('fabric=~"$fabric",host=~"$host",signal=~"pfc_rx_pause_time|pfc_tx_pause_time"'),
        )


def roce(s: Settings) -> dict:
    v = RoceSelectors.of(s)
    panels = [
        *_nic_pfc(s, v),
        *_nic_bursts(s, v),
        *_switch_pfc(s, v),
        *_switch_buffer_bursts(s),
        *_ecn(s, v),
        *_retransmits_and_drops(s, v),
        *_pfc_storm_watchdog(s, v),
    ]
    f = v.f
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
    return board(s, "roce", "Fabric / RoCE congestion",
                 "PFC per priority on NICs and switches, ECN marks, CNPs, retransmits, drops and storm watchdogs.",
                 panels, variables)


def _switch_ifs(s: Settings):
    """Filter for switch interfaces: the selected job's hosts' switches only (job_views)."""
    return lambda build, sel: J.switch_ifs(s, build, sel)


def _nic_pfc(s: Settings, v: RoceSelectors) -> list:
    """PFC pause frames and time paused per priority on NIC ports."""
    nicp = v.nicp
    return [
        row("PFC on NIC ports"),
        timeseries("NIC PFC pause frames per priority", [
            Q(hosts(S("fabric:roce_pfc_pause_frames:rate"), nicp), NIC + " prio {{priority}} {{direction}}")],
            "pps", thresholds=[s["thresholds.pfc_pause_frames_per_second"]],
            description="rx: the fabric pauses this NIC; tx: the NIC cannot absorb and pauses its switch."),
        timeseries("NIC time paused per priority", [
            Q(hosts(S("fabric:roce_pfc_pause_time:fraction"), nicp), NIC + " prio {{priority}} {{direction}}")],
            "percentunit", max_one=True, thresholds=[s["thresholds.pfc_pause_fraction"]],
            description="Fraction of time paused (pause duration counters); near 100% is a storm."),
    ]


def _nic_bursts(s: Settings, v: RoceSelectors) -> list:
    """The sub-second sampler's peak windows beside the rate-window average, burst counts, window p99."""
    burst_nic, burst_pause, lossless_nic = v.burst_nic, v.burst_pause, v.lossless_nic
    return [
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
    ]


def _switch_pfc(s: Settings, v: RoceSelectors) -> list:
    """PFC frames on switch interfaces, per priority and in total."""
    switches, sw, swp = _switch_ifs(s), v.sw, v.swp
    return [
        row("PFC on switch interfaces"),
        timeseries("Switch PFC pause frames per priority", [
            Q(switches(S("fabric:roce_pfc_pause_frames:rate"), swp), SWITCH_IF + " prio {{priority}} {{direction}}")],
            "pps", thresholds=[s["thresholds.pfc_pause_frames_per_second"]],
            description="Per-priority PFC frames received (rx) and sent (tx) by switch interfaces."),
        timeseries("Switch PFC frames, all priorities", [
            Q(switches(R("fabric_roce_switch_pfc_rx_frames_total"), sw), SWITCH_IF + " rx"),
            Q(switches(R("fabric_roce_switch_pfc_tx_frames_total"), sw), SWITCH_IF + " tx")],
            "pps", description="IEEE8021-PFC-MIB totals, for switches without per-priority counters."),
    ]


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


def _ecn(s: Settings, v: RoceSelectors) -> list:
    """ECN marks on NICs and switch queues, CNPs, and the most paused NIC ports."""
    switches, nic, sw, lossless = _switch_ifs(s), v.nic, v.sw, v.lossless
    nic_link = link(s, "roce", "var-fabric=${__data.fields.fabric}&var-host=${__data.fields.host}")
    return [
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
    ]


def _retransmits_and_drops(s: Settings, v: RoceSelectors) -> list:
    """Retransmits, port and lossless-class drops, host-side drops and completion errors."""
    switches, nic, nicp, sw, lq = _switch_ifs(s), v.nic, v.nicp, v.sw, v.lq
    return [
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
    ]


def _pfc_storm_watchdog(s: Settings, v: RoceSelectors) -> list:
    """The switches' PFC watchdog and the NICs' own pause-storm events."""
    switches, sw, nic = _switch_ifs(s), v.sw, v.nic
    return [
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
