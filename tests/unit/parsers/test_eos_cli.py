"""The EOS parsers on the real captures, and on those captures with lines wrapped, doubled and moved:
what they cannot place is skipped and counted, never shifted or summed; bad structure is a ParseError."""

from __future__ import annotations

import json

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import eos_cli

from tests.harness import paths

REAL = paths.FIXTURES / "real"
QUEUE = (REAL / "eos_queue_counters_detail_egress_nz.txt").read_text()
DISCARDS = (REAL / "eos_interfaces_counters_discards_anta.json").read_text()
ROW = "Et3/1/1                TC1      DP0-3         UC             67521           7523778                 0                 0"


def parse(text):
    skipped: list = []
    return eos_cli.parse_queue_counters(text, skipped=skipped), skipped


def test_long_names():
    assert eos_cli.long_name("Et3/1/1") == "Ethernet3/1/1"
    assert eos_cli.long_name("Po12") == "Port-Channel12"
    assert eos_cli.long_name("Ethernet1") == "Ethernet1"  # already long: "Et" + "h" is not a digit
    assert eos_cli.long_name("Poison") == "Poison"


def test_queue_capture_has_no_unknown_line():
    rows, skipped = parse(QUEUE)
    assert len(rows) == 20 and skipped == []
    assert rows[0] == eos_cli.QueueCounters("Ethernet3/1/1", "UC1", {"OutEnqPkts": 67521, "OutEnqOctets": 7523778,
                                                                    "OutDropPkts": 0, "OutDropOctets": 0})


def test_a_section_before_the_egress_title_is_skipped_and_counted():
    rows, skipped = parse("Ingress VOQ Counters\nsomething 1 2 3\n\n" + QUEUE)
    assert len(rows) == 20
    assert [s.line_no for s in skipped] == [1, 2]


def test_a_section_after_the_table_ends_it():
    rows, skipped = parse(QUEUE.rstrip("\n") + "\nIngress VOQ Counters\n" + ROW.replace("TC1", "TC2") + "\n")
    assert len(rows) == 20  # the row after the new title is not read as an egress row
    assert [s.text for s in skipped] == ["Ingress VOQ Counters", ROW.replace("TC1", "TC2")]


def test_a_wrapped_row_is_skipped_not_shifted():
    wrapped = QUEUE.replace(ROW, ROW[:60] + "\n" + ROW[60:])
    rows, skipped = parse(wrapped)
    assert ("Ethernet3/1/1", "UC1") not in {(r.port, r.queue) for r in rows}
    assert len(rows) == 19 and len(skipped) == 2


def test_a_doubled_row_is_never_one_queue_value():
    # two rows for one queue (a platform splitting per drop precedence): neither is the queue's count
    rows, skipped = parse(QUEUE.replace(ROW, ROW + "\n" + ROW.replace("DP0-3", "DP1  ")))
    assert ("Ethernet3/1/1", "UC1") not in {(r.port, r.queue) for r in rows}
    assert len(rows) == 19 and len(skipped) == 2


def test_rows_moved_above_the_header_are_skipped():
    lines = QUEUE.splitlines()
    moved = "\n".join([lines[3]] + lines[:3] + lines[4:]) + "\n"
    rows, skipped = parse(moved)
    assert len(rows) == 19 and [s.line_no for s in skipped] == [1]


VOQ = (REAL / "eos_queue_counters_nz_7280sr3e.txt").read_text()


def test_voq_and_egress_rows_of_one_queue_are_two_records():
    rows, skipped = parse(VOQ)
    et1 = [r for r in rows if r.port == "Ethernet1" and r.queue == "UC7"]
    assert [sorted(r.values) for r in et1] == [
        ["DropOctets", "DropPkts", "Octets", "Pkts"],
        ["OutDropOctets", "OutDropPkts", "OutEnqOctets", "OutEnqPkts"]]
    assert [s.line_no for s in skipped] == [96]


@pytest.mark.parametrize("text", [
    "",
    "Port  Traffic\n",
    VOQ.replace("DropOctets", "DropBytes", 1),  # the VoQ table's header changed
    "Egress Queue Counters\n",  # a title without its header
    VOQ.replace("2326123603", "23261236O3"),  # a malformed count in a VoQ row
    QUEUE.replace("OutDropOctets", "OutDropBytes"),  # unknown column set
    QUEUE.replace("7523778", "7523778x"),  # a malformed counter in a queue row
    QUEUE.replace("67521", "9" * 30),  # larger than 64 bits
])
def test_queue_structure_errors(text):
    with pytest.raises(ParseError):
        eos_cli.parse_queue_counters(text)


def test_discards_capture():
    rows = eos_cli.parse_discards_json(DISCARDS)
    assert {r.port: r.values for r in rows}["Ethernet1"] == {"inDiscards": 42, "outDiscards": 0}
    assert len(rows) == 5


