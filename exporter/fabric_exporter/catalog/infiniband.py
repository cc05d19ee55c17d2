"""Catalog entries for the ``infiniband`` collector (fabric-wide sweeps from a management/SM node).

Names follow node_exporter's ``node_infiniband_*`` where the meaning is the same (for example
``port_transmit_wait_total``, ``symbol_error_total``), with the ``fabric_ib_`` prefix.

Port series carry the port and its peer, so a panel can read "leaf-b2 port 17 -> spine-a1 port 2":

    IB_PORT = fabric, node_guid, node_name, port, peer_node_name, peer_port

``node_name`` is the node-name-map name when one is configured, else the NodeDescription. A port
with no peer (down, or a CA's unused port) has ``peer_node_name=""`` and ``peer_port=""``. GUIDs
are 16 lowercase hex digits with a ``0x`` prefix, the way ibnetdiscover prints them.
"""

from .spec import MetricSpec, RawCounter

SRC = ("infiniband",)

# Where the collector reads a raw counter (RawCounter.source): the two ibqueryerrors sweeps and perfquery.
COUNTER_SWEEP = "ibqueryerrors --counters"  # every port: data/packet counters and link info
ERROR_SWEEP = "ibqueryerrors"  # non-zero error counters and PortXmitWait only
PERFQUERY = "perfquery"  # QP1Dropped: in PortCounters, but no sweep prints it
# ibdiagnet2's PM counters as its files name them: snake_case in ibdiagnet2.pm and in newer db_csv
# PM_INFO sections (older PM_INFO sections use the sweep's CamelCase names: the sweep rows serve those).
IBDIAGNET_PM = "ibdiagnet2 PM_INFO / .pm"

IB_PORT = ("fabric", "node_guid", "node_name", "port", "peer_node_name", "peer_port")
IB_NODE = ("fabric", "node_guid", "node_name")
IB_PORT_COUNTER = ("fabric", "node_guid", "node_name", "port", "counter")
IB_FILE = ("fabric", "file")


def _port_counter(name: str, unit: str, help_text: str, raw: RawCounter) -> MetricSpec:
    return MetricSpec(name, "counter", unit, help_text, (IB_PORT,), SRC, raw=(raw,))


def _data(raw: str, width: int, reset_bit: int | None = None, scale: int = 1) -> RawCounter:
    """A data/packet counter of the counter sweep; width of the PortCounters field (64: extended only)."""
    return RawCounter(raw, COUNTER_SWEEP, width, scale, reset_bit)


def _error(raw: str, width: int, reset_bit: int | None) -> RawCounter:
    """A counter of the error sweep (IBA 1.3 PortCounters width: it latches at all-ones)."""
    return RawCounter(raw, ERROR_SWEEP, width, 1, reset_bit)


# The rows code refers to by themselves (the focus set reads PortXmitWait, the error details read where
# the aggregate counts rise, QP1Dropped is read apart): named here so no collector types the raw name.
XMIT_WAIT = _error("PortXmitWait", 32, reset_bit=16)
RCV_ERRORS = _error("PortRcvErrors", 16, reset_bit=3)
XMIT_DISCARDS = _error("PortXmitDiscards", 16, reset_bit=6)
QP1_DROPPED = RawCounter("QP1Dropped", PERFQUERY, 16)


def _port_gauge(name: str, unit: str, help_text: str, origin: tuple[str, ...] = ()) -> MetricSpec:
    return MetricSpec(name, "gauge", unit, help_text, (IB_PORT,), SRC, origin)


