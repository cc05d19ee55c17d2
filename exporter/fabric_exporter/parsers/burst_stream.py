"""The burst probe's stream (collectors/burst_probe.py, our own protocol): one line at a time.

    @@fabric-burst 1 WINDOW_US NCOLUMNS ORIGIN_US
    w SEQ ELAPSED_US LATE_US [I:DELTA ...]

Pure: text in, values out; anything else is a ParseError (the stream is our protocol, so an
unexpected line is a fault, not a line to skip).
"""

from __future__ import annotations

import re

from ..errors import ParseError
from .guard import parser_entry

_HEADER = re.compile(r"@@fabric-burst 1 ([0-9]{1,12}) ([0-9]{1,9}) ([0-9]{1,20})")
_UINT = re.compile(r"[0-9]{1,20}")
_DELTA = re.compile(r"([0-9]{1,9}):([0-9]{1,20})")


@parser_entry
def parse_header(line: str) -> tuple[int, int, int]:
    """``@@fabric-burst 1 WINDOW_US NCOLUMNS ORIGIN_US`` -> (window µs, columns, the host's monotonic
    clock at tick 0 in µs: window SEQ ends at ORIGIN + SEQ x WINDOW + its lateness, on the host's clock)."""
    m = _HEADER.fullmatch(line.strip())
    if m is None:
        raise ParseError(f"burst stream: no @@fabric-burst header: {line[:80]!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


@parser_entry
def parse_window(line: str, ncolumns: int) -> tuple[int, float, float, dict[int, int]]:
    """``w SEQ ELAPSED_US LATE_US [I:DELTA ...]`` -> (seq, elapsed s, lateness s, {column: delta})."""
    parts = line.split()
    if len(parts) < 4 or parts[0] != "w" or not all(_UINT.fullmatch(p) for p in parts[1:4]):
        raise ParseError(f"burst stream: bad window line {line[:80]!r}")
    deltas: dict[int, int] = {}
    for item in parts[4:]:
        m = _DELTA.fullmatch(item)
        if m is None:
            raise ParseError(f"burst stream: bad delta {item[:40]!r}")
        col = int(m.group(1))
        if col >= ncolumns or col in deltas:
            raise ParseError(f"burst stream: column {col} out of range or repeated")
        deltas[col] = int(m.group(2))
    return int(parts[1]), int(parts[2]) / 1e6, int(parts[3]) / 1e6, deltas
