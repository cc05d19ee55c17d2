"""The ibqueryerrors parser's fast paths give what the slow paths give: a Link info line seen before
returns the same (immutable) LinkInfo, old OFED names and duplicates still take the checked loop."""

from __future__ import annotations

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import ib_queryerrors

from tests.harness import paths

LINK = ('       Link info:      6   1[  ] ==( 4X       2.5 Gbps Active/  LinkUp)==>  0x0000000000200001      3    '
        '2[  ] "Switch2" (Could be 12X Could be 10.0 Gbps)')


def _report(port_line: str, link: str = LINK) -> str:
    return (f'Data Counters for 0x100009 "Hca4"\n   GUID 0x100009 port 1:{port_line}\n{link}\n'
            "## Summary: 1 nodes checked, 0 bad nodes found\n")


def test_a_repeated_link_line_gives_the_same_record_and_a_changed_one_a_new_one():
    memo = ib_queryerrors.PortLineMemo()  # the parser's state, owned by its caller
    first = ib_queryerrors.parse(_report(" [PortXmitData == 1 (4B)]"), memo=memo).nodes[0].ports[0].link
    again = ib_queryerrors.parse(_report(" [PortXmitData == 2 (8B)]"), memo=memo).nodes[0].ports[0].link
    assert again is first and (first.width, first.could_be_width, first.peer_port) == ("4X", "12X", 2)
    down = LINK.replace("( 4X       2.5 Gbps Active/  LinkUp)", "(             Down/ Polling)")
    changed = ib_queryerrors.parse(_report(" [PortXmitData == 2 (8B)]", down), memo=memo).nodes[0].ports[0].link
    assert changed is not first and (changed.state, changed.width) == ("Down", None)
    # another caller's memo (another collector) shares nothing with this one, nor does a parse without
    other = ib_queryerrors.parse(_report(" [PortXmitData == 1 (4B)]"), memo=ib_queryerrors.PortLineMemo())
    assert other.nodes[0].ports[0].link == first and other.nodes[0].ports[0].link is not first
    assert ib_queryerrors.parse(_report(" [PortXmitData == 1 (4B)]")).nodes[0].ports[0].link is not first


def test_counter_items_fast_path_matches_the_checked_loop():
    pc = ib_queryerrors.parse(_report(" [PortXmitData == 12 (48B)] [PortXmitWait == 7]")).nodes[0].ports[0]
    assert pc.counters == {"PortXmitData": 12, "PortXmitWait": 7} and pc.suffixed == {"PortXmitData"}
    old = ib_queryerrors.parse(_report(" [XmtData == 12 (48B)] [XmtWait == 7]")).nodes[0].ports[0]
    assert old.counters == {"PortXmitData": 12, "PortXmitWait": 7} and old.suffixed == {"PortXmitData"}
    with pytest.raises(ParseError, match="twice"):
        ib_queryerrors.parse(_report(" [PortXmitData == 12] [PortXmitData == 13]"))
    with pytest.raises(ParseError, match="twice"):
        ib_queryerrors.parse(_report(" [XmtData == 12] [PortXmitData == 13]"))


def _general_path_only(monkeypatch) -> None:
    monkeypatch.setattr(ib_queryerrors, "_LAYOUTS", {})
    monkeypatch.setattr(ib_queryerrors, "_LAYOUTS_MAX", 0)


def _outcome(text: str):
    try:
        return ib_queryerrors.parse(text)
    except ParseError as e:
        return f"ParseError: {e}"


