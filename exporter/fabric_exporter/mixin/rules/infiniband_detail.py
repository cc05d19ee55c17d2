"""InfiniBand error-detail rules (the collector's ``error_details`` option): a port receiving
malformed or misrouted packets.

PortRcvErrorDetails splits PortRcvErrors by cause. Local physical errors and buffer overruns are the
link's (FabricPortErrors, FabricLinkSymbolErrors cover them); malformed packets and packets the port
cannot map to a VL, route to a LID or that would loop back are a peer's or the subnet manager's
configuration: no healthy fabric counts any, so the alert fires on a rise of their sum."""

from __future__ import annotations

from .base import IB_PORT, WARNING, AlertRule, Ctx, Recording, Scenario
from .infiniband import IB_WHERE

# The causes the alert adds up, with the name the description gives each.
MISROUTED = (
    ("fabric_ib_port_receive_malformed_packet_errors_total", "malformed"),
    ("fabric_ib_port_receive_vl_mapping_errors_total", "VL mapping"),
    ("fabric_ib_port_receive_dlid_mapping_errors_total", "DLID mapping"),
    ("fabric_ib_port_receive_looping_errors_total", "looping"),
)


def ib_detail_rules(c: Ctx) -> tuple[list[Recording], list[AlertRule]]:
    w, sel = c.w, c.sel
    series = [c.series(metric, IB_PORT) for metric, _ in MISROUTED]
    port = series[0][1]
    measure = " + ".join(f"increase({metric}{sel()}[{w}])" for metric, _ in MISROUTED)
    r = c.ramp_alert("FabricIBPortMalformedOrMisrouted", "ib_malformed_or_misrouted_per_window")
    scenario = r.per_window(series[0][0], port)
    # the other causes stay 0 (the detail read publishes all of them for a port together)
    zeros = tuple((s, f"0x{r.length}") for s, _labels in series[1:])
    alert = r.alert(
        WARNING, f"({measure})",
        "An InfiniBand port receives malformed or misrouted packets.",
        IB_WHERE + f" counted more than {r.value} malformed, VL-mapping, DLID-mapping or looping packets "
        f"{r.window} (PortRcvErrorDetails): the peer sends packets the port cannot accept or route, "
        "a configuration fault (SL2VL, routing tables, MTU), not a cable.",
        Scenario(scenario.series + zeros, scenario.onset, scenario.labels))
    return [], [alert]
