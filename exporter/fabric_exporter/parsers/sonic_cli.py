"""Parsers for SONiC CLI tables (sonic-utilities ``show`` commands) and Cumulus ``ethtool -S``.

Pure functions: text in, records out; only ParseError on bad input. Counters keep the names the
switch prints (a header, a JSON key, an ethtool name): which metric each one is, is the catalog's. Layouts are those of
sonic-utilities (tabulate "simple": a header line, a line of dash groups giving each column's
width, right-aligned rows; values with thousands separators; ``N/A`` where a counter is not
available). A value that is ``N/A`` is left out -- never turned into 0.

* ``show pfc counters``: two tables, ``Port Rx`` and ``Port Tx``, columns PFC0..PFC7.
* ``show queue counters`` (text or ``--json``): Port, TxQ (UC<n>/MC<n>/ALL<n>), Counter/pkts,
  Counter/bytes, Drop/pkts, Drop/bytes (newer releases add Trim columns: kept, not required).
  Newer releases print ``For namespace <ns>:`` before each port's table.
* ``show queue wredcounters`` (text or ``--json``): WredDrp/pkts, WredDrp/bytes, EcnMarked/pkts,
  EcnMarked/bytes per queue.
* ``show pfcwd stats``: QUEUE (``<port>:<queue>``), STATUS, STORM DETECTED/RESTORED and
  OK/DROP pairs for TX, RX and their LAST values.
* ``show lldp table``: LocalPort, RemoteDevice, RemotePortID, Capability, RemotePortDescr per
  LLDP neighbour (tabulate "simple", left-aligned; cells may hold spaces or be empty, so rows are
  cut at the dash line's column spans), then a dash line and ``Total entries displayed:  N``.

The CLI shows counters since the user's last ``sonic-clear``: a clear appears as a counter reset.
After a clear the CLI prints ``Last cached time was <timestamp>`` (multi-ASIC: ``Ethernet0 Last
cached time for asic0 was <timestamp>``) around its tables: known, carries nothing we publish.

Skip-and-count: a line outside any table, or a row whose cell count does not match its header, is
skipped and counted (``skipped=``); a header that does not fit its dash line, an unknown column
set or a malformed value fails the parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from .ethtool import parse_ethtool_stats
from .guard import load_json, parser_entry
from .skipped import SkippedLine, note

_COUNT = re.compile(r"^(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)$")
_DASHES = re.compile(r"^[ -]*-[ -]*$")
_PORT = re.compile(r"^[A-Za-z][A-Za-z0-9_./:-]*$")
_QUEUE = re.compile(r"^(UC|MC|ALL)([0-9]+)$")
_NAMESPACE = re.compile(r"^For namespace\s*[^\s:]*\s*:\s*$")
_CACHED = re.compile(r"^(?:\S+ )?Last cached time(?: for \S+)? was .*$")
NA = "N/A"
MAX_COUNTER = (1 << 64) - 1


@parser_entry
def parse_count(token: str, what: str = "value") -> int | None:
    """'1,234' or '1234' -> 1234; 'N/A' -> None; anything else -> ParseError."""
    if token == NA:
        return None
    if not _COUNT.match(token):
        raise ParseError(f"{what}: expected a count, got {token[:40]!r}")
    value = int(token.replace(",", ""))
    if value > MAX_COUNTER:
        raise ParseError(f"{what}: {token[:40]!r} is larger than a 64-bit counter")
    return value


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def _decoration(line: str) -> bool:
    stripped = line.strip()
    return bool(_NAMESPACE.match(stripped) or _CACHED.match(stripped))


@parser_entry
def parse_tables(text: str, skipped: list[SkippedLine] | None = None, source: str = "sonic") -> list[Table]:
    """Every tabulate 'simple' table in ``text`` (header line + dash line + rows up to a blank line).

    Cells must not contain spaces (true of every table parsed here): rows are split on whitespace
    and must have exactly one token per column.
    """
    if not isinstance(text, str):
        raise ParseError("expected text")
    lines = text.splitlines()
    tables: list[Table] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or _decoration(line):
            i += 1
            continue
        if i + 1 >= len(lines) or not _DASHES.match(lines[i + 1]):
            note(skipped, source, i + 1, line)  # not a table's header: a note the CLI printed
            i += 1
            continue
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[i + 1])]
        headers = tuple(line[s:e].strip() for s, e in spans)
        if not all(headers) or len(" ".join(line[s:e] for s, e in spans).split()) != len(line.split()):
            raise ParseError(f"line {i + 1}: header {line.strip()[:80]!r} does not fit its dash line")
        i += 2
        rows = []
        while i < len(lines) and lines[i].strip():
            if _NAMESPACE.match(lines[i].strip()):
                break
            if _CACHED.match(lines[i].strip()):
                i += 1
                continue
            cells = tuple(lines[i].split())
            if len(cells) != len(headers):  # cannot align with the columns: never shift
                note(skipped, source, i + 1, lines[i])
            else:
                rows.append(cells)
            i += 1
        tables.append(Table(headers, tuple(rows)))
    return tables


def _port(token: str, line_what: str) -> str:
    if not _PORT.match(token):
        raise ParseError(f"{line_what}: {token[:40]!r} is not an interface name")
    return token


# -- show pfc counters ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PfcCounters:
    """Per port, the PFC frames received (rx, the ``Port Rx`` table) and sent (tx, ``Port Tx``) under
    their column as printed (``PFC3``; which metric and priority that is, is the catalog's). Missing = N/A."""

    rx: dict[str, dict[str, int]] = field(default_factory=dict)
    tx: dict[str, dict[str, int]] = field(default_factory=dict)


@parser_entry
def parse_pfc_counters(text: str, skipped: list[SkippedLine] | None = None) -> PfcCounters:
    tables = parse_tables(text, skipped, "sonic_pfc_counters")
    out = PfcCounters()
    seen = set()
    for t in tables:
        first = t.headers[0]
        if first not in ("Port Rx", "Port Tx"):
            raise ParseError(f"show pfc counters: unexpected table {first!r}")
        if first in seen:
            raise ParseError(f"show pfc counters: two {first!r} tables")
        seen.add(first)
        prios = list(t.headers[1:])
        for h in prios:
            if not re.fullmatch(r"PFC[0-7]", h):
                raise ParseError(f"show pfc counters: unexpected column {h!r}")
        if len(set(prios)) != len(prios) or not prios:
            raise ParseError("show pfc counters: priorities missing or repeated")
        target = out.rx if first == "Port Rx" else out.tx
        for row in t.rows:
            port = _port(row[0], "show pfc counters")
            if port in target:
                raise ParseError(f"show pfc counters: {port} listed twice in {first}")
            target[port] = {p: v for p, tok in zip(prios, row[1:])
                            if (v := parse_count(tok, f"{port} {p}")) is not None}
    if not seen and text.strip():
        raise ParseError("show pfc counters: no table")
    return out


# -- show queue counters / wredcounters -------------------------------------------------------------

# The counters are kept under the names SONiC prints (a column header, a JSON key); which metric each
# one is, is the catalog's (RawCounter rows of source "show queue counters" ..., catalog/switch_commands.py).
QUEUE_COLUMNS = ("Counter/pkts", "Counter/bytes", "Drop/pkts", "Drop/bytes", "Trim/pkts", "TrimSent/pkts",
                 "TrimDrop/pkts")
QUEUE_JSON_KEYS = ("totalpacket", "totalbytes", "droppacket", "dropbytes", "trimpkt", "trimsentpkt", "trimdroppkt")
WRED_COLUMNS = ("WredDrp/pkts", "WredDrp/bytes", "EcnMarked/pkts", "EcnMarked/bytes")
WRED_JSON_KEYS = ("wreddroppacket", "wreddropbytes", "ecnmarkedpacket", "ecnmarkedbytes")


@dataclass(frozen=True)
class QueueCounters:
    port: str
    queue: str  # as SONiC names it: UC0, MC10, ALL20
    values: dict[str, int]  # counter as printed (header or JSON key) -> value; N/A values are absent


def _check_queue(token: str, what: str) -> str:
    if not _QUEUE.match(token):
        raise ParseError(f"{what}: {token[:40]!r} is not a queue name (UC<n>, MC<n>, ALL<n>)")
    return token


def _queue_tables(text: str, columns: tuple[str, ...], what: str,
                  skipped: list[SkippedLine] | None = None, source: str = "sonic") -> list[QueueCounters]:
    out: list[QueueCounters] = []
    seen: set[tuple[str, str]] = set()
    tables = parse_tables(text, skipped, source)
    if not tables and text.strip():
        raise ParseError(f"{what}: no table")
    for t in tables:
        if t.headers[:2] != ("Port", "TxQ"):
            raise ParseError(f"{what}: expected columns Port, TxQ first, got {', '.join(t.headers[:2])}")
        known = [(i, h) for i, h in enumerate(t.headers) if h in columns]
        if not known:
            raise ParseError(f"{what}: none of the expected columns ({', '.join(columns)})")
        for row in t.rows:
            port, queue = _port(row[0], what), _check_queue(row[1], what)
            if (port, queue) in seen:
                raise ParseError(f"{what}: {port} {queue} listed twice")
            seen.add((port, queue))
            values = {name: v for i, name in known if (v := parse_count(row[i], f"{port} {queue} {t.headers[i]}"))
                      is not None}
            out.append(QueueCounters(port, queue, values))
    return out


def _queue_json(text: str, keys: tuple[str, ...], what: str) -> list[QueueCounters]:
    data = load_json(text, what)
    if not isinstance(data, dict):
        raise ParseError(f"{what}: expected a JSON object of ports")
    out = []
    for port, queues in data.items():
        _port(port, what)
        if not isinstance(queues, dict):
            raise ParseError(f"{what}: {port}: expected an object of queues")
        for queue, stats in queues.items():
            if queue == "time":  # timestamp of the user's last clear, not a queue
                continue
            _check_queue(queue, what)
            if not isinstance(stats, dict):
                raise ParseError(f"{what}: {port} {queue}: expected an object of counters")
            values = {}
            for key in keys:
                if key in stats:
                    raw = stats[key]
                    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
                        raise ParseError(f"{what}: {port} {queue} {key}: unexpected {type(raw).__name__}")
                    if isinstance(raw, int):
                        if not 0 <= raw <= MAX_COUNTER:
                            raise ParseError(f"{what}: {port} {queue} {key}: {raw} out of range")
                        values[key] = raw
                    elif (v := parse_count(raw, f"{port} {queue} {key}")) is not None:
                        values[key] = v
            out.append(QueueCounters(port, queue, values))
    return out


@parser_entry
def parse_queue_counters(text: str, skipped: list[SkippedLine] | None = None) -> list[QueueCounters]:
    return _queue_tables(text, QUEUE_COLUMNS, "show queue counters", skipped, "sonic_queue_counters")


@parser_entry
def parse_queue_counters_json(text: str, skipped: list[SkippedLine] | None = None) -> list[QueueCounters]:
    return _queue_json(text, QUEUE_JSON_KEYS, "show queue counters --json")


@parser_entry
def parse_wred_counters(text: str, skipped: list[SkippedLine] | None = None) -> list[QueueCounters]:
    return _queue_tables(text, WRED_COLUMNS, "show queue wredcounters", skipped, "sonic_wred_counters")


@parser_entry
def parse_wred_counters_json(text: str, skipped: list[SkippedLine] | None = None) -> list[QueueCounters]:
    return _queue_json(text, WRED_JSON_KEYS, "show queue wredcounters --json")


# -- show pfcwd stats -------------------------------------------------------------------------------

PFCWD_HEADERS = ("QUEUE", "STATUS", "STORM DETECTED/RESTORED", "TX OK/DROP", "RX OK/DROP",
                 "TX LAST OK/DROP", "RX LAST OK/DROP")


def pair_names(header: str) -> tuple[str, str]:
    """The two counters of an a/b column, named as the header reads: 'TX LAST OK/DROP' -> ('TX LAST OK',
    'TX LAST DROP'), 'STORM DETECTED/RESTORED' -> ('STORM DETECTED', 'STORM RESTORED')."""
    words, _, last = header.rpartition(" ")
    first, _, second = last.partition("/")
    return f"{words} {first}", f"{words} {second}"


PFCWD_PAIRS = {h: pair_names(h) for h in PFCWD_HEADERS[2:]}
PFCWD_STATUSES = ("operational", "stormed", NA)


@dataclass(frozen=True)
class PfcwdStats:
    port: str
    queue: int
    status: str | None  # operational | stormed | None (N/A)
    values: dict[str, int]  # 'STORM DETECTED', 'TX DROP', ...: each half of an a/b column as its header reads


@parser_entry
def parse_pfcwd_stats(text: str, skipped: list[SkippedLine] | None = None) -> list[PfcwdStats]:
    what = "show pfcwd stats"
    tables = parse_tables(text, skipped, "sonic_pfcwd_stats")
    if len(tables) > 1:
        raise ParseError(f"{what}: expected one table, got {len(tables)}")
    if not tables:
        if text.strip():
            raise ParseError(f"{what}: no table")
        return []
    t = tables[0]
    if t.headers != PFCWD_HEADERS:
        raise ParseError(f"{what}: unexpected columns {', '.join(t.headers)[:120]}")
    out = []
    seen = set()
    for row in t.rows:
        port, sep, queue = row[0].rpartition(":")
        if not sep or not re.fullmatch(r"[0-9]{1,3}", queue):
            raise ParseError(f"{what}: {row[0][:40]!r} is not <port>:<queue>")
        _port(port, what)
        if (port, int(queue)) in seen:
            raise ParseError(f"{what}: {row[0]} listed twice")
        seen.add((port, int(queue)))
        if row[1] not in PFCWD_STATUSES:
            raise ParseError(f"{what}: {row[0]}: unknown status {row[1][:40]!r}")
        values: dict[str, int] = {}
        for header, cell in zip(t.headers[2:], row[2:]):
            if cell == NA:
                continue
            first, sep, second = cell.partition("/")
            if not sep:
                raise ParseError(f"{what}: {row[0]} {header}: expected a/b, got {cell[:40]!r}")
            names = PFCWD_PAIRS[header]
            for name, tok in zip(names, (first, second)):
                v = parse_count(tok, f"{row[0]} {header}")
                if v is not None:
                    values[name] = v
        out.append(PfcwdStats(port, int(queue), None if row[1] == NA else row[1], values))
    return out


# -- show lldp table ---------------------------------------------------------------------------------

LLDP_HEADERS = ("LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr")
_LLDP_CAPS = "Capability codes:"
_LLDP_TOTAL = re.compile(r"^Total entries displayed:\s*([0-9]+)$")
_LLDP_END = re.compile(r"^-+$")
_LLDP_CAPABILITY = re.compile(r"^[A-Z]*$")


@dataclass(frozen=True)
class LldpNeighbor:
    local_port: str
    remote_device: str  # LLDP system name, "" when the neighbour sent none
    remote_port_id: str
    capability: str
    remote_port_descr: str


def _lldp_cells(line: str, spans: list[tuple[int, int]]) -> tuple[str, ...] | None:
    """The row's cells cut at the column spans (the last column runs to the end of the line), or
    None when text crosses a gap between columns: the row does not align, never shift it."""
    cells = []
    for k, (start, end) in enumerate(spans):
        last = k == len(spans) - 1
        if line[max(0, start - 2):start].strip():
            return None
        cells.append((line[start:] if last else line[start:end]).strip())
    return tuple(cells)


@parser_entry
def parse_lldp_table(text: str, skipped: list[SkippedLine] | None = None) -> list[LldpNeighbor]:
    """``show lldp table`` (sonic-utilities lldpshow): one record per neighbour, in the table's order.

    The table must end with ``Total entries displayed:  N`` and N must equal the rows read plus
    the rows skipped: a cut-off output is a ParseError, never a shorter neighbour list. Output
    without the table (the lldp container not running prints nothing; ``Error: ...``) is a ParseError.
    """
    what = "show lldp table"
    if not isinstance(text, str):
        raise ParseError("expected text")
    lines = text.splitlines()
    header_at = next((i for i, line in enumerate(lines) if line.split() == list(LLDP_HEADERS)), None)
    if header_at is None:
        first = next((line.strip() for line in lines if line.strip()), "")
        raise ParseError(f"{what}: no neighbour table" + (f" ({first[:80]!r})" if first else " (empty output)"))
    for n, line in enumerate(lines[:header_at], 1):
        if line.strip() and not line.startswith(_LLDP_CAPS):
            note(skipped, "sonic_lldp_table", n, line)
    if header_at + 1 >= len(lines) or not _DASHES.match(lines[header_at + 1]):
        raise ParseError(f"{what}: the header has no dash line under it")
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[header_at + 1])]
    header = lines[header_at]
    if len(spans) != len(LLDP_HEADERS) or _lldp_cells(header, spans) != LLDP_HEADERS:
        raise ParseError(f"{what}: header {header.strip()[:80]!r} does not fit its dash line")
    out: list[LldpNeighbor] = []
    skipped_rows = 0
    total: int | None = None
    i = header_at + 2
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        if _LLDP_END.match(line.strip()):
            for n in range(i, len(lines)):
                if m := _LLDP_TOTAL.match(lines[n].strip()):
                    total = int(m.group(1))
                    i = n + 1
                    break
                if lines[n].strip():
                    raise ParseError(f"{what}: line {n + 1}: expected 'Total entries displayed', got "
                                     f"{lines[n].strip()[:60]!r}")
            break
        cells = _lldp_cells(line, spans)
        if cells is None or not _PORT.match(cells[0]) or not _LLDP_CAPABILITY.match(cells[3]):
            note(skipped, "sonic_lldp_table", i, line)
            skipped_rows += 1
            continue
        out.append(LldpNeighbor(*cells))
    if total is None:
        raise ParseError(f"{what}: no 'Total entries displayed' line: output cut off?")
    if total != len(out) + skipped_rows:
        raise ParseError(f"{what}: {total} entries announced, {len(out) + skipped_rows} rows printed")
    for n in range(i, len(lines)):
        if lines[n].strip():
            note(skipped, "sonic_lldp_table", n + 1, lines[n])
    return out


