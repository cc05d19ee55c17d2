"""gnmi_switch's dialect table: the paths each switch OS serves and the catalog series its fields
and leaves become (sonic-gnmi's COUNTERS_DB tables; the OpenConfig and NVIDIA Cumulus paths)."""

from __future__ import annotations

from dataclasses import dataclass

from ...parsers import gnmi as p

PAUSE_US = 1e-6

# -- SONiC COUNTERS_DB fields -> catalog (sonic-gnmi testdata/COUNTERS:*, SAI stat names) ---------------

SONIC_PORT_FIELDS = {
    "SAI_PORT_STAT_IF_IN_OCTETS": "fabric_roce_rx_bytes_total",
    "SAI_PORT_STAT_IF_OUT_OCTETS": "fabric_roce_tx_bytes_total",
    "SAI_PORT_STAT_IF_IN_DISCARDS": "fabric_roce_rx_discards_total",
    "SAI_PORT_STAT_IF_OUT_DISCARDS": "fabric_roce_tx_discards_total",
    "SAI_PORT_STAT_IF_IN_ERRORS": "fabric_roce_switch_if_rx_errors_total",
    "SAI_PORT_STAT_IF_OUT_ERRORS": "fabric_roce_switch_if_tx_errors_total",
}
# the same sums SONiC's snmpagent gives ifHCIn/Out{Ucast,Multicast,Broadcast}Pkts (published only whole)
SONIC_PORT_SUMS = {
    "fabric_roce_rx_packets_total": ("SAI_PORT_STAT_IF_IN_UCAST_PKTS", "SAI_PORT_STAT_IF_IN_MULTICAST_PKTS",
                                     "SAI_PORT_STAT_IF_IN_BROADCAST_PKTS"),
    "fabric_roce_tx_packets_total": ("SAI_PORT_STAT_IF_OUT_UCAST_PKTS", "SAI_PORT_STAT_IF_OUT_MULTICAST_PKTS",
                                     "SAI_PORT_STAT_IF_OUT_BROADCAST_PKTS"),
}
SONIC_PFC_FIELDS = {f"SAI_PORT_STAT_PFC_{prio}_{d.upper()}_PKTS": (f"fabric_roce_pfc_{d}_pause_frames_total", str(prio))
                    for prio in range(8) for d in ("rx", "tx")}
SONIC_QUEUE_FIELDS = {
    "SAI_QUEUE_STAT_PACKETS": "fabric_roce_switch_queue_tx_packets_total",
    "SAI_QUEUE_STAT_BYTES": "fabric_roce_switch_queue_tx_bytes_total",
    "SAI_QUEUE_STAT_DROPPED_PACKETS": "fabric_roce_switch_queue_dropped_packets_total",
    "SAI_QUEUE_STAT_DROPPED_BYTES": "fabric_roce_switch_queue_dropped_bytes_total",
    "SAI_QUEUE_STAT_WRED_DROPPED_PACKETS": "fabric_roce_switch_queue_wred_dropped_packets_total",
    "SAI_QUEUE_STAT_WRED_DROPPED_BYTES": "fabric_roce_switch_queue_wred_dropped_bytes_total",
    "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": "fabric_roce_ecn_marked_packets_total",
    "SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES": "fabric_roce_switch_queue_ecn_marked_bytes_total",
}
SONIC_PFCWD_FIELDS = {
    "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED": "fabric_roce_switch_pfcwd_storms_detected_total",
    "PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED": "fabric_roce_switch_pfcwd_storms_restored_total",
    "PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS": "fabric_roce_switch_pfcwd_tx_dropped_packets_total",
    "PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS": "fabric_roce_switch_pfcwd_rx_dropped_packets_total",
}
PFCWD_STATUS = {"operational": 0.0, "stormed": 1.0}
SONIC_PG_FIELDS = {
    "SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES": "shared",
    "SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES": "headroom",
}
QUEUE_CAST = {"SAI_QUEUE_TYPE_UNICAST": "UC", "SAI_QUEUE_TYPE_MULTICAST": "MC", "SAI_QUEUE_TYPE_ALL": "ALL"}

# -- OpenConfig leaves -> catalog ------------------------------------------------------------------------

