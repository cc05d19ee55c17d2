"""Parsers for Arista EOS CLI output (the ``eos`` dialect of switch_cli).

Pure functions: text in, records out; only ParseError on bad input.

* ``show interfaces counters discards | json``: ``{"interfaces": {name: {"inDiscards": n,
  "outDiscards": n}}, "inDiscardsTotal": n, "outDiscardsTotal": n}``. The totals are sums the
  switch made, not read. An ``{"errors": [...]}`` object (what EOS prints for a command it
  refuses under ``| json``) is a ParseError naming the error.
* ``show priority-flow-control counters | json``: ``{"interfaceCounters": {name: {"rxFrames": n,
  "txFrames": n}}}`` -- PFC frames per interface, every priority together (the JSON has no
  per-priority count).
* ``show qos interfaces ecn counters queue | json``: ``{"intfQueueCounters": {name:
  {"queueCounters": {txq: "n" | "-"}}}}`` -- ECN-marked packets per egress (unicast) tx-queue,
  the count written as a string; ``"-"`` is a queue without ECN counting configured (no value,
  not a zero).
* ``show interfaces counters queue`` (text; no public ``| json`` capture was found; ``detail``
  prints the same egress table): the ``Egress Queue Counters`` table -- Port, Traffic Class (a
  second header line holds "Class"), DropPrec, DestType (UC/MC), OutEnqPkts, OutEnqOctets,
  OutDropPkts, OutDropOctets; and, on VoQ platforms (7280R/7500R), the ``Aggregate VoQ Counters``
  table before it -- Egress Port, Traffic Class, Pkts, Octets, DropPkts, DropOctets.

Interface names: the queue table abbreviates (``Et3/1/1``), the JSON does not (``Ethernet1``);
``Et<digit>`` and ``Po<digit>`` are written out as EOS's own long names (``Ethernet``,
``Port-Channel``) so both commands and SNMP's ifName give one label value per interface.

Skip-and-count: in the queue text, a line outside those two tables (a section this reader does
not know, whose title is a flush-left line ending in "Counters"), a row that is not one queue's
(e.g. ``TC3,7``: two traffic classes together, on the CPU port ``OlpFap0``), and every row of a
queue that appears more than once in a table (a platform that splits a queue per drop
precedence: its rows are never summed, and no single one is the queue's count) are skipped and
counted. A header other than the known columns, or a queue row whose counter is not a count,
fails the parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ParseError
from .guard import load_json, parser_entry
from .skipped import SkippedLine, note

MAX_COUNTER = (1 << 64) - 1
_COUNT = re.compile(r"^[0-9]{1,20}$")
_PORT = re.compile(r"^[A-Za-z][A-Za-z0-9_./:-]*$")
_SHORT = (("Et", "Ethernet"), ("Po", "Port-Channel"))


def long_name(port: str) -> str:
    """EOS's abbreviated interface name written out: 'Et3/1/1' -> 'Ethernet3/1/1'; others unchanged."""
    for short, full in _SHORT:
        if port.startswith(short) and port[len(short):len(short) + 1].isdigit():
            return full + port[len(short):]
    return port


def _count(token: str, what: str) -> int:
    if not _COUNT.match(token) or int(token) > MAX_COUNTER:
        raise ParseError(f"{what}: expected a 64-bit count, got {token[:40]!r}")
    return int(token)


# -- show interfaces counters discards | json --------------------------------------------------------

@dataclass(frozen=True)
class Discards:
    port: str
    values: dict[str, int]  # JSON key as EOS prints it (inDiscards, outDiscards) -> count, those it gave


DISCARD_KEYS = ("inDiscards", "outDiscards")


def _json_object(text: str, what: str) -> dict:
    data = load_json(text, what)
    if not isinstance(data, dict):
        raise ParseError(f"{what}: expected a JSON object")
    if "errors" in data:
        errors = data["errors"]
        first = errors[0] if isinstance(errors, list) and errors else errors
        raise ParseError(f"{what}: the switch refused it: {str(first)[:160]}")
    return data


