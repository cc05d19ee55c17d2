"""parsers/burst_stream.py: the burst probe's own line protocol. Every value comes from its own
field, in the unit the sampler uses (seconds); anything off the protocol is a ParseError, since a
wrong line from our own probe is a fault, not a line to skip. (The stream of a real probe run and
the fuzz test are in tests/unit/collectors/test_burst.py.)"""

from __future__ import annotations

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import burst_stream


def test_header_fields_in_order():
    assert burst_stream.parse_header("@@fabric-burst 1 100000 4 123456789\n") == (100_000, 4, 123_456_789)
    # the widest values the protocol allows
    assert burst_stream.parse_header(f"@@fabric-burst 1 {'9' * 12} {'9' * 9} {'9' * 20}") == (
        10**12 - 1, 10**9 - 1, 10**20 - 1)


@pytest.mark.parametrize("line", [
    "@@fabric-burst 2 100000 4 1",        # another protocol version
    "@@fabric-burst 1 100000 4",          # no origin
    "@@fabric-burst 1 100000 4 1 extra",
    "@@fabric-burst 1 -100000 4 1",
    f"@@fabric-burst 1 {'1' * 13} 4 1",    # wider than the protocol's fields
    f"@@fabric-burst 1 1 {'1' * 10} 1",
    f"@@fabric-burst 1 1 4 {'1' * 21}",
    "w 1 100000 0",
])
def test_headers_off_the_protocol_are_refused(line):
    with pytest.raises(ParseError, match="no @@fabric-burst header"):
        burst_stream.parse_header(line)


def test_window_values_in_seconds_and_deltas_by_column():
    assert burst_stream.parse_window("w 12 100250 1200 0:5 2:100000", 3) == (12, 0.10025, 0.0012, {0: 5, 2: 100000})
    # a window with no change carries no deltas; the last column is in range
    assert burst_stream.parse_window("w 0 1000000 0", 3) == (0, 1.0, 0.0, {})
    assert burst_stream.parse_window("w 1 1 2 2:0", 3) == (1, 1e-6, 2e-6, {2: 0})


@pytest.mark.parametrize("line, why", [
    ("w 1 100000", "bad window line"),             # lateness missing
    ("v 1 100000 0", "bad window line"),
    ("w 1 100000 -1", "bad window line"),
    ("w x 100000 0", "bad window line"),
    ("w 1 1e5 0", "bad window line"),
    (f"w {'1' * 21} 1 0", "bad window line"),
    ("w 1 100000 0 3:5", "out of range or repeated"),  # columns are 0..2
    ("w 1 100000 0 1:5 1:6", "out of range or repeated"),
    ("w 1 100000 0 1:-5", "bad delta"),
    ("w 1 100000 0 1:", "bad delta"),
    ("w 1 100000 0 :5", "bad delta"),
    ("w 1 100000 0 1=5", "bad delta"),
])
def test_window_lines_off_the_protocol_are_refused(line, why):
    with pytest.raises(ParseError, match=why):
        burst_stream.parse_window(line, 3)
