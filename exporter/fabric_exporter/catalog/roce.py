"""RoCE metrics whose meaning is the same on a NIC port and on a switch interface.

NIC-only and switch-only metrics live in ``roce_nic.py`` and ``roce_switch.py``; the names here are
shared so a dashboard can put a GPU host's port and its switch port on one panel.
"""

from .labels import NIC_PORT, NIC_PORT_PRIORITY, SWITCH_IF, SWITCH_IF_PRIORITY, SWITCH_IF_QUEUE
from .mib import ARISTA_PFC_PRIORITY, CISCO_PFC_PRIORITY, IF, IF_X
from .switch_commands import CUMULUS_ETHTOOL, EOS_DISCARDS, SONIC_WRED, SONIC_WRED_JSON, printed
from .spec import MetricSpec

NIC = "roce_nic"
SNMP = "snmp_switch"
CLI = "switch_cli"
GNMI = "gnmi_switch"

METRICS = [
    MetricSpec("fabric_roce_pfc_rx_pause_frames_total", "counter", "frames",
               "PFC pause frames received per priority (mlx5 rx_prio{p}_pause, bnxt rx_pfc_ena_frames_pri{p}, "
               "ice rx_priority_{p}_xoff.nic, "
               "CISCO-PFC-EXT-MIB cpfcIfPriorityIndications, ARISTA-PFC-MIB aristaPfcPriorityIndications, "
               "SONiC 'show pfc counters' Rx).",
               (NIC_PORT_PRIORITY, SWITCH_IF_PRIORITY), (NIC, SNMP, CLI, GNMI),
               raw=(CISCO_PFC_PRIORITY.column("cpfcIfPriorityIndications", 3),
                    ARISTA_PFC_PRIORITY.column("aristaPfcPriorityIndications", 4))
               + printed(CUMULUS_ETHTOOL, "HwIfInPfc{p}Pkt")),
    MetricSpec("fabric_roce_pfc_tx_pause_frames_total", "counter", "frames",
               "PFC pause frames sent per priority (mlx5 tx_prio{p}_pause, bnxt tx_pfc_ena_frames_pri{p}, "
               "ice tx_priority_{p}_xoff.nic, "
               "CISCO-PFC-EXT-MIB cpfcIfPriorityRequests, ARISTA-PFC-MIB aristaPfcPriorityRequests, "
               "SONiC 'show pfc counters' Tx).",
               (NIC_PORT_PRIORITY, SWITCH_IF_PRIORITY), (NIC, SNMP, CLI, GNMI),
               raw=(CISCO_PFC_PRIORITY.column("cpfcIfPriorityRequests", 2),
                    ARISTA_PFC_PRIORITY.column("aristaPfcPriorityRequests", 3))
               + printed(CUMULUS_ETHTOOL, "HwIfOutPfc{p}Pkt")),
    MetricSpec("fabric_roce_rx_bytes_total", "counter", "bytes",
               "Bytes received on the port (mlx5 rx_bytes_phy, IF-MIB ifHCInOctets).",
               (NIC_PORT, SWITCH_IF), (NIC, SNMP, GNMI), raw=(IF_X.column("ifHCInOctets", 6),)),
    MetricSpec("fabric_roce_tx_bytes_total", "counter", "bytes",
               "Bytes sent on the port (mlx5 tx_bytes_phy, IF-MIB ifHCOutOctets).",
               (NIC_PORT, SWITCH_IF), (NIC, SNMP, GNMI), raw=(IF_X.column("ifHCOutOctets", 10),)),
    MetricSpec("fabric_roce_rx_packets_total", "counter", "packets",
               "Packets received on the port (mlx5 rx_packets_phy, IF-MIB ifHCInUcastPkts + ifHCInMulticastPkts + "
               "ifHCInBroadcastPkts).",
               (NIC_PORT, SWITCH_IF), (NIC, SNMP, GNMI),
               raw=(IF_X.column("ifHCInUcastPkts", 7), IF_X.column("ifHCInMulticastPkts", 8),
                    IF_X.column("ifHCInBroadcastPkts", 9))),
    MetricSpec("fabric_roce_tx_packets_total", "counter", "packets",
               "Packets sent on the port (mlx5 tx_packets_phy, IF-MIB ifHCOutUcastPkts + ifHCOutMulticastPkts + "
               "ifHCOutBroadcastPkts).",
               (NIC_PORT, SWITCH_IF), (NIC, SNMP, GNMI),
               raw=(IF_X.column("ifHCOutUcastPkts", 11), IF_X.column("ifHCOutMulticastPkts", 12),
                    IF_X.column("ifHCOutBroadcastPkts", 13))),
    MetricSpec("fabric_roce_rx_discards_total", "counter", "packets",
               "Received packets dropped by the port for lack of buffer (mlx5 rx_discards_phy, bnxt rx_stat_discard, "
               "ice rx_dropped.nic, IF-MIB ifInDiscards, EOS 'show interfaces counters discards' inDiscards, "
               "Cumulus ethtool HwIfInDiscards).",
               (NIC_PORT, SWITCH_IF), (NIC, SNMP, CLI, GNMI),
               raw=(IF.column("ifInDiscards", 13),)
               + printed(EOS_DISCARDS, "inDiscards") + printed(CUMULUS_ETHTOOL, "HwIfInDiscards")),
    MetricSpec("fabric_roce_tx_discards_total", "counter", "packets",
               "Packets the port discarded on transmit (mlx5 tx_discards_phy, bnxt tx_stat_discard, "
               "ice tx_dropped_link_down.nic, IF-MIB ifOutDiscards, EOS 'show interfaces counters discards' "
               "outDiscards, Cumulus ethtool HwIfOutDiscards).",
               (NIC_PORT, SWITCH_IF), (NIC, SNMP, CLI, GNMI),
               raw=(IF.column("ifOutDiscards", 19),)
               + printed(EOS_DISCARDS, "outDiscards") + printed(CUMULUS_ETHTOOL, "HwIfOutDiscards")),
    MetricSpec("fabric_roce_ecn_marked_packets_total", "counter", "packets",
               "ECN CE-marked packets: on a NIC, marked packets it received (mlx5 np_ecn_marked_roce_packets, "
               "bnxt_re rx_ecn_marked_pkts, irdma RxECNMrkd); on a switch, packets it marked per egress queue "
               "(SONiC 'show queue wredcounters' EcnMarked, EOS 'show qos interfaces ecn counters queue').",
               (NIC_PORT, SWITCH_IF_QUEUE), (NIC, CLI, GNMI),
               raw=printed(SONIC_WRED, "EcnMarked/pkts") + printed(SONIC_WRED_JSON, "ecnmarkedpacket")),
]
