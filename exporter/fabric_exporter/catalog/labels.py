"""Label sets shared by several collectors, so equal meanings get equal label names."""

FABRIC = ("fabric",)
# Exporter self-metrics: one series per polled target (group, host) and collector.
TARGET = ("fabric", "group", "host", "collector")
# A RoCE NIC port on a GPU host.
NIC_PORT = ("fabric", "host", "device", "port", "netdev")
NIC_PORT_PRIORITY = NIC_PORT + ("priority",)
# A switch interface (SNMP or CLI), named by ifName.
SWITCH_IF = ("fabric", "switch", "interface")
SWITCH_IF_PRIORITY = SWITCH_IF + ("priority",)
SWITCH_IF_QUEUE = SWITCH_IF + ("queue",)
# A switch interface's traffic by kind (Cumulus NVUE): "roce" (the RoCE priority's), "non_roce"
# (the rest, received), "cnp" (congestion notification packets, sent).
SWITCH_IF_TRAFFIC = SWITCH_IF + ("traffic",)
