"""SONiC CLI / Cumulus ethtool parsers on real-layout captures, and fuzzed with hypothesis."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric_exporter.catalog import switch_commands
from fabric_exporter.errors import ParseError
from fabric_exporter.lab.snmp import SimulatedSwitch
from fabric_exporter.mapping import RawTable
from fabric_exporter.lab.sonic_cli import (
    render_pfc_counters,
    render_pfcwd_stats,
    render_queue_counters,
    render_queue_counters_json,
    tabulate_simple,
)
from fabric_exporter.parsers.sonic_cli import (
    parse_count,
    parse_cumulus_ethtool,
    parse_pfc_counters,
    parse_pfcwd_stats,
    parse_queue_counters,
    parse_queue_counters_json,
    parse_tables,
    parse_wred_counters,
    parse_wred_counters_json,
)
from tests.harness import paths

CLI_ROWS = RawTable.for_source(*switch_commands.SOURCES)
FIX = paths.FIXTURES / "switch"


def fixture(name: str) -> str:
    return (FIX / name).read_text()


def as_set(rows):
    """The rows as (port, queue, (metric, value)...): text and JSON spell the counters differently, the
    catalog's rows say which metric each is."""
    return {(r.port, r.queue, tuple(sorted((metric, v) for name, v in r.values.items()
                                           for _o, metric, _row, _c in CLI_ROWS.matches(name)))) for r in rows}


# -- real captures ------------------------------------------------------------------------------------

def test_pfc_counters_capture():
    c = parse_pfc_counters(fixture("sonic/show_pfc_counters.txt"))
    assert c.rx == {
        "Ethernet0": {"PFC0": 1200, "PFC1": 201, "PFC2": 202, "PFC3": 203, "PFC4": 204, "PFC5": 205, "PFC6": 206, "PFC7": 207},
        "Ethernet4": {"PFC0": 1400, "PFC1": 401, "PFC2": 402, "PFC3": 403, "PFC4": 404, "PFC5": 405, "PFC6": 406, "PFC7": 407},
        "Ethernet8": {"PFC0": 1800, "PFC1": 801, "PFC2": 802, "PFC3": 803, "PFC4": 804, "PFC5": 805, "PFC6": 806, "PFC7": 807},
    }
    assert c.tx["Ethernet8"] == {f"PFC{p}": v for p, v in enumerate((1810, 811, 812, 813, 814, 815, 816, 817))}


def test_pfc_counters_na_rows_are_absent_not_zero():
    c = parse_pfc_counters(fixture("sonic/show_pfc_counters_masic_na.txt"))
    assert c.rx["Ethernet-BP256"] == {} and c.tx["Ethernet-BP260"] == {}
    assert c.rx["Ethernet-BP4"]["PFC0"] == 1800 and c.tx["Ethernet-BP0"]["PFC7"] == 617
    assert len(c.rx) == len(c.tx) == 6


def test_queue_counters_capture_text_and_json_agree():
    text = parse_queue_counters(fixture("sonic/show_queue_counters.txt"))
    js = parse_queue_counters_json(fixture("sonic/show_queue_counters.json"))
    assert len(text) == 90 and as_set(text) == as_set(js)
    by = {(r.port, r.queue): r.values for r in text}
    assert by[("Ethernet0", "UC1")] == {"Counter/pkts": 60, "Counter/bytes": 43, "Drop/pkts": 39, "Drop/bytes": 1}
    assert by[("Ethernet0", "MC10")] == {"Counter/pkts": 83, "Counter/bytes": 96, "Drop/pkts": 74, "Drop/bytes": 9}
    assert by[("Ethernet0", "ALL20")] == {}  # N/A everywhere


def test_wred_counters_capture_text_and_json_agree():
    text = parse_wred_counters(fixture("sonic/show_queue_wredcounters.txt"))
    js = parse_wred_counters_json(fixture("sonic/show_queue_wredcounters.json"))
    assert len(text) == 90 and as_set(text) == as_set(js)
    by = {(r.port, r.queue): r.values for r in text}
    assert by[("Ethernet0", "UC1")] == {"WredDrp/pkts": 60, "WredDrp/bytes": 43, "EcnMarked/pkts": 39,
                                        "EcnMarked/bytes": 1}


