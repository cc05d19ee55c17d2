"""``ethtool -S <netdev>`` output: a header line, then one ``name: value`` line per counter.

    NIC statistics:
         rx_packets: 1234
         rx_prio3_pause: 17
         [0]: rx_ucast_packets: 5          (bnxt_en per-ring lines: the name itself holds ": ")

Values are unsigned 64-bit decimals. A line without a ``name: value`` shape inside the table (a
driver's section heading, a note) is skipped and counted (``skipped=``, see parsers/skipped.py); a
counter line whose value is not a plain decimal is a ParseError: nothing is guessed. A name printed twice with
different values is ambiguous and is kept out of ``counters`` (listed in ``ambiguous``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ..errors import ParseError
from .guard import parser_entry
from .skipped import SkippedLine, note

#: what this parser's skipped lines are counted under (collectors' parse_sources: skipped.sources_of)
SOURCES = ("ethtool",)

HEADER = "NIC statistics:"
_HEADER_LINE = HEADER + "\n"
U64_MAX = 2**64 - 1
# Printable ASCII words separated by single spaces ("[0]: rx_ucast_packets" has one).
_NAME = re.compile(r"[!-~]+(?: [!-~]+)*")
_VALUE = re.compile(r"[0-9]{1,20}")
# The common case in one pass; any line it does not account for sends us to the line-by-line path,
# which names the bad line.
_LINE = re.compile(r"^[ \t]*([!-~]+(?: [!-~]+)*):[ \t]*([0-9]{1,20})[ \t]*$", re.M)


@dataclass(frozen=True)
class EthtoolStats:
    counters: dict[str, int]
    ambiguous: frozenset[str] = field(default_factory=frozenset)


@parser_entry
def parse_u64(text: str, what: str) -> int:
    """A plain unsigned decimal that fits in 64 bits, or ParseError."""
    if not _VALUE.fullmatch(text):
        raise ParseError(f"{what}: not an unsigned decimal: {text[:40]!r}")
    value = int(text)
    if value > U64_MAX:
        raise ParseError(f"{what}: {text} does not fit in 64 bits")
    return value


@parser_entry
def parse_ethtool_stats(text: str, skipped: list[SkippedLine] | None = None) -> EthtoolStats:
    if not isinstance(text, str):
        raise ParseError("ethtool -S: expected text")
    if text.startswith(_HEADER_LINE) and text.endswith("\n"):
        # The usual layout, the header then one counter a line: when the one-pass match accounts for
        # every line, no line list is needed (a blank line, one it cannot match or a line break
        # other than \n make the counts differ, and the general path below reads the text).
        fast = _LINE.findall(text, len(HEADER))
        if len(fast) == text.count("\n") - 1:
            return _from_matches(fast)
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise ParseError("ethtool -S: empty output")
    first_no, first = lines[0]
    if first.strip() != HEADER:
        raise ParseError(f"ethtool -S line {first_no}: expected {HEADER!r}, got {first.strip()[:60]!r}")
    body = text[text.index(HEADER) + len(HEADER):]
    fast = _LINE.findall(body)
    if len(fast) == len(lines) - 1:  # every non-blank line after the header is a counter line
        return _from_matches(fast)
    return _stats(_checked_counters(lines[1:], skipped))


def _from_matches(fast: list[tuple[str, str]]) -> EthtoolStats:
    """The stats of the one-pass match: in C (dict, map) when no name repeats and every value fits."""
    counters = dict(fast)
    if len(counters) == len(fast):  # no name twice (else: which are ambiguous, in _stats)
        values = list(map(int, counters.values()))
        if not values or max(values) <= U64_MAX:
            return EthtoolStats(dict(zip(counters, values)))
    return _stats(_fast_counters(fast))


def _fast_counters(matches: list[tuple[str, str]]) -> Iterator[tuple[str, int]]:
    """(name, value) of the one-pass match, whose values are already decimal."""
    for name, value in matches:
        number = int(value)
        if number > U64_MAX:
            raise ParseError(f"ethtool -S: {name}: {value} does not fit in 64 bits")
        yield name, number


def _checked_counters(lines: list[tuple[int, str]],
                      skipped: list[SkippedLine] | None) -> Iterator[tuple[str, int]]:
    """(name, value) line by line, naming the bad line; lines without a counter shape are skipped."""
    for n, line in lines:
        name, sep, value = line.rpartition(":")
        name = name.strip()
        if not sep or not name or not _NAME.fullmatch(name):
            note(skipped, "ethtool", n, line)  # not a counter line: a heading or note
            continue
        yield name, parse_u64(value.strip(), f"ethtool -S line {n} ({name})")


def _stats(pairs: Iterable[tuple[str, int]]) -> EthtoolStats:
    """The counters, without the names printed twice with different values (listed as ambiguous)."""
    counters: dict[str, int] = {}
    ambiguous: set[str] = set()
    for name, number in pairs:
        if name in counters and counters[name] != number:
            ambiguous.add(name)
        counters.setdefault(name, number)
    for name in ambiguous:
        del counters[name]
    return EthtoolStats(counters, frozenset(ambiguous))


__all__ = ["EthtoolStats", "parse_ethtool_stats", "parse_u64", "HEADER"]


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse_ethtool_stats": ("roce_nic/ethtool_mlx5_pfc3.txt", "roce_nic/ethtool_bnxt.txt"),
}