# Data and packet counters: 64-bit PortCountersExtended where the device has them, else the
# 32-bit PortCounters (see fabric_ib_port_latched).
_DATA = [
    _port_counter("fabric_ib_port_data_transmitted_bytes_total", "bytes",
                  "Bytes sent by the port ({raw} x 4: the counter counts 4-byte words).",
                  _data("PortXmitData", 32, reset_bit=12, scale=4)),
    _port_counter("fabric_ib_port_data_received_bytes_total", "bytes",
                  "Bytes received by the port ({raw} x 4: the counter counts 4-byte words).",
                  _data("PortRcvData", 32, reset_bit=13, scale=4)),
    _port_counter("fabric_ib_port_packets_transmitted_total", "packets",
                  "Packets sent by the port ({raw}).", _data("PortXmitPkts", 32, reset_bit=14)),
    _port_counter("fabric_ib_port_packets_received_total", "packets",
                  "Packets received by the port ({raw}).", _data("PortRcvPkts", 32, reset_bit=15)),
    _port_counter("fabric_ib_unicast_packets_transmitted_total", "packets",
                  "Unicast packets sent ({raw}, extended counters only).",
                  _data("PortUnicastXmitPkts", 64)),
    _port_counter("fabric_ib_unicast_packets_received_total", "packets",
                  "Unicast packets received ({raw}, extended counters only).",
                  _data("PortUnicastRcvPkts", 64)),
    _port_counter("fabric_ib_multicast_packets_transmitted_total", "packets",
                  "Multicast packets sent ({raw}, extended counters only).",
                  _data("PortMulticastXmitPkts", 64)),
    _port_counter("fabric_ib_multicast_packets_received_total", "packets",
                  "Multicast packets received ({raw}, extended counters only).",
                  _data("PortMulticastRcvPkts", 64)),
    _port_counter("fabric_ib_port_transmit_wait_total", "ticks",
                  "Ticks the port had data to send but sent nothing: no credits or lost arbitration "
                  "({raw}; normalise with fabric_ib_port_rate_bytes_per_second).",
                  XMIT_WAIT),
]

# Error counters (IBA PortCounters; widths 4-16 bits on most devices, so they latch early).
_ERRORS = [
    _port_counter("fabric_ib_symbol_error_total", "", "Minor link errors on any lane ({raw}).",
                  _error("SymbolErrorCounter", 16, reset_bit=0)),
    _port_counter("fabric_ib_link_error_recovery_total", "",
                  "Successful link error recoveries ({raw}).", _error("LinkErrorRecoveryCounter", 8, reset_bit=1)),
    _port_counter("fabric_ib_link_downed_total", "",
                  "Times the link training failed to recover and the link went down ({raw}).",
                  _error("LinkDownedCounter", 8, reset_bit=2)),
    _port_counter("fabric_ib_port_receive_errors_total", "packets",
                  "Received packets with errors ({raw}).", RCV_ERRORS),
    _port_counter("fabric_ib_port_receive_remote_physical_errors_total", "packets",
                  "Received packets marked with the EBP delimiter by an upstream port "
                  "({raw}).", _error("PortRcvRemotePhysicalErrors", 16, reset_bit=4)),
    _port_counter("fabric_ib_port_receive_switch_relay_errors_total", "packets",
                  "Received packets the switch could not forward ({raw}).",
                  _error("PortRcvSwitchRelayErrors", 16, reset_bit=5)),
    _port_counter("fabric_ib_port_transmit_discards_total", "packets",
                  "Outbound packets discarded: port down or congestion timeouts ({raw}).",
                  XMIT_DISCARDS),
    _port_counter("fabric_ib_port_transmit_constraint_errors_total", "packets",
                  "Packets not sent because of partition/raw constraints ({raw}).",
                  _error("PortXmitConstraintErrors", 8, reset_bit=7)),
    _port_counter("fabric_ib_port_receive_constraint_errors_total", "packets",
                  "Packets dropped on receive because of partition/raw constraints ({raw}).",
                  _error("PortRcvConstraintErrors", 8, reset_bit=8)),
    _port_counter("fabric_ib_local_link_integrity_errors_total", "",
                  "Times the local physical errors exceeded the LocalPhyErrors threshold "
                  "({raw}).", _error("LocalLinkIntegrityErrors", 4, reset_bit=9)),
    _port_counter("fabric_ib_excessive_buffer_overrun_errors_total", "",
                  "Consecutive flow-control update periods with buffer overrun ({raw}).",
                  _error("ExcessiveBufferOverrunErrors", 4, reset_bit=10)),
    _port_counter("fabric_ib_vl15_dropped_total", "packets",
                  "Subnet-management (VL15) packets dropped for lack of buffers ({raw}).", _error("VL15Dropped", 16, reset_bit=11)),
    _port_counter("fabric_ib_qp1_dropped_total", "packets",
                  "General-management (QP1) packets dropped, where the device reports it ({raw}).",
                  QP1_DROPPED),
]