def test_pfcwd_stats_capture():
    rows = parse_pfcwd_stats(fixture("sonic/show_pfcwd_stats.txt"))
    assert [(r.port, r.queue, r.status) for r in rows] == [
        ("Ethernet0", 3, "stormed"), ("Ethernet4", 3, "operational"), ("Ethernet8", 4, "stormed")]
    assert rows[2].values == {"STORM DETECTED": 3, "STORM RESTORED": 2, "TX OK": 100, "TX DROP": 300,
                              "RX OK": 100, "RX DROP": 300, "TX LAST OK": 0, "TX LAST DROP": 200,
                              "RX LAST OK": 0, "RX LAST DROP": 200}
    masic = parse_pfcwd_stats(fixture("sonic/show_pfcwd_stats_masic.txt"))
    assert len(masic) == 96 and masic[0].status is None
    assert (masic[10].port, masic[10].queue, masic[10].values["STORM DETECTED"]) == ("Ethernet0", 10, 0)


def test_empty_pfcwd_table_and_empty_output():
    header_only = ("  QUEUE    STATUS    STORM DETECTED/RESTORED    TX OK/DROP    RX OK/DROP    TX LAST OK/DROP"
                   "    RX LAST OK/DROP\n-------  --------  -------------------------  ------------  ------------"
                   "  -----------------  -----------------\n")
    assert parse_pfcwd_stats(header_only) == []
    assert parse_pfcwd_stats("") == []


def test_thousands_separators():
    assert parse_count("1,234,567") == 1234567 and parse_count("0") == 0 and parse_count("N/A") is None
    for bad in ("1,23", "12,3456", ",123", "1.5", "-1", "0x10", "１２", ""):
        with pytest.raises(ParseError):
            parse_count(bad)


def test_cumulus_ethtool():
    text = ("NIC statistics:\n     HwIfInOctets: 12345\n     HwIfInPfc3Pkt: 17\n     HwIfOutPfc3Pkt: 4\n"
            "     HwIfOutPfc0Pkt: 0\n     HwIfOutQ3WredDrops: 99\n     SoftInErrors: 0\n")
    c = parse_cumulus_ethtool(text)
    assert c.raw == {"HwIfInOctets": 12345, "HwIfInPfc3Pkt": 17, "HwIfOutPfc3Pkt": 4, "HwIfOutPfc0Pkt": 0,
                     "HwIfOutQ3WredDrops": 99, "SoftInErrors": 0}  # every counter, as printed
    with pytest.raises(ParseError):
        parse_cumulus_ethtool("Cannot get stats strings information: Operation not supported\n")


# -- the lab's renderer produces the real layouts byte for byte -------------------------------------

@pytest.mark.parametrize("name", ["show_pfc_counters.txt", "show_pfc_counters_masic_na.txt",
                                  "show_pfcwd_stats.txt", "show_pfcwd_stats_masic.txt"])
def test_lab_tabulate_reproduces_captures(name):
    text = fixture(f"sonic/{name}")
    tables = parse_tables(text)
    assert "\n\n".join(tabulate_simple(list(t.headers), [list(r) for r in t.rows]) for t in tables) + "\n" == text


def test_lab_renders_parse_back_to_its_state():
    sw = SimulatedSwitch("r1", "sonic", ports=3, queues=4, seed=3)
    sw.storm(1, 3)
    pfc = parse_pfc_counters(render_pfc_counters(sw))
    assert pfc.rx["Ethernet4"]["PFC5"] == sw.interfaces[1].pfc[5][1] and pfc.tx["Ethernet8"]["PFC0"] == sw.interfaces[2].pfc[0][0]
    q = {(r.port, r.queue): r.values for r in parse_queue_counters(render_queue_counters(sw))}
    assert q[("Ethernet4", "MC6")]["Counter/bytes"] == sw.interfaces[1].queues[2]["mc_bytes"]
    assert as_set(parse_queue_counters(render_queue_counters(sw))) == as_set(
        parse_queue_counters_json(render_queue_counters_json(sw)))
    assert as_set(parse_wred_counters(render_queue_counters(sw, wred=True))) == as_set(
        parse_wred_counters_json(render_queue_counters_json(sw, wred=True)))
    wd = {(r.port, r.queue): r for r in parse_pfcwd_stats(render_pfcwd_stats(sw))}
    assert wd[("Ethernet4", 3)].status == "stormed" and wd[("Ethernet4", 3)].values["TX DROP"] == 1000


# -- malformed input: ParseError, never anything else -----------------------------------------------

