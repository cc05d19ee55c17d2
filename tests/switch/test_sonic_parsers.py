"""SONiC CLI / Cumulus ethtool parsers on real-layout captures, and fuzzed with hypothesis."""

from __future__ import annotations

from pathlib import Path

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

CLI_ROWS = RawTable.for_source(*switch_commands.SOURCES)
FIX = Path(__file__).resolve().parent.parent / "fixtures" / "switch"


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
        "Ethernet0": {0: 1200, 1: 201, 2: 202, 3: 203, 4: 204, 5: 205, 6: 206, 7: 207},
        "Ethernet4": {0: 1400, 1: 401, 2: 402, 3: 403, 4: 404, 5: 405, 6: 406, 7: 407},
        "Ethernet8": {0: 1800, 1: 801, 2: 802, 3: 803, 4: 804, 5: 805, 6: 806, 7: 807},
    }
    assert c.tx["Ethernet8"] == {0: 1810, 1: 811, 2: 812, 3: 813, 4: 814, 5: 815, 6: 816, 7: 817}


def test_pfc_counters_na_rows_are_absent_not_zero():
    c = parse_pfc_counters(fixture("sonic/show_pfc_counters_masic_na.txt"))
    assert c.rx["Ethernet-BP256"] == {} and c.tx["Ethernet-BP260"] == {}
    assert c.rx["Ethernet-BP4"][0] == 1800 and c.tx["Ethernet-BP0"][7] == 617
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
    assert pfc.rx["Ethernet4"][5] == sw.interfaces[1].pfc[5][1] and pfc.tx["Ethernet8"][0] == sw.interfaces[2].pfc[0][0]
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
    assert out.rx == {"Ethernet4": {0: 7}}
    assert [(s.source, s.line_no) for s in skipped] == [("sonic_pfc_counters", 3), ("sonic_pfc_counters", 5)]


def test_last_cached_time_lines_after_sonic_clear():
    skipped = []
    pfc = p.parse_pfc_counters(
        "Last cached time was 2021-01-10T20:15:04.163406\n"
        "  Port Rx    PFC0    PFC1\n-----------  ------  ------\n  Ethernet0       5       6\n\n"
        "Last cached time was 2021-01-10T20:15:04.163406\n"
        "  Port Tx    PFC0    PFC1\n-----------  ------  ------\n  Ethernet0       1       2\n", skipped=skipped)
    assert pfc.rx == {"Ethernet0": {0: 5, 1: 6}} and pfc.tx == {"Ethernet0": {0: 1, 1: 2}}
    rows = p.parse_queue_counters(
        "For namespace asic0:\n"
        "Ethernet0 Last cached time for asic0 was 2021-01-10T20:15:04.163406\n"
        "     Port    TxQ    Counter/pkts    Counter/bytes    Drop/pkts    Drop/bytes\n"
        "---------  -----  --------------  ---------------  -----------  ------------\n"
        "Ethernet0    UC0               3               30            1            10\n", skipped=skipped)
    assert [(r.port, r.queue, r.values["Counter/pkts"]) for r in rows] == [("Ethernet0", "UC0", 3)]
    assert skipped == []  # known lines: not counted as unknown
