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

Numeric OIDs only: no MIB is loaded at run time. The columns are not listed here: each is a
``RawCounter`` row on the catalog metric it feeds (source "<MIB> <table>", its OID, scale and MIB
owner; catalog/mib.py), and a table takes every row of its source, in OID order. This module holds
only the structure: index components, casts, splits, ``where`` and the queue base.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..catalog import CATALOG
from ..catalog import mib
from ..catalog.mib import split_name
from ..catalog.spec import RawCounter
from ..mapping import oid_of, rows_of


IF_MIB_IFENTRY = mib.IF.entry
SYS_UPTIME = oid_of(mib.SYSTEM.source, "sysUpTime") + (0,)
IF_NUMBER = (1, 3, 6, 1, 2, 1, 2, 1, 0)  # IF-MIB ifNumber.0: read to notice interfaces coming and going
IF_NAME = oid_of(mib.IF_X.source, "ifName")
IF_ALIAS = oid_of(mib.IF_X.source, "ifAlias")
IF_OPER_STATUS = oid_of(mib.IF.source, "ifOperStatus")

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


def _columns(source: mib.MibTable, split: tuple[str, dict[int, tuple[str, str | None]]] | None) -> tuple[Column, ...]:
    """The catalog's rows of ``source`` as walked columns, in OID order (an info metric's rows --
    ifName, ifAlias -- are labels the collector walks itself, not columns). A split column's rows
    name one statistic each (``column(statistic)``); ``split`` maps its index component's values to
    (statistic, cast)."""
    by_oid: dict[tuple[int, ...], list[tuple[str, RawCounter]]] = {}
    for metric, row in rows_of(source.source):
        if CATALOG[metric].type != "info":
            by_oid.setdefault(row.oid, []).append((metric, row))
    columns = []
    for oid in sorted(by_oid):
        rows = by_oid[oid]
        name, statistic = split_name(rows[0][1].name)
        if statistic is None:
            if len(rows) > 1:
                raise ValueError(f"{source.source} {name}: one column feeds {len(rows)} metrics")
            metric, row = rows[0]
            columns.append(Column(name, oid, metric, float(row.scale)))
            continue
        if split is None:
            raise ValueError(f"{source.source} {name}: statistics declared, but the table has no split")
        metric_of = {split_name(row.name)[1]: metric for metric, row in rows}
        unknown = set(metric_of) - {stat for stat, _cast in split[1].values()}
        if unknown:
            raise ValueError(f"{source.source} {name}: statistics {sorted(unknown)} are not values of {split[0]}")
        choices = {value: (metric_of[stat], cast) for value, (stat, cast) in split[1].items() if stat in metric_of}
        columns.append(Column(name, oid, split=(split[0], choices)))
    return tuple(columns)


#: table name -> {split component value: statistic name}, for the docs
_STATISTICS: dict[str, dict[int, str]] = {}


def _table(source: mib.MibTable, index: tuple[str, ...], queue_base: int = 0,
           cast: tuple[str, dict[int, str]] | None = None, where: dict[str, int] | None = None,
           split: tuple[str, dict[int, tuple[str, str | None]]] | None = None) -> Table:
    if split is not None:
        _STATISTICS[source.table] = {value: stat for value, (stat, _cast) in split[1].items()}
    return Table(source.table, index, _columns(source, split), queue_base, cast, where or {})


IF_MIB = Module("if_mib", "IF-MIB", (
    _table(mib.IF, ("ifindex",)),
    _table(mib.IF_X, ("ifindex",)),
), doc="Interface octets, packets (unicast+multicast+broadcast), discards, errors, oper status, speed.")

IEEE8021_PFC = Module("ieee8021_pfc", "IEEE8021-PFC-MIB", (
    _table(mib.IEEE_PFC, ("ifindex",)),
), doc="PFC frames sent/received per interface (all priorities together).")

CISCO_PFC = Module("cisco_pfc", "CISCO-PFC-EXT-MIB", (
    _table(mib.CISCO_PFC_PRIORITY, ("ifindex", "priority")),
), doc="PFC frames sent/received per priority 0-7 (SONiC's snmpagent serves this table).")

# QosStatsType, the "stat" index component: which statistic csqIfQosGroupStatsValue holds, and its cast
_CSQ_STATS_TYPE = {1: ("ucastSentPkts", UNICAST), 2: ("ucastSentBytes", UNICAST),
                   3: ("mcastSentPkts", MULTICAST), 4: ("mcastSentBytes", MULTICAST),
                   5: ("ucastDroppedPkts", UNICAST), 6: ("ucastDroppedBytes", UNICAST),
                   7: ("mcastDroppedPkts", MULTICAST), 8: ("mcastDroppedBytes", MULTICAST)}
CISCO_QOS = Module("cisco_qos", "CISCO-SWITCH-QOS-MIB", (
    _table(mib.CISCO_QOS_STATS, ("ifindex", "direction", "queue", "stat"), queue_base=1, where={"direction": 2},
           split=("stat", _CSQ_STATS_TYPE)),
), doc="Egress per-queue sent/dropped packets and bytes (SONiC: egress only; queues numbered from 1).")