@pytest.mark.parametrize("text", [
    "garbage\n",
    "  Port Rx    PFC0\n---------  ------\nEthernet0   1,2x0\n",
    "  Port Rx    PFC9\n---------  ------\nEthernet0   1\n",
    "  Port Rx    PFC0\n---------  ------\nEthernet0   1\nEthernet0   2\n",
    "  Port Zx    PFC0\n---------  ------\nEthernet0   1\n",
])
def test_pfc_counters_rejects(text):
    with pytest.raises(ParseError):
        parse_pfc_counters(text)


@pytest.mark.parametrize("text", ["", "[]", "{\"Ethernet0\": []}", "{\"Ethernet0\": {\"UC0\": {\"totalpacket\": 1.5}}}",
                                  "{\"Ethernet0\": {\"XX0\": {}}}", "{\"Ethernet0\": {\"UC0\": {\"totalpacket\": \"-1\"}}}",
                                  "{\"Ethernet0\": {\"UC0\": {\"totalpacket\": true}}}", "[[[[" * 3000])
def test_queue_json_rejects(text):
    with pytest.raises(ParseError):
        parse_queue_counters_json(text)


PARSERS = [parse_pfc_counters, parse_queue_counters, parse_queue_counters_json, parse_wred_counters,
           parse_wred_counters_json, parse_pfcwd_stats, parse_cumulus_ethtool]
CAPTURES = {
    parse_pfc_counters: "sonic/show_pfc_counters.txt", parse_queue_counters: "sonic/show_queue_counters.txt",
    parse_queue_counters_json: "sonic/show_queue_counters.json", parse_wred_counters: "sonic/show_queue_wredcounters.txt",
    parse_wred_counters_json: "sonic/show_queue_wredcounters.json", parse_pfcwd_stats: "sonic/show_pfcwd_stats.txt",
}

TOKENS = st.sampled_from(["Ethernet0", "UC0", "MC10", "ALL3", "PFC0", "PFC7", "Port", "TxQ", "Port Rx", "Port Tx",
                          "N/A", "1,200", "12", "0", "1/0", "stormed", "operational", "----", "-----------",
                          "Counter/pkts", "Drop/bytes", "EcnMarked/pkts", "QUEUE", "STATUS", "Ethernet0:3",
                          "For namespace :", "NIC statistics:", "HwIfInPfc3Pkt:", "{", "}", "\"", ":", ",", "  ",
                          "\n", "\t", "\x00", "é"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(TOKENS, max_size=60), parser=st.sampled_from(PARSERS))
def test_fuzz_token_soup_only_parse_error(parts, parser):
    text = " ".join(parts)
    try:
        result = parser(text)
    except ParseError:
        return
    assert result is not None


@settings(max_examples=150, deadline=None)
@given(data=st.data(), parser=st.sampled_from(list(CAPTURES)))
def test_fuzz_mutated_captures_only_parse_error_and_no_made_up_values(data, parser):
    """Flip, drop or insert characters in a real capture: ParseError, or values that were there."""
    text = fixture(CAPTURES[parser])
    pos = data.draw(st.integers(0, len(text) - 1))
    op = data.draw(st.sampled_from(["replace", "delete", "insert"]))
    ch = data.draw(st.sampled_from(list("x9,-/ \n:\"{}N")))
    mutated = {"replace": text[:pos] + ch + text[pos + 1:], "delete": text[:pos] + text[pos + 1:],
               "insert": text[:pos] + ch + text[pos:]}[op]
    try:
        result = parser(mutated)
    except ParseError:
        return
    # Whatever was accepted must be numbers the text actually shows (no invented zeros).
    if isinstance(result, list):
        for row in result:
            for v in row.values.values():
                assert isinstance(v, int) and v >= 0
                assert f"{v:,}" in mutated or str(v) in mutated


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=400))
def test_fuzz_arbitrary_text_only_parse_error(text):
    for parser in PARSERS:
        try:
            parser(text)
        except ParseError:
            pass


# -- skip-and-count; what a sonic-clear leaves behind ----------------------------------------------

from fabric_exporter.parsers import sonic_cli as p  # noqa: E402

def test_rows_that_do_not_fit_the_columns_are_skipped_and_counted_never_shifted():
    skipped = []
    out = p.parse_pfc_counters("  Port Rx    PFC0\n---------  ------\nEthernet0   1   2\nEthernet4   7\n"
                               "a note the CLI printed\n", skipped=skipped)
    assert out.rx == {"Ethernet4": {"PFC0": 7}}
    assert [(s.source, s.line_no) for s in skipped] == [("sonic_pfc_counters", 3), ("sonic_pfc_counters", 5)]


