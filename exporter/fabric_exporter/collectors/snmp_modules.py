"""The SNMP MIB modules the snmp_switch collector can walk: small declarative tables.

A module is a list of ``Table``s. A table names its index components and its columns; each column
is walked on its own (GETBULK over the column's subtree), and every row becomes samples:

* the ``ifindex`` index component becomes the ``interface`` label (ifName, looked up by the
  collector), and decides whether the interface passes the filters;
* ``priority`` becomes the ``priority`` label;
* ``queue`` (with ``queue_base`` 0 or 1) and a cast (unicast/multicast, from a ``cast`` index
  component or from the column's ``split``) become the ``queue`` label ``UC<n>``/``MC<n>``,
  SONiC's naming, so SNMP and CLI series of one queue are equal;
* ``where`` keeps only rows whose index component has one value (e.g. egress direction);
* several columns naming one metric are summed, and the sum is published only when every one of
  them has the row (a partial sum would be a made-up value);
* ``split`` picks the metric (and cast) from an index component: one column carrying several
  statistics, as in CISCO-SWITCH-QOS-MIB's ``csqIfQosGroupStatsValue``.

Numeric OIDs only: no MIB is loaded at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

IF_MIB_IFENTRY = (1, 3, 6, 1, 2, 1, 2, 2, 1)
IF_MIB_IFXENTRY = (1, 3, 6, 1, 2, 1, 31, 1, 1, 1)
SYS_UPTIME = (1, 3, 6, 1, 2, 1, 1, 3, 0)
IF_NUMBER = (1, 3, 6, 1, 2, 1, 2, 1, 0)
IF_NAME = IF_MIB_IFXENTRY + (1,)
IF_ALIAS = IF_MIB_IFXENTRY + (18,)

UNICAST, MULTICAST, MIXED = "UC", "MC", "Q"


@dataclass(frozen=True)
class Column:
    """One walked column. ``metric`` None with ``split`` set: the metric comes from an index component."""

    object: str  # MIB object name, for docs and error messages
    oid: tuple[int, ...]
    metric: str | None = None
    scale: float = 1.0
    #: (index component, {component value: (metric, cast or None)})
    split: tuple[str, dict[int, tuple[str, str | None]]] | None = None


@dataclass(frozen=True)
class Table:
    name: str
    index: tuple[str, ...]  # index component names, in OID order
    columns: tuple[Column, ...]
    queue_base: int = 0  # 1 where the MIB numbers queues from 1
    #: cast index component -> {value: UC|MC|Q}
    cast: tuple[str, dict[int, str]] | None = None
    where: dict[str, int] = field(default_factory=dict)

    @cached_property
    def positions(self) -> dict[str, int]:
        """Index component name -> its place in the index."""
        return {name: i for i, name in enumerate(self.index)}

    @cached_property
    def summed(self) -> dict[str, int]:
        """Metrics several columns add up to -> how many columns (all of them must have the row)."""
        parts: dict[str, int] = {}
        for col in self.columns:
            if col.metric:
                parts[col.metric] = parts.get(col.metric, 0) + 1
        return {metric: n for metric, n in parts.items() if n > 1}


@dataclass(frozen=True)
class Module:
    name: str
    mib: str
    tables: tuple[Table, ...]
    doc: str = ""


def _if(col: int) -> tuple[int, ...]:
    return IF_MIB_IFENTRY + (col,)


def _ifx(col: int) -> tuple[int, ...]:
    return IF_MIB_IFXENTRY + (col,)


IF_MIB = Module("if_mib", "IF-MIB", (
    Table("ifTable", ("ifindex",), (
        Column("ifOperStatus", _if(8), "fabric_roce_switch_if_oper_status"),
        Column("ifInDiscards", _if(13), "fabric_roce_rx_discards_total"),
        Column("ifInErrors", _if(14), "fabric_roce_switch_if_rx_errors_total"),
        Column("ifOutDiscards", _if(19), "fabric_roce_tx_discards_total"),
        Column("ifOutErrors", _if(20), "fabric_roce_switch_if_tx_errors_total"),
    )),
    Table("ifXTable", ("ifindex",), (
        Column("ifHCInOctets", _ifx(6), "fabric_roce_rx_bytes_total"),
        Column("ifHCInUcastPkts", _ifx(7), "fabric_roce_rx_packets_total"),
        Column("ifHCInMulticastPkts", _ifx(8), "fabric_roce_rx_packets_total"),
        Column("ifHCInBroadcastPkts", _ifx(9), "fabric_roce_rx_packets_total"),
        Column("ifHCOutOctets", _ifx(10), "fabric_roce_tx_bytes_total"),
        Column("ifHCOutUcastPkts", _ifx(11), "fabric_roce_tx_packets_total"),
        Column("ifHCOutMulticastPkts", _ifx(12), "fabric_roce_tx_packets_total"),
        Column("ifHCOutBroadcastPkts", _ifx(13), "fabric_roce_tx_packets_total"),
        Column("ifHighSpeed", _ifx(15), "fabric_roce_switch_if_speed_bytes_per_second", scale=1e6 / 8),
    )),
), doc="Interface octets, packets (unicast+multicast+broadcast), discards, errors, oper status, speed.")

_IEEE_PFC = (1, 3, 111, 2, 802, 1, 1, 21, 1, 1, 1)
IEEE8021_PFC = Module("ieee8021_pfc", "IEEE8021-PFC-MIB", (
    Table("ieee8021PfcIfTable", ("ifindex",), (
        Column("ieee8021PfcRequests", _IEEE_PFC + (2,), "fabric_roce_switch_pfc_tx_frames_total"),
        Column("ieee8021PfcIndications", _IEEE_PFC + (3,), "fabric_roce_switch_pfc_rx_frames_total"),
    )),
), doc="PFC frames sent/received per interface (all priorities together).")

_CPFC_PRIO = (1, 3, 6, 1, 4, 1, 9, 9, 813, 1, 2, 1)
CISCO_PFC = Module("cisco_pfc", "CISCO-PFC-EXT-MIB", (
    Table("cpfcIfPriorityTable", ("ifindex", "priority"), (
        Column("cpfcIfPriorityRequests", _CPFC_PRIO + (2,), "fabric_roce_pfc_tx_pause_frames_total"),
        Column("cpfcIfPriorityIndications", _CPFC_PRIO + (3,), "fabric_roce_pfc_rx_pause_frames_total"),
    )),
), doc="PFC frames sent/received per priority 0-7 (SONiC's snmpagent serves this table).")

_CSQ_VALUE = (1, 3, 6, 1, 4, 1, 9, 9, 580, 1, 5, 5, 1, 4)
# QosStatsType: 1 ucastSentPkts 2 ucastSentBytes 3 mcastSentPkts 4 mcastSentBytes
#               5 ucastDroppedPkts 6 ucastDroppedBytes 7 mcastDroppedPkts 8 mcastDroppedBytes
_CSQ_STATS = {
    1: ("fabric_roce_switch_queue_tx_packets_total", UNICAST),
    2: ("fabric_roce_switch_queue_tx_bytes_total", UNICAST),
    3: ("fabric_roce_switch_queue_tx_packets_total", MULTICAST),
    4: ("fabric_roce_switch_queue_tx_bytes_total", MULTICAST),
    5: ("fabric_roce_switch_queue_dropped_packets_total", UNICAST),
    6: ("fabric_roce_switch_queue_dropped_bytes_total", UNICAST),
    7: ("fabric_roce_switch_queue_dropped_packets_total", MULTICAST),
    8: ("fabric_roce_switch_queue_dropped_bytes_total", MULTICAST),
}
CISCO_QOS = Module("cisco_qos", "CISCO-SWITCH-QOS-MIB", (
    Table("csqIfQosGroupStatsTable", ("ifindex", "direction", "queue", "stat"), (
        Column("csqIfQosGroupStatsValue", _CSQ_VALUE, split=("stat", _CSQ_STATS)),
    ), queue_base=1, where={"direction": 2}),
), doc="Egress per-queue sent/dropped packets and bytes (SONiC: egress only; queues numbered from 1).")

_ARISTA_PFC_PRIO = (1, 3, 6, 1, 4, 1, 30065, 3, 11, 1, 1, 1)
_ARISTA_PFCWD = (1, 3, 6, 1, 4, 1, 30065, 3, 11, 1, 2, 1)
_ARISTA_CAST = {0: UNICAST, 1: MULTICAST, 2: MIXED}  # ARISTA-QUEUE-MIB PacketType
ARISTA_PFC = Module("arista_pfc", "ARISTA-PFC-MIB", (
    Table("aristaPfcPriorityTable", ("ifindex", "priority"), (
        Column("aristaPfcPriorityRequests", _ARISTA_PFC_PRIO + (3,), "fabric_roce_pfc_tx_pause_frames_total"),
        Column("aristaPfcPriorityIndications", _ARISTA_PFC_PRIO + (4,), "fabric_roce_pfc_rx_pause_frames_total"),
    )),
    Table("aristaPfcWatchdogTxQueueTable", ("ifindex", "cast", "queue"), (
        Column("aristaPfcWatchdogTxQueueStuckCount", _ARISTA_PFCWD + (4,),
               "fabric_roce_switch_pfcwd_storms_detected_total"),
        Column("aristaPfcWatchdogTxQueueRecoveredCount", _ARISTA_PFCWD + (5,),
               "fabric_roce_switch_pfcwd_storms_restored_total"),
    ), cast=("cast", _ARISTA_CAST)),
), doc="PFC frames per priority; PFC watchdog stuck/recovered counts per queue.")

_ARISTA_EGRESS = (1, 3, 6, 1, 4, 1, 30065, 3, 6, 1, 2, 1)
ARISTA_QUEUE = Module("arista_queue", "ARISTA-QUEUE-MIB", (
    Table("aristaEgressQueueTable", ("ifindex", "queue", "cast"), (
        Column("aristaEgressQueuePkts", _ARISTA_EGRESS + (4,), "fabric_roce_switch_queue_tx_packets_total"),
        Column("aristaEgressQueueBytes", _ARISTA_EGRESS + (5,), "fabric_roce_switch_queue_tx_bytes_total"),
        Column("aristaEgressQueuePktsDropped", _ARISTA_EGRESS + (6,),
               "fabric_roce_switch_queue_dropped_packets_total"),
        Column("aristaEgressQueueBytesDropped", _ARISTA_EGRESS + (7,),
               "fabric_roce_switch_queue_dropped_bytes_total"),
    ), cast=("cast", _ARISTA_CAST)),
), doc="Egress per-queue sent and dropped packets and bytes.")

MODULES: dict[str, Module] = {m.name: m for m in (IF_MIB, IEEE8021_PFC, CISCO_PFC, CISCO_QOS, ARISTA_PFC,
                                                    ARISTA_QUEUE)}
DEFAULT_MODULES = ("if_mib", "ieee8021_pfc")


def metrics_of(module: Module) -> set[str]:
    names: set[str] = set()
    for table in module.tables:
        for col in table.columns:
            if col.metric:
                names.add(col.metric)
            if col.split:
                names.update(m for m, _ in col.split[1].values())
    return names
