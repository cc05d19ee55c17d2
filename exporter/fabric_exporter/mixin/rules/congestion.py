"""Congestion marks per port and per fabric: the recording rules the POC report builds episodes from.

One dimensionless number per port, its *severity*: the port's congestion signal divided by its
threshold from the settings (``congestion.*``), so above 1 means congested whatever the fabric:

- IB port: transmit-wait ratio (``fabric:ib_port_xmit_wait:ratio``) / ``congestion.ib_xmit_wait_ratio``;
- RoCE NIC port: the larger of received-PFC pause-time fraction on the lossless priority /
  ``congestion.pfc_pause_fraction`` and ECN-marked share of received packets / ``congestion.ecn_marked_ratio``;
- RoCE switch, lossless queue: ECN-marked share of sent packets / ``congestion.ecn_marked_ratio``.

Per fabric: the worst port's severity, how many ports are congested, and whether the fabric is
congested at all (0/1). Episodes (runs of ``fabric:fabric_congested:bool`` = 1), their duration and
recovery time are computed from these by ``fabric_exporter.report.episodes`` over a window; see
docs/poc.md for the definitions and their limits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from ...promql import quote
from ..settings import recorded_labels
from .base import EXAMPLE, IB_PORT, NIC_PORT, SWITCH_IF, Ctx, Recording, fmt

# The recording group these rules form; the POC report reads its interval and SETTINGS_INFO from it.
CONGESTION_GROUP = "fabric-exporter.congestion.recording"
SEVERITY_RULES = ("fabric:ib_port_congestion:severity", "fabric:roce_nic_port_congestion:severity",
                  "fabric:roce_switch_queue_congestion:severity")
FABRIC_SEVERITY = "fabric:fabric_congestion:severity"
FABRIC_CONGESTED = "fabric:fabric_congested:bool"
FABRIC_CONGESTED_PORTS = "fabric:fabric_congested_ports:count"
PORT_CONGESTED = "fabric:port_congested:bool"
# One series, value 1, whose labels are the settings these rules were generated with (the ones the
# POC report depends on: settings.REPORT_SETTINGS). `fabric-exporter report` reads them from the rules
# API, where they are visible as soon as the rules are loaded; the series keeps their history.
SETTINGS_INFO = "fabric:mixin_settings:info"


def fabric_by(c: Ctx) -> str:
    """The labels a per-fabric aggregate keeps: fabric and the selector's own labels (job, ...), so the
    selector still matches the recorded series."""
    names = re.findall(r"(\w+)\s*=~?", c.s["selector"])
    return ", ".join(["fabric", *[n for n in names if n != "fabric"]])


@dataclass(frozen=True)
class CongestionSeries:
    """The example ports every scenario here is built from (text for promtool) and their labels: an IB
    port at 0.25 transmit-wait, a NIC port paused half the time with 10% of its packets marked, and a
    switch lossless queue marking a quarter of what it sends."""
    ib: tuple[tuple[str, str], ...]
    ib_port: dict
    nic: tuple[tuple[str, str], ...]
    nic_port: dict
    sw_queue: dict

    @classmethod
    def of(cls, c: Ctx) -> CongestionSeries:
        # IB: 1500 ticks/min over a 100 B/s link and no tick multiplier: ratio 0.25.
        s_wait, ib_port = c.series("fabric_ib_port_transmit_wait_total", IB_PORT)
        s_rate, _ = c.series("fabric_ib_port_rate_bytes_per_second", IB_PORT)
        # RoCE NIC: paused 30 s a minute (0.5) and 10% of packets CE-marked: the larger one counts.
        s_psec, _ = c.series("fabric_roce_nic_pfc_rx_pause_seconds_total", NIC_PORT + ("priority",), priority=c.p)
        s_ecn, nic_port = c.series("fabric_roce_ecn_marked_packets_total", NIC_PORT)
        s_rxp, _ = c.series("fabric_roce_rx_packets_total", NIC_PORT)
        return cls(ib=((s_wait, "0+1500x20"), (s_rate, "100x20")), ib_port=ib_port,
                   nic=((s_psec, "0+30x20"), (s_ecn, "0+600x20"), (s_rxp, "0+6000x20")), nic_port=nic_port,
                   sw_queue=c.series("fabric_roce_ecn_marked_packets_total", SWITCH_IF,
                                     queue=c.s["lossless_queue"])[1])

    def roce_fabric_nic(self) -> tuple[tuple[str, str], ...]:
        """The NIC port's series in a second fabric, "roce"."""
        return tuple({k.replace(f'fabric={quote(EXAMPLE["fabric"])}', 'fabric="roce"'): v
                      for k, v in self.nic}.items())


def ib_port_severity(c: Ctx, s: CongestionSeries) -> list[Recording]:
    t_ib = c.s["congestion.ib_xmit_wait_ratio"]
    return [Recording(
        SEVERITY_RULES[0], f"fabric:ib_port_xmit_wait:ratio{c.sel()} / {fmt(t_ib)}",
        s.ib, 10, ((s.ib_port, 0.25 / t_ib),))]


