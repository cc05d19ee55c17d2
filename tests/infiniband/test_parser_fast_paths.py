"""The ibqueryerrors parser's fast paths give what the slow paths give: a Link info line seen before
returns the same (immutable) LinkInfo, old OFED names and duplicates still take the checked loop."""

from __future__ import annotations

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import ib_queryerrors

LINK = ('       Link info:      6   1[  ] ==( 4X       2.5 Gbps Active/  LinkUp)==>  0x0000000000200001      3    '
        '2[  ] "Switch2" (Could be 12X Could be 10.0 Gbps)')


def _report(port_line: str, link: str = LINK) -> str:
    return (f'Data Counters for 0x100009 "Hca4"\n   GUID 0x100009 port 1:{port_line}\n{link}\n'
            "## Summary: 1 nodes checked, 0 bad nodes found\n")


def test_a_repeated_link_line_gives_the_same_record_and_a_changed_one_a_new_one():
    first = ib_queryerrors.parse(_report(" [PortXmitData == 1 (4B)]")).nodes[0].ports[0].link
    again = ib_queryerrors.parse(_report(" [PortXmitData == 2 (8B)]")).nodes[0].ports[0].link
    assert again is first and (first.width, first.could_be_width, first.peer_port) == ("4X", "12X", 2)
    down = LINK.replace("( 4X       2.5 Gbps Active/  LinkUp)", "(             Down/ Polling)")
    changed = ib_queryerrors.parse(_report(" [PortXmitData == 2 (8B)]", down)).nodes[0].ports[0].link
    assert changed is not first and (changed.state, changed.width) == ("Down", None)


def test_counter_items_fast_path_matches_the_checked_loop():
    pc = ib_queryerrors.parse(_report(" [PortXmitData == 12 (48B)] [PortXmitWait == 7]")).nodes[0].ports[0]
    assert pc.counters == {"PortXmitData": 12, "PortXmitWait": 7} and pc.suffixed == {"PortXmitData"}
    old = ib_queryerrors.parse(_report(" [XmtData == 12 (48B)] [XmtWait == 7]")).nodes[0].ports[0]
    assert old.counters == {"PortXmitData": 12, "PortXmitWait": 7} and old.suffixed == {"PortXmitData"}
    with pytest.raises(ParseError, match="twice"):
        ib_queryerrors.parse(_report(" [PortXmitData == 12] [PortXmitData == 13]"))
    with pytest.raises(ParseError, match="twice"):
        ib_queryerrors.parse(_report(" [XmtData == 12] [PortXmitData == 13]"))