_ARISTA_CAST = {0: UNICAST, 1: MULTICAST, 2: MIXED}  # ARISTA-QUEUE-MIB PacketType
ARISTA_PFC = Module("arista_pfc", "ARISTA-PFC-MIB", (
    _table(mib.ARISTA_PFC_PRIORITY, ("ifindex", "priority")),
    _table(mib.ARISTA_PFC_WATCHDOG, ("ifindex", "cast", "queue"), cast=("cast", _ARISTA_CAST)),
), doc="PFC frames per priority; PFC watchdog stuck/recovered counts per queue.")

ARISTA_QUEUE = Module("arista_queue", "ARISTA-QUEUE-MIB", (
    _table(mib.ARISTA_EGRESS_QUEUE, ("ifindex", "queue", "cast"), cast=("cast", _ARISTA_CAST)),
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


# -- the per-MIB column table of docs/collectors/snmp_switch.md (generated; a test keeps the doc equal) --

DOC_BEGIN = "<!-- snmp columns: generated by fabric_exporter.collectors.snmp_modules.columns_markdown() -->"
DOC_END = "<!-- end of snmp columns -->"

#: the LLDP modules' tables (walked by collectors/lldp.py, not mapped to counters): module -> sources
_LLDP_SOURCES = {"lldp": (mib.LLDP_REM, mib.LLDP_LOC_PORT), "lldp_v2": (mib.LLDP_V2_REM,)}


def _labels(table: Table, cast: str | None = None) -> str:
    labels = ["interface"]
    if "priority" in table.positions:
        labels.append("priority")
    if "queue" in table.positions:
        labels.append(f"queue {cast}&lt;n&gt;" if cast else "queue UC/MC/Q&lt;n&gt;" if table.cast else "queue")
    return ", ".join(labels)


def _notes(table: Table, col: Column, metric: str) -> str:
    notes = []
    if col.scale != 1.0:
        notes.append(f"× {col.scale:g}")
    if metric in table.summed:
        notes.append(f"summed over {table.summed[metric]} columns, published when all have the row")
    notes += [f"only {k} = {v}" for k, v in table.where.items()]
    if table.queue_base:
        notes.append(f"queues numbered from {table.queue_base}")
    if table.cast:
        notes.append(f"{table.cast[0]} {'/'.join(f'{k} {v}' for k, v in table.cast[1].items())}")
    return "; ".join(notes)


def columns_markdown() -> str:
    """Every column each module walks, from the catalog's rows: its MIB and owner, OID, metric, labels."""
    out = [DOC_BEGIN, "",
           "| module | MIB (owner) | table | column | OID | metric | labels | note |",
           "|---|---|---|---|---|---|---|---|"]
    owner = {t.source: t.vendor for t in vars(mib).values() if isinstance(t, mib.MibTable)}
    # read on every poll whatever the modules: the agent's uptime, and each interface's name and alias
    for source in (mib.SYSTEM, mib.IF_X):
        for metric, row in rows_of(source.source):
            if source is mib.SYSTEM or CATALOG[metric].type == "info":
                instance = ".0" if source is mib.SYSTEM else ""
                out.append(f"| (every poll) | {source.mib} ({source.vendor}) | {source.table} | {row.name}{instance} | "
                           f"`{'.'.join(map(str, row.oid or ()))}{instance}` | `{metric}` | "
                           f"{'switch' if source is mib.SYSTEM else 'interface, ifindex, alias'} | "
                           f"{f'× {row.scale:g}' if row.scale != 1 else ''} |")
    for module in MODULES.values():
        for table in module.tables:
            source = f"{module.mib} {table.name}"
            for col in table.columns:
                where = f"| `{module.name}` | {module.mib} ({owner[source]}) | {table.name} | {col.object}"
                dotted = ".".join(map(str, col.oid))
                if col.split is None:
                    assert col.metric is not None
                    out.append(f"{where} | `{dotted}` | `{col.metric}` | {_labels(table)} | "
                               f"{_notes(table, col, col.metric)} |")
                    continue
                component, choices = col.split
                for value, (metric, cast) in choices.items():
                    out.append(f"{where}, {component} {value} ({_STATISTICS[table.name][value]}) | `{dotted}` | `{metric}` | "
                               f"{_labels(table, cast)} | {_notes(table, col, metric)} |")
    for module, tables in _LLDP_SOURCES.items():
        for source in tables:
            for metric, row in rows_of(source.source):
                dotted = ".".join(map(str, row.oid or ()))
                out.append(f"| `{module}` | {source.mib} ({source.vendor}) | {source.table} | {row.name} | "
                           f"`{dotted}` | `{metric}` | interface, neighbor_host, neighbor_port | |")
    out += ["", DOC_END]
    return "\n".join(out)
