"""Switch-only RoCE metrics (SNMP ``snmp_switch`` and SSH ``switch_cli`` collectors).

Meanings shared with NIC ports (PFC pause frames per priority, bytes, packets, discards, ECN marks)
use the names in ``roce.py``. Everything here exists only on a switch: per-queue egress counters,
the PFC watchdog, interface state and speed, errors, the SNMP agent's uptime.

Queue label values follow SONiC's CLI naming on every source: ``UC<n>`` for unicast queue n and
``MC<n>`` for multicast queue n (0-based), so an SNMP and a CLI series for one queue are equal.
"""

from .labels import SWITCH_IF, SWITCH_IF_QUEUE
from .spec import MetricSpec

SNMP = "snmp_switch"
CLI = "switch_cli"
GNMI = "gnmi_switch"

# The switch itself (one series per switch).
SWITCH = ("fabric", "switch")
# One interface's facts that are strings (ifAlias, ifIndex) carried as labels of an _info series.
SWITCH_IF_INFO = SWITCH_IF + ("ifindex", "alias")

METRICS = [
    # --- the agent / switch -------------------------------------------------------------------
    MetricSpec("fabric_roce_switch_agent_uptime_seconds", "gauge", "seconds",
               "Time since the SNMP agent (re)started (SNMPv2-MIB sysUpTime.0 / 100); a drop means a restart "
               "and counters may have reset.",
               (SWITCH,), (SNMP,), ("1.3.6.1.2.1.1.3.0",)),
    MetricSpec("fabric_roce_switch_snmp_poll_varbinds", "gauge", "",
               "Varbinds the last SNMP poll read from this switch's tables and scalars (CPU cost grows with it, ~0.1 ms each).",
               (SWITCH,), (SNMP,)),
    MetricSpec("fabric_roce_switch_snmp_poll_requests", "gauge", "",
               "SNMP requests (GET/GETBULK PDUs) the last poll of this switch sent, retries not counted.",
               (SWITCH,), (SNMP,)),
    # --- interfaces (IF-MIB) -------------------------------------------------------------------
    MetricSpec("fabric_roce_switch_if_info", "info", "",
               "Interface identity: ifIndex and operator description (IF-MIB ifName, ifAlias); value 1.",
               (SWITCH_IF_INFO,), (SNMP,), ("1.3.6.1.2.1.31.1.1.1.1", "1.3.6.1.2.1.31.1.1.1.18")),
    MetricSpec("fabric_roce_switch_if_oper_status", "gauge", "",
               "Interface operational state as IF-MIB ifOperStatus codes: 1 up, 2 down, 3 testing, 4 unknown, "
               "5 dormant, 6 notPresent, 7 lowerLayerDown.",
               (SWITCH_IF,), (SNMP, GNMI), ("1.3.6.1.2.1.2.2.1.8",)),
    MetricSpec("fabric_roce_switch_if_speed_bytes_per_second", "gauge", "bytes_per_second",
               "Interface speed (IF-MIB ifHighSpeed Mb/s x 125000); the denominator of utilization.",
               (SWITCH_IF,), (SNMP,), ("1.3.6.1.2.1.31.1.1.1.15",)),
    MetricSpec("fabric_roce_switch_if_rx_errors_total", "counter", "packets",
               "Received packets with errors (IF-MIB ifInErrors).",
               (SWITCH_IF,), (SNMP, GNMI), ("1.3.6.1.2.1.2.2.1.14",)),
    MetricSpec("fabric_roce_switch_if_tx_errors_total", "counter", "packets",
               "Packets that could not be sent because of errors (IF-MIB ifOutErrors).",
               (SWITCH_IF,), (SNMP, GNMI), ("1.3.6.1.2.1.2.2.1.20",)),
    # --- PFC summed over priorities (IEEE8021-PFC-MIB has no per-priority counters) -------------
    MetricSpec("fabric_roce_switch_pfc_rx_frames_total", "counter", "frames",
               "PFC frames received on the interface, all priorities together (IEEE8021-PFC-MIB "
               "ieee8021PfcIndications); per-priority counts are fabric_roce_pfc_rx_pause_frames_total.",
               (SWITCH_IF,), (SNMP,), ("1.3.111.2.802.1.1.21.1.1.1.3",)),
    MetricSpec("fabric_roce_switch_pfc_tx_frames_total", "counter", "frames",
               "PFC frames sent by the interface, all priorities together (IEEE8021-PFC-MIB "
               "ieee8021PfcRequests); per-priority counts are fabric_roce_pfc_tx_pause_frames_total.",
               (SWITCH_IF,), (SNMP,), ("1.3.111.2.802.1.1.21.1.1.1.2",)),
    # --- egress queues ----------------------------------------------------------------------------
    MetricSpec("fabric_roce_switch_queue_tx_packets_total", "counter", "packets",
               "Packets sent from the egress queue (CISCO-SWITCH-QOS-MIB csqIfQosGroupStatsValue "
               "ucast/mcastSentPkts, SONiC 'show queue counters' Counter/pkts).",
               (SWITCH_IF_QUEUE,), (SNMP, CLI, GNMI), ("1.3.6.1.4.1.9.9.580.1.5.5.1.4",)),
    MetricSpec("fabric_roce_switch_queue_tx_bytes_total", "counter", "bytes",
               "Bytes sent from the egress queue (csqIfQosGroupStatsValue ucast/mcastSentBytes, "
               "SONiC 'show queue counters' Counter/bytes).",
               (SWITCH_IF_QUEUE,), (SNMP, CLI, GNMI), ("1.3.6.1.4.1.9.9.580.1.5.5.1.4",)),
    MetricSpec("fabric_roce_switch_queue_dropped_packets_total", "counter", "packets",
               "Packets dropped by the egress queue (csqIfQosGroupStatsValue ucast/mcastDroppedPkts, "
               "ARISTA-QUEUE-MIB aristaEgressQueuePktsDropped, SONiC 'show queue counters' Drop/pkts, "
               "EOS 'show interfaces counters queue' OutDropPkts).",
               (SWITCH_IF_QUEUE,), (SNMP, CLI, GNMI),
               ("1.3.6.1.4.1.9.9.580.1.5.5.1.4", "1.3.6.1.4.1.30065.3.6.1.2.1.6")),
    MetricSpec("fabric_roce_switch_queue_dropped_bytes_total", "counter", "bytes",
               "Bytes dropped by the egress queue (csqIfQosGroupStatsValue ucast/mcastDroppedBytes, "
               "ARISTA-QUEUE-MIB aristaEgressQueueBytesDropped, SONiC 'show queue counters' Drop/bytes, "
               "EOS 'show interfaces counters queue' OutDropOctets).",
               (SWITCH_IF_QUEUE,), (SNMP, CLI, GNMI),
               ("1.3.6.1.4.1.9.9.580.1.5.5.1.4", "1.3.6.1.4.1.30065.3.6.1.2.1.7")),
    # EOS counts what entered the queue, SONiC/Cisco what left it: not the same count, so own names.
    MetricSpec("fabric_roce_switch_queue_enqueued_packets_total", "counter", "packets",
               "Packets admitted to the egress queue (EOS 'show interfaces counters queue' OutEnqPkts); "
               "packets the queue dropped are not in it.",
               (SWITCH_IF_QUEUE,), (CLI,)),
    MetricSpec("fabric_roce_switch_queue_enqueued_bytes_total", "counter", "bytes",
               "Bytes admitted to the egress queue (EOS 'show interfaces counters queue' OutEnqOctets).",
               (SWITCH_IF_QUEUE,), (CLI,)),
    # VoQ platforms (EOS 7280R/7500R): congestion drops happen in the ingress chips' virtual output
    # queues for an egress port and class, not in the egress queue; interface = the egress port.
    MetricSpec("fabric_roce_switch_voq_packets_total", "counter", "packets",
               "Packets queued in the virtual output queues for this egress interface and class, summed over "
               "ingress chips (EOS 'show interfaces counters queue' Aggregate VoQ Counters Pkts).",
               (SWITCH_IF_QUEUE,), (CLI,)),
    MetricSpec("fabric_roce_switch_voq_bytes_total", "counter", "bytes",
               "Bytes queued in the virtual output queues for this egress interface and class "
               "(EOS Aggregate VoQ Counters Octets).",
               (SWITCH_IF_QUEUE,), (CLI,)),
    MetricSpec("fabric_roce_switch_voq_dropped_packets_total", "counter", "packets",
               "Packets dropped in the virtual output queues for this egress interface and class: congestion "
               "drops of a VoQ switch (EOS Aggregate VoQ Counters DropPkts).",
               (SWITCH_IF_QUEUE,), (CLI,)),
    MetricSpec("fabric_roce_switch_voq_dropped_bytes_total", "counter", "bytes",
               "Bytes dropped in the virtual output queues for this egress interface and class "
               "(EOS Aggregate VoQ Counters DropOctets).",
               (SWITCH_IF_QUEUE,), (CLI,)),
    MetricSpec("fabric_roce_switch_queue_wred_dropped_packets_total", "counter", "packets",
               "Packets WRED dropped from the egress queue (SONiC 'show queue wredcounters' WredDrp/pkts, "
               "Cumulus ethtool HwIfOutQ{n}WredDrops).",
               (SWITCH_IF_QUEUE,), (CLI, GNMI)),
    MetricSpec("fabric_roce_switch_queue_wred_dropped_bytes_total", "counter", "bytes",
               "Bytes WRED dropped from the egress queue (SONiC 'show queue wredcounters' WredDrp/bytes).",
               (SWITCH_IF_QUEUE,), (CLI, GNMI)),
    MetricSpec("fabric_roce_switch_queue_ecn_marked_bytes_total", "counter", "bytes",
               "Bytes ECN CE-marked in the egress queue (SONiC 'show queue wredcounters' EcnMarked/bytes); "
               "packets are fabric_roce_ecn_marked_packets_total.",
               (SWITCH_IF_QUEUE,), (CLI, GNMI)),
    # --- PFC watchdog -----------------------------------------------------------------------------
    MetricSpec("fabric_roce_switch_pfcwd_storms_detected_total", "counter", "events",
               "PFC storms the watchdog detected on the queue (SONiC 'show pfcwd stats' STORM DETECTED, "
               "ARISTA-PFC-MIB aristaPfcWatchdogTxQueueStuckCount).",
               (SWITCH_IF_QUEUE,), (SNMP, CLI, GNMI), ("1.3.6.1.4.1.30065.3.11.1.2.1.4",)),
    MetricSpec("fabric_roce_switch_pfcwd_storms_restored_total", "counter", "events",
               "PFC storms the watchdog saw end on the queue (SONiC 'show pfcwd stats' STORM RESTORED, "
               "ARISTA-PFC-MIB aristaPfcWatchdogTxQueueRecoveredCount).",
               (SWITCH_IF_QUEUE,), (SNMP, CLI, GNMI), ("1.3.6.1.4.1.30065.3.11.1.2.1.5",)),
    MetricSpec("fabric_roce_switch_pfcwd_tx_dropped_packets_total", "counter", "packets",
               "Packets the watchdog dropped on transmit while the queue was in a storm "
               "(SONiC 'show pfcwd stats' TX OK/DROP, the DROP part).",
               (SWITCH_IF_QUEUE,), (CLI, GNMI)),
    MetricSpec("fabric_roce_switch_pfcwd_rx_dropped_packets_total", "counter", "packets",
               "Packets the watchdog dropped on receive while the queue was in a storm "
               "(SONiC 'show pfcwd stats' RX OK/DROP, the DROP part).",
               (SWITCH_IF_QUEUE,), (CLI, GNMI)),
    MetricSpec("fabric_roce_switch_pfcwd_storm_active", "gauge", "",
               "1 while the watchdog holds the queue in a storm (SONiC 'show pfcwd stats' STATUS stormed), "
               "0 when operational.",
               (SWITCH_IF_QUEUE,), (CLI, GNMI)),
]