# -- Cumulus: ethtool -S swpN -----------------------------------------------------------------------
# The table itself is read by parsers/ethtool.py, the one ethtool parser (same header, skip-and-count
# and duplicate rules as a NIC's); here only the Cumulus counter names are mapped.

# The counters keep switchd's names (HwIfInPfc3Pkt, HwIfOutQ3WredDrops, HwIfInDiscards ...); which metric
# and labels each one is, is the catalog's (rows of source "ethtool -S swp<n>", catalog/switch_commands.py).


@dataclass(frozen=True)
class CumulusPortCounters:
    raw: dict[str, int]  # name as printed -> value
    # names printed twice with different values: left out of ``raw``, never guessed
    ambiguous: frozenset[str] = field(default_factory=frozenset)


@parser_entry
def parse_cumulus_ethtool(text: str, skipped: list[SkippedLine] | None = None) -> CumulusPortCounters:
    stats = parse_ethtool_stats(text, skipped)
    return CumulusPortCounters(dict(stats.counters), stats.ambiguous)


# -- show pfc counters --history ------------------------------------------------------------------
# pfcstat's historical PFC statistics (platforms whose PFC watchdog detect script estimates them, or
# whose SAI has SAI_PORT_STAT_PFC_<p>_RX_PAUSE_DURATION_US): one row per port and priority, a blank
# line between ports; the timestamp column holds a date with a space ("01/10/2008, 21:20:00"), so
# rows are split into the five leading words and the rest. After a user's clear the values are
# deltas since the clear (never negative) and "Last cached time was ..." comes first.

