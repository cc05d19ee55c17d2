"""Switch-only RoCE metrics (SNMP ``snmp_switch`` and SSH ``switch_cli`` collectors).

Meanings shared with NIC ports (PFC pause frames per priority, bytes, packets, discards, ECN marks)
use the names in ``roce.py``. Everything here exists only on a switch: per-queue egress counters,
the PFC watchdog, interface state and speed, errors, the SNMP agent's uptime.

Queue label values follow SONiC's CLI naming on every source: ``UC<n>`` for unicast queue n and
``MC<n>`` for multicast queue n (0-based), so an SNMP and a CLI series for one queue are equal.
"""

from .gnmi_paths import (
    CUMULUS,
    OC_INTERFACE,
    OC_PG,
    OC_PRIORITY,
    OC_QUEUE,
    OPENCONFIG_ONLY,
    SONIC_PFCWD as GNMI_SONIC_PFCWD,
    SONIC_PG_WATERMARKS,
    SONIC_PORTS,
    SONIC_QUEUES,
)
from .labels import SWITCH_IF, SWITCH_IF_QUEUE, SWITCH_IF_TRAFFIC
from .mib import (
    ARISTA_EGRESS_QUEUE,
    ARISTA_PFC_WATCHDOG,
    CISCO_QOS_STATS,
    IEEE_PFC,
    IF,
    IF_X,
    LLDP_LOC_PORT,
    LLDP_REM,
    LLDP_V2_REM,
    SYSTEM,
)
from .spec import MetricSpec, RawCounter

SNMP = "snmp_switch"
CLI = "switch_cli"
GNMI = "gnmi_switch"

# The switch itself (one series per switch).
SWITCH = ("fabric", "switch")
# One interface's facts that are strings (ifAlias, ifIndex) carried as labels of an _info series.
SWITCH_IF_INFO = SWITCH_IF + ("ifindex", "alias")
# The LLDP neighbour behind an interface: the host (scheduler's node name) and its port.
SWITCH_IF_NEIGHBOR = SWITCH_IF + ("neighbor_host", "neighbor_port")


def _csq(statistic: str) -> RawCounter:
    """One statistic of CISCO-SWITCH-QOS-MIB csqIfQosGroupStatsValue (its QosStatsType index component)."""
    return CISCO_QOS_STATS.split("csqIfQosGroupStatsValue", 4, statistic)

