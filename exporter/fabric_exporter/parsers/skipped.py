"""Lines a parser skipped: the skip-and-count rule (docs/design.md, "Reading real-world output").

A parser that meets a line it does not know inside a table it does know skips it and records it
here; it fails (ParseError) only when the table's structure is unknown or a value is malformed.
Parsers stay pure: they only append to the list the caller passes as ``skipped=``; the collector
hands the records to the scheduler (``PollResult.skipped``), which counts them in
``fabric_parse_skipped_lines_total{source}`` and logs each distinct line once at debug.
"""

from __future__ import annotations

from types import ModuleType
from typing import NamedTuple

MAX_KEPT = 1000  # per parse: a flood of odd lines is counted, not stored line by line


class SkippedLine(NamedTuple):
    source: str  # what was parsed: "ethtool", "ibnetdiscover", "sonic_pfc_counters", ...
    line_no: int  # 1-based within that text (0 when unknown)
    text: str  # the line, cut to 200 characters


def note(skipped: list[SkippedLine] | None, source: str, line_no: int, text: str) -> None:
    """Record one skipped line (no-op when the caller did not ask)."""
    if skipped is not None and len(skipped) < MAX_KEPT:
        skipped.append(SkippedLine(source, line_no, text.strip()[:200]))


def sources_of(*parsers: ModuleType) -> tuple[str, ...]:
    """The sources the given parser modules count skipped lines under (each module's ``SOURCES``), in
    order: a collector's ``parse_sources`` is this over the parsers it uses."""
    return tuple(dict.fromkeys(s for module in parsers for s in module.SOURCES))


__all__ = ["SkippedLine", "note", "MAX_KEPT", "sources_of"]
