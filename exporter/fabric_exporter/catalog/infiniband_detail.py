"""Catalog entries for the infiniband collector's error-detail read (option ``error_details``).

PortRcvErrorDetails (``perfquery -E``) and PortXmitDiscardDetails (``perfquery -D``) split the
aggregate PortRcvErrors and PortXmitDiscards by cause (IBA 1.3 vol. 1, 16.1.4): a port whose
malformed-packet or VL-mapping errors rise is a misconfigured or misbehaving peer, not a bad cable.
Every field is 16 bits and stops at 65535 (it does not wrap). Same port labels as the sweep.
"""

from .infiniband import IB_PORT, SRC
from .spec import MetricSpec, RawCounter

RCV_ERROR_DETAILS = "perfquery -E"  # PortRcvErrorDetails
XMIT_DISCARD_DETAILS = "perfquery -D"  # PortXmitDiscardDetails


def _detail(name: str, help_text: str, raw: str, source: str) -> MetricSpec:
    return MetricSpec(name, "counter", "packets", help_text + " 16 bits: stops at 65535.", (IB_PORT,), SRC,
                      raw=(RawCounter(raw, source, 16),))


METRICS: list[MetricSpec] = [
    _detail("fabric_ib_port_receive_local_physical_errors_total",
            "Received packets with a local physical error: ICRC, VCRC, FCCRC or a bad delimiter "
            "(PortRcvErrorDetails.{raw}).", "PortLocalPhysicalErrors", RCV_ERROR_DETAILS),
    _detail("fabric_ib_port_receive_malformed_packet_errors_total",
            "Received packets that were malformed: bad length, LRH/GRH fields, VL 15 misuse "
            "(PortRcvErrorDetails.{raw}).", "PortMalformedPktErrors", RCV_ERROR_DETAILS),
    _detail("fabric_ib_port_receive_buffer_overrun_errors_total",
            "Received packets dropped because the receive buffer overran: the peer sent without credits "
            "(PortRcvErrorDetails.{raw}).", "PortBufferOverrunErrors", RCV_ERROR_DETAILS),
    _detail("fabric_ib_port_receive_dlid_mapping_errors_total",
            "Received packets whose destination LID the switch has no route for "
            "(PortRcvErrorDetails.{raw}).", "PortDLIDMappingErrors", RCV_ERROR_DETAILS),
    _detail("fabric_ib_port_receive_vl_mapping_errors_total",
            "Received packets dropped because their SL maps to no VL of the output port (SL2VL table) "
            "(PortRcvErrorDetails.{raw}).", "PortVLMappingErrors", RCV_ERROR_DETAILS),
    _detail("fabric_ib_port_receive_looping_errors_total",
            "Received packets dropped because they would leave by the port they came in on "
            "(PortRcvErrorDetails.{raw}).", "PortLoopingErrors", RCV_ERROR_DETAILS),
    _detail("fabric_ib_port_transmit_inactive_discards_total",
            "Outbound packets discarded because the port was not Active "
            "(PortXmitDiscardDetails.{raw}).", "PortInactiveDiscards", XMIT_DISCARD_DETAILS),
    _detail("fabric_ib_port_transmit_neighbor_mtu_discards_total",
            "Outbound packets discarded because they exceed the neighbour's MTU "
            "(PortXmitDiscardDetails.{raw}).", "PortNeighborMTUDiscards", XMIT_DISCARD_DETAILS),
    _detail("fabric_ib_port_transmit_lifetime_limit_discards_total",
            "Outbound packets a switch discarded because they outlived the switch lifetime limit "
            "(PortXmitDiscardDetails.{raw}).", "PortSwLifetimeLimitDiscards",
            XMIT_DISCARD_DETAILS),
    _detail("fabric_ib_port_transmit_head_of_queue_lifetime_discards_total",
            "Outbound packets a switch discarded because they waited at the head of a VL queue longer "
            "than its HOQ lifetime: a stuck or credit-starved link "
            "(PortXmitDiscardDetails.{raw}).", "PortSwHOQLifetimeLimitDiscards",
            XMIT_DISCARD_DETAILS),
]
