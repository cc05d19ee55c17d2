"""parsers/ib_queryerrors.py (first written for mutants that survived scripts/mutation ib_queryerrors,
issue 16): an unknown ibqueryerrors line is never silently dropped, malformed ``Link info`` lines raise
ParseError (never AttributeError), every field of a link (peer_lid included) is checked, and the
summary and port-number boundaries hold."""

from __future__ import annotations

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import ib_queryerrors

HEAD = 'Data Counters for 0x100009 "Hca4"\n'
PORT = "   GUID 0x100009 port 1: [PortXmitData == 1872 (7.312KB)] [PortRcvData == 1944 (7.594KB)] [SymbolErrorCounter == 0]\n"
LINK_UP = ('       Link info:    208    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>  0x1070fd0300c4d2a8    187'
           '   17[  ] "MF0;leaf-b2:MQM8790-HS2F/U1" (Could be 12X Could be 10.0 Gbps)\n')
LINK_DOWN = '       Link info:     17    1[  ] ==(                Down/Disabled)==>             [  ] "" ( )\n'
SUMMARY = "## Summary: 3 nodes checked, 1 bad nodes found\n##          148 ports checked, 2 ports have errors beyond threshold\n"


def parse(*parts: str):
    return ib_queryerrors.parse("".join(parts))


def test_a_full_report_reads_every_field():
    report = parse(HEAD, PORT, LINK_UP, SUMMARY, "##          2 PMA query failures\n")
    (node,) = report.nodes
    assert (node.kind, node.guid, node.name) == ("data", 0x100009, "Hca4")
    (port,) = node.ports
    assert (port.port, port.port_guid) == (1, 0x100009)
    assert port.counters == {"PortXmitData": 1872, "PortRcvData": 1944, "SymbolErrorCounter": 0}
    assert port.suffixed == {"PortXmitData", "PortRcvData"}
    link = port.link
    assert (link.lid, link.port, link.state, link.phys_state, link.width) == (208, 1, "Active", "LinkUp", "4X")
    assert link.speed == "53.125" and link.state_id == 4 and link.phys_state_id == 5
    assert (link.peer_port_guid, link.peer_lid, link.peer_port) == (0x1070FD0300C4D2A8, 187, 17)
    assert link.peer_name == "MF0;leaf-b2:MQM8790-HS2F/U1"
    assert (link.could_be_width, link.could_be_speed) == ("12X", "10.0")
    s = report.summary
    assert (s.nodes_checked, s.bad_nodes, s.ports_checked, s.bad_ports, s.pma_failures) == (3, 1, 148, 2, 2)


def test_a_down_link_has_no_peer_and_no_width():
    report = parse(HEAD, PORT, LINK_DOWN.replace(" 17    1[", " 17    1["), SUMMARY)
    link = report.nodes[0].ports[0].link
    assert (link.state, link.phys_state, link.width, link.speed) == ("Down", "Disabled", None, None)
    assert (link.peer_port_guid, link.peer_lid, link.peer_port, link.peer_name) == (None, None, None, None)
    assert (link.could_be_width, link.could_be_speed) == (None, None)


def test_errors_mode_port_all_and_a_ca_without_guid():
    report = parse('Errors for 0x200000 "Switch1"\n', "   GUID 0x200000 port ALL: [SymbolErrorCounter == 7]\n",
                   "   GUID 0x200000 port 254: [SymbolErrorCounter == 7]\n", 'Errors for "Hca4"\n',
                   "   GUID 0x100009 port 1: [PortXmitWait == 123456]\n", "## Summary: 2 nodes checked, 2 bad nodes found\n")
    sw, ca = report.nodes
    assert (sw.kind, sw.guid, [p.port for p in sw.ports]) == ("errors", 0x200000, [None, 254])
    assert (ca.guid, ca.name, ca.ports[0].counters) == (None, "Hca4", {"PortXmitWait": 123456})
    assert report.summary.ports_checked is None and report.summary.pma_failures == 0


def _not_silently_dropped(text: str) -> None:
    """An unknown line raises ParseError, or (when the parser skips and counts lines it does not
    know inside a table it knows) is counted: it never vanishes."""
    skipped: list = []
    try:
        ib_queryerrors.parse(text, skipped=skipped)
    except ParseError:
        return
    assert skipped, "an unknown ibqueryerrors line vanished without a ParseError or a skip count"