def test_last_cached_time_lines_after_sonic_clear():
    skipped = []
    pfc = p.parse_pfc_counters(
        "Last cached time was 2021-01-10T20:15:04.163406\n"
        "  Port Rx    PFC0    PFC1\n-----------  ------  ------\n  Ethernet0       5       6\n\n"
        "Last cached time was 2021-01-10T20:15:04.163406\n"
        "  Port Tx    PFC0    PFC1\n-----------  ------  ------\n  Ethernet0       1       2\n", skipped=skipped)
    assert pfc.rx == {"Ethernet0": {"PFC0": 5, "PFC1": 6}} and pfc.tx == {"Ethernet0": {"PFC0": 1, "PFC1": 2}}
    rows = p.parse_queue_counters(
        "For namespace asic0:\n"
        "Ethernet0 Last cached time for asic0 was 2021-01-10T20:15:04.163406\n"
        "     Port    TxQ    Counter/pkts    Counter/bytes    Drop/pkts    Drop/bytes\n"
        "---------  -----  --------------  ---------------  -----------  ------------\n"
        "Ethernet0    UC0               3               30            1            10\n", skipped=skipped)
    assert [(r.port, r.queue, r.values["Counter/pkts"]) for r in rows] == [("Ethernet0", "UC0", 3)]
    assert skipped == []  # known lines: not counted as unknown


# -- the edges the mutation run (scripts/mutation sonic_cli) found untested (issue 16) ---------------
def test_parse_count_boundaries():
    assert p.parse_count("0") == 0 and p.parse_count("1,234") == 1234 and p.parse_count("1234") == 1234
    assert p.parse_count("N/A") is None
    assert p.parse_count(str(2**64 - 1)) == 2**64 - 1
    assert p.parse_count("18,446,744,073,709,551,615") == 2**64 - 1
    for bad in (str(2**64), "12,34", "1,2345", "-1", "", "n/a", "1.0", " 1"):
        with pytest.raises(ParseError):
            p.parse_count(bad)


PFC = """\
  Port Rx    PFC0    PFC3
---------  ------  ------
Ethernet0   1,200     N/A
Ethernet4       0       7

  Port Tx    PFC0    PFC3
---------  ------  ------
Ethernet0       5       6
"""


def test_pfc_counters_read_rx_and_tx_and_skip_na():
    c = p.parse_pfc_counters(PFC)
    assert c.rx == {"Ethernet0": {"PFC0": 1200}, "Ethernet4": {"PFC0": 0, "PFC3": 7}}
    assert c.tx == {"Ethernet0": {"PFC0": 5, "PFC3": 6}}
    assert p.parse_pfc_counters("") == p.PfcCounters()


@pytest.mark.parametrize("text", [
    PFC.replace("PFC3", "PFC8"), PFC.replace("PFC3", "PFC0"), PFC.replace("Port Tx", "Port Xx"),
    PFC.replace("Port Tx", "Port Rx"), PFC.replace("Ethernet4", "Ethernet0"), PFC.replace("Ethernet4", "4thernet"),
    PFC.replace("      7", "   x7"), "  Port Rx\n---------\n",
])
def test_bad_pfc_tables_are_parse_errors(text):
    with pytest.raises(ParseError):
        p.parse_pfc_counters(text)


@pytest.mark.parametrize("text, lost", [
    # no dash line: the Rx block is no table; its lines are skipped and counted, never read as rows
    (PFC.replace("---------  ------  ------\nEthernet0   1,200", "Ethernet0   1,200"), "Ethernet4       0       7"),
    # a row short of a cell cannot be aligned with its header: skipped, never shifted
    (PFC.replace("Ethernet4       0       7", "Ethernet4       0"), "Ethernet4       0"),
])
def test_rows_that_do_not_fit_are_skipped_and_counted(text, lost):
    skipped: list = []
    c = p.parse_pfc_counters(text, skipped=skipped)
    assert "Ethernet4" not in c.rx and lost in [s.text for s in skipped]


def test_tables_after_a_namespace_line_and_blank_lines():
    text = "For namespace asic0:\n\n" + PFC.split("\n\n")[0] + "\nFor namespace asic1:\n" + "  Port Tx    PFC0\n---------  ------\nEthernet8       3\n"
    tables = p.parse_tables(text)
    assert [t.headers for t in tables] == [("Port Rx", "PFC0", "PFC3"), ("Port Tx", "PFC0")]
    assert tables[0].rows == (("Ethernet0", "1,200", "N/A"), ("Ethernet4", "0", "7"))
    assert tables[1].rows == (("Ethernet8", "3"),)