def _interfaces(data: dict, key: str, what: str) -> dict:
    interfaces = data.get(key)
    if not isinstance(interfaces, dict):
        raise ParseError(f"{what}: no {key!r} object")
    for port, value in interfaces.items():
        if not _PORT.match(port):
            raise ParseError(f"{what}: {port[:40]!r} is not an interface name")
        if not isinstance(value, dict):
            raise ParseError(f"{what}: {port}: expected an object")
    return interfaces


def _json_count(raw: object, what: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= MAX_COUNTER:
        raise ParseError(f"{what}: {str(raw)[:40]!r} is not a 64-bit count")
    return raw


def _interface_counts(text: str, what: str, top: str, keys: tuple[str, ...]) -> list[tuple[str, dict[str, int]]]:
    """``{top: {port: {key: count}}}`` -> (long port name, {key: count}) for the ``keys`` present."""
    return [(long_name(port), {key: _json_count(counters[key], f"{what}: {port} {key}")
                               for key in keys if key in counters})
            for port, counters in _interfaces(_json_object(text, what), top, what).items()]


@parser_entry
def parse_discards_json(text: str, skipped: list[SkippedLine] | None = None) -> list[Discards]:
    what = "show interfaces counters discards | json"
    return [Discards(port, values) for port, values in _interface_counts(text, what, "interfaces", DISCARD_KEYS)]


# -- show priority-flow-control counters | json ------------------------------------------------------

@dataclass(frozen=True)
class PfcFrames:
    port: str
    values: dict[str, int]  # JSON key as EOS prints it (rxFrames, txFrames) -> count, those it gave


PFC_KEYS = ("rxFrames", "txFrames")


@parser_entry
def parse_pfc_counters_json(text: str, skipped: list[SkippedLine] | None = None) -> list[PfcFrames]:
    what = "show priority-flow-control counters | json"
    return [PfcFrames(port, values) for port, values in _interface_counts(text, what, "interfaceCounters", PFC_KEYS)]


# -- show qos interfaces ecn counters queue | json ---------------------------------------------------

@dataclass(frozen=True)
class EcnMarked:
    port: str
    queue: str  # UC<tx-queue>: ECN marks unicast egress queues (the label 'show queue wredcounters' uses)
    packets: int


_TXQ = re.compile(r"^[0-9]{1,2}$")
NOT_COUNTED = "-"  # the queue does not count ECN marks (not configured)


@parser_entry
def parse_ecn_counters_json(text: str, skipped: list[SkippedLine] | None = None) -> list[EcnMarked]:
    what = "show qos interfaces ecn counters queue | json"
    out = []
    for port, intf in _interfaces(_json_object(text, what), "intfQueueCounters", what).items():
        queues = intf.get("queueCounters")
        if not isinstance(queues, dict):
            raise ParseError(f"{what}: {port}: no 'queueCounters' object")
        for txq, raw in queues.items():
            if not _TXQ.match(txq):
                raise ParseError(f"{what}: {port}: {txq[:20]!r} is not a tx-queue number")
            if raw == NOT_COUNTED:
                continue
            if not isinstance(raw, str):  # EOS writes the count as a string
                raise ParseError(f"{what}: {port} queue {txq}: expected a count string, got {str(raw)[:40]!r}")
            out.append(EcnMarked(long_name(port), f"UC{int(txq)}", _count(raw, f"{what}: {port} queue {txq}")))
    return out


# -- show interfaces counters queue (text) -------------------------------------------------------------

@dataclass(frozen=True)
class QueueCounters:
    port: str
    queue: str  # <DestType><traffic class>: UC7, MC1 -- the label form SONiC and SNMP use
    values: dict[str, int]  # count column as its header reads (OutEnqPkts; VoQ table: Pkts, DropOctets ...) -> count


@dataclass(frozen=True)
class _Table:
    header: tuple[str, ...]  # the first header line's words
    second: tuple[str, ...]  # the header's second line ("Class" of "Traffic Class")
    drop_prec: bool  # rows carry DropPrec and DestType before the counts


TABLES = {
    "Egress Queue Counters": _Table(
        ("Port", "Traffic", "DropPrec", "DestType", "OutEnqPkts", "OutEnqOctets", "OutDropPkts", "OutDropOctets"),
        ("Class",), True),
    # VoQ platforms (7280R/7500R): packets queued for an egress port and class at the ingress
    # chips, and dropped there -- where congestion drops show on these switches.
    "Aggregate VoQ Counters": _Table(
        ("Egress", "Traffic", "Pkts", "Octets", "DropPkts", "DropOctets"),
        ("Port", "Class"), False),
}
_TC = re.compile(r"^TC([0-9]{1,2})$")
_DROP_PREC = re.compile(r"^DP[0-9](?:-[0-9])?$")
_DEST = ("UC", "MC")
_RULE = re.compile(r"^-+$")
SOURCE_QUEUE = "eos_queue_counters"
SOURCES = (SOURCE_QUEUE,)  # skipped lines are counted under these (skipped.sources_of)


def _is_title(line: str) -> bool:
    return bool(line) and not line[0].isspace() and line.rstrip().endswith("Counters")


def _queue_row(cells: list[str], table: _Table) -> tuple[str, str, list[str]] | None:
    """(port, queue label, count cells) of a row of ``table``; None for a line that is not one."""
    if len(cells) != len(table.header) or not _PORT.match(cells[0]) or not _TC.match(cells[1]):
        return None
    if table.drop_prec:
        if not _DROP_PREC.match(cells[2]) or cells[3] not in _DEST:
            return None
        dest, counts = cells[3], cells[4:]
    else:
        dest, counts = "UC", cells[2:]  # VoQs carry unicast traffic
    return long_name(cells[0]), f"{dest}{_TC.match(cells[1]).group(1)}", counts


@parser_entry
def parse_queue_counters(text: str, skipped: list[SkippedLine] | None = None) -> list[QueueCounters]:
    what = "show interfaces counters queue"
    lines = text.splitlines()
    table: _Table | None = None  # None: outside any table we read
    header_next = False
    rows: dict[tuple[str, str, str], list[tuple[int, str, dict[str, int]]]] = {}
    seen_tables = 0
    for i, line in enumerate(lines):
        cells = line.split()
        if not cells:
            continue
        if _is_title(line):
            title = line.strip()
            table, header_next = TABLES.get(title), title in TABLES
            if table is None:
                note(skipped, SOURCE_QUEUE, i + 1, line)  # a section this reader does not know
            else:
                seen_tables += 1
            continue
        if header_next:  # the line after a known title must be its header
            if tuple(cells) != table.header:
                raise ParseError(f"{what}: unknown header of {title!r}: {line.strip()[:80]!r}")
            header_next = False
            continue
        if table is not None and (tuple(cells) == table.second or _RULE.match(line.strip())):
            continue
        found = _queue_row(cells, table) if table is not None else None
        if found is None:
            note(skipped, SOURCE_QUEUE, i + 1, line)
            continue
        port, queue, counts = found
        values = {name: _count(c, f"{what}: {cells[0]} {cells[1]} {name}")
                  for name, c in zip(table.header[-len(counts):], counts)}
        rows.setdefault((title, port, queue), []).append((i + 1, line, values))
    if not seen_tables:
        raise ParseError(f"{what}: none of the tables {', '.join(map(repr, TABLES))}")
    if header_next:
        raise ParseError(f"{what}: {title!r} without its header")
    out = []
    for (_, port, queue), found in rows.items():
        if len(found) > 1:  # split per drop precedence: no single row is the queue's count
            for line_no, line, _ in found:
                note(skipped, SOURCE_QUEUE, line_no, line)
            continue
        out.append(QueueCounters(port, queue, found[0][2]))
    return out


__all__ = ["Discards", "EcnMarked", "PfcFrames", "QueueCounters", "long_name", "parse_discards_json",
           "parse_ecn_counters_json", "parse_pfc_counters_json", "parse_queue_counters"]


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse_queue_counters": ("real/eos_queue_counters_detail_egress_nz.txt",
                             "real/eos_queue_counters_nz_7280sr3e.txt"),
    "parse_discards_json": ("real/eos_interfaces_counters_discards_anta.json",),
    "parse_pfc_counters_json": ("real/eos_pfc_counters_anta.json",),
    "parse_ecn_counters_json": ("real/eos_qos_ecn_counters_queue_anta.json",),
}
