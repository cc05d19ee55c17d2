"""RoCE metrics whose meaning is the same on a NIC port and on a switch interface.

NIC-only and switch-only metrics live in ``roce_nic.py`` and ``roce_switch.py``; the names here are
shared so a dashboard can put a GPU host's port and its switch port on one panel. Their NIC raw
sources are rows here too (``raw``, helpers from ``roce_nic.py``), in preference order per vendor.
"""

from .gnmi_paths import CUMULUS, OC_INTERFACE, OC_PRIORITY, OC_QUEUE, SONIC_PORTS, SONIC_QUEUES
from .labels import NIC_PORT, NIC_PORT_PRIORITY, SWITCH_IF, SWITCH_IF_PRIORITY, SWITCH_IF_QUEUE
from .mib import ARISTA_PFC_PRIORITY, CISCO_PFC_PRIORITY, IF, IF_X
from .roce_nic import BNXT, bnxt_en, bnxt_re, ice, irdma, mlx5, mlx5_rdma, nic_help
from .spec import MetricSpec, RawCounter

NIC = "roce_nic"
SNMP = "snmp_switch"
CLI = "switch_cli"
GNMI = "gnmi_switch"


def _shared(name: str, unit: str, help_text: str, label_sets: tuple, sources: tuple[str, ...],
            raw: tuple[RawCounter, ...]) -> MetricSpec:
    return MetricSpec(name, "counter", unit, nic_help(help_text, raw), label_sets, sources, raw=raw)