# Link state, width and speed, and what the exporter derives from them.
_LINK = [
    _port_gauge("fabric_ib_port_state_id", "",
                "Logical port state (PortInfo.PortState): 1 Down, 2 Initialize, 3 Armed, 4 Active, 5 ActiveDefer.",
                ("PortState",)),
    _port_gauge("fabric_ib_port_physical_state_id", "",
                "Physical port state (PortInfo.PortPhysicalState): 1 Sleep, 2 Polling, 3 Disabled, "
                "4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.",
                ("PortPhysicalState",)),
    _port_gauge("fabric_ib_port_active_width_lanes", "",
                "Lanes the link runs on (PortInfo.LinkWidthActive: 1x/2x/4x/8x/12x); 0 when down.",
                ("LinkWidthActive",)),
    _port_gauge("fabric_ib_port_active_lane_rate_bytes_per_second", "bytes_per_second",
                "Effective data rate of one lane at the active speed (SDR 2 Gb/s ... NDR 100 Gb/s, "
                "after line encoding), in bytes/s; 0 when down.", ("LinkSpeedActive", "LinkSpeedExtActive")),
    _port_gauge("fabric_ib_port_supported_width_lanes", "",
                "Widest width both ends of the link support (LinkWidthSupported of both ends; "
                "ibqueryerrors/iblinkinfo 'Could be').", ("LinkWidthSupported",)),
    _port_gauge("fabric_ib_port_supported_lane_rate_bytes_per_second", "bytes_per_second",
                "Fastest lane rate both ends of the link support, in effective bytes/s "
                "(LinkSpeedSupported/LinkSpeedExtSupported of both ends).", ("LinkSpeedSupported",)),
    _port_gauge("fabric_ib_port_rate_bytes_per_second", "bytes_per_second",
                "Effective data rate of the link: active width x lane rate, in bytes/s; "
                "the denominator of a PortXmitWait stall ratio.", ()),
    _port_gauge("fabric_ib_port_degraded", "",
                "1 if the link is up but runs below the width or speed both ends support, else 0.", ()),
    _port_gauge("fabric_ib_port_link_down_unexpected", "",
                "1 if the port is down now but the topology (last discovery) had its link up, else 0.", ()),
    _port_gauge("fabric_ib_port_latched", "",
                "1 if a counter of the port read from 32-bit (or narrower) PortCounters sits at its maximum, "
                "so its rate is meaningless until the counter is reset; else 0.", ()),
    _port_gauge("fabric_ib_port_extended_counters", "",
                "1 if the data/packet counters come from 64-bit PortCountersExtended, 0 if from 32-bit "
                "PortCounters.", ("CapMask",)),
    _port_gauge("fabric_ib_port_sweep_missing", "",
                "1 if the topology knows this port but this poll's sweep did not return it (unreachable "
                "subtree, failed query): its counters are withheld (stale), not zero.", ()),
]

_INFO = [
    MetricSpec("fabric_ib_node_info", "info", "",
               "One series per switch/CA in the topology (ibnetdiscover): type, NodeDescription, "
               "port count, system image GUID.",
               (IB_NODE + ("node_type", "node_description", "ports", "system_guid"),), SRC,
               ("ibnetdiscover",)),
    MetricSpec("fabric_ib_node_host_info", "info", "",
               "One series per CA (HCA) node: the host it belongs to, in the scheduler's vocabulary, from "
               "the node's name (node-name-map name, else NodeDescription, e.g. \"gpu-node-017 mlx5_0\") by "
               "the option host_from_node_name (default: the first word). Join port series on node_guid "
               "(the HCA's ports) or on peer_node_name = node_name (the switch port facing it).",
               (IB_NODE + ("host",),), SRC, ("NodeDescription", "node-name-map")),
    MetricSpec("fabric_ib_port_info", "info", "",
               "One series per port in the topology: LID, port GUID, peer GUID/port/name and the link's "
               "active and supported width and speed as the tools print them.",
               (IB_PORT + ("lid", "port_guid", "peer_node_guid", "peer_node_type", "active_width",
                           "active_speed", "supported_width", "supported_speed"),), SRC,
               ("ibnetdiscover", "ibqueryerrors --report-port")),
    MetricSpec("fabric_ib_node_xmit_wait_tick_multiplier", "gauge", "",
               "PortSamplesControl.Tick of the node (perfquery -c), where readable: a PortXmitWait tick "
               "lasts (Tick+1) symbol times on Quantum-class switches.", (IB_NODE,), SRC, ("Tick",)),
]

