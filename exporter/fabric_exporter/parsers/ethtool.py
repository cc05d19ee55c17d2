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
_NAME_BYTES = bytes(range(ord("!"), ord("~") + 1))  # a name's characters (as _NAME's)
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
        # The usual layout, the header then one counter a line: ethtool's own (_ethtool_layout) is
        # read with whole-text operations; any other the one-pass match accounts for line by line
        # needs no line list either (a blank line, one it cannot match or a line break other than
        # \n make the counts differ, and the general path below reads the text).
        layout = _ethtool_layout(text)
        if layout is not None:
            names, values = layout
            if max(map(len, values)) < 20:  # every value fits in 64 bits
                counters = dict(zip(names, map(int, values)))
                if len(counters) == len(names):  # and no name twice
                    return EthtoolStats(counters)
            return _from_matches(list(zip(names, values)))
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


def _ethtool_layout(text: str) -> tuple[list[str], list[str]] | None:
    """The names and values ``_LINE.findall`` gives for the table ethtool itself prints (the header,
    then ``INDENT + "name: value"`` a line with one indent for all, a name without spaces or
    colons), read with whole-text operations in C (~2x fewer instructions than the regex on a
    64-counter mlx5 table); None for any other text, which the regex reads.

    The proof is a rebuild: the words after the header, taken as name-with-colon and value in
    turn, are joined back into that layout, and only a text equal to the rebuild is read here.
    Each of its lines is then the indent, a name of printable ASCII without ``:`` or spaces (none
    left once its bytes in ``!``..``~`` are deleted), ``": "`` and up to 20 digits, which ``_LINE``
    matches as exactly that name and value."""
    words = text.split()
    values = words[3::2]
    names_joined = "".join(words[2::2])
    names = names_joined.split(":")
    if len(names) != len(values) + 1 or names.pop() or not values:  # a name word with no colon, or two
        return None
    at = len(_HEADER_LINE)
    indent = " " * max(0, text.find(names[0], at) - at)  # the first line's (the rebuild checks it)
    lines = len(names)
    parts = [": "] * (4 * lines)  # indent+name, ": ", value, newline: one line each 4 parts
    parts[0::4] = names
    parts[2::4] = values
    parts[3::4] = ["\n" + indent] * lines
    parts[-1] = "\n"
    rebuilt = indent + "".join(parts)
    if len(text) != at + len(rebuilt) or not text.endswith(rebuilt) or not text.isascii() \
            or names_joined.encode().translate(None, _NAME_BYTES) or not all(names) \
            or not "".join(values).isdigit() or max(map(len, values)) > 20:
        return None
    return names, values


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
