"""InfiniBand port rules: transmit wait, errors, discards, link flaps/down/degraded.

One builder per recording and per alert name, like ``roce.py``; the example series the promtool
scenarios write are made once in ``IbSeries`` so every builder names the same ones."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ...catalog import CATALOG
from .base import EXAMPLE, IB_PORT, WARNING, AlertRule, Ctx, Recording, Scenario, fmt, minutes


# Where an alert's description says the series is, from its labels.
IB_WHERE = ("fabric {{ $labels.fabric }}: {{ $labels.node_name }} ({{ $labels.node_guid }}) port {{ $labels.port }}"
            " -> {{ $labels.peer_node_name }} port {{ $labels.peer_port }}")
# The error counters fabric:ib_port_errors:rate adds up, with the name its counter label gives each:
# the raw counter's name, from the catalog's row.
ERROR_COUNTERS = tuple((metric, CATALOG[metric].raw[0].name) for metric in (
    "fabric_ib_port_receive_errors_total", "fabric_ib_port_receive_remote_physical_errors_total",
    "fabric_ib_local_link_integrity_errors_total", "fabric_ib_excessive_buffer_overrun_errors_total",
    "fabric_ib_link_error_recovery_total"))


@dataclass(frozen=True)
class IbSeries:
    """The example port's series (text for promtool) and labels, shared by recordings and alerts."""
    port: dict
    wait: str
    rate: str
    symbol_errors: str
    receive_errors: str
    discards: str

    @classmethod
    def of(cls, c: Ctx) -> IbSeries:
        wait, port = c.series("fabric_ib_port_transmit_wait_total", IB_PORT)
        return cls(
            port=port, wait=wait,
            rate=c.series("fabric_ib_port_rate_bytes_per_second", IB_PORT)[0],
            symbol_errors=c.series("fabric_ib_symbol_error_total", IB_PORT)[0],
            receive_errors=c.series("fabric_ib_port_receive_errors_total", IB_PORT)[0],
            discards=c.series("fabric_ib_port_transmit_discards_total", IB_PORT)[0])


def xmit_wait_ratio(c: Ctx, s: IbSeries) -> Recording:
    w, sel = c.w, c.sel
    s_tick, _ = c.series("fabric_ib_node_xmit_wait_tick_multiplier", ("fabric", "node_guid", "node_name"))
    s_wait2, port2 = c.series("fabric_ib_port_transmit_wait_total", IB_PORT, port="2")
    s_rate2, _ = c.series("fabric_ib_port_rate_bytes_per_second", IB_PORT, port="2")
    # Lost bytes per second = rate(PortXmitWait) x (Tick+1) on Quantum-class switches (NVIDIA's
    # conversion); over the link's bytes/s this is the fraction of time the port stalled. Where the
    # tick multiplier is not readable one tick is taken as one byte time. Down ports (rate 0) drop out.
    expr = (
        f"clamp_max(("
        f"rate(fabric_ib_port_transmit_wait_total{sel()}[{w}])"
        f" * ignoring (port, peer_node_name, peer_port) group_left ()"
        f" (fabric_ib_node_xmit_wait_tick_multiplier{sel()} + 1)"
        f" or rate(fabric_ib_port_transmit_wait_total{sel()}[{w}])"
        f") / (fabric_ib_port_rate_bytes_per_second{sel()} > 0), 1)")
    return Recording(
        "fabric:ib_port_xmit_wait:ratio", expr,
        # port 1: 600 ticks/min = 10/s, tick multiplier 3 (x4) -> 40 lost bytes/s over 100 B/s = 0.4;
        # port 2 of another node without a readable tick: 25/s over 100 B/s = 0.25.
        ((s.wait, "0+600x20"), (s.rate, "100x20"), (s_tick, "3x20"),
         (s_wait2.replace(EXAMPLE["node_guid"], "0x0002c90300000002"), "0+1500x20"),
         (s_rate2.replace(EXAMPLE["node_guid"], "0x0002c90300000002"), "100x20")),
        10, ((s.port, 0.4), ({**port2, "node_guid": "0x0002c90300000002"}, 0.25)))


def port_errors_rate(c: Ctx, s: IbSeries) -> Recording:
    w, sel = c.w, c.sel
    return Recording(
        "fabric:ib_port_errors:rate",
        " or ".join(f'label_replace(rate({m}{sel()}[{w}]), "counter", "{cn}", "", "")' for m, cn in ERROR_COUNTERS),
        ((s.receive_errors, "0+120x20"),), 10, (({**s.port, "counter": ERROR_COUNTERS[0][1]}, 2.0),))


def transmit_discards_rate(c: Ctx, s: IbSeries) -> Recording:
    return Recording(
        "fabric:ib_port_transmit_discards:rate",
        f"rate(fabric_ib_port_transmit_discards_total{c.sel()}[{c.w}])",
        ((s.discards, "0+30x20"),), 10, ((s.port, 0.5),))


