"""Parsers for Arista EOS CLI output (the ``eos`` dialect of switch_cli).

Pure functions: text in, records out; only ParseError on bad input.

* ``show interfaces counters discards | json``: ``{"interfaces": {name: {"inDiscards": n,
  "outDiscards": n}}, "inDiscardsTotal": n, "outDiscardsTotal": n}``. The totals are sums the
  switch made, not read. An ``{"errors": [...]}`` object (what EOS prints for a command it
  refuses under ``| json``) is a ParseError naming the error.
* ``show interfaces counters queue`` (text; no public ``| json`` capture was found; ``detail``
  prints the same egress table): the ``Egress Queue Counters`` table -- Port, Traffic Class (a
  second header line holds "Class"), DropPrec, DestType (UC/MC), OutEnqPkts, OutEnqOctets,
  OutDropPkts, OutDropOctets. On VoQ platforms (7280R/7500R) an ``Aggregate VoQ Counters`` table
  comes first: not read here (skipped and counted).

Interface names: the queue table abbreviates (``Et3/1/1``), the JSON does not (``Ethernet1``);
``Et<digit>`` and ``Po<digit>`` are written out as EOS's own long names (``Ethernet``,
``Port-Channel``) so both commands and SNMP's ifName give one label value per interface.

Skip-and-count: in the queue text, a line before the ``Egress Queue Counters`` title or after the
table ends (another section the command prints), a row that is not one queue's (e.g. ``TC3,7``,
two traffic classes together on the CPU port ``OlpFap0``), and every row of a queue that appears more than once (a platform
that splits a queue per drop precedence: its rows are never summed, and no single one is the
queue's count) are skipped and counted. A header other than the known columns, or a queue row
whose counter is not a count, fails the parse.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..errors import ParseError
from .guard import parser_entry
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
    values: dict[str, int]  # in_discards / out_discards, when the switch gave them


DISCARD_KEYS = {"inDiscards": "in_discards", "outDiscards": "out_discards"}


def _json_object(text: str, what: str) -> dict:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ParseError(f"{what}: invalid JSON: {str(e)[:80]}") from None
    if not isinstance(data, dict):
        raise ParseError(f"{what}: expected a JSON object")
    if "errors" in data:
        errors = data["errors"]
        first = errors[0] if isinstance(errors, list) and errors else errors
        raise ParseError(f"{what}: the switch refused it: {str(first)[:160]}")
    return data


@parser_entry
def parse_discards_json(text: str, skipped: list[SkippedLine] | None = None) -> list[Discards]:
    what = "show interfaces counters discards | json"
    interfaces = _json_object(text, what).get("interfaces")
    if not isinstance(interfaces, dict):
        raise ParseError(f"{what}: no 'interfaces' object")
    out = []
    for port, counters in interfaces.items():
        if not _PORT.match(port):
            raise ParseError(f"{what}: {port[:40]!r} is not an interface name")
        if not isinstance(counters, dict):
            raise ParseError(f"{what}: {port}: expected an object of counters")
        values = {}
        for key, name in DISCARD_KEYS.items():
            if key in counters:
                raw = counters[key]
                if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= MAX_COUNTER:
                    raise ParseError(f"{what}: {port} {key}: {str(raw)[:40]!r} is not a 64-bit count")
                values[name] = raw
        out.append(Discards(long_name(port), values))
    return out


# -- show interfaces counters queue (text) -------------------------------------------------------------

@dataclass(frozen=True)
class QueueCounters:
    port: str
    queue: str  # <DestType><traffic class>: UC7, MC1 -- the label form SONiC and SNMP use
    values: dict[str, int]


EGRESS_TITLE = "Egress Queue Counters"
EGRESS_HEADER = ("Port", "Traffic", "DropPrec", "DestType", "OutEnqPkts", "OutEnqOctets", "OutDropPkts",
                 "OutDropOctets")
EGRESS_VALUES = ("enqueued_packets", "enqueued_bytes", "dropped_packets", "dropped_bytes")
_TC = re.compile(r"^TC([0-9]{1,2})$")
_DROP_PREC = re.compile(r"^DP[0-9](?:-[0-9])?$")
_DEST = ("UC", "MC")
SOURCE_QUEUE = "eos_queue_counters"


@parser_entry
def parse_queue_counters(text: str, skipped: list[SkippedLine] | None = None) -> list[QueueCounters]:
    what = "show interfaces counters queue"
    lines = text.splitlines()
    title = next((i for i, line in enumerate(lines) if line.strip() == EGRESS_TITLE), None)
    if title is None:
        raise ParseError(f"{what}: no {EGRESS_TITLE!r} table")
    for i in range(title):  # another section before ours: not this reader's table
        if lines[i].strip():
            note(skipped, SOURCE_QUEUE, i + 1, lines[i])
    header_at = next((i for i in range(title + 1, len(lines)) if lines[i].strip()), None)
    if header_at is None or tuple(lines[header_at].split()) != EGRESS_HEADER:
        got = lines[header_at].strip()[:80] if header_at is not None else "nothing"
        raise ParseError(f"{what}: unknown header after {EGRESS_TITLE!r}: {got!r}")
    rows: dict[tuple[str, str], list[tuple[int, str, tuple[int, ...]]]] = {}
    i = header_at + 1
    if i < len(lines) and lines[i].split() == ["Class"]:  # the header's second line ("Traffic / Class")
        i += 1
    ended = False
    for i in range(i, len(lines)):
        line = lines[i]
        cells = line.split()
        if not cells:
            continue
        # a new section's title (flush left, "... Counters") ends the table: its rows are not ours
        ended = ended or (not line[0].isspace() and line.rstrip().endswith("Counters"))
        if ended:
            note(skipped, SOURCE_QUEUE, i + 1, line)
            continue
        if (len(cells) != len(EGRESS_HEADER) or not _PORT.match(cells[0]) or not _TC.match(cells[1])
                or not _DROP_PREC.match(cells[2]) or cells[3] not in _DEST):
            note(skipped, SOURCE_QUEUE, i + 1, line)
            continue
        counts = tuple(_count(c, f"{what}: {cells[0]} {cells[1]} {h}") for c, h in zip(cells[4:], EGRESS_HEADER[4:]))
        queue = f"{cells[3]}{_TC.match(cells[1]).group(1)}"
        rows.setdefault((long_name(cells[0]), queue), []).append((i + 1, line, counts))
    out = []
    for (port, queue), found in rows.items():
        if len(found) > 1:  # split per drop precedence: no single row is the queue's count
            for line_no, line, _ in found:
                note(skipped, SOURCE_QUEUE, line_no, line)
            continue
        out.append(QueueCounters(port, queue, dict(zip(EGRESS_VALUES, found[0][2]))))
    return out


__all__ = ["Discards", "QueueCounters", "long_name", "parse_discards_json", "parse_queue_counters"]
