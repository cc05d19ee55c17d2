"""Tests written for mutants that survived the SONiC/Cumulus parser tests (issue 16, "Test
strength"): count boundaries (N/A, commas, 2**64-1), the table splitter's namespace and header
rules, duplicate rows, and the JSON forms' value checks (a counter of 0 is a value)."""

from __future__ import annotations

import json

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import sonic_cli as p


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
    assert c.rx == {"Ethernet0": {0: 1200}, "Ethernet4": {0: 0, 3: 7}}
    assert c.tx == {"Ethernet0": {0: 5, 3: 6}}
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


def test_cumulus_ethtool():
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