METRICS = [
    _shared("fabric_roce_pfc_rx_pause_frames_total", "frames",
            "PFC pause frames received per priority ({raw}).",
            (NIC_PORT_PRIORITY, SWITCH_IF_PRIORITY), (NIC, SNMP, CLI, GNMI),
            (*mlx5("rx_prio{p}_pause"), *bnxt_en("rx_pfc_ena_frames_pri{p}"),
             *ice("rx_priority_{p}_xoff.nic", "port-rx-xoff_prio-{p}_events"),
             SONIC_PORTS.field("SAI_PORT_STAT_PFC_{p}_RX_PKTS"),
             OC_PRIORITY.field("counters/in-pause-pkts", dialects=CUMULUS),
             CISCO_PFC_PRIORITY.column("cpfcIfPriorityIndications", 3),
             ARISTA_PFC_PRIORITY.column("aristaPfcPriorityIndications", 4))),
    _shared("fabric_roce_pfc_tx_pause_frames_total", "frames",
            "PFC pause frames sent per priority ({raw}).",
            (NIC_PORT_PRIORITY, SWITCH_IF_PRIORITY), (NIC, SNMP, CLI, GNMI),
            (*mlx5("tx_prio{p}_pause"), *bnxt_en("tx_pfc_ena_frames_pri{p}"),
             *ice("tx_priority_{p}_xoff.nic", "port-tx-xoff_prio-{p}_events"),
             SONIC_PORTS.field("SAI_PORT_STAT_PFC_{p}_TX_PKTS"),
             OC_PRIORITY.field("counters/out-pause-pkts", dialects=CUMULUS),
             CISCO_PFC_PRIORITY.column("cpfcIfPriorityRequests", 2),
             ARISTA_PFC_PRIORITY.column("aristaPfcPriorityRequests", 3))),
    # mlx5's rx_bytes is the netdev's software count, ice's too: only bnxt_en's plain name is the port's.
    _shared("fabric_roce_rx_bytes_total", "bytes",
            "Bytes received on the port ({raw}).",
            (NIC_PORT, SWITCH_IF), (NIC, SNMP, GNMI),
            (*mlx5("rx_bytes_phy"), *ice("rx_bytes.nic", "port-rx_bytes"), *bnxt_en("rx_bytes", families=BNXT),
             IF_X.column("ifHCInOctets", 6),
             SONIC_PORTS.field("SAI_PORT_STAT_IF_IN_OCTETS"), OC_INTERFACE.field("counters/in-octets"))),
    _shared("fabric_roce_tx_bytes_total", "bytes",
            "Bytes sent on the port ({raw}).",
            (NIC_PORT, SWITCH_IF), (NIC, SNMP, GNMI),
            (*mlx5("tx_bytes_phy"), *ice("tx_bytes.nic", "port-tx_bytes"), *bnxt_en("tx_bytes", families=BNXT),
             IF_X.column("ifHCOutOctets", 10),
             SONIC_PORTS.field("SAI_PORT_STAT_IF_OUT_OCTETS"), OC_INTERFACE.field("counters/out-octets"))),
    _shared("fabric_roce_rx_packets_total", "packets",
            "Packets received on the port ({raw}).",
            (NIC_PORT, SWITCH_IF), (NIC, SNMP, GNMI),
            (*mlx5("rx_packets_phy"), *bnxt_en("rx_total_frames", families=BNXT),
             IF_X.column("ifHCInUcastPkts", 7), IF_X.column("ifHCInMulticastPkts", 8),
             IF_X.column("ifHCInBroadcastPkts", 9),
             # summed, as SONiC's snmpagent sums them for IF-MIB (published only whole)
             SONIC_PORTS.field("SAI_PORT_STAT_IF_IN_UCAST_PKTS"), SONIC_PORTS.field("SAI_PORT_STAT_IF_IN_MULTICAST_PKTS"),
             SONIC_PORTS.field("SAI_PORT_STAT_IF_IN_BROADCAST_PKTS"),
             OC_INTERFACE.field("counters/in-unicast-pkts"), OC_INTERFACE.field("counters/in-multicast-pkts"),
             OC_INTERFACE.field("counters/in-broadcast-pkts"))),
    _shared("fabric_roce_tx_packets_total", "packets",
            "Packets sent on the port ({raw}).",
            (NIC_PORT, SWITCH_IF), (NIC, SNMP, GNMI),
            (*mlx5("tx_packets_phy"), *bnxt_en("tx_total_frames", families=BNXT),
             IF_X.column("ifHCOutUcastPkts", 11), IF_X.column("ifHCOutMulticastPkts", 12),
             IF_X.column("ifHCOutBroadcastPkts", 13),
             SONIC_PORTS.field("SAI_PORT_STAT_IF_OUT_UCAST_PKTS"),
             SONIC_PORTS.field("SAI_PORT_STAT_IF_OUT_MULTICAST_PKTS"),
             SONIC_PORTS.field("SAI_PORT_STAT_IF_OUT_BROADCAST_PKTS"),
             OC_INTERFACE.field("counters/out-unicast-pkts"), OC_INTERFACE.field("counters/out-multicast-pkts"),
             OC_INTERFACE.field("counters/out-broadcast-pkts"))),
    # bnxt_en: the port MAC's own discard count; ice: the port's Rx drops for lack of buffer
    # (PRTRPB_RDPC, "rx_dropped.nic"; not "rx_dropped", the netdev's software count).
    _shared("fabric_roce_rx_discards_total", "packets",
            "Received packets dropped by the port for lack of buffer ({raw}).",
            (NIC_PORT, SWITCH_IF), (NIC, SNMP, CLI, GNMI),
            (*mlx5("rx_discards_phy"), *bnxt_en("rx_stat_discard", families=BNXT),
             *ice("rx_dropped.nic", "port-rx-dropped_pkts"),
             IF.column("ifInDiscards", 13),
             SONIC_PORTS.field("SAI_PORT_STAT_IF_IN_DISCARDS"), OC_INTERFACE.field("counters/in-discards"))),
    _shared("fabric_roce_tx_discards_total", "packets",
            "Packets the port discarded on transmit ({raw}).",
            (NIC_PORT, SWITCH_IF), (NIC, SNMP, CLI, GNMI),
            (*mlx5("tx_discards_phy"), *bnxt_en("tx_stat_discard", families=BNXT),
             *ice("tx_dropped_link_down.nic", "port-tx-dropped_link-down_pkts"),
             IF.column("ifOutDiscards", 19),
             SONIC_PORTS.field("SAI_PORT_STAT_IF_OUT_DISCARDS"), OC_INTERFACE.field("counters/out-discards"))),
    _shared("fabric_roce_ecn_marked_packets_total", "packets",
            "ECN CE-marked packets: marked packets a NIC received (RDMA hw counters), or packets a switch marked "
            "per egress queue ({raw}).",
            (NIC_PORT, SWITCH_IF_QUEUE), (NIC, CLI, GNMI),
            (*mlx5_rdma("np_ecn_marked_roce_packets"), *bnxt_re("rx_ecn_marked_pkts"), *irdma("RxECNMrkd"),
             SONIC_QUEUES.field("SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"), OC_QUEUE.field("ecn-marked-pkts"))),
]
