"""Parsers for SONiC ``watermarkstat`` output: queue, priority-group and buffer-pool watermarks.

Pure functions: text in, records out; only ParseError on bad input. The commands
(sonic-utilities ``show/main.py``, each running ``scripts/watermarkstat``):

* ``show queue [persistent-]watermark unicast|multicast|all [--json]``: a title
  ``Egress shared pool occupancy per unicast queue:`` (``multicast queue``, ``all queues``), then a
  tabulate "simple" table, columns ``Port``, ``UC<n>`` / ``MC<n>`` / ``ALL<n>``, bytes.
* ``show priority-group [persistent-]watermark shared|headroom [--json]``: titles ``Ingress shared
  pool occupancy per PG:`` and ``Ingress headroom per PG:``, columns ``Port``, ``PG<n>``, bytes.
* ``show buffer_pool [persistent-]watermark`` and ``show headroom-pool [persistent-]watermark``
  (no ``--json`` in the ``show`` command): titles ``Shared pool maximum occupancy:`` and
  ``Headroom pool maximum occupancy:``, columns ``Pool``, ``Bytes``.

Multi-ASIC switches print one title + table per namespace, the title ending in ``(Namespace
asicN)``, with no blank line between them; ``--json`` prints one JSON array per namespace, one
after the other. A value ``N/A`` (the counter is not in COUNTERS_DB: not polled, not supported) is
left out -- no series, never a 0. ``show queue watermark multicast`` on a switch without multicast
queues prints ``Object map from the COUNTERS_DB is empty because the multicast queues are not
configured in the CONFIG_DB!`` and exits 0: known, no records.

Skip-and-count: a line outside any table, or a row whose cell count does not match its header, is
skipped and counted (``skipped=``); a title without its header and dash line, an unknown column or
a malformed value fails the parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ParseError
from .guard import json_decoder, parser_entry
from .skipped import SkippedLine, note
from .sonic_cli import MAX_COUNTER, NA, parse_count

SOURCE_QUEUE = "sonic_queue_watermark"
SOURCE_PG = "sonic_pg_watermark"
SOURCE_POOL = "sonic_buffer_pool_watermark"
SOURCES = (SOURCE_QUEUE, SOURCE_PG, SOURCE_POOL)  # skipped lines are counted under these (skipped.sources_of)

QUEUE_TITLES = ("Egress shared pool occupancy per unicast queue:",
                "Egress shared pool occupancy per multicast queue:",
                "Egress shared pool occupancy per all queues:")
PG_TITLES = ("Ingress shared pool occupancy per PG:", "Ingress headroom per PG:")
POOL_TITLES = ("Shared pool maximum occupancy:", "Headroom pool maximum occupancy:")
MULTICAST_UNCONFIGURED = ("Object map from the COUNTERS_DB is empty because the multicast queues are not "
                          "configured in the CONFIG_DB!")

_TITLE = re.compile(r"^(?P<title>[A-Za-z][A-Za-z ]*:)(?: \(Namespace (?P<ns>[A-Za-z0-9_.-]+)\))?$")
_DASHES = re.compile(r"^[ -]*-[ -]*$")
_PORT = re.compile(r"^[A-Za-z][A-Za-z0-9_./:-]*$")
_POOL = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]*$")
_QUEUE_COLUMN = re.compile(r"^(UC|MC|ALL)([0-9]{1,4})$")
_PG_COLUMN = re.compile(r"^PG([0-9]{1,3})$")


@dataclass(frozen=True)
class QueueWatermark:
    port: str
    queue: str  # as SONiC names it: UC0, MC8, ALL20
    bytes: int


@dataclass(frozen=True)
class PgWatermark:
    port: str
    pg: int
    bytes: int
    column: str  # as printed: PG3


@dataclass(frozen=True)
class PoolWatermark:
    pool: str
    namespace: str | None  # multi-ASIC: each ASIC has its own pools of the same names
    bytes: int


@dataclass(frozen=True)
class _Table:
    title: str
    namespace: str | None
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def _tables(text: str, titles: tuple[str, ...], what: str, source: str,
            skipped: list[SkippedLine] | None) -> list[_Table]:
    """Every ``title [(Namespace ns)]`` + header + dash line + rows block; rows end at a blank line,
    the end, or the next title."""
    if not isinstance(text, str):
        raise ParseError("expected text")
    lines = text.splitlines()
    out: list[_Table] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        m = _TITLE.match(stripped)
        if not stripped or stripped == MULTICAST_UNCONFIGURED:
            i += 1
            continue
        if m is None or m.group("title") not in titles:
            note(skipped, source, i + 1, lines[i])  # not one of this command's titles
            i += 1
            continue
        if i + 2 >= len(lines) or not _DASHES.match(lines[i + 2]):
            raise ParseError(f"{what}: line {i + 1}: {stripped[:80]!r} is not followed by a table")
        header = lines[i + 1]
        spans = [(mm.start(), mm.end()) for mm in re.finditer(r"-+", lines[i + 2])]
        headers = tuple(header[s:e].strip() for s, e in spans)
        # every word of the header inside one dash group, none cut by a group's edge
        if not all(headers) or " ".join(header[s:e] for s, e in spans).split() != header.split():
            raise ParseError(f"{what}: line {i + 2}: header {header.strip()[:80]!r} does not fit its dash line")
        j = i + 3
        rows = []
        while j < len(lines) and lines[j].strip():
            t = _TITLE.match(lines[j].strip())
            if t is not None and t.group("title") in titles:
                break
            cells = tuple(lines[j].split())
            if len(cells) != len(headers):  # cannot align with the columns: never shift
                note(skipped, source, j + 1, lines[j])
            else:
                rows.append(cells)
            j += 1
        out.append(_Table(m.group("title"), m.group("ns"), headers, tuple(rows)))
        i = j
    if not out and any(ln.strip() and ln.strip() != MULTICAST_UNCONFIGURED for ln in lines):
        raise ParseError(f"{what}: no table")
    return out


def _columns(headers: tuple[str, ...], first: str, pattern: re.Pattern, what: str) -> list[re.Match]:
    if headers[0] != first:
        raise ParseError(f"{what}: expected column {first!r} first, got {headers[0][:40]!r}")
    cols = []
    for h in headers[1:]:
        m = pattern.match(h)
        if m is None:
            raise ParseError(f"{what}: unexpected column {h[:40]!r}")
        cols.append(m)
    if len({c.group(0) for c in cols}) != len(cols):
        raise ParseError(f"{what}: a column repeated")
    return cols


def _port(token: str, what: str) -> str:
    if not _PORT.match(token):
        raise ParseError(f"{what}: {token[:40]!r} is not an interface name")
    return token


def _per_port(tables: list[_Table], pattern: re.Pattern, what: str) -> list[tuple[str, re.Match, int]]:
    """(port, column match, bytes) of every cell that is not N/A; a port twice is an error."""
    out = []
    seen: set[str] = set()
    for t in tables:
        cols = _columns(t.headers, "Port", pattern, what)
        for row in t.rows:
            port = _port(row[0], what)
            if port in seen:
                raise ParseError(f"{what}: {port} listed twice")
            seen.add(port)
            for col, cell in zip(cols, row[1:]):
                v = parse_count(cell, f"{port} {col.group(0)}")
                if v is not None:
                    out.append((port, col, v))
    return out


def _json_rows(text: str, pattern: re.Pattern, what: str) -> list[tuple[str, re.Match, int]]:
    """watermarkstat --json: one array of {"Port": ..., "<column>": "<bytes>"|"N/A"} per namespace."""
    if not isinstance(text, str):
        raise ParseError("expected text")
    decoder = json_decoder()  # a key twice is refused, not read as its last value
    docs = []
    pos = 0
    stripped = text.strip()
    if stripped == MULTICAST_UNCONFIGURED:
        return []
    while True:
        while pos < len(stripped) and stripped[pos].isspace():
            pos += 1
        if pos >= len(stripped):
            break
        try:
            doc, pos = decoder.raw_decode(stripped, pos)
        except (ValueError, RecursionError) as e:
            raise ParseError(f"{what}: not JSON: {str(e)[:120]}") from None
        if not isinstance(doc, list):
            raise ParseError(f"{what}: expected a JSON array of ports")
        docs.append(doc)
    if not docs and stripped:
        raise ParseError(f"{what}: no JSON")
    out = []
    seen: set[str] = set()
    for doc in docs:
        for entry in doc:
            if not isinstance(entry, dict) or not isinstance(entry.get("Port"), str):
                raise ParseError(f"{what}: expected objects with a Port")
            port = _port(entry["Port"], what)
            if port in seen:
                raise ParseError(f"{what}: {port} listed twice")
            seen.add(port)
            for key, raw in entry.items():
                if key == "Port":
                    continue
                col = pattern.match(key)
                if col is None:
                    raise ParseError(f"{what}: {port}: unexpected key {key[:40]!r}")
                if isinstance(raw, bool) or not isinstance(raw, (str, int)):
                    raise ParseError(f"{what}: {port} {key}: unexpected {type(raw).__name__}")
                if isinstance(raw, int):
                    if not 0 <= raw <= MAX_COUNTER:
                        raise ParseError(f"{what}: {port} {key}: {raw} out of range")
                    out.append((port, col, raw))
                elif (v := parse_count(raw, f"{port} {key}")) is not None:
                    out.append((port, col, v))
    return out


# -- show queue [persistent-]watermark unicast|multicast|all ------------------------------------------

@parser_entry
def parse_queue_watermark(text: str, skipped: list[SkippedLine] | None = None) -> list[QueueWatermark]:
    what = "show queue watermark"
    tables = _tables(text, QUEUE_TITLES, what, SOURCE_QUEUE, skipped)
    return [QueueWatermark(port, col.group(0), v) for port, col, v in _per_port(tables, _QUEUE_COLUMN, what)]


@parser_entry
def parse_queue_watermark_json(text: str, skipped: list[SkippedLine] | None = None) -> list[QueueWatermark]:
    return [QueueWatermark(port, col.group(0), v)
            for port, col, v in _json_rows(text, _QUEUE_COLUMN, "show queue watermark --json")]


# -- show priority-group [persistent-]watermark shared|headroom ---------------------------------------

@parser_entry
def parse_pg_watermark(text: str, skipped: list[SkippedLine] | None = None) -> list[PgWatermark]:
    what = "show priority-group watermark"
    tables = _tables(text, PG_TITLES, what, SOURCE_PG, skipped)
    return [PgWatermark(port, int(col.group(1)), v, col.group(0)) for port, col, v in _per_port(tables, _PG_COLUMN, what)]


@parser_entry
def parse_pg_watermark_json(text: str, skipped: list[SkippedLine] | None = None) -> list[PgWatermark]:
    return [PgWatermark(port, int(col.group(1)), v, col.group(0))
            for port, col, v in _json_rows(text, _PG_COLUMN, "show priority-group watermark --json")]


# -- show buffer_pool / headroom-pool [persistent-]watermark ------------------------------------------

@parser_entry
def parse_pool_watermark(text: str, skipped: list[SkippedLine] | None = None) -> list[PoolWatermark]:
    what = "show buffer_pool watermark"
    out = []
    seen: set[tuple[str | None, str]] = set()
    for t in _tables(text, POOL_TITLES, what, SOURCE_POOL, skipped):
        if t.headers != ("Pool", "Bytes"):
            raise ParseError(f"{what}: unexpected columns {', '.join(t.headers)[:80]}")
        for pool, cell in t.rows:
            if not _POOL.match(pool):
                raise ParseError(f"{what}: {pool[:40]!r} is not a pool name")
            if (t.namespace, pool) in seen:
                raise ParseError(f"{what}: {pool} listed twice")
            seen.add((t.namespace, pool))
            if (v := parse_count(cell, f"{pool} Bytes")) is not None:
                out.append(PoolWatermark(pool, t.namespace, v))
    return out


__all__ = ["NA", "PgWatermark", "PoolWatermark", "QueueWatermark", "parse_pg_watermark", "parse_pg_watermark_json",
           "parse_pool_watermark", "parse_queue_watermark", "parse_queue_watermark_json"]


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse_queue_watermark": ("real/sonic_queue_watermark_unicast_masic_all.txt",
                              "real/sonic_queue_watermark_unicast.txt",
                              "real/sonic_queue_watermark_multicast_unconfigured.txt"),
    "parse_queue_watermark_json": ("real/sonic_queue_watermark_unicast.json",),
    "parse_pg_watermark": ("real/sonic_pg_persistent_watermark_headroom_masic_all.txt",),
    "parse_pg_watermark_json": ("real/sonic_pg_watermark_shared.json",),
    "parse_pool_watermark": ("real/sonic_buffer_pool_watermark.txt",
                             "real/sonic_headroom_pool_watermark_masic_all.txt"),
}
