"""The SNMP MIB tables the catalog's rows name: where each table's columns live (the entry OID) and whose MIB it is.

A column is declared once, as a ``RawCounter`` row on the metric it feeds (``IF_X.column("ifHCInOctets",
6)`` in roce.py): the row's ``source`` is "<MIB> <table>", its ``oid`` the column's numeric OID, its
``vendor`` the MIB's owner. The snmp_switch collector's tables (collectors/snmp_modules.py) take
their columns from these rows; the per-MIB table of docs/collectors/snmp_switch.md is generated from them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .spec import RawCounter


@dataclass(frozen=True)
class MibTable:
    mib: str
    table: str
    entry: tuple[int, ...]  # the table's entry OID: a column is entry + (column number,)
    vendor: str  # who owns the MIB (IETF, IEEE, Cisco, Arista)

    @property
    def source(self) -> str:
        """A row's ``source`` for this table."""
        return f"{self.mib} {self.table}"

    def column(self, name: str, number: int, scale: float = 1.0) -> RawCounter:
        """The column ``name`` (the MIB's object name), number ``number`` of the entry."""
        return RawCounter(name, self.source, scale=scale, vendor=self.vendor, oid=self.entry + (number,))

    def split(self, name: str, number: int, statistic: str) -> RawCounter:
        """One statistic of a column that carries several, told apart by an index component (its
        meaning is that component's enumeration name): named ``column(statistic)``."""
        return RawCounter(f"{name}({statistic})", self.source, vendor=self.vendor, oid=self.entry + (number,))


def split_name(name: str) -> tuple[str, str | None]:
    """(column object name, statistic or None) of a row's name made by ``MibTable.column``/``split``."""
    if name.endswith(")") and "(" in name:
        column, statistic = name[:-1].split("(", 1)
        return column, statistic
    return name, None


SYSTEM = MibTable("SNMPv2-MIB", "system", (1, 3, 6, 1, 2, 1, 1), "IETF")  # scalars: instance .0
IF = MibTable("IF-MIB", "ifTable", (1, 3, 6, 1, 2, 1, 2, 2, 1), "IETF")
IF_X = MibTable("IF-MIB", "ifXTable", (1, 3, 6, 1, 2, 1, 31, 1, 1, 1), "IETF")
IEEE_PFC = MibTable("IEEE8021-PFC-MIB", "ieee8021PfcIfTable", (1, 3, 111, 2, 802, 1, 1, 21, 1, 1, 1), "IEEE")
CISCO_PFC_PRIORITY = MibTable("CISCO-PFC-EXT-MIB", "cpfcIfPriorityTable", (1, 3, 6, 1, 4, 1, 9, 9, 813, 1, 2, 1),
                              "Cisco")
CISCO_QOS_STATS = MibTable("CISCO-SWITCH-QOS-MIB", "csqIfQosGroupStatsTable",
                           (1, 3, 6, 1, 4, 1, 9, 9, 580, 1, 5, 5, 1), "Cisco")
ARISTA_PFC_PRIORITY = MibTable("ARISTA-PFC-MIB", "aristaPfcPriorityTable", (1, 3, 6, 1, 4, 1, 30065, 3, 11, 1, 1, 1),
                               "Arista")
ARISTA_PFC_WATCHDOG = MibTable("ARISTA-PFC-MIB", "aristaPfcWatchdogTxQueueTable",
                               (1, 3, 6, 1, 4, 1, 30065, 3, 11, 1, 2, 1), "Arista")
ARISTA_EGRESS_QUEUE = MibTable("ARISTA-QUEUE-MIB", "aristaEgressQueueTable", (1, 3, 6, 1, 4, 1, 30065, 3, 6, 1, 2, 1),
                               "Arista")
LLDP_LOC_PORT = MibTable("LLDP-MIB", "lldpLocPortTable", (1, 0, 8802, 1, 1, 2, 1, 3, 7, 1), "IEEE")
LLDP_REM = MibTable("LLDP-MIB", "lldpRemTable", (1, 0, 8802, 1, 1, 2, 1, 4, 1, 1), "IEEE")
LLDP_V2_REM = MibTable("LLDP-V2-MIB", "lldpV2RemTable", (1, 3, 111, 2, 802, 1, 1, 13, 1, 4, 1, 1), "IEEE")