QUEUE = """\
     Port    TxQ    Counter/pkts    Counter/bytes    Drop/pkts    Drop/bytes
---------  -----  --------------  ---------------  -----------  ------------
Ethernet0    UC0               0                5          N/A             1
Ethernet0    MC8           1,000            2,000            3             4
"""


def test_queue_counters_table_and_json_agree():
    rows = p.parse_queue_counters(QUEUE)
    assert [(r.port, r.queue, r.values) for r in rows] == [
        ("Ethernet0", "UC0", {"Counter/pkts": 0, "Counter/bytes": 5, "Drop/bytes": 1}),
        ("Ethernet0", "MC8", {"Counter/pkts": 1000, "Counter/bytes": 2000, "Drop/pkts": 3, "Drop/bytes": 4})]
    data = {"Ethernet0": {"time": "2024-01-01", "UC0": {"totalpacket": 0, "totalbytes": "5", "droppacket": "N/A", "dropbytes": 1},
                          "MC8": {"totalpacket": "1,000", "totalbytes": 2000, "droppacket": 3, "dropbytes": 2**64 - 1}}}
    rows = p.parse_queue_counters_json(json.dumps(data))
    assert [(r.port, r.queue, r.values) for r in rows] == [
        ("Ethernet0", "UC0", {"totalpacket": 0, "totalbytes": 5, "dropbytes": 1}),
        ("Ethernet0", "MC8", {"totalpacket": 1000, "totalbytes": 2000, "droppacket": 3, "dropbytes": 2**64 - 1})]
    assert p.parse_queue_counters("") == [] and p.parse_queue_counters_json("{}") == []


@pytest.mark.parametrize("stats", [{"totalpacket": -1}, {"totalpacket": 2**64}, {"totalpacket": True},
                                   {"totalpacket": 1.5}, {"totalpacket": None}, {"totalpacket": "x"}])
def test_bad_json_counter_values_are_parse_errors(stats):
    with pytest.raises(ParseError):
        p.parse_queue_counters_json(json.dumps({"Ethernet0": {"UC0": stats}}))


@pytest.mark.parametrize("text", ["[]", "{", '{"Ethernet0": []}', '{"Ethernet0": {"UC0": []}}', '{"Ethernet0": {"Q0": {}}}',
                                  '{"0bad": {}}'])
def test_bad_json_shapes_are_parse_errors(text):
    with pytest.raises(ParseError):
        p.parse_queue_counters_json(text)


@pytest.mark.parametrize("text", [
    QUEUE.replace("MC8", "UC0"), QUEUE.replace("MC8", "XX8"), QUEUE.replace("     Port    TxQ", "     TxQ    Port"),
    QUEUE.replace("Counter/pkts    Counter/bytes    Drop/pkts    Drop/bytes", "Foo/pkts        Bar/bytes        Baz/pkts     Qux/bytes "),
    "just words\n",
])
def test_bad_queue_tables_are_parse_errors(text):
    with pytest.raises(ParseError):
        p.parse_queue_counters(text)


WRED = """\
     Port    TxQ    WredDrp/pkts    WredDrp/bytes    EcnMarked/pkts    EcnMarked/bytes
---------  -----  --------------  ---------------  ----------------  -----------------
Ethernet0    UC3               1                2                 0                N/A
"""


def test_wred_counters():
    (row,) = p.parse_wred_counters(WRED)
    assert row.values == {"WredDrp/pkts": 1, "WredDrp/bytes": 2, "EcnMarked/pkts": 0}
    (row,) = p.parse_wred_counters_json(json.dumps({"Ethernet0": {"UC3": {"wreddroppacket": 1, "ecnmarkedpacket": 0}}}))
    assert row.values == {"wreddroppacket": 1, "ecnmarkedpacket": 0}


PFCWD = """\
      QUEUE       STATUS    STORM DETECTED/RESTORED    TX OK/DROP    RX OK/DROP    TX LAST OK/DROP    RX LAST OK/DROP
-----------  -----------  -------------------------  ------------  ------------  -----------------  -----------------
Ethernet0:3  operational                        2/1           5/0           0/7                N/A                1/2
Ethernet4:4          N/A                        0/0           0/0           0/0                0/0                0/0
"""


