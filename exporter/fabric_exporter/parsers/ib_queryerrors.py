"""ibqueryerrors output (infiniband-diags), in both modes the collector runs:

* ``ibqueryerrors --counters --report-port``: data counters and link info for every port swept::

    Data Counters for 0x100009 "Hca4"
       GUID 0x100009 port 1: [PortXmitData == 1872 (7.312KB)] [PortRcvData == 1944 (7.594KB)] ...
           Link info:      6   1[  ] ==( 4X       2.5 Gbps Active/  LinkUp)==>  0x0000000000200001      3    2[  ] "Switch2" (Could be 12X Could be 10.0 Gbps)

* ``ibqueryerrors [--threshold-file /dev/null] [--data] [--report-port]``: only counters above
  threshold (an empty threshold file makes that "every non-zero counter")::

    Errors for 0x200000 "Switch1"            (CAs: Errors for "Hca4", no GUID)
       GUID 0x200000 port ALL: [SymbolErrorCounter == 7] [PortXmitWait == 123456]
       GUID 0x200000 port 3: [SymbolErrorCounter == 7] [PortXmitWait == 123456]

  then a ``## Summary: N nodes checked, ...`` trailer (``## N PMA query failures`` when some failed).

The parser records which values carry a human-readable suffix ``(7.312KB)`` (``suffixed``). In the
error mode that marks a 64-bit PortCountersExtended value (the 32-bit path prints none); in the
``--counters`` mode every data counter carries one, 32-bit or not, and only the set of fields tells
(8 fields: PortCountersExtended with IETF counters) — the caller decides. Values are the raw counter values (words for
PortXmitData/PortRcvData: the caller multiplies by 4). Older OFED counter names (``XmtData``,
``SymbolErrors``, ...) are renamed to the current ones. A line of unknown shape between the node
blocks is skipped and counted (``skipped=``); a port or Link info line we cannot read fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from .guard import parser_entry
from .ib_common import OLD_COUNTER_NAMES, PHYS_STATES, PORT_STATES, SPEEDS, WIDTH_LANES, parse_guid, speed_key
from .skipped import SkippedLine, note

#: what this parser's skipped lines are counted under (collectors' parse_sources: skipped.sources_of)
SOURCES = ("ibqueryerrors",)

_NODE_RE = re.compile(r'^(Data Counters|Errors) for (?:(0x[0-9a-fA-F]+) )?"(.*)"\s*$')
_PORT_RE = re.compile(r"^\s+GUID (0x[0-9a-fA-F]+) port (ALL|\d+):(.*)$")
_LINK_RE = re.compile(
    r"^\s+Link info:\s+(\d+)\s+(\d+)\[([ 0-9]*)\] ==\((.*)\)==>\s+(.*)$")
_LINK_UP_RE = re.compile(r"^\s*(\S+)\s+(.+?)\s+(\S+)/\s*(\S+)\s*$")
_LINK_DOWN_RE = re.compile(r"^\s*(\S+)/\s*(\S+)\s*$")
_REMOTE_RE = re.compile(r'^(0x[0-9a-fA-F]+)\s+(\d+)\s+(\d+)\[([ 0-9]*)\] "(.*)" \((.*)\)\s*$')
_NO_REMOTE_RE = re.compile(r'^\[([ 0-9]*)\] "" \(\s*\)\s*$')
_SUMMARY_NODES_RE = re.compile(r"^## Summary: (\d+) nodes checked, (\d+) bad nodes found\s*$")
_SUMMARY_PORTS_RE = re.compile(r"^##\s+(\d+) ports checked, (\d+) ports have errors beyond threshold\s*$")
_SUMMARY_PMA_RE = re.compile(r"^##\s+(\d+) PMA query failures\s*$")
_COULD_WIDTH_RE = re.compile(r"Could be (\d+X)")
_COULD_SPEED_RE = re.compile(r"Could be ([0-9.]+ Gbps|FDR10)")

_MAX_LINE = 1 << 16


@dataclass(frozen=True)
class LinkInfo:
    lid: int
    port: int
    state: str  # PortState name as printed (Active, Down, Init, Armed, ...)
    phys_state: str
    width: str | None  # "4X"; None when the port is down (the tools print no width then)
    speed: str | None  # key of ib_common.SPEEDS ("25.78125", "FDR10")
    peer_port_guid: int | None
    peer_lid: int | None
    peer_port: int | None
    peer_name: str | None
    could_be_width: str | None  # the widest width both ends support, when the link runs below it
    could_be_speed: str | None

    @property
    def state_id(self) -> int:
        return PORT_STATES.get(self.state, 0)

    @property
    def phys_state_id(self) -> int:
        return PHYS_STATES.get(self.phys_state, 0)


@dataclass(slots=True)  # no __dict__: ~1,800 per sweep, fewer objects for the GC to walk
class PortCounters:
    port: int | None  # None = "port ALL" (the switch's aggregate)
    port_guid: int
    counters: dict[str, int] = field(default_factory=dict)
    suffixed: frozenset[str] = frozenset()  # values printed with a "(1.2KB)" rendering
    link: LinkInfo | None = None
    # The counters' names in their order, one shared tuple per line layout, when the line was read
    # by a layout's regex (None otherwise): a caller may prepare per layout what it does per counter.
    names: tuple[str, ...] | None = field(default=None, compare=False)


@dataclass(slots=True)
class NodeCounters:
    kind: str  # "data" | "errors"
    guid: int | None  # CAs in errors mode print no GUID
    name: str
    ports: list[PortCounters] = field(default_factory=list)


@dataclass
class Summary:
    nodes_checked: int
    bad_nodes: int
    ports_checked: int | None = None
    bad_ports: int | None = None
    pma_failures: int = 0


@dataclass
class QueryErrorsReport:
    nodes: list[NodeCounters]
    summary: Summary


def _parse_link(line: str) -> LinkInfo:
    m = _LINK_RE.match(line)
    if not m:
        raise ParseError(f"unreadable Link info line: {line[:120]!r}")
    lid, port, _ext, inner, remote = m.groups()
    width = speed = None
    up = _LINK_UP_RE.match(inner)
    if up and up.group(1) in WIDTH_LANES:
        width, speed_text, state, phys = up.groups()
        speed = speed_key(speed_text)
    else:
        down = _LINK_DOWN_RE.match(inner)
        if not down:
            raise ParseError(f"unreadable link state in {line[:120]!r}")
        state, phys = down.groups()
    if state not in PORT_STATES or phys not in PHYS_STATES:
        raise ParseError(f"unknown port state {state!r}/{phys!r}")
    peer_guid = peer_lid = peer_port = peer_name = None
    could_w = could_s = None
    r = _REMOTE_RE.match(remote)
    if r:
        peer_guid = parse_guid(r.group(1))
        peer_lid, peer_port = int(r.group(2)), int(r.group(3))
        peer_name = r.group(5)
        extra = r.group(6)
        w = _COULD_WIDTH_RE.search(extra)
        s = _COULD_SPEED_RE.search(extra)
        if w:
            if w.group(1) not in WIDTH_LANES:
                raise ParseError(f"unknown width in {extra!r}")
            could_w = w.group(1)
        if s:
            could_s = speed_key(s.group(1) if s.group(1) == "FDR10" else s.group(1))
    elif not _NO_REMOTE_RE.match(remote):
        raise ParseError(f"unreadable link peer in {line[:160]!r}")
    return LinkInfo(int(lid), int(port), state, phys, width, speed, peer_guid, peer_lid, peer_port,
                    peer_name, could_w, could_s)


_COUNTERS_LINE_RE = re.compile(r"(?:\s*\[[A-Za-z0-9]+ == [0-9]+(?: \([^()\[\]]*\))?\])*\s*")
_COUNTER_ITEM_RE = re.compile(r"\[([A-Za-z0-9]+) == ([0-9]+)( \()?")


def _parse_counters(rest: str) -> tuple[dict[str, int], frozenset[str], list[tuple[str, str, str]]]:
    """' [Name == 123 (1.2KB)] [Name2 == 4]' -> (counters, suffixed names, the items as read). One regex
    validates the whole list, a second extracts it: both in C, ~2x a Python loop over the items; the
    dict is built by a comprehension, and the item loop runs only for old OFED names or a name
    printed twice."""
    if not _COUNTERS_LINE_RE.fullmatch(rest):
        raise ParseError(f"unreadable counter text {rest.strip()[:60]!r}")
    items = _COUNTER_ITEM_RE.findall(rest)
    counters = {name: int(value) for name, value, _paren in items}
    if len(counters) != len(items) or not _OLD_NAMES.isdisjoint(counters):
        counters = {}
        for name, value, _paren in items:
            name = OLD_COUNTER_NAMES.get(name, name)
            if name in counters:
                raise ParseError(f"counter {name} twice on one port")
            counters[name] = int(value)
        return counters, frozenset(OLD_COUNTER_NAMES.get(name, name) for name, _value, paren in items if paren), items
    return counters, frozenset(name for name, _value, paren in items if paren), items


# A counter sweep prints every port line of a fabric in one or two layouts (the same counters, each
# with its "(1.2KB)" rendering): a regex for the whole line in that layout reads it in one C call.
# Built from a line the general path read (so it only accepts what that path reads the same way),
# for current names printed once each; anything else (other spacing, a new layout) takes the
# general path. Bounded: a sweep's layouts are few.
_LAYOUTS: dict[tuple[tuple[str, bool], ...], tuple[re.Pattern[str], tuple[str, ...], frozenset[str]] | None] = {}
_LAYOUTS_MAX = 256
_SUFFIX = r" \([^()\[\]]*\)"


def _layout(items: list[tuple[str, str, str]]) -> tuple[re.Pattern[str], tuple[str, ...], frozenset[str]] | None:
    key = tuple((name, bool(paren)) for name, _value, paren in items)
    if key in _LAYOUTS:
        return _LAYOUTS[key]
    if len(_LAYOUTS) >= _LAYOUTS_MAX:
        return None
    names = tuple(name for name, _paren in key)
    layout = None
    if names and len(set(names)) == len(names) and _OLD_NAMES.isdisjoint(names):
        body = "".join(rf" \[{name} == ([0-9]+){_SUFFIX if paren else ''}\]" for name, paren in key)
        layout = (re.compile(rf"   GUID (0x[0-9a-fA-F]+) port (ALL|[0-9]+):{body}"), names,
                  frozenset(name for name, paren in key if paren))
    _LAYOUTS[key] = layout
    return layout


_OLD_NAMES = frozenset(OLD_COUNTER_NAMES)
_LINK_MEMO_MAX = 1 << 17


def _link(line: str, links: dict[str, LinkInfo]) -> LinkInfo:
    link = links.get(line)
    if link is None:
        link = _parse_link(line)
        if len(links) >= _LINK_MEMO_MAX:
            links.clear()
        links[line] = link
    return link


class PortLineMemo:
    """What one caller's sweeps read before, kept for its next parse (the caller, one collector's
    sweep of one kind, owns it; parses with one memo run one at a time, never two threads at once):

    * ``previous``: the port lines of the previous sweep -> what each read as (port, GUID, counters,
      suffixed names, layout). A port line reads the same every time (the parse of a line depends on
      nothing else), and a sweep repeats every idle port's line verbatim: such a line is looked up,
      not parsed, and hands out the very same counters dict as last time (callers treat it as
      read-only; the mapping then knows the port's counters did not move by identity). Holds one
      sweep's lines (~0.4 KB a port), replaced on each parse that completes.
    * ``links``: Link info line -> LinkInfo (frozen: safe to hand out again). A fabric's links read
      the same poll after poll, so most lines are parsed once; bounded, and cleared whole when full
      (a fabric of this many ports changes rarely).

    A parse without a memo keeps nothing beyond its own call."""

    __slots__ = ("previous", "links")

    def __init__(self) -> None:
        self.previous: dict[str, tuple] = {}
        self.links: dict[str, LinkInfo] = {}


@parser_entry
def parse(text: str, skipped: list[SkippedLine] | None = None, memo: PortLineMemo | None = None) -> QueryErrorsReport:
    """Parse one ibqueryerrors run. A run without its summary trailer is incomplete: ParseError.
    ``memo``: reuse the previous sweep's reading of the lines it repeats (PortLineMemo)."""
    if not isinstance(text, str):
        raise ParseError("ibqueryerrors output must be text")
    remembered = memo.previous.get if memo is not None else {}.get
    links = memo.links if memo is not None else {}
    lines_read: dict[str, tuple] = {}
    nodes: list[NodeCounters] = []
    node: NodeCounters | None = None
    last_port: PortCounters | None = None
    summary: Summary | None = None
    guids: dict[str, int] = {}  # every port line of a node repeats its GUID: parse it once
    layout = None  # the layout of the last data port line (_layout): most lines share it
    fast = m = read = None
    pma_seen = False
    for n, line in enumerate(text.splitlines(), 1):
        if len(line) > _MAX_LINE:
            raise ParseError("ibqueryerrors line too long")
        if not line or line.isspace():
            continue
        # Most lines are port lines and Link info lines: test for those first.
        if line.startswith("   GUID ") and ((read := remembered(line)) is not None
                                              or (fast := layout is not None and layout[0].fullmatch(line))
                                              or (m := _PORT_RE.match(line))):
            if summary is not None:
                raise ParseError(f"text after the summary: {line[:80]!r}")
            if node is None:
                raise ParseError("port line before any node header")
            if read is not None:  # the same line as in the previous sweep: read the same
                port, guid, counters, suffixed, names = read
            else:
                if fast:
                    values = fast.groups()
                    guid_text, port_text = values[0], values[1]
                    names = layout[1]
                    counters, suffixed = dict(zip(names, map(int, values[2:]))), layout[2]
                else:
                    guid_text, port_text, names = m.group(1), m.group(2), None
                    counters, suffixed, items = _parse_counters(m.group(3))
                    if node.kind == "data":  # error sweeps print a different set per port
                        layout = _layout(items)
                port = None if port_text == "ALL" else int(port_text)
                if port is not None and port > 254:
                    raise ParseError(f"port number {port} out of range")
                guid = guids.get(guid_text)
                if guid is None:
                    guid = guids[guid_text] = parse_guid(guid_text)
                read = (port, guid, counters, suffixed, names)
            if memo is not None:
                lines_read[line] = read
            read = None
            pc = PortCounters(port, guid, counters, suffixed, None, names)
            node.ports.append(pc)
            last_port = pc
            continue
        if line.startswith("       Link info:") or line.lstrip().startswith("Link info:"):
            if summary is not None:
                raise ParseError(f"text after the summary: {line[:80]!r}")
            if last_port is None or last_port.link is not None:
                raise ParseError("Link info line without its port line")
            last_port.link = _link(line, links)
            if last_port.port is not None and last_port.link.port != last_port.port:
                raise ParseError("Link info names another port")
            continue
        if line.startswith("##"):
            if m := _SUMMARY_NODES_RE.match(line):
                if summary is not None:
                    raise ParseError("two summaries")
                summary = Summary(int(m.group(1)), int(m.group(2)))
            elif m := _SUMMARY_PORTS_RE.match(line):
                if summary is None:
                    raise ParseError("ports summary before nodes summary")
                if summary.ports_checked is not None:
                    raise ParseError("two ports summaries")
                summary.ports_checked, summary.bad_ports = int(m.group(1)), int(m.group(2))
            elif m := _SUMMARY_PMA_RE.match(line):
                if summary is None:
                    raise ParseError("PMA summary before nodes summary")
                if pma_seen:
                    raise ParseError("two PMA failure summaries")
                pma_seen = True
                summary.pma_failures = int(m.group(1))
            # "## Thresholds: ..." and "## Suppressed: ..." carry nothing we need.
            continue
        if summary is not None:
            raise ParseError(f"text after the summary: {line[:80]!r}")
        if m := _NODE_RE.match(line):
            kind = "data" if m.group(1) == "Data Counters" else "errors"
            node = NodeCounters(kind, parse_guid(m.group(2)) if m.group(2) else None, m.group(3))
            nodes.append(node)
            last_port = None
            continue
        note(skipped, "ibqueryerrors", n, line)
    if summary is None:
        raise ParseError("no '## Summary' trailer: the sweep did not complete")
    if memo is not None:
        memo.previous = lines_read
    return QueryErrorsReport(nodes, summary)


_WARN_RE = re.compile(r"(?:IB_GSI_PORT_COUNTERS(?:_EXT)? query failed|classportinfo query failed) on (.*), "
                      r"Lid (\d+) port (\d+)")


@parser_entry
def failed_queries(stderr: str) -> list[tuple[str, int, int]]:
    """(node name, lid, port) of every PMA query ibqueryerrors reported as failed on stderr."""
    found = []
    for line in stderr.splitlines():
        m = _WARN_RE.search(line)
        if m:
            found.append((m.group(1), int(m.group(2)), int(m.group(3))))
    return found


__all__ = ["parse", "failed_queries", "PortLineMemo", "QueryErrorsReport", "NodeCounters", "PortCounters", "LinkInfo",
           "Summary", "SPEEDS"]


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse": ("infiniband/hdr_ibqueryerrors_errors_report_port.txt",
              "infiniband/ndr_ibqueryerrors_counters_report_port.txt"),
    "failed_queries": ("infiniband/hdr_ibqueryerrors_errors_report_port.txt",
                       "infiniband/ndr_ibqueryerrors_counters_report_port.txt"),
}