OC_INTERFACE = {
    "counters/in-octets": "fabric_roce_rx_bytes_total",
    "counters/out-octets": "fabric_roce_tx_bytes_total",
    "counters/in-discards": "fabric_roce_rx_discards_total",
    "counters/out-discards": "fabric_roce_tx_discards_total",
    "counters/in-errors": "fabric_roce_switch_if_rx_errors_total",
    "counters/out-errors": "fabric_roce_switch_if_tx_errors_total",
}
OC_INTERFACE_SUMS = {
    "fabric_roce_rx_packets_total": ("counters/in-unicast-pkts", "counters/in-multicast-pkts",
                                     "counters/in-broadcast-pkts"),
    "fabric_roce_tx_packets_total": ("counters/out-unicast-pkts", "counters/out-multicast-pkts",
                                     "counters/out-broadcast-pkts"),
}
# openconfig-interfaces oper-status enum == IF-MIB ifOperStatus codes
OPER_STATUS = {"UP": 1, "DOWN": 2, "TESTING": 3, "UNKNOWN": 4, "DORMANT": 5, "NOT_PRESENT": 6, "LOWER_LAYER_DOWN": 7}
OC_QUEUE = {
    "transmit-pkts": ("fabric_roce_switch_queue_tx_packets_total", 1.0),
    "transmit-octets": ("fabric_roce_switch_queue_tx_bytes_total", 1.0),
    "dropped-pkts": ("fabric_roce_switch_queue_dropped_packets_total", 1.0),
    "wred-dropped-pkts": ("fabric_roce_switch_queue_wred_dropped_packets_total", 1.0),
    "ecn-marked-pkts": ("fabric_roce_ecn_marked_packets_total", 1.0),
}
# Cumulus: its tail drop is no-buffer-uc-dropped-pkts (no standard dropped-pkts leaf), plus NVIDIA leaves
CUMULUS_QUEUE = {**{k: v for k, v in OC_QUEUE.items() if k != "dropped-pkts"},
                 "no-buffer-uc-dropped-pkts": ("fabric_roce_switch_queue_dropped_packets_total", 1.0),
                 "instant-queue-len": ("fabric_roce_switch_queue_occupancy_bytes", 1.0)}
CUMULUS_INTERFACE_EXTRA = {"counters/tx-wait": "fabric_roce_switch_if_tx_wait_byte_times_total"}
CUMULUS_PRIORITY = {
    "counters/in-pause-pkts": ("fabric_roce_pfc_rx_pause_frames_total", 1.0),
    "counters/out-pause-pkts": ("fabric_roce_pfc_tx_pause_frames_total", 1.0),
    "in-pause-duration": ("fabric_roce_switch_pfc_rx_pause_seconds_total", PAUSE_US),
    "out-pause-duration": ("fabric_roce_switch_pfc_tx_pause_seconds_total", PAUSE_US),
}
WATERMARK_LEAF = "shared-buffer/data/max-occupancy-since-last-sample"


# -- the dialect table ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class GnmiPath:
    """One subscribed path: ``xpath`` below ``target`` (the prefix's target, SONiC's DB name)."""
    target: str
    xpath: str
    on_change: bool = False  # ON_CHANGE in stream mode (oper status), else SAMPLE


@dataclass(frozen=True)
class Dialect:
    name: str
    paths: dict[str, GnmiPath]  # the ``tables`` option's words -> path
    default_mode: str
    source: str  # what its decoding reports skipped values under
    interface_leaves: dict[str, str] = None  # type: ignore[assignment]
    queue_leaves: dict[str, tuple[str, float]] = None  # type: ignore[assignment]
    priority_leaves: dict[str, tuple[str, float]] = None  # type: ignore[assignment]


SONIC_PATHS = {
    "ports": GnmiPath("COUNTERS_DB", "COUNTERS/Ethernet*"),
    "queues": GnmiPath("COUNTERS_DB", "COUNTERS/Ethernet*/Queues"),
    "pfcwd": GnmiPath("COUNTERS_DB", "COUNTERS/Ethernet*/Pfcwd"),
    "pg_watermarks": GnmiPath("COUNTERS_DB", "PERIODIC_WATERMARKS/Ethernet*/PriorityGroups"),
}
# read once (and again when a key is unknown): port aliases and queue types
SONIC_NAME_MAPS = (GnmiPath("CONFIG_DB", "PORT"), GnmiPath("COUNTERS_DB", "COUNTERS_QUEUE_NAME_MAP"),
                   GnmiPath("COUNTERS_DB", "COUNTERS_QUEUE_TYPE_MAP"))
OC_PATHS = {
    "interfaces": GnmiPath("", "/interfaces/interface[name=*]/state/counters"),
    "oper_status": GnmiPath("", "/interfaces/interface[name=*]/state/oper-status", on_change=True),
    "queues": GnmiPath("", "/qos/interfaces/interface[interface-id=*]/output/queues/queue[name=*]/state"),
}
CUMULUS_PATHS = {
    **OC_PATHS,
    "priorities": GnmiPath("", "/qos/interfaces/interface[interface-id=*]/switch-priority[priority=*]/state"),
    "pg_watermarks": GnmiPath("", "/qos/interfaces/interface[interface-id=*]/input/priority-group[pg-id=*]/state/"
                                  + WATERMARK_LEAF),
}

DIALECTS: dict[str, Dialect] = {
    "sonic": Dialect("sonic", SONIC_PATHS, "poll", p.SOURCE_SONIC),
    "openconfig": Dialect("openconfig", OC_PATHS, "stream", p.SOURCE_OPENCONFIG, OC_INTERFACE, OC_QUEUE, {}),
    "cumulus": Dialect("cumulus", CUMULUS_PATHS, "stream", p.SOURCE_OPENCONFIG,
                       {**OC_INTERFACE, **CUMULUS_INTERFACE_EXTRA}, CUMULUS_QUEUE, CUMULUS_PRIORITY),
}