def nic_port_severity(c: Ctx, s: CongestionSeries) -> list[Recording]:
    t_pfc, t_ecn = c.s["congestion.pfc_pause_fraction"], c.s["congestion.ecn_marked_ratio"]
    # A share above 1 (marks counted in one poll, packets in another, or no packets at all: +Inf)
    # is not a measurement: it is dropped rather than counted as congestion.
    pause_sel = c.sel(f'priority={quote(c.p)},direction="rx",host!=""')
    host_sel = c.sel('host!=""')
    return [Recording(
        SEVERITY_RULES[1],
        f"max without (priority, direction) ("
        f"clamp_max(fabric:roce_pfc_pause_time:fraction{pause_sel}, 1) / {fmt(t_pfc)}"
        f" or (fabric:roce_ecn_marked:ratio{host_sel} <= 1) / {fmt(t_ecn)})",
        s.nic, 10, ((s.nic_port, max(0.5 / t_pfc, 0.1 / t_ecn)),))]


def switch_queue_severity(c: Ctx, s: CongestionSeries) -> list[Recording]:
    t_ecn = c.s["congestion.ecn_marked_ratio"]
    # Switch lossless queue: 60 of 240 packets a minute CE-marked (0.25).
    queue = c.s["lossless_queue"]
    queue_sel = c.sel(f'switch!="",queue={quote(queue)}')
    s_sw_ecn, _ = c.series("fabric_roce_ecn_marked_packets_total", SWITCH_IF, queue=queue)
    s_sw_tx, _ = c.series("fabric_roce_switch_queue_tx_packets_total", SWITCH_IF, queue=queue)
    sw_series = ((s_sw_ecn, "0+60x20"), (s_sw_tx, "0+240x20"))
    # and a second switch whose packet counter stands still while marks grow (+Inf): no severity
    s_inf_ecn, _ = c.series("fabric_roce_ecn_marked_packets_total", SWITCH_IF, queue=queue, switch="leaf-2")
    s_inf_tx, _ = c.series("fabric_roce_switch_queue_tx_packets_total", SWITCH_IF, queue=queue, switch="leaf-2")
    return [Recording(
        SEVERITY_RULES[2],
        f"(fabric:roce_ecn_marked:ratio{queue_sel} <= 1) / {fmt(t_ecn)}",
        sw_series + ((s_inf_ecn, "0+60x20"), (s_inf_tx, "5x20")), 10, ((s.sw_queue, 0.25 / t_ecn),))]


def fabric_marks(c: Ctx, s: CongestionSeries) -> list[Recording]:
    """Per port 0/1, and per fabric the worst severity, the congested ports and congested at all."""
    sel = c.sel
    t_ib, t_pfc, t_ecn = (c.s["congestion.ib_xmit_wait_ratio"], c.s["congestion.pfc_pause_fraction"],
                          c.s["congestion.ecn_marked_ratio"])
    by = fabric_by(c)
    # Per port 0/1. Fabric "lab": the IB port above (congested) and a quiet IB port; fabric
    # "roce": the NIC port (congested).
    s_wait2, port2 = c.series("fabric_ib_port_transmit_wait_total", IB_PORT, port="2")
    s_rate2, _ = c.series("fabric_ib_port_rate_bytes_per_second", IB_PORT, port="2")
    roce_nic = s.roce_fabric_nic()
    mixed = s.ib + ((s_wait2, "0+1x20"), (s_rate2, "100x20")) + roce_nic
    any_severity = sel(f'__name__=~"{"|".join(SEVERITY_RULES)}"')
    keep = {k: v for k, v in c.base.items() if k in by.split(", ")}
    lab, roce = {**keep, "fabric": EXAMPLE["fabric"]}, {**keep, "fabric": "roce"}
    # Quiet fabric "lab" (both ports far below the threshold) and congested "roce".
    quiet = ((s.ib[0][0], "0+1x20"), (s.ib[1][0], "100x20")) + roce_nic
    return [
        Recording(
            PORT_CONGESTED, f"{any_severity} > bool 1",
            mixed, 10, ((s.ib_port, 1.0), (port2, 0.0), ({**s.nic_port, "fabric": "roce"}, 1.0))),
        Recording(
            FABRIC_SEVERITY,
            f"max by ({by}) ({any_severity})",
            mixed, 10, ((lab, 0.25 / t_ib), (roce, max(0.5 / t_pfc, 0.1 / t_ecn)))),
        Recording(
            FABRIC_CONGESTED_PORTS, f"sum by ({by}) ({PORT_CONGESTED}{sel()})",
            mixed, 10, ((lab, 1.0), (roce, 1.0))),
        Recording(
            FABRIC_CONGESTED, f"{FABRIC_SEVERITY}{sel()} > bool 1",
            quiet, 10, ((lab, 0.0), (roce, 1.0))),
    ]


def settings_info(c: Ctx, s: CongestionSeries) -> list[Recording]:
    settings_labels = recorded_labels(c.s)
    return [Recording(SETTINGS_INFO, "vector(1)", (), 1, ((settings_labels, 1.0),),
                      labels=tuple(sorted(settings_labels.items())))]


# In the order the recording group lists them (per fabric after the per-port severities they read).
BUILDERS: tuple[Callable[[Ctx, CongestionSeries], list[Recording]], ...] = (
    ib_port_severity, nic_port_severity, switch_queue_severity, fabric_marks, settings_info)


def congestion_rules(c: Ctx) -> list[Recording]:
    s = CongestionSeries.of(c)
    return [rule for build in BUILDERS for rule in build(c, s)]