_SWEEP = [
    MetricSpec("fabric_ib_sweep_duration_seconds", "gauge", "seconds",
               "Wall time of each tool run in the last poll (ibqueryerrors sweeps, ibnetdiscover, perfquery batches, "
               "finding and reading the ibdiagnet files).",
               (("fabric", "tool"),), SRC),
    MetricSpec("fabric_ib_topology_nodes", "gauge", "", "Nodes in the current topology by type (switch, ca, router).",
               (("fabric", "node_type"),), SRC),
    MetricSpec("fabric_ib_topology_ports", "gauge", "",
               "Ports in the current topology by state seen in the last poll (up, down, missing).",
               (("fabric", "state"),), SRC),
    MetricSpec("fabric_ib_topology_last_refresh_timestamp_seconds", "gauge", "seconds",
               "Unix time the topology (ibnetdiscover) was last refreshed.", (("fabric",),), SRC),
    MetricSpec("fabric_ib_topology_changes_total", "counter", "",
               "Topology refreshes that found a different set of nodes or links than the previous one "
               "(since the exporter started).", (("fabric",),), SRC),
]


def _pm_field(raw: str, width: int | None, reset_bit: int | None = None, scale: int = 1) -> RawCounter:
    """A PortCounters field as ibdiagnet2 names it; width: the fixed-width cell's bits (it latches at
    all-ones; a ``*_extended`` 64-bit twin, where the file has one, replaces it); reset_bit: the field's
    CounterSelect bit, which also tells two spellings of one field apart from two fields."""
    return RawCounter(raw, IBDIAGNET_PM, width, scale, reset_bit)


# In the preferred spelling's order: where ibdiagnet spells one field two ways (IBDIAGNET 2.10 writes
# link_down_counter and excessive_buffer_errors), the first row is the name its 64-bit twin carries.
IBDIAGNET_PM_FIELDS = (
    _pm_field("port_xmit_data", 32, 12, scale=4), _pm_field("port_rcv_data", 32, 13, scale=4),
    _pm_field("port_xmit_pkts", 32, 14), _pm_field("port_rcv_pkts", 32, 15),
    _pm_field("port_xmit_wait", 32, 16),
    _pm_field("symbol_error_counter", 16, 0), _pm_field("link_error_recovery_counter", 8, 1),
    _pm_field("link_downed_counter", 8, 2), _pm_field("link_down_counter", 8, 2),
    _pm_field("port_rcv_errors", 16, 3), _pm_field("port_rcv_remote_physical_errors", 16, 4),
    _pm_field("port_rcv_switch_relay_errors", 16, 5),
    _pm_field("port_xmit_discards", 16, 6), _pm_field("port_xmit_discard", 16, 6),
    _pm_field("port_xmit_constraint_errors", 8, 7), _pm_field("port_rcv_constraint_errors", 8, 8),
    _pm_field("local_link_integrity_errors", 4, 9),
    _pm_field("excessive_buffer_overrun_errors", 4, 10), _pm_field("excessive_buffer_errors", 4, 10),
    _pm_field("vl15_dropped", 16, 11), _pm_field("qp1_dropped", 16),
)

def pm_field_in_bytes(field: str) -> str:
    """The counter label a word counter's value in bytes is published under (x 4): port_xmit_data_bytes,
    PortXmitDataBytes."""
    return field + ("_bytes" if "_" in field else "Bytes")


# ibdiagnet2 output files read from a directory (ibdiagnet runs on the site's schedule).
_IBDIAGNET = [
    MetricSpec("fabric_ib_ibdiagnet_file_age_seconds", "gauge", "seconds",
               "Age of the newest ibdiagnet2 output file read (ibdiagnet2.pm, ibdiagnet2.db_csv): "
               "its values are this old.", (IB_FILE,), SRC),
    MetricSpec("fabric_ib_ibdiagnet_pm_counter", "gauge", "",
               "PM counter value from ibdiagnet2 (PM_INFO in ibdiagnet2.db_csv, or ibdiagnet2.pm), named by "
               "its ibdiagnet field ({raw}; older PM_INFO sections use the CamelCase names of the sweep's "
               "counters). Where a 64-bit *_extended twin exists its value is published under the "
               "base name (the 32-bit cell is dropped); the data counters (4-byte words) are published in "
               "bytes, named with _bytes (Bytes). Unsupported (-1/NA) counters are "
               "omitted. A snapshot as old as fabric_ib_ibdiagnet_file_age_seconds, not a live counter.",
               (IB_PORT_COUNTER,), SRC, raw=IBDIAGNET_PM_FIELDS),
    MetricSpec("fabric_ib_ibdiagnet_port_latched", "gauge", "",
               "1 if a PM counter of the port in the ibdiagnet2 file comes only from a fixed-width "
               "(32-bit or narrower) cell sitting at its maximum, so it stopped counting; else 0.",
               (("fabric", "node_guid", "node_name", "port"),), SRC, ("PM_INFO",)),
    MetricSpec("fabric_ib_ibdiagnet_cable_temperature_celsius", "gauge", "celsius",
               "Cable/transceiver temperature from ibdiagnet2.db_csv (CABLE_INFO Temperature).",
               (("fabric", "node_guid", "node_name", "port"),), SRC, ("CABLE_INFO.Temperature",)),
    MetricSpec("fabric_ib_ibdiagnet_cable_info", "info", "",
               "Cable/transceiver identity from ibdiagnet2.db_csv (CABLE_INFO vendor, part number, serial, length).",
               (("fabric", "node_guid", "node_name", "port", "vendor", "part_number", "serial_number",
                 "length"),), SRC, ("CABLE_INFO",)),
    MetricSpec("fabric_ib_ibdiagnet_node_temperature_celsius", "gauge", "celsius",
               "Device temperature from ibdiagnet2.db_csv (TEMP_SENSING CurrentTemperature).",
               (IB_NODE,), SRC, ("TEMP_SENSING.CurrentTemperature",)),
]