def test_pfcwd_stats():
    a, b = p.parse_pfcwd_stats(PFCWD)
    assert (a.port, a.queue, a.status) == ("Ethernet0", 3, "operational")
    assert a.values == {"STORM DETECTED": 2, "STORM RESTORED": 1, "TX OK": 5, "TX DROP": 0, "RX OK": 0,
                        "RX DROP": 7, "RX LAST OK": 1, "RX LAST DROP": 2}
    assert (b.port, b.queue, b.status) == ("Ethernet4", 4, None) and b.values["TX LAST OK"] == 0
    assert p.parse_pfcwd_stats("") == []


@pytest.mark.parametrize("text", [
    PFCWD.replace("Ethernet4:4", "Ethernet0:3"), PFCWD.replace("Ethernet4:4", "Ethernet4-4"),
    PFCWD.replace("Ethernet4:4", "Ethernet4:1234"), PFCWD.replace("operational", "broken     "),
    PFCWD.replace("2/1", "2-1"), PFCWD.replace("QUEUE", "QUEUX"), PFCWD + "\n" + PFCWD, "words\n",
])
def test_bad_pfcwd_stats_are_parse_errors(text):
    with pytest.raises(ParseError):
        p.parse_pfcwd_stats(text)


def test_cumulus_ethtool_full_range_repeats_and_refusals():
    # Cumulus ethtool -S is read by the one ethtool parser (parsers/ethtool.py): its rules hold here too.
    text = ("NIC statistics:\n     HwIfInPfc3Pkt: 5\n     HwIfOutPfc3Pkt: 0\n     HwIfOutQ3WredDrops: 9\n"
            f"     HwIfInOctets: {2**64 - 1}\n")
    c = p.parse_cumulus_ethtool(text)
    assert c.raw["HwIfInOctets"] == 2**64 - 1
    assert (c.raw["HwIfInPfc3Pkt"], c.raw["HwIfOutPfc3Pkt"], c.raw["HwIfOutQ3WredDrops"]) == (5, 0, 9)
    # a name printed twice with different values is left out, not guessed; equal repeats are one counter
    c = p.parse_cumulus_ethtool("NIC statistics:\n     HwIfInPfc3Pkt: 1\n     HwIfInPfc3Pkt: 2\n"
                                "     HwIfOutPfc3Pkt: 4\n     HwIfOutPfc3Pkt: 4\n")
    assert (c.raw, c.ambiguous) == ({"HwIfOutPfc3Pkt": 4}, frozenset({"HwIfInPfc3Pkt"}))
    skipped: list = []
    c = p.parse_cumulus_ethtool("NIC statistics:\n     Port counters\n     HwIfOutQ1WredDrops: 3\n", skipped)
    assert c.raw == {"HwIfOutQ1WredDrops": 3} and [s.text for s in skipped] == ["Port counters"]
    for bad in ("", "stats:\n a: 1\n", f"NIC statistics:\n     a: {2**64}\n", "NIC statistics:\n     a: 1x\n",
                "NIC statistics:\n     HwIfInPfc3Pkt:\n"):
        with pytest.raises(ParseError):
            p.parse_cumulus_ethtool(bad)


def test_trim_columns_and_keys_of_newer_releases():
    text = ("     Port    TxQ    Counter/pkts    Trim/pkts    TrimSent/pkts    TrimDrop/pkts\n"
            "---------  -----  --------------  -----------  ---------------  ---------------\n"
            "Ethernet0    UC1               1            2                3                4\n")
    (row,) = p.parse_queue_counters(text)
    assert row.values == {"Counter/pkts": 1, "Trim/pkts": 2, "TrimSent/pkts": 3, "TrimDrop/pkts": 4}
    (row,) = p.parse_queue_counters_json(json.dumps({"Ethernet0": {"UC1": {
        "totalpacket": 1, "trimpkt": 2, "trimsentpkt": 3, "trimdroppkt": 4, "unknownkey": 9}}}))
    assert row.values == {"totalpacket": 1, "trimpkt": 2, "trimsentpkt": 3, "trimdroppkt": 4}


def test_records_are_immutable():
    import dataclasses

    (row,) = p.parse_wred_counters(WRED)
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.port = "x"  # type: ignore[misc]


@pytest.mark.parametrize("fn", [p.parse_tables, p.parse_cumulus_ethtool])
def test_not_text_is_a_parse_error(fn):
    with pytest.raises(ParseError):
        fn(None)  # type: ignore[arg-type]