@pytest.mark.parametrize("data", [
    {"errors": ["Invalid input (at token 3: 'discards')"]},  # what EOS prints for a refused command
    {"interfaces": []},
    {"interfaces": {"Ethernet1": {"inDiscards": -1}}},
    {"interfaces": {"Ethernet1": {"inDiscards": True}}},
    {"interfaces": {"Ethernet1": {"inDiscards": 2**64}}},
    {"interfaces": {"Ethernet1": {"inDiscards": "12"}}},
    {"interfaces": {"Ethernet1": 3}},
    {"interfaces": {"bad name": {"inDiscards": 1}}},
    [1, 2],
])
def test_discards_errors(data):
    with pytest.raises(ParseError):
        eos_cli.parse_discards_json(json.dumps(data))


def test_discards_not_json():
    with pytest.raises(ParseError, match="invalid JSON"):
        eos_cli.parse_discards_json(DISCARDS[:-20])


PFC = (REAL / "eos_pfc_counters_anta.json").read_text()
ECN = (REAL / "eos_qos_ecn_counters_queue_anta.json").read_text()


def test_pfc_capture():
    rows = eos_cli.parse_pfc_counters_json(PFC)
    assert {r.port: r.values for r in rows} == {  # read by hand from the capture
        "Ethernet3/1/1": {"rxFrames": 1, "txFrames": 0}, "Ethernet3/2/1": {"rxFrames": 0, "txFrames": 2},
        "Ethernet3/3/1": {"rxFrames": 2, "txFrames": 0}, "Ethernet3/4/1": {"rxFrames": 0, "txFrames": 1}}


def test_pfc_short_names_are_written_out():
    rows = eos_cli.parse_pfc_counters_json(json.dumps({"interfaceCounters": {"Et7": {"rxFrames": 5}}}))
    assert rows == [eos_cli.PfcFrames("Ethernet7", {"rxFrames": 5})]


@pytest.mark.parametrize("data", [
    {"errors": ["Invalid input"]},
    {"interfaces": {}},  # another command's JSON
    {"interfaceCounters": {"Ethernet1": {"rxFrames": "3"}}},
    {"interfaceCounters": {"Ethernet1": {"txFrames": -1}}},
    {"interfaceCounters": {"Ethernet1": {"txFrames": 2**64}}},
    {"interfaceCounters": {"Ethernet1": {"rxFrames": 1.5}}},
    {"interfaceCounters": {"Ethernet1": []}},
    {"interfaceCounters": {"": {"rxFrames": 1}}},
    "interfaceCounters",
])
def test_pfc_errors(data):
    with pytest.raises(ParseError):
        eos_cli.parse_pfc_counters_json(json.dumps(data))


def test_ecn_capture_leaves_unconfigured_queues_out():
    rows = eos_cli.parse_ecn_counters_json(ECN)
    got = {(r.port, r.queue): r.packets for r in rows}
    # read by hand: 4 interfaces x 3 queues, two of them '-' (ECN counting not configured)
    assert len(got) == 10
    assert got[("Ethernet10/20/1", "UC1")] == 2 and got[("Ethernet10/3/1", "UC2")] == 2
    assert got[("Ethernet10/28/1", "UC1")] == 0
    assert ("Ethernet10/28/1", "UC0") not in got and ("Ethernet10/16/1", "UC2") not in got


@pytest.mark.parametrize("data", [
    {"errors": ["% ECN counters are not supported on this platform"]},
    {"intfQueueCounters": {"Ethernet1": {}}},
    {"intfQueueCounters": {"Ethernet1": {"queueCounters": {"0": 3}}}},  # a count not written as EOS does
    {"intfQueueCounters": {"Ethernet1": {"queueCounters": {"0": "3x"}}}},
    {"intfQueueCounters": {"Ethernet1": {"queueCounters": {"0": "9" * 21}}}},
    {"intfQueueCounters": {"Ethernet1": {"queueCounters": {"q0": "1"}}}},
    {"intfQueueCounters": {"Ethernet1": {"queueCounters": {"0": ""}}}},
    {"intfQueueCounters": []},
])
def test_ecn_errors(data):
    with pytest.raises(ParseError):
        eos_cli.parse_ecn_counters_json(json.dumps(data))


# -- the edges the mutation run (scripts/mutation eos_cli) found untested ----------------------------

def test_the_rows_of_a_doubled_queue_are_counted_at_their_own_lines():
    lines = QUEUE.splitlines()
    at = lines.index(ROW)
    doubled = ROW.replace("DP0-3", "DP1  ")
    rows, skipped = parse("\n".join(lines[:at + 1] + [doubled] + lines[at + 1:]) + "\n")
    assert [(s.source, s.line_no) for s in skipped] == [("eos_queue_counters", at + 1), ("eos_queue_counters", at + 2)]


def test_a_line_before_any_title_is_skipped_and_counted_not_a_crash():
    # e.g. a warning EOS prints before the command's output
    rows, skipped = parse("% Counters are cleared periodically\n" + QUEUE)
    assert len(rows) == 20 and [(s.line_no, s.text) for s in skipped] == [(1, "% Counters are cleared periodically")]


@pytest.mark.parametrize("errors", [[], {}, "", None])
def test_an_errors_key_of_any_shape_is_a_refusal(errors):
    with pytest.raises(ParseError, match="refused"):
        eos_cli.parse_discards_json(json.dumps({"errors": errors, "interfaces": {}}))


def test_records_are_immutable():
    import dataclasses

    row = eos_cli.parse_discards_json(DISCARDS)[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.port = "Ethernet99"  # type: ignore[misc]
