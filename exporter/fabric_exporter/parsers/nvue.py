"""Parser for Cumulus Linux NVUE's ``nv show interface <swp> qos roce counters`` (Cumulus Linux 5.x).

Pure: text in, records out; only ParseError on bad input.

NVUE prints a tree as a table: a header (``operational  applied  description``), a rule of dash
groups that gives each column's span, then one row per node, its depth in the key column's
indentation (two spaces a level)::

                                   operational   applied  description
    -----------------------------  ------------  -------  -------------------------------
    rx-stats
      rx-roce-stats
        no-buffer-discard          0                      Rx buffer discards for RoCE traffic
        roce-bytes                 0 Bytes                Rx RoCE Bytes
    tx-stats
      tx-ecn-stats
        ecn-marked-packets         693777677344           Tx ECN marked packets

Cells are cut at the rule's column starts (values hold spaces: ``56.52 MB``); a row whose cell
runs into the gap before the next column does not fit the table and is never cut into a value. A node is named by
its path (``tx-stats/tx-ecn-stats/ecn-marked-packets``).

What is read: the packet counts of ``COUNTS`` -- plain decimals (``n/a`` is no value). What is
known and not read: byte amounts and buffer occupancies, which NVUE rounds for people (``56.52 MB``,
``92824.38 GB``: not the count the switch keeps), and the PFC pause counts and durations of the
RoCE priority (this output does not say which priority that is). Skip-and-count: a node this reader
does not know, a line that is not a row of the table (the ``...`` a document puts for lines it
left out), a counter's row without its value (a row wrapped in two), and every row of a node printed
twice are skipped and counted (``source="nvue_roce"``).
A counted node whose value is not a plain decimal fails the parse (never rounded, never guessed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ParseError
from .guard import parser_entry
from .skipped import SkippedLine, note

SOURCE_ROCE = "nvue_roce"
SOURCES = (SOURCE_ROCE,)  # skipped lines are counted under these (skipped.sources_of)
MAX_COUNTER = (1 << 64) - 1
HEADER = ("operational", "applied", "description")
_RULE = re.compile(r"^-+(?:  +-+)*\s*$")
_KEY = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_COUNT = re.compile(r"^[0-9]{1,20}$")
NOT_AVAILABLE = "n/a"

# the packet counts read, by their path in the tree (the catalog's rows say which metric each is)
COUNTS = frozenset({
    "rx-stats/rx-roce-stats/roce-packets", "rx-stats/rx-roce-stats/no-buffer-discard",
    "rx-stats/rx-non-roce-stats/non-roce-packets", "rx-stats/rx-non-roce-stats/no-buffer-discard",
    "tx-stats/tx-roce-stats/roce-packets", "tx-stats/tx-roce-stats/unicast-no-buffer-discard",
    "tx-stats/tx-cnp-stats/cnp-packets", "tx-stats/tx-cnp-stats/unicast-no-buffer-discard",
    "tx-stats/tx-ecn-stats/ecn-marked-packets",
})
_GROUPS = {"rx-stats", "tx-stats", "rx-stats/rx-roce-stats", "rx-stats/rx-non-roce-stats", "rx-stats/rx-pfc-stats",
           "tx-stats/tx-roce-stats", "tx-stats/tx-cnp-stats", "tx-stats/tx-ecn-stats", "tx-stats/tx-pfc-stats"}
# known leaves not read (see the module docstring), by leaf name under the groups above
_NOT_READ = {"buffer-max-usage", "buffer-usage", "pg-max-usage", "pg-usage", "tc-max-usage", "tc-usage",
             "roce-bytes", "non-roce-bytes", "cnp-bytes", "pause-duration", "pause-packets"}


@dataclass(frozen=True)
class RoceCounters:
    values: dict[str, int]  # path in the tree (one of COUNTS) -> packets, those the switch printed


def _columns(rule: str) -> list[tuple[int, int]]:
    """(start, end) of the rule's dash groups."""
    return [m.span() for m in re.finditer(r"-+", rule)]


def _fits(line: str, spans: list[tuple[int, int]]) -> bool:
    """True if no cell runs into the gap before the next column (a value cut there would be misread)."""
    return all(not line[end:start].strip() for (_, end), (start, _) in zip(spans, spans[1:]))


@parser_entry
def parse_roce_counters(text: str, skipped: list[SkippedLine] | None = None) -> RoceCounters:
    what = "nv show interface qos roce counters"
    lines = text.splitlines()
    numbered = [(i + 1, line) for i, line in enumerate(lines) if line.strip()]
    if len(numbered) < 2:
        raise ParseError(f"{what}: no table")
    (_, header), (_, rule) = numbered[0], numbered[1]
    if tuple(header.split()) != HEADER or not _RULE.match(rule):
        raise ParseError(f"{what}: expected the header {' '.join(HEADER)!r} and its rule, "
                         f"got {header.strip()[:60]!r}")
    spans = _columns(rule)
    if len(spans) != len(HEADER) + 1:
        raise ParseError(f"{what}: the rule has {len(spans)} columns, expected {len(HEADER) + 1}")
    starts = [start for start, _ in spans]
    stack: list[str] = []  # the path of the row above, one key per level
    found: dict[str, list[tuple[int, str, str]]] = {}
    for line_no, line in numbered[2:]:
        key_cell = line[:starts[1]]
        key = key_cell.strip()
        indent = len(key_cell) - len(key_cell.lstrip(" "))
        depth, odd = divmod(indent, 2)
        if not _KEY.match(key) or odd or depth > len(stack) or not _fits(line, spans):
            # not a row of the tree (e.g. a document's '...'), or one whose cells overrun their columns
            note(skipped, SOURCE_ROCE, line_no, line)
            continue
        del stack[depth:]
        stack.append(key)
        path = "/".join(stack)
        value = line[starts[1]:starts[2]].strip() if len(line) > starts[1] else ""
        if path in _GROUPS:
            if value:
                raise ParseError(f"{what}: line {line_no}: {path} is a group, not a value")
            continue
        if path in COUNTS and value:
            found.setdefault(path, []).append((line_no, line, value))
        elif "/".join(stack[:-1]) not in _GROUPS or key not in _NOT_READ:
            note(skipped, SOURCE_ROCE, line_no, line)  # a node this reader does not know
    values = {}
    for path, rows in found.items():
        if len(rows) > 1:  # printed twice: neither is the count
            for line_no, line, _ in rows:
                note(skipped, SOURCE_ROCE, line_no, line)
            continue
        line_no, _, value = rows[0]
        if value == NOT_AVAILABLE:
            continue
        if not _COUNT.match(value) or int(value) > MAX_COUNTER:
            raise ParseError(f"{what}: line {line_no}: {path}: expected a packet count, got {value[:40]!r}")
        values[path] = int(value)
    return RoceCounters(values)


__all__ = ["COUNTS", "RoceCounters", "SOURCE_ROCE", "parse_roce_counters"]


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse_roce_counters": ("real/nvue_qos_roce_counters_swp16.txt",),
}