_LINES = [
    " [PortXmitData == 12 (48B)] [PortRcvData == 13 (52B)]",
    " [PortXmitData == 12 (48B)] [PortRcvData == 14 (56B)]",  # the same layout, other values
    " [PortXmitData == 12 (48B)] [PortRcvData == 13]",  # no rendering on one value
    " [PortXmitData == 12 (48B)]  [PortRcvData == 13 (52B)]",  # two spaces
    " [PortXmitData == 12 (48B)] [PortRcvData == 13 (52B)] ",  # trailing space
    " [PortXmitData == 12 (48B)] [PortRcvData == ١٣ (52B)]",  # a non-ASCII digit
    " [PortXmitData == 12 (48B)] [PortRcvData == 13 (5(2)B)]",  # a rendering it cannot read
    " [PortXmitData == 12 (48B)] [PortXmitData == 13 (52B)]",  # a name twice
    " [XmtData == 12 (48B)] [RcvData == 13 (52B)]",  # old OFED names
    " [PortXmitData == 12 (48B)] [PortRcvData == 13 (52B)] junk",
    " [PortXmitData == 12 (48B)] [PortRcvData == 13 (52B)] [PortXmitPkts == 1 (1.000)]",  # one more
    "",  # no counters at all
]


@pytest.mark.parametrize("first", range(len(_LINES)))
def test_the_layout_fast_path_reads_every_line_as_the_general_path_does(monkeypatch, first):
    """A port line after one that made a layout: read by that layout's regex when it fits, by the
    general path otherwise. Every pair of lines (the first making the layout, the second read
    with it) gives what the general path alone gives, values, renderings and errors alike."""
    for second in _LINES:
        for port_line in ("3", "ALL", "255"):
            text = (f'Data Counters for 0x100009 "Hca4"\n   GUID 0x100009 port 1:{_LINES[first]}\n{LINK}\n'
                    f'   GUID 0x100009 port {port_line}:{second}\n'
                    "## Summary: 1 nodes checked, 0 bad nodes found\n")
            with_layouts = _outcome(text)
            with monkeypatch.context() as m:
                _general_path_only(m)
                assert _outcome(text) == with_layouts, (first, second, port_line)


@pytest.mark.parametrize("fixture", ["ibsim_ibqueryerrors_counters_report_port.txt",
                                     "ndr_ibqueryerrors_counters_report_port.txt", "ndr_fabric_counters.txt"])
def test_whole_sweeps_read_the_same_with_and_without_layouts(monkeypatch, fixture):
    from pathlib import Path
    text = (paths.FIXTURES / "infiniband" / fixture).read_text()
    fast = ib_queryerrors.parse(text)
    assert any(ib_queryerrors._LAYOUTS.values())  # the fast path was taken
    _general_path_only(monkeypatch)
    assert ib_queryerrors.parse(text) == fast


def test_a_sweep_in_one_layout_takes_the_general_path_once(monkeypatch):
    """The layout regex really serves the lines after the first, in this parse and the next (a
    layout made once is handed out again from the table)."""
    from pathlib import Path
    text = (paths.FIXTURES / "infiniband" /
            "ibsim_ibqueryerrors_counters_report_port.txt").read_text()
    monkeypatch.setattr(ib_queryerrors, "_LAYOUTS", {})
    general: list[str] = []
    real = ib_queryerrors._PORT_RE

    class Counting:
        def match(self, line):
            general.append(line)
            return real.match(line)

    monkeypatch.setattr(ib_queryerrors, "_PORT_RE", Counting())
    first = ib_queryerrors.parse(text)
    assert len(general) == 1 and sum(len(n.ports) for n in first.nodes) == 148
    general.clear()
    assert ib_queryerrors.parse(text) == first and len(general) == 1


@pytest.mark.parametrize("indent", ["    ", "\t", "         "])
def test_a_link_info_line_indented_otherwise_is_still_read(indent):
    """The 7-space test is a shortcut, not the rule: any indentation before "Link info:" reads."""
    text = _report(" [PortXmitData == 1 (4B)]", indent + LINK.lstrip())
    skipped: list = []
    port = ib_queryerrors.parse(text, skipped=skipped).nodes[0].ports[0]
    assert port.link is not None and port.link.peer_port == 2 and skipped == []