# The focus set (collectors/infiniband/focus.py): the sweep's K most stalled ports plus configured
# ones, read every focus_interval. A "window" is the time between two reads of one port; its stall
# ratio is dPortXmitWait x (Tick+1) / (port rate x window), the recording rule's formula at 1 s.
# Buckets span 1e-5..1: the lab counts transmit-wait 10,000x slower (lab/traffic.IB_XMIT_WAIT_SCALE).
FOCUS_RATIO_BUCKETS = (0.00001, 0.0001, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0)
VL_XMIT_WAIT = "perfquery --vlxmitcounters"
# Port counters the exporter counts itself (from focus windows), not read from a raw counter.
DERIVED_COUNTERS = ("fabric_ib_port_bursts_total",)

_FOCUS = [
    _port_gauge("fabric_ib_port_focus_xmit_wait_peak_ratio", "ratio",
                "Focus ports: the highest stall ratio of one focus window (PortXmitWait x (Tick+1) over "
                "the link rate and the window) among the windows since the previous sweep; not reset on read.",
                ("PortXmitWait",)),
    MetricSpec("fabric_ib_port_focus_xmit_wait_ratio", "histogram", "ratio",
               "Focus ports: stall ratio of each focus window (PortXmitWait x (Tick+1) over the link rate "
               "and the window), counted since the port joined the focus set.",
               (IB_PORT,), SRC, ("PortXmitWait",), buckets=FOCUS_RATIO_BUCKETS),
    MetricSpec("fabric_ib_port_bursts_total", "counter", "",
               "Focus ports: bursts, i.e. runs of consecutive focus windows whose stall ratio reaches "
               "focus_burst_threshold, counted since the port joined the focus set.",
               (IB_PORT,), SRC, ("PortXmitWait",)),
    MetricSpec("fabric_ib_port_focus_info", "info", "",
               "Ports in the focus set (read every focus_interval) and why: reason=top (among the sweep's "
               "focus_top_k highest stall ratios) or configured (focus_ports).",
               (IB_PORT + ("reason",),), SRC, ("PortXmitWait",)),
    MetricSpec("fabric_ib_port_vl_transmit_wait_total", "counter", "ticks",
               "Focus ports: ticks a virtual lane had data to send but sent nothing ({raw}<vl> of "
               "PortVLXmitWaitCounters, perfquery --vlxmitcounters), where the port answers it. A 16-bit "
               "field that latches at 65535: a latched value is withheld, not published.",
               (IB_PORT + ("vl",),), SRC, raw=(RawCounter("PortVLXmitWait", VL_XMIT_WAIT, 16),)),
    MetricSpec("fabric_ib_focus_reads_total", "counter", "",
               "Focus rounds' perfquery reads by result: ok, failed (the tool failed or printed nothing "
               "usable), latched (a 32-bit PortXmitWait at all-ones: no window).",
               (("fabric", "result"),), SRC),
    MetricSpec("fabric_ib_focus_rounds_late_total", "counter", "",
               "Focus rounds that started later than their focus_interval tick because the previous round "
               "(its perfquery reads) took longer than the interval.", (("fabric",),), SRC),
]

METRICS: list[MetricSpec] = _DATA + _ERRORS + _LINK + _INFO + _SWEEP + _IBDIAGNET + _FOCUS