METRICS = [
    # --- the agent / switch -------------------------------------------------------------------
    MetricSpec("fabric_roce_switch_agent_uptime_seconds", "gauge", "seconds",
               "Time since the SNMP agent (re)started ({raw}.0 / 100); a drop means a restart "
               "and counters may have reset.",
               (SWITCH,), (SNMP,), raw=(SYSTEM.column("sysUpTime", 3, scale=0.01),)),
    MetricSpec("fabric_roce_switch_snmp_poll_varbinds", "gauge", "",
               "Varbinds the last SNMP poll read from this switch's tables and scalars (CPU cost grows with it, ~0.1 ms each).",
               (SWITCH,), (SNMP,)),
    MetricSpec("fabric_roce_switch_snmp_poll_requests", "gauge", "",
               "SNMP requests (GET/GETBULK PDUs) the last poll of this switch sent, retries not counted.",
               (SWITCH,), (SNMP,)),
    # --- interfaces (IF-MIB) -------------------------------------------------------------------
    MetricSpec("fabric_roce_switch_if_info", "info", "",
               "Interface identity: ifIndex and operator description ({raw}); value 1.",
               (SWITCH_IF_INFO,), (SNMP,), raw=(IF_X.column("ifName", 1), IF_X.column("ifAlias", 18))),
    MetricSpec("fabric_roce_switch_if_neighbor_info", "info", "",
               "The LLDP neighbour behind the interface: its system name (mapped to the scheduler's node name by "
               "the option neighbor_name) and port (the port ID, or the port description when the ID is a MAC "
               "address); over SNMP from {raw}, or from SONiC 'show lldp table'. "
               "Joins switch interfaces to hosts (and jobs); value 1.",
               (SWITCH_IF_NEIGHBOR,), (SNMP, CLI),
               raw=(LLDP_REM.column("lldpRemSysName", 9), LLDP_REM.column("lldpRemPortIdSubtype", 6),
                    LLDP_REM.column("lldpRemPortId", 7), LLDP_REM.column("lldpRemPortDesc", 8),
                    LLDP_LOC_PORT.column("lldpLocPortIdSubtype", 2), LLDP_LOC_PORT.column("lldpLocPortId", 3),
                    LLDP_V2_REM.column("lldpV2RemSysName", 10), LLDP_V2_REM.column("lldpV2RemPortIdSubtype", 7),
                    LLDP_V2_REM.column("lldpV2RemPortId", 8), LLDP_V2_REM.column("lldpV2RemPortDesc", 9))),
    MetricSpec("fabric_roce_switch_if_oper_status", "gauge", "",
               "Interface operational state as {raw} codes: 1 up, 2 down, 3 testing, 4 unknown, "
               "5 dormant, 6 notPresent, 7 lowerLayerDown.",
               (SWITCH_IF,), (SNMP, GNMI), raw=(IF.column("ifOperStatus", 8), OC_INTERFACE.field("oper-status"))),
    MetricSpec("fabric_roce_switch_if_speed_bytes_per_second", "gauge", "bytes_per_second",
               "Interface speed ({raw} Mb/s x 125000); the denominator of utilization.",
               (SWITCH_IF,), (SNMP,), raw=(IF_X.column("ifHighSpeed", 15, scale=1e6 / 8),)),
    MetricSpec("fabric_roce_switch_if_rx_errors_total", "counter", "packets",
               "Received packets with errors ({raw}).",
               (SWITCH_IF,), (SNMP, GNMI),
               raw=(IF.column("ifInErrors", 14), SONIC_PORTS.field("SAI_PORT_STAT_IF_IN_ERRORS"),
                    OC_INTERFACE.field("counters/in-errors"))),
    MetricSpec("fabric_roce_switch_if_tx_errors_total", "counter", "packets",
               "Packets that could not be sent because of errors ({raw}).",
               (SWITCH_IF,), (SNMP, GNMI),
               raw=(IF.column("ifOutErrors", 20), SONIC_PORTS.field("SAI_PORT_STAT_IF_OUT_ERRORS"),
                    OC_INTERFACE.field("counters/out-errors"))),
    # --- drops by cause, per interface (Cumulus switchd's hardware counters) ---------------------
    MetricSpec("fabric_roce_switch_if_rx_buffer_drops_total", "counter", "packets",
               "Received packets dropped for lack of ingress buffer ({raw}); "
               "one cause among those fabric_roce_rx_discards_total counts together.",
               (SWITCH_IF,), (CLI,)),
    MetricSpec("fabric_roce_switch_if_tx_queue_drops_total", "counter", "packets",
               "Packets dropped in the interface's egress queues, all queues together ({raw}: tail and WRED "
               "drops of a congested queue); per queue, where the switch "
               "gives it, is fabric_roce_switch_queue_dropped_packets_total.",
               (SWITCH_IF,), (CLI,)),
    # --- RoCE traffic on a Cumulus port (NVUE 'nv show interface <swp> qos roce counters') ----------
    MetricSpec("fabric_roce_switch_if_ecn_marked_packets_total", "counter", "packets",
               "Packets the interface sent CE-marked, all queues together ({raw}); per queue, where the switch "
               "gives it, is "
               "fabric_roce_ecn_marked_packets_total.",
               (SWITCH_IF,), (CLI,)),
    MetricSpec("fabric_roce_switch_if_rx_traffic_packets_total", "counter", "packets",
               "Packets received by kind of traffic: traffic=\"roce\" on the RoCE priority, \"non_roce\" the "
               "rest ({raw}).",
               (SWITCH_IF_TRAFFIC,), (CLI,)),
    MetricSpec("fabric_roce_switch_if_tx_traffic_packets_total", "counter", "packets",
               "Packets sent by kind of traffic: traffic=\"roce\" on the RoCE priority, \"cnp\" congestion "
               "notification packets ({raw}).",
               (SWITCH_IF_TRAFFIC,), (CLI,)),
    MetricSpec("fabric_roce_switch_if_rx_no_buffer_discards_total", "counter", "packets",
               "Received packets discarded for lack of ingress buffer, by kind of traffic ({raw}); all kinds "
               "together is fabric_roce_switch_if_rx_buffer_drops_total.",
               (SWITCH_IF_TRAFFIC,), (CLI,)),
    MetricSpec("fabric_roce_switch_if_tx_no_buffer_discards_total", "counter", "packets",
               "Unicast packets discarded on transmit for lack of egress buffer, by kind of traffic ({raw}): "
               "RoCE packets lost in the switch despite PFC.",
               (SWITCH_IF_TRAFFIC,), (CLI,)),
    # --- PFC summed over priorities (IEEE8021-PFC-MIB has no per-priority counters) -------------
    MetricSpec("fabric_roce_switch_pfc_rx_frames_total", "counter", "frames",
               "PFC frames received on the interface, all priorities together ({raw}); per-priority "
               "counts are fabric_roce_pfc_rx_pause_frames_total.",
               (SWITCH_IF,), (SNMP, CLI),
               raw=(IEEE_PFC.column("ieee8021PfcIndications", 3),)),
    MetricSpec("fabric_roce_switch_pfc_tx_frames_total", "counter", "frames",
               "PFC frames sent by the interface, all priorities together ({raw}); per-priority "
               "counts are fabric_roce_pfc_tx_pause_frames_total.",
               (SWITCH_IF,), (SNMP, CLI),
               raw=(IEEE_PFC.column("ieee8021PfcRequests", 2),)),
    # --- egress queues ----------------------------------------------------------------------------
    MetricSpec("fabric_roce_switch_queue_tx_packets_total", "counter", "packets",
               "Packets sent from the egress queue ({raw}).",
               (SWITCH_IF_QUEUE,), (SNMP, CLI, GNMI),
               raw=(_csq("ucastSentPkts"), _csq("mcastSentPkts"),
                    ARISTA_EGRESS_QUEUE.column("aristaEgressQueuePkts", 4))
               + (SONIC_QUEUES.field("SAI_QUEUE_STAT_PACKETS"), OC_QUEUE.field("transmit-pkts"))),
    MetricSpec("fabric_roce_switch_queue_tx_bytes_total", "counter", "bytes",
               "Bytes sent from the egress queue ({raw}).",
               (SWITCH_IF_QUEUE,), (SNMP, CLI, GNMI),
               raw=(_csq("ucastSentBytes"), _csq("mcastSentBytes"),
                    ARISTA_EGRESS_QUEUE.column("aristaEgressQueueBytes", 5))
               + (SONIC_QUEUES.field("SAI_QUEUE_STAT_BYTES"), OC_QUEUE.field("transmit-octets"))),
    MetricSpec("fabric_roce_switch_queue_dropped_packets_total", "counter", "packets",
               "Packets dropped by the egress queue ({raw}).",
               (SWITCH_IF_QUEUE,), (SNMP, CLI, GNMI),
               raw=(_csq("ucastDroppedPkts"), _csq("mcastDroppedPkts"),
                    ARISTA_EGRESS_QUEUE.column("aristaEgressQueuePktsDropped", 6))
               # Cumulus counts its tail drops in its own leaf, not the standard one
               + (SONIC_QUEUES.field("SAI_QUEUE_STAT_DROPPED_PACKETS"),
                  OC_QUEUE.field("dropped-pkts", dialects=OPENCONFIG_ONLY),
                  OC_QUEUE.field("no-buffer-uc-dropped-pkts", dialects=CUMULUS))),
    MetricSpec("fabric_roce_switch_queue_dropped_bytes_total", "counter", "bytes",
               "Bytes dropped by the egress queue ({raw}).",
               (SWITCH_IF_QUEUE,), (SNMP, CLI, GNMI),
               raw=(_csq("ucastDroppedBytes"), _csq("mcastDroppedBytes"),
                    ARISTA_EGRESS_QUEUE.column("aristaEgressQueueBytesDropped", 7),
                    SONIC_QUEUES.field("SAI_QUEUE_STAT_DROPPED_BYTES"))),
    # EOS counts what entered the queue, SONiC/Cisco what left it: not the same count, so own names.
    MetricSpec("fabric_roce_switch_queue_enqueued_packets_total", "counter", "packets",
               "Packets admitted to the egress queue ({raw}); "
               "packets the queue dropped are not in it.",
               (SWITCH_IF_QUEUE,), (CLI,)),
    MetricSpec("fabric_roce_switch_queue_enqueued_bytes_total", "counter", "bytes",
               "Bytes admitted to the egress queue ({raw}).",
               (SWITCH_IF_QUEUE,), (CLI,)),
    # VoQ platforms (EOS 7280R/7500R): congestion drops happen in the ingress chips' virtual output
    # queues for an egress port and class, not in the egress queue; interface = the egress port.
    MetricSpec("fabric_roce_switch_voq_packets_total", "counter", "packets",
               "Packets queued in the virtual output queues for this egress interface and class, summed over "
               "ingress chips ({raw}).",
               (SWITCH_IF_QUEUE,), (CLI,)),
    MetricSpec("fabric_roce_switch_voq_bytes_total", "counter", "bytes",
               "Bytes queued in the virtual output queues for this egress interface and class "
               "({raw}).",
               (SWITCH_IF_QUEUE,), (CLI,)),
    MetricSpec("fabric_roce_switch_voq_dropped_packets_total", "counter", "packets",
               "Packets dropped in the virtual output queues for this egress interface and class: congestion "
               "drops of a VoQ switch ({raw}).",
               (SWITCH_IF_QUEUE,), (CLI,)),
    MetricSpec("fabric_roce_switch_voq_dropped_bytes_total", "counter", "bytes",
               "Bytes dropped in the virtual output queues for this egress interface and class "
               "({raw}).",
               (SWITCH_IF_QUEUE,), (CLI,)),
    MetricSpec("fabric_roce_switch_queue_wred_dropped_packets_total", "counter", "packets",
               "Packets WRED dropped from the egress queue ({raw}).",
               (SWITCH_IF_QUEUE,), (CLI, GNMI),
               raw=(SONIC_QUEUES.field("SAI_QUEUE_STAT_WRED_DROPPED_PACKETS"), OC_QUEUE.field("wred-dropped-pkts"))),
    MetricSpec("fabric_roce_switch_queue_wred_dropped_bytes_total", "counter", "bytes",
               "Bytes WRED dropped from the egress queue ({raw}).",
               (SWITCH_IF_QUEUE,), (CLI, GNMI),
               raw=(SONIC_QUEUES.field("SAI_QUEUE_STAT_WRED_DROPPED_BYTES"),)),
    MetricSpec("fabric_roce_switch_queue_ecn_marked_bytes_total", "counter", "bytes",
               "Bytes ECN CE-marked in the egress queue ({raw}); "
               "packets are fabric_roce_ecn_marked_packets_total.",
               (SWITCH_IF_QUEUE,), (CLI, GNMI),
               raw=(SONIC_QUEUES.field("SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES"),)),
    # --- PFC watchdog -----------------------------------------------------------------------------
    MetricSpec("fabric_roce_switch_pfcwd_storms_detected_total", "counter", "events",
               "PFC storms the watchdog detected on the queue ({raw}).",
               (SWITCH_IF_QUEUE,), (SNMP, CLI, GNMI),
               raw=(ARISTA_PFC_WATCHDOG.column("aristaPfcWatchdogTxQueueStuckCount", 4),)
               + (GNMI_SONIC_PFCWD.field("PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED"),)),
    MetricSpec("fabric_roce_switch_pfcwd_storms_restored_total", "counter", "events",
               "PFC storms the watchdog saw end on the queue ({raw}).",
               (SWITCH_IF_QUEUE,), (SNMP, CLI, GNMI),
               raw=(ARISTA_PFC_WATCHDOG.column("aristaPfcWatchdogTxQueueRecoveredCount", 5),)
               + (GNMI_SONIC_PFCWD.field("PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED"),)),
    MetricSpec("fabric_roce_switch_pfcwd_tx_dropped_packets_total", "counter", "packets",
               "Packets the watchdog dropped on transmit while the queue was in a storm "
               "({raw}: the DROP part of its TX OK/DROP column).",
               (SWITCH_IF_QUEUE,), (CLI, GNMI),
               raw=(GNMI_SONIC_PFCWD.field("PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS"),)),
    MetricSpec("fabric_roce_switch_pfcwd_rx_dropped_packets_total", "counter", "packets",
               "Packets the watchdog dropped on receive while the queue was in a storm "
               "({raw}: the DROP part of its RX OK/DROP column).",
               (SWITCH_IF_QUEUE,), (CLI, GNMI),
               raw=(GNMI_SONIC_PFCWD.field("PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS"),)),
    MetricSpec("fabric_roce_switch_pfcwd_storm_active", "gauge", "",
               "1 while the watchdog holds the queue in a storm (SONiC 'show pfcwd stats' STATUS, or {raw}, "
               "says stormed), 0 when operational.",
               (SWITCH_IF_QUEUE,), (CLI, GNMI),
               raw=(GNMI_SONIC_PFCWD.field("PFC_WD_STATUS"),)),  # text: operational | stormed
    # --- buffer watermarks and PFC history (SONiC watermarkstat, pfcstat --history) ---------------
    # A watermark is the peak occupancy since it was last reset, not the occupancy now: "user"
    # watermarks are reset by anyone's 'sonic-clear ... watermark', "persistent" ones only by
    # 'sonic-clear ... persistent-watermark' (docs/collectors/switch_cli.md, which one to read).
    MetricSpec("fabric_roce_switch_queue_watermark_bytes", "gauge", "bytes",
               "Peak shared-buffer occupancy of the egress queue since its watermark was last cleared "
               "({raw}; SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES); "
               "kind says which watermark: user or persistent (CLI), periodic (gNMI: over the switch's last sampling "
               "period).",
               (SWITCH_IF_QUEUE + ("kind",),), (CLI, GNMI), ("SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES",),
               raw=(OC_QUEUE.field("shared-buffer/data/max-occupancy-since-last-sample",
                                 labels=(("kind", "periodic"),)),)),
    MetricSpec("fabric_roce_switch_pg_watermark_bytes", "gauge", "bytes",
               "Peak occupancy of the ingress priority group since its watermark was last cleared: region "
               "shared (shared pool) or headroom (XOFF headroom, what absorbs in-flight data after PFC) "
               "({raw}; over gNMI the periodic watermark, over the switch's last sampling period).",
               (SWITCH_IF + ("pg", "region"),), (CLI, GNMI),
               ("SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES",
                "SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES"),
               raw=(SONIC_PG_WATERMARKS.field("SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES",
                                            labels=(("region", "shared"),)),
                  SONIC_PG_WATERMARKS.field("SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES",
                                            labels=(("region", "headroom"),)),
                  OC_PG.field("shared-buffer/data/max-occupancy-since-last-sample", labels=(("region", "shared"),)))),
    MetricSpec("fabric_roce_switch_buffer_pool_watermark_bytes", "gauge", "bytes",
               "Peak occupancy of the shared buffer pool since its watermark was last cleared "
               "({raw}; SAI_BUFFER_POOL_STAT_WATERMARK_BYTES); on a "
               "multi-ASIC switch the pool is named <namespace>/<pool>.",
               (SWITCH + ("pool",),), (CLI,), ("SAI_BUFFER_POOL_STAT_WATERMARK_BYTES",)),
    MetricSpec("fabric_roce_switch_headroom_pool_watermark_bytes", "gauge", "bytes",
               "Peak occupancy of the lossless pool's shared headroom since its watermark was last cleared "
               "({raw}; SAI_BUFFER_POOL_STAT_XOFF_ROOM_WATERMARK_BYTES); "
               "multi-ASIC pools are named <namespace>/<pool>.",
               (SWITCH + ("pool",),), (CLI,), ("SAI_BUFFER_POOL_STAT_XOFF_ROOM_WATERMARK_BYTES",)),
    MetricSpec("fabric_roce_switch_pfc_rx_pause_seconds_total", "counter", "seconds",
               "Time the interface was paused by received PFC frames on the priority ({raw}; "
               "SAI_PORT_STAT_PFC_<p>_RX_PAUSE_DURATION_US or the PFC "
               "watchdog's estimate EST_PORT_STAT_PFC_<p>_RX_PAUSE_DURATION_US). rate() is the paused fraction.",
               (SWITCH_IF + ("priority",),), (CLI, GNMI),
               ("SAI_PORT_STAT_PFC_<p>_RX_PAUSE_DURATION_US", "EST_PORT_STAT_PFC_<p>_RX_PAUSE_DURATION_US"),
               raw=(OC_PRIORITY.field("in-pause-duration", scale=1e-6, dialects=CUMULUS),)),
    MetricSpec("fabric_roce_switch_pfc_rx_pause_transitions_total", "counter", "",
               "Times the priority went from unpaused to paused by received PFC ({raw}; "
               "SAI/EST_PORT_STAT_PFC_<p>_ON2OFF_RX_PKTS).",
               (SWITCH_IF + ("priority",),), (CLI,),
               ("SAI_PORT_STAT_PFC_<p>_ON2OFF_RX_PKTS", "EST_PORT_STAT_PFC_<p>_ON2OFF_RX_PKTS")),
]