@pytest.mark.parametrize("line", ["Something new for 0x1 \"x\"\n", "garbage\n", "   GUID 0x100009 port X: [A == 1]\n",
                                  "   GUID port 1: [A == 1]\n"])
def test_an_unknown_line_is_never_silently_dropped(line):
    _not_silently_dropped(HEAD + PORT + line + SUMMARY)


@pytest.mark.parametrize("link", [
    "       Link info:   garbage\n",
    "       Link info:    208    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>  garbage\n",
    "       Link info:    208    1[  ] ==( nonsense )==>  0x1 1 1[  ] \"x\" ( )\n",
    "       Link info:    208    1[  ] ==(                Bogus/Disabled)==>             [  ] \"\" ( )\n",
    "       Link info:    208    1[  ] ==(                Down/Bogus)==>             [  ] \"\" ( )\n",
    "       Link info:    208    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>  0x1070fd0300c4d2a8    187   17[  ] \"x\" (Could be 7X )\n",
    "       Link info:    208    2[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>  0x1070fd0300c4d2a8    187   17[  ] \"x\" ( )\n",
    "       Link info:    208    1[  ] ==( 4X        99.9 Gbps Active/  LinkUp)==>  0x1070fd0300c4d2a8    187   17[  ] \"x\" ( )\n",
])
def test_a_malformed_link_info_line_is_a_parse_error(link):
    with pytest.raises(ParseError):
        parse(HEAD, PORT, link, SUMMARY)


@pytest.mark.parametrize("parts", [
    (HEAD, PORT, LINK_UP, LINK_UP, SUMMARY),  # two Link info lines for one port
    (HEAD, LINK_UP, SUMMARY),  # Link info before any port
    (PORT, SUMMARY),  # a port line before any node header
    (HEAD, PORT.replace("port 1:", "port 255:"), SUMMARY),  # port out of range
    (HEAD, PORT.replace("[SymbolErrorCounter == 0]", "[PortXmitData == 1]"), SUMMARY),  # a counter twice
    (HEAD, PORT.replace("[SymbolErrorCounter == 0]", "[SymbolErrorCounter = 0]"), SUMMARY),  # unreadable counters
    (HEAD, PORT),  # no summary: the sweep did not complete
    (HEAD, PORT, SUMMARY, SUMMARY.splitlines(True)[0]),  # two summaries
    (HEAD, PORT, SUMMARY, PORT),  # a port after the summary
    (HEAD, PORT, SUMMARY, LINK_UP),  # a Link info after the summary
    (HEAD, PORT, SUMMARY, HEAD),  # a node after the summary
    (HEAD, PORT, "##          148 ports checked, 2 ports have errors beyond threshold\n", SUMMARY),  # ports first
    (HEAD, PORT, "##          2 PMA query failures\n", SUMMARY),  # PMA first
    (HEAD, PORT, "   GUID 0x100009 port 1: [A == 1]" + " " * 70000 + "\n", SUMMARY),  # a line too long
])
def test_structural_errors_are_parse_errors(parts):
    with pytest.raises(ParseError):
        parse(*parts)


def test_thresholds_and_suppressed_trailers_are_ignored_and_blank_lines_skipped():
    report = parse(HEAD, "\n", PORT, "   \n", SUMMARY, "## Thresholds: \n", "## Suppressed: \n")
    assert report.summary.nodes_checked == 3 and len(report.nodes[0].ports) == 1


def test_not_text_is_a_parse_error():
    with pytest.raises(ParseError):
        ib_queryerrors.parse(None)  # type: ignore[arg-type]


def test_failed_queries_from_stderr():
    err = ("ibwarn: [1234] query_and_dump: IB_GSI_PORT_COUNTERS query failed on leaf-01, Lid 12 port 3\n"
           "something else\n"
           "ibwarn: classportinfo query failed on spine 2, Lid 7 port 0\n"
           "IB_GSI_PORT_COUNTERS_EXT query failed on x, Lid 9 port 1\n")
    assert ib_queryerrors.failed_queries(err) == [("leaf-01", 12, 3), ("spine 2", 7, 0), ("x", 9, 1)]
    assert ib_queryerrors.failed_queries("") == []