PFC_HISTORY_HEADERS = ("Port", "Priority", "RX Pause Transitions", "Total RX Pause Time US",
                       "Recent RX Pause Time US", "Recent RX Pause Timestamp")
SOURCE_PFC_HISTORY = "sonic_pfc_history"
SOURCES = ("sonic_pfc_counters", "sonic_queue_counters", "sonic_wred_counters", "sonic_pfcwd_stats", SOURCE_PFC_HISTORY,
           "sonic_lldp_table")  # skipped lines are counted under these (skipped.sources_of)


@dataclass(frozen=True)
class PfcHistory:
    port: str
    priority: int
    # the counting columns as printed (RX Pause Transitions: XON -> XOFF; Total RX Pause Time US:
    # microseconds) -> value; a column that is N/A is left out
    values: dict[str, int]


@parser_entry
def parse_pfc_history(text: str, skipped: list[SkippedLine] | None = None) -> list[PfcHistory]:
    what = "show pfc counters --history"
    if not isinstance(text, str):
        raise ParseError("expected text")
    lines = text.splitlines()
    out: list[PfcHistory] = []
    seen: set[tuple[str, int]] = set()
    i = 0
    tables = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or _CACHED.match(line.strip()):
            i += 1
            continue
        if i + 1 >= len(lines) or not _DASHES.match(lines[i + 1]):
            note(skipped, SOURCE_PFC_HISTORY, i + 1, line)
            i += 1
            continue
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[i + 1])]
        headers = tuple(line[s:e].strip() for s, e in spans)
        if headers != PFC_HISTORY_HEADERS:
            raise ParseError(f"{what}: line {i + 1}: unexpected columns {line.strip()[:120]!r}")
        tables += 1
        i += 2
        # rows until the end; blank lines separate ports inside the one table
        while i < len(lines) and (not lines[i].strip() or not _DASHES.match(lines[i + 1] if i + 1 < len(lines) else "")):
            cells = lines[i].split(None, 5)
            if not cells or _CACHED.match(lines[i].strip()):
                i += 1
                continue
            m = re.fullmatch(r"PFC([0-7])", cells[1]) if len(cells) == 6 else None
            if m is None:  # cannot align with the columns: never shift
                note(skipped, SOURCE_PFC_HISTORY, i + 1, lines[i])
                i += 1
                continue
            port, prio = _port(cells[0], what), int(m.group(1))
            if (port, prio) in seen:
                raise ParseError(f"{what}: {port} PFC{prio} listed twice")
            seen.add((port, prio))
            counts = {PFC_HISTORY_HEADERS[k]: v for k in (2, 3)
                      if (v := parse_count(cells[k], f"{port} PFC{prio} {PFC_HISTORY_HEADERS[k]}")) is not None}
            out.append(PfcHistory(port, prio, counts))
            i += 1
    if not tables and text.strip():
        raise ParseError(f"{what}: no table")
    return out


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse_tables": ("switch/sonic/show_pfc_counters.txt",
                     "switch/sonic/show_pfcwd_stats.txt",
                     "switch/sonic/show_queue_counters.txt",
                     "switch/sonic/show_queue_counters.json",
                     "switch/sonic/show_queue_wredcounters.txt",
                     "switch/sonic/show_queue_wredcounters.json"),
    "parse_pfc_counters": ("switch/sonic/show_pfc_counters.txt",),
    "parse_queue_counters": ("switch/sonic/show_queue_counters.txt",),
    "parse_queue_counters_json": ("switch/sonic/show_queue_counters.json",),
    "parse_wred_counters": ("switch/sonic/show_queue_wredcounters.txt",),
    "parse_wred_counters_json": ("switch/sonic/show_queue_wredcounters.json",),
    "parse_pfcwd_stats": ("switch/sonic/show_pfcwd_stats.txt",),
    "parse_cumulus_ethtool": ("roce_nic/ethtool_mlx5_pfc3.txt",
                              "roce_nic/ethtool_bnxt.txt",
                              "real/ethtool_cumulus_37_swp1.txt",
                              "real/ethtool_cumulus_37_mlag_swp51_trimmed.txt"),
    "parse_pfc_history": ("real/sonic_pfc_counters_history_all.txt",),
    "parse_lldp_table": ("real/sonic_lldp_table.txt", "real/sonic_lldp_table_two_macs.txt"),
}
