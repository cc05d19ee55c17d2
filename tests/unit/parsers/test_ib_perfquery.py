"""parsers/ib_perfquery.py: blocks, every field, refusals and skip-and-count (first written for mutants
that survived scripts/mutation ib_perfquery, issue 16)."""

from __future__ import annotations

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import ib_perfquery

PQ = ("# Port extended counters: Lid 1719 port 7 (CapMask: 0x5A00 CapMask2: 0x0000002)\n"
      "PortSelect:......................7\nCounterSelect:...................0x0000\n"
      "PortXmitData:....................18446744073709551615\nSymbolErrorCounter:..............0\n"
      "\n# PortSamplesControl: Lid 1 port 1\nTick:............................0x1f\n"
      "# Port counters: Lid 3 port 2\nPortXmitWait:....................5\n")


def test_perfquery_blocks_and_every_field():
    a, b, c = ib_perfquery.parse(PQ)
    assert (a.kind, a.lid, a.port, a.cap_mask, a.cap_mask2) == ("extended", 1719, 7, 0x5A00, 2)
    assert a.values == {"PortSelect": 7, "CounterSelect": 0, "PortXmitData": 2**64 - 1, "SymbolErrorCounter": 0}
    assert (b.kind, b.lid, b.port, b.cap_mask, b.cap_mask2, b.values) == ("samples_control", 1, 1, None, None, {"Tick": 31})
    assert (c.kind, c.lid, c.port, c.values) == ("counters", 3, 2, {"PortXmitWait": 5})


@pytest.mark.parametrize("text", [
    "perfquery: iberror: failed: operation Performance Get: Failed\n" + PQ,
    PQ + "perfquery: iberror: [pid 1] failed\n",
    PQ + "PortXmitWait:....................6\n",  # twice in one block
    PQ.replace("0x0000\n", "0xZZ\n"),
    "", "\n\n",
])
def test_perfquery_errors_are_parse_errors(text):
    with pytest.raises(ParseError):
        ib_perfquery.parse(text)


@pytest.mark.parametrize("text, line", [
    ("PortXmitData:....................1\n" + PQ, "PortXmitData:....................1"),  # before any header
    (PQ + "garbage line\n", "garbage line"),
    (PQ + "# garbage header\n", "# garbage header"),
])
def test_perfquery_unknown_lines_are_skipped_and_counted_not_read(text, line):
    skipped: list = []
    blocks = ib_perfquery.parse(text, skipped=skipped)
    assert blocks == ib_perfquery.parse(PQ)  # nothing read from the unknown line
    assert line in [s.text for s in skipped]


def test_perfquery_refuses_non_text():
    with pytest.raises(ParseError):
        ib_perfquery.parse(None)  # type: ignore[arg-type]


def test_perfquery_other_block_kinds_keep_their_name():
    (block,) = ib_perfquery.parse("# Port RcvErrorDetails: Lid 4 port 2\nPortLocalPhysicalErrors:.........3\n")
    assert (block.kind, block.lid, block.port, block.values) == ("port rcverrordetails", 4, 2, {"PortLocalPhysicalErrors": 3})
