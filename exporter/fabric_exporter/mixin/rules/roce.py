"""RoCE rules, NIC and switch: PFC, ECN, CNPs, retransmits, lossless-queue drops, link health.

One builder per alert name, each returning that name's rules (one per source: NIC port, switch
interface); the recordings they and the dashboards read come first. The example series the promtool
scenarios write are made once in ``RoceSeries`` so every builder names the same ones."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ...promql import quote
from .base import CRITICAL, INFO, NIC_PORT, SWITCH_IF, WARNING, AlertRule, Ctx, Recording, Scenario, fmt, minutes


# Where an alert's description says the series is, from its labels.
NIC_WHERE = ("fabric {{ $labels.fabric }}: host {{ $labels.host }} {{ $labels.device }} port {{ $labels.port }}"
             " ({{ $labels.netdev }})")
SWITCH_WHERE = "fabric {{ $labels.fabric }}: switch {{ $labels.switch }} interface {{ $labels.interface }}"
# The burst sampler's pause-time signals (collectors/burst.py SIGNALS): a burst there is a PFC storm.
PAUSE_TIME_SIGNALS = 'signal=~"pfc_rx_pause_time|pfc_tx_pause_time"'
CNP_KINDS = (("fabric_roce_nic_cnp_sent_total", "sent"), ("fabric_roce_nic_cnp_received_total", "received"),
             ("fabric_roce_nic_cnp_handled_total", "handled"), ("fabric_roce_nic_cnp_ignored_total", "ignored"))
RETRANSMIT_KINDS = (("fabric_roce_nic_local_ack_timeouts_total", "local_ack_timeout"),
                    ("fabric_roce_nic_adaptive_retransmit_timeouts_total", "adaptive_retransmit_timeout"),
                    ("fabric_roce_nic_packet_sequence_errors_total", "packet_sequence_error"),
                    ("fabric_roce_nic_out_of_sequence_packets_total", "out_of_sequence"),
                    ("fabric_roce_nic_implied_nak_sequence_errors_total", "implied_nak_sequence_error"),
                    ("fabric_roce_nic_duplicate_requests_total", "duplicate_request"))


def _direction_union(metrics: tuple[tuple[str, str], ...], sel: str, w: str) -> str:
    return " or ".join(f'label_replace(rate({m}{sel}[{w}]), "direction", "{d}", "", "")' for m, d in metrics)


def _kind_union(metrics: tuple[tuple[str, str], ...], sel: str, w: str) -> str:
    return " or ".join(f'label_replace(rate({m}{sel}[{w}]), "kind", "{k}", "", "")' for m, k in metrics)


@dataclass(frozen=True)
class RoceSeries:
    """The example series (text for promtool) and their label sets, shared by recordings and alerts."""
    nic: dict
    nic_prio: dict
    sw: dict
    sw_q: dict
    sw_prio: dict
    rx_pause: str
    sw_tx_pause: str
    rx_pause_seconds: str
    ecn: str
    rx_packets: str
    sw_ecn: str
    sw_queue_tx: str
    cnp_ignored: str
    cnp_handled: str
    local_ack_timeouts: str
    rx_discards: str
    sw_tx_discards: str
    sw_queue_drops: str
    sw_rx_errors: str

    @classmethod
    def of(cls, c: Ctx) -> RoceSeries:
        p, lossless = c.p, c.s["lossless_queue"]
        rx_pause, nic_prio = c.series("fabric_roce_pfc_rx_pause_frames_total", NIC_PORT + ("priority",), priority=p)
        sw_tx_pause, sw_prio = c.series("fabric_roce_pfc_tx_pause_frames_total", SWITCH_IF + ("priority",),
                                        priority=p)
        ecn, nic = c.series("fabric_roce_ecn_marked_packets_total", NIC_PORT)
        sw_ecn, sw_q = c.series("fabric_roce_ecn_marked_packets_total", SWITCH_IF, queue=lossless)
        sw_tx_discards, sw = c.series("fabric_roce_tx_discards_total", SWITCH_IF)
        return cls(
            nic=nic, nic_prio=nic_prio, sw=sw, sw_q=sw_q, sw_prio=sw_prio,
            rx_pause=rx_pause, sw_tx_pause=sw_tx_pause,
            rx_pause_seconds=c.series("fabric_roce_nic_pfc_rx_pause_seconds_total", NIC_PORT + ("priority",),
                                      priority=p)[0],
            ecn=ecn, rx_packets=c.series("fabric_roce_rx_packets_total", NIC_PORT)[0], sw_ecn=sw_ecn,
            sw_queue_tx=c.series("fabric_roce_switch_queue_tx_packets_total", SWITCH_IF, queue=lossless)[0],
            cnp_ignored=c.series("fabric_roce_nic_cnp_ignored_total", NIC_PORT)[0],
            cnp_handled=c.series("fabric_roce_nic_cnp_handled_total", NIC_PORT)[0],
            local_ack_timeouts=c.series("fabric_roce_nic_local_ack_timeouts_total", NIC_PORT)[0],
            rx_discards=c.series("fabric_roce_rx_discards_total", NIC_PORT)[0], sw_tx_discards=sw_tx_discards,
            sw_queue_drops=c.series("fabric_roce_switch_queue_dropped_packets_total", SWITCH_IF, queue=lossless)[0],
            sw_rx_errors=c.series("fabric_roce_switch_if_rx_errors_total", SWITCH_IF)[0])


def roce_recordings(c: Ctx, s: RoceSeries) -> list[Recording]:
    w, sel = c.w, c.sel
    return [
        Recording(
            "fabric:roce_pfc_pause_frames:rate",
            _direction_union((("fabric_roce_pfc_rx_pause_frames_total", "rx"),
                              ("fabric_roce_pfc_tx_pause_frames_total", "tx")), sel(), w),
            ((s.rx_pause, "0+6000x20"), (s.sw_tx_pause, "0+600x20")), 10,
            (({**s.nic_prio, "direction": "rx"}, 100.0), ({**s.sw_prio, "direction": "tx"}, 10.0))),
        Recording(
            "fabric:roce_pfc_pause_time:fraction",
            _direction_union((("fabric_roce_nic_pfc_rx_pause_seconds_total", "rx"),
                              ("fabric_roce_nic_pfc_tx_pause_seconds_total", "tx")), sel(), w),
            ((s.rx_pause_seconds, "0+30x20"),), 10, (({**s.nic_prio, "direction": "rx"}, 0.5),)),
        Recording(
            "fabric:roce_ecn_marked_packets:rate", f"rate(fabric_roce_ecn_marked_packets_total{sel()}[{w}])",
            ((s.ecn, "0+600x20"), (s.sw_ecn, "0+60x20")), 10, ((s.nic, 10.0), (s.sw_q, 1.0))),
        # NIC: marked packets it received over all it received; switch: marked over sent, per queue.
        Recording(
            "fabric:roce_ecn_marked:ratio",
            f"fabric:roce_ecn_marked_packets:rate{sel()} / rate(fabric_roce_rx_packets_total{sel()}[{w}])"
            f" or fabric:roce_ecn_marked_packets:rate{sel()}"
            f" / rate(fabric_roce_switch_queue_tx_packets_total{sel()}[{w}])",
            ((s.ecn, "0+600x20"), (s.rx_packets, "0+6000x20"), (s.sw_ecn, "0+60x20"), (s.sw_queue_tx, "0+240x20")),
            10, ((s.nic, 0.1), (s.sw_q, 0.25))),
        Recording(
            "fabric:roce_cnp:rate", _kind_union(CNP_KINDS, sel(), w),
            ((s.cnp_ignored, "0+120x20"), (s.cnp_handled, "0+60x20")), 10,
            (({**s.nic, "kind": "ignored"}, 2.0), ({**s.nic, "kind": "handled"}, 1.0))),
        Recording(
            "fabric:roce_retransmits:rate", _kind_union(RETRANSMIT_KINDS, sel(), w),
            ((s.local_ack_timeouts, "0+6x20"),), 10, (({**s.nic, "kind": "local_ack_timeout"}, 0.1),)),
        Recording(
            "fabric:roce_port_discards:rate",
            _direction_union((("fabric_roce_rx_discards_total", "rx"), ("fabric_roce_tx_discards_total", "tx")),
                             sel(), w),
            ((s.rx_discards, "0+60x20"), (s.sw_tx_discards, "0+120x20")), 10,
            (({**s.nic, "direction": "rx"}, 1.0), ({**s.sw, "direction": "tx"}, 2.0))),
        Recording(
            "fabric:roce_switch_queue_dropped_packets:rate",
            f"rate(fabric_roce_switch_queue_dropped_packets_total{sel()}[{w}])",
            ((s.sw_queue_drops, "0+30x20"),), 10, ((s.sw_q, 0.5),)),
        Recording(
            "fabric:roce_switch_if_errors:rate",
            _direction_union((("fabric_roce_switch_if_rx_errors_total", "rx"),
                              ("fabric_roce_switch_if_tx_errors_total", "tx")), sel(), w),
            ((s.sw_rx_errors, "0+60x20"),), 10, (({**s.sw, "direction": "rx"}, 1.0),)),
    ]


def _start(c: Ctx) -> int:
    return c.window_steps() + 2


def pfc_pause_storm(c: Ctx, s: RoceSeries) -> list[AlertRule]:
    n, w, sel = "FabricRocePfcPauseStorm", c.w, c.sel
    start = _start(c)
    r = c.ramp_alert(n, "pfc_pause_fraction", cap=1.0)
    s_storm, _ = c.series("fabric_roce_nic_pause_storm_error_events_total", NIC_PORT)
    storm_length = c.length(n, start)
    s_wd, _ = c.series("fabric_roce_switch_pfcwd_storm_active", SWITCH_IF, queue=c.s["lossless_queue"])
    # Two signs of one fault on a NIC port, so one rule: time paused near 100% on the lossless
    # priority, or the NIC's own stall watchdog firing (it stops pausing to save the fabric).
    return [
        c.alert(
            n, CRITICAL,
            f"fabric:roce_pfc_pause_time:fraction{sel(f'priority={quote(c.p)}')} > {r.value}"
            f" or increase(fabric_roce_nic_pause_storm_error_events_total{sel()}[{w}]) > 0",
            "A RoCE port is held in a PFC pause storm.",
            NIC_WHERE + f" is in a PFC pause storm: paused more than {r.percent} of the time on the lossless "
            f"priority over {w}, or its NIC's pause-storm watchdog fired, for {r.for_}. A stuck receiver "
            "is freezing the lossless class and the pause spreads through the fabric.",
            r.per_second(s.rx_pause_seconds, {**s.nic_prio, "direction": "rx"}),
            extra=(Scenario(((s_storm, c.ramp(start, 1, storm_length)),), start, s.nic),)),
        c.alert(
            n, CRITICAL, f"fabric_roce_switch_pfcwd_storm_active{sel()} == 1",
            "A RoCE port is held in a PFC pause storm.",
            SWITCH_WHERE + " queue {{ $labels.queue }} is held in a PFC storm by the switch's PFC watchdog: "
            "it drops or forwards the queue's traffic while the peer keeps pausing it.",
            c.step(n, s_wd, "0", "1", s.sw_q)),
    ]


def pfc_pauses_sustained(c: Ctx, s: RoceSeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricRocePfcPausesSustained", "pfc_pause_frames_per_second")
    out = []
    for where, s_name, labels, direction in ((NIC_WHERE, s.rx_pause, s.nic_prio, "rx"),
                                              (SWITCH_WHERE, s.sw_tx_pause, s.sw_prio, "tx")):
        side = "host" if "host" in labels else "switch"
        side_sel = c.sel(f'priority={quote(c.p)},{side}!=""')
        out.append(r.alert(
            WARNING, f"fabric:roce_pfc_pause_frames:rate{side_sel}",
            "A RoCE port sends or receives PFC pause frames continuously.",
            where + " {{ $labels.direction }} more than " + r.value + " PFC pause frames per second on lossless "
            "priority {{ $labels.priority }}" + f" {r.window}: sustained congestion that PFC, not ECN, is absorbing.",
            r.per_second(s_name, {**labels, "direction": direction})))
    return out


def ecn_marking_high(c: Ctx, s: RoceSeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricRoceEcnMarkingHigh", "ecn_marked_ratio", cap=1.0)
    host_sel, switch_sel = c.sel('host!=""'), c.sel('switch!=""')
    return [
        r.alert(
            INFO, f"fabric:roce_ecn_marked:ratio{host_sel}", "Many RoCE packets arrive ECN-marked.",
            NIC_WHERE + f" receives more than {r.percent} of its packets CE-marked {r.window}: the path to this "
            "host is congested and DCQCN is slowing its senders.",
            Scenario(((s.ecn, r.counter(6000)), (s.rx_packets, f"0+6000x{r.length}")), r.onset, s.nic)),
        r.alert(
            INFO, f"fabric:roce_ecn_marked:ratio{switch_sel}",
            "Many RoCE packets leave a switch queue ECN-marked.",
            SWITCH_WHERE + " queue {{ $labels.queue }}" + f" CE-marks more than {r.percent} of the packets it "
            f"sends {r.window}: the egress port is congested.",
            Scenario(((s.sw_ecn, r.counter(6000)), (s.sw_queue_tx, f"0+6000x{r.length}")), r.onset, s.sw_q)),
    ]


def cnp_ignored(c: Ctx, s: RoceSeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricRoceCnpIgnored", "cnp_ignored_per_second")
    ignored_sel = c.sel('kind="ignored"')
    return [r.alert(
        WARNING, f"fabric:roce_cnp:rate{ignored_sel}", "A RoCE sender ignores congestion notifications.",
        NIC_WHERE + f" ignored more than {r.value} CNPs per second {r.window}: congestion control (DCQCN) is "
        "off or the CNP priority/DSCP does not match, so this sender never slows down.",
        r.per_second(s.cnp_ignored, {**s.nic, "kind": "ignored"}))]


def lossless_queue_drops(c: Ctx, s: RoceSeries) -> list[AlertRule]:
    n, w, sel = "FabricRoceLosslessQueueDrops", c.w, c.sel
    start = _start(c)
    onset = c.ramp_onset(start, 1.0, 0)
    length = c.length(n, onset)
    s_pd, _ = c.series("fabric_roce_nic_priority_rx_discards_total", NIC_PORT + ("priority",), priority=c.p)
    queue_sel, prio_sel = sel(f'queue={quote(c.s["lossless_queue"])}'), sel(f"priority={quote(c.p)}")
    return [
        c.alert(
            n, CRITICAL,
            f"fabric:roce_switch_queue_dropped_packets:rate{queue_sel} > 0",
            "A switch drops packets in the lossless RoCE queue.",
            SWITCH_WHERE + " drops packets in lossless queue {{ $labels.queue }}" + f" (over {w}, for "
            f"{c.s.for_(n)}): PFC is not protecting the class, so RDMA retransmits and tail latency explodes.",
            Scenario(((s.sw_queue_drops, c.ramp(start, 60, length)),), onset, s.sw_q)),
        c.alert(
            n, CRITICAL,
            f"rate(fabric_roce_nic_priority_rx_discards_total{prio_sel}[{w}]) > 0",
            "A NIC drops packets in the lossless RoCE priority.",
            NIC_WHERE + " drops received packets on lossless priority {{ $labels.priority }}" + f" (over {w}, for "
            f"{c.s.for_(n)}): its buffer overflowed although PFC should have paused the sender.",
            Scenario(((s_pd, c.ramp(start, 60, length)),), onset, s.nic_prio)),
    ]


def retransmit_timeouts(c: Ctx, s: RoceSeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricRoceRetransmitTimeouts", "retransmit_timeouts_per_second")
    timeout_sel = c.sel('kind="local_ack_timeout"')
    return [r.alert(
        WARNING, f"fabric:roce_retransmits:rate{timeout_sel}", "RoCE retransmissions on timeout are rising.",
        NIC_WHERE + f" retransmits more than {r.value} times per second on ACK timeout {r.window}: packets are "
        "lost in the fabric and each loss costs a full timeout of tail latency.",
        r.per_second(s.local_ack_timeouts, {**s.nic, "kind": "local_ack_timeout"}))]


def repeated_bursts(c: Ctx, s: RoceSeries) -> list[AlertRule]:
    """Repeated sub-second bursts (the roce_nic burst sampler): each one hides in a 30 s rate."""
    r = c.ramp_alert("FabricRoceRepeatedBursts", "bursts_per_window")
    s_bursts, nic_sig = c.series("fabric_roce_nic_bursts_total", NIC_PORT + ("signal",), signal="pfc_rx_pause_time")
    return [r.alert(
        WARNING, f'increase(fabric_roce_nic_bursts_total{c.sel(PAUSE_TIME_SIGNALS)}[{c.w}])',
        "A RoCE port is paused in repeated sub-second bursts.",
        NIC_WHERE + " had more than " + r.value + " PFC pause bursts ({{ $labels.signal }}) "
        f"{r.window}: short storms the rate panels average away, each one stalling the collectives that "
        "cross this port.",
        r.per_window(s_bursts, nic_sig))]


# -- link health on RoCE ports

def link_symbol_errors(c: Ctx, s: RoceSeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricLinkSymbolErrors", "symbol_errors_per_window")
    s_pcs, _ = c.series("fabric_roce_nic_rx_pcs_symbol_errors_total", NIC_PORT)
    return [r.alert(
        WARNING, f"increase(fabric_roce_nic_rx_pcs_symbol_errors_total{c.sel()}[{c.w}])",
        "A link is taking bit errors.",
        NIC_WHERE + f" counted more than {r.value} symbol errors FEC could not correct in {c.w}, for {r.for_}: a "
        "failing cable, transceiver or dirty connector.",
        r.per_window(s_pcs, s.nic))]


def link_flapping(c: Ctx, s: RoceSeries) -> list[AlertRule]:
    n, sel = "FabricLinkFlapping", c.sel
    thr = c.s["thresholds.link_flaps_per_hour"]
    s_lde, _ = c.series("fabric_roce_nic_link_down_events_total", NIC_PORT)
    s_oper, _ = c.series("fabric_roce_switch_if_oper_status", SWITCH_IF)
    flips = 2 * math.floor(thr) + 1  # changes()/2 > thr
    flap_values = "1x69 " + " ".join("2" if i % 2 == 0 else "1" for i in range(flips + minutes(c.s.for_(n)) + 5))
    return [
        c.alert(
            n, WARNING, f"increase(fabric_roce_nic_link_down_events_total{sel()}[1h]) > {fmt(thr)}",
            "A link keeps going down and up.",
            NIC_WHERE + f" went down more than {fmt(thr)} times in the last hour: every flap breaks the host's "
            "RDMA connections.",
            c.link_downs(n, s_lde, s.nic)),
        c.alert(
            n, WARNING, f"changes(fabric_roce_switch_if_oper_status{sel()}[1h]) / 2 > {fmt(thr)}",
            "A link keeps going down and up.",
            SWITCH_WHERE + f" changed its operational state more than {fmt(2 * thr)} times in the last hour "
            "(as polled): the link is flapping.",
            Scenario(((s_oper, flap_values),), 70 + flips - 1, s.sw)),
    ]


def link_down(c: Ctx, s: RoceSeries) -> list[AlertRule]:
    n, sel = "FabricLinkDown", c.sel
    lookback = c.s["link_lookback"]
    s_act, _ = c.series("fabric_roce_nic_port_active", NIC_PORT)
    s_oper, _ = c.series("fabric_roce_switch_if_oper_status", SWITCH_IF)
    return [
        c.alert(
            n, WARNING,
            f"fabric_roce_nic_port_active{sel()} == 0"
            f" and max_over_time(fabric_roce_nic_port_active{sel()}[{lookback}]) == 1",
            "A link that should be up is down.",
            NIC_WHERE + f" is not ACTIVE although it was within {lookback}, for {c.s.for_(n)}.",
            c.step(n, s_act, "1", "0", s.nic)),
        # ifOperStatus: 1 up is the smallest code, so min over the lookback == 1 means "was up".
        c.alert(
            n, WARNING,
            f"fabric_roce_switch_if_oper_status{sel()} != 1"
            f" and min_over_time(fabric_roce_switch_if_oper_status{sel()}[{lookback}]) == 1",
            "A link that should be up is down.",
            SWITCH_WHERE + f" is not up (ifOperStatus) although it was within {lookback}, "
            f"for {c.s.for_(n)}.",
            c.step(n, s_oper, "1", "2", s.sw)),
    ]


def link_degraded(c: Ctx, s: RoceSeries) -> list[AlertRule]:
    n, sel = "FabricLinkDegraded", c.sel
    lookback = c.s["link_lookback"]
    s_speed, _ = c.series("fabric_roce_switch_if_speed_bytes_per_second", SWITCH_IF)
    return [c.alert(
        n, WARNING,
        f"fabric_roce_switch_if_speed_bytes_per_second{sel()}"
        f" < max_over_time(fabric_roce_switch_if_speed_bytes_per_second{sel()}[{lookback}])"
        f" and fabric_roce_switch_if_speed_bytes_per_second{sel()} > 0",
        "A link runs below its supported width or speed.",
        SWITCH_WHERE + f" runs slower than it did within {lookback} (for {c.s.for_(n)}): it renegotiated "
        "down, its bandwidth is cut and it congests first.",
        c.step(n, s_speed, "50000000000", "25000000000", s.sw))]


def port_errors(c: Ctx, s: RoceSeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricPortErrors", "port_errors_per_second")
    s_crc, _ = c.series("fabric_roce_nic_rx_crc_errors_total", NIC_PORT)
    return [
        r.alert(
            WARNING, f"sum without (direction) (fabric:roce_switch_if_errors:rate{c.sel()})",
            "A port is receiving errors.",
            SWITCH_WHERE + f" counts more than {r.value} receive/transmit errors per second {r.window}.",
            r.per_second(s.sw_rx_errors, s.sw)),
        r.alert(
            WARNING, f"rate(fabric_roce_nic_rx_crc_errors_total{c.sel()}[{c.w}])", "A port is receiving errors.",
            NIC_WHERE + f" receives more than {r.value} packets per second with a bad FCS {r.window}.",
            r.per_second(s_crc, s.nic)),
    ]


def port_discards(c: Ctx, s: RoceSeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricPortDiscards", "port_discards_per_second")
    s_sw_rxd, _ = c.series("fabric_roce_rx_discards_total", SWITCH_IF)
    out = []
    for where, sel_side, s_name, labels in ((NIC_WHERE, c.sel('host!=""'), s.rx_discards, s.nic),
                                            (SWITCH_WHERE, c.sel('switch!=""'), s_sw_rxd, s.sw)):
        out.append(r.alert(
            WARNING, f"fabric:roce_port_discards:rate{sel_side}", "A port is discarding packets.",
            where + f" discards more than {r.value} " + "{{ $labels.direction }} packets per second "
            f"{r.window}: its buffers overflow.",
            r.per_second(s_name, {**labels, "direction": "rx"})))
    return out


# In the order the alert group lists them.
ALERT_BUILDERS: tuple[Callable[[Ctx, RoceSeries], list[AlertRule]], ...] = (
    pfc_pause_storm, pfc_pauses_sustained, ecn_marking_high, cnp_ignored, lossless_queue_drops,
    retransmit_timeouts, repeated_bursts, link_symbol_errors, link_flapping, link_down, link_degraded,
    port_errors, port_discards)


def roce_rules(c: Ctx) -> tuple[list[Recording], list[AlertRule]]:
    s = RoceSeries.of(c)
    return roce_recordings(c, s), [rule for build in ALERT_BUILDERS for rule in build(c, s)]