def xmit_wait_high(c: Ctx, s: IbSeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricIBXmitWaitHigh", "ib_xmit_wait_ratio", cap=1.0)
    return [r.alert(
        WARNING, f"fabric:ib_port_xmit_wait:ratio{c.sel()}",
        "An InfiniBand port is congested: it often has data to send and no credits.",
        IB_WHERE + f" stalled for lack of credits more than {r.percent} of the time {r.window}: congestion "
        "downstream of this port (or a slow receiver) is spreading back.",
        # 100 B/s link, no tick multiplier: ticks/s = ratio x 100.
        Scenario(((s.wait, c.ramp(r.start, r.full * 100 * 60, r.length)), (s.rate, f"100x{r.length}")), r.onset,
                 s.port))]


def bursts_repeated(c: Ctx, s: IbSeries) -> list[AlertRule]:
    n = "FabricIBBurstsRepeated"
    thr = c.s["thresholds.ib_bursts_per_hour"]
    s_bursts, _ = c.series("fabric_ib_port_bursts_total", IB_PORT)
    return [c.alert(
        n, WARNING, f"increase(fabric_ib_port_bursts_total{c.sel()}[1h]) > {fmt(thr)}",
        "An InfiniBand port keeps stalling in short bursts.",
        IB_WHERE + f" stalled in more than {fmt(thr)} separate bursts in the last hour (focus-set windows at "
        "or above focus_burst_threshold), for " + c.s.for_(n) + ": short congestion the averaged transmit-wait "
        "ratio hides, typically an incast at the start of each collective.",
        # an hour without bursts, then one more at once than the threshold allows, held past for:
        Scenario(((s_bursts, f"0x69 {math.floor(thr) + 1}x{minutes(c.s.for_(n)) + 10}"),), 70, s.port))]


def link_symbol_errors(c: Ctx, s: IbSeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricLinkSymbolErrors", "symbol_errors_per_window")
    return [r.alert(
        WARNING, f"increase(fabric_ib_symbol_error_total{c.sel()}[{c.w}])", "A link is taking bit errors.",
        IB_WHERE + f" counted more than {r.value} symbol errors in {c.w}, for {r.for_}: a failing cable, "
        "transceiver or dirty connector.",
        r.per_window(s.symbol_errors, s.port))]


def link_flapping(c: Ctx, s: IbSeries) -> list[AlertRule]:
    n = "FabricLinkFlapping"
    thr = c.s["thresholds.link_flaps_per_hour"]
    s_down, _ = c.series("fabric_ib_link_downed_total", IB_PORT)
    return [c.alert(
        n, WARNING, f"increase(fabric_ib_link_downed_total{c.sel()}[1h]) > {fmt(thr)}",
        "A link keeps going down and up.",
        IB_WHERE + f" went down more than {fmt(thr)} times in the last hour: every flap reroutes traffic "
        "and stalls collectives.",
        c.link_downs(n, s_down, s.port))]


def link_down(c: Ctx, s: IbSeries) -> list[AlertRule]:
    n = "FabricLinkDown"
    s_unexp, _ = c.series("fabric_ib_port_link_down_unexpected", IB_PORT)
    return [c.alert(
        n, WARNING, f"fabric_ib_port_link_down_unexpected{c.sel()} == 1",
        "A link that should be up is down.",
        IB_WHERE + f" is down although the topology had its link up, for {c.s.for_(n)}.",
        c.step(n, s_unexp, "0", "1", s.port))]


def link_degraded(c: Ctx, s: IbSeries) -> list[AlertRule]:
    n = "FabricLinkDegraded"
    s_deg, _ = c.series("fabric_ib_port_degraded", IB_PORT)
    return [c.alert(
        n, WARNING, f"fabric_ib_port_degraded{c.sel()} == 1",
        "A link runs below its supported width or speed.",
        IB_WHERE + f" is up but narrower or slower than both ends support, for {c.s.for_(n)}: "
        "its bandwidth is cut and it congests first.",
        c.step(n, s_deg, "0", "1", s.port))]


def port_errors(c: Ctx, s: IbSeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricPortErrors", "port_errors_per_second")
    return [r.alert(
        WARNING, f"sum without (counter) (fabric:ib_port_errors:rate{c.sel()})", "A port is receiving errors.",
        IB_WHERE + f" counts more than {r.value} receive/link errors per second {r.window} (PortRcvErrors, "
        "remote physical, link integrity, buffer overrun, link recoveries).",
        r.per_second(s.receive_errors, s.port))]


def port_discards(c: Ctx, s: IbSeries) -> list[AlertRule]:
    r = c.ramp_alert("FabricPortDiscards", "port_discards_per_second")
    return [r.alert(
        WARNING, f"fabric:ib_port_transmit_discards:rate{c.sel()}", "A port is discarding packets.",
        IB_WHERE + f" discards more than {r.value} outbound packets per second {r.window}: its link is down "
        "or congestion timed packets out.",
        r.per_second(s.discards, s.port))]


# In the order the rule groups list them.
RECORDING_BUILDERS: tuple[Callable[[Ctx, IbSeries], Recording], ...] = (
    xmit_wait_ratio, port_errors_rate, transmit_discards_rate)
ALERT_BUILDERS: tuple[Callable[[Ctx, IbSeries], list[AlertRule]], ...] = (
    xmit_wait_high, bursts_repeated, link_symbol_errors, link_flapping, link_down, link_degraded,
    port_errors, port_discards)


def ib_rules(c: Ctx) -> tuple[list[Recording], list[AlertRule]]:
    s = IbSeries.of(c)
    return [build(c, s) for build in RECORDING_BUILDERS], [rule for build in ALERT_BUILDERS for rule in build(c, s)]
