"""The NVUE 'qos roce counters' parser on the real capture, and on it with lines wrapped, doubled and
moved: what it cannot place is skipped and counted, never shifted; bad structure is a ParseError."""

from __future__ import annotations


import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import nvue

from tests.harness import paths

REAL = paths.FIXTURES / "real"
ROCE = (REAL / "nvue_qos_roce_counters_swp16.txt").read_text()
ECN_ROW = "    ecn-marked-packets         693777677344           Tx ECN marked packets"
TX_DISCARD_ROW = "    unicast-no-buffer-discard  663060754115           Tx buffer discards for RoCE traffic"


def parse(text):
    skipped: list = []
    return nvue.parse_roce_counters(text, skipped=skipped).values, skipped


def test_capture_read_by_hand():
    values, skipped = parse(ROCE)
    assert skipped == []
    assert values == {
        "rx-stats/rx-non-roce-stats/no-buffer-discard": 55, "rx-stats/rx-non-roce-stats/non-roce-packets": 462975,
        "rx-stats/rx-roce-stats/no-buffer-discard": 0, "rx-stats/rx-roce-stats/roce-packets": 0,
        "tx-stats/tx-cnp-stats/cnp-packets": 0, "tx-stats/tx-cnp-stats/unicast-no-buffer-discard": 0,
        "tx-stats/tx-ecn-stats/ecn-marked-packets": 693777677344,
        "tx-stats/tx-roce-stats/roce-packets": 803785675319, "tx-stats/tx-roce-stats/unicast-no-buffer-discard": 663060754115}


def test_same_leaf_name_under_another_group_is_its_own_counter():
    # 'unicast-no-buffer-discard' is under tx-cnp-stats (0) and tx-roce-stats (663060754115)
    values, _ = parse(ROCE)
    assert values["tx-stats/tx-cnp-stats/unicast-no-buffer-discard"] == 0 and values["tx-stats/tx-roce-stats/unicast-no-buffer-discard"] == 663060754115


def test_a_documents_elision_is_skipped_and_counted():
    values, skipped = parse(ROCE.rstrip("\n") + "\n...\n")
    assert len(values) == 9
    assert [s.text for s in skipped] == ["..."] and skipped[0].source == "nvue_roce"


def test_a_wrapped_row_is_skipped_not_shifted():
    wrapped = ROCE.replace(ECN_ROW, ECN_ROW[:30] + "\n" + ECN_ROW[30:])
    values, skipped = parse(wrapped)
    assert "tx-stats/tx-ecn-stats/ecn-marked-packets" not in values
    assert len(skipped) == 2  # the key without its value (unknown node), and the value without its key


def test_a_doubled_row_is_never_one_value():
    values, skipped = parse(ROCE.replace(ECN_ROW, ECN_ROW + "\n" + ECN_ROW.replace("693777677344", "693777677345")))
    assert "tx-stats/tx-ecn-stats/ecn-marked-packets" not in values
    assert [s.text for s in skipped] == [ECN_ROW.strip(), ECN_ROW.replace("693777677344", "693777677345").strip()]


def test_a_row_moved_out_of_its_group_is_skipped():
    # moved under tx-ecn-stats it is another node: unknown there, so skipped and counted
    moved = ROCE.replace(TX_DISCARD_ROW + "\n", "").replace(ECN_ROW, ECN_ROW + "\n" + TX_DISCARD_ROW)
    values, skipped = parse(moved)
    assert "tx-stats/tx-roce-stats/unicast-no-buffer-discard" not in values and values["tx-stats/tx-ecn-stats/ecn-marked-packets"] == 693777677344
    assert [s.text for s in skipped] == [TX_DISCARD_ROW.strip()]


def test_a_row_above_the_header_fails():
    with pytest.raises(ParseError):
        nvue.parse_roce_counters(ECN_ROW + "\n" + ROCE)


def test_a_value_overrunning_its_column_is_never_cut_into_a_count():
    # 21 digits in a 12-wide column: cut at the column it would read 14 of them
    values, skipped = parse(ROCE.replace("693777677344", "9" * 21))
    assert "tx-stats/tx-ecn-stats/ecn-marked-packets" not in values and len(skipped) == 1


def test_unknown_node_is_counted_and_na_is_no_value():
    text = ROCE.replace(ECN_ROW, ECN_ROW + "\n    ecn-new-counter            7                      new").replace(
        "    cnp-packets                0   ", "    cnp-packets                n/a ")
    values, skipped = parse(text)
    assert "tx-stats/tx-cnp-stats/cnp-packets" not in values
    assert [s.text.split()[0] for s in skipped] == ["ecn-new-counter"]


@pytest.mark.parametrize("text", [
    "",
    ROCE.replace("operational", "operation"),  # not the header
    ROCE.replace("693777677344", "6.94 T      "),  # a count NVUE rounded: never read as a number
    ROCE.replace("rx-stats\n", "rx-stats".ljust(31) + "5\n", 1),  # a group with a value
    "\n".join(ROCE.splitlines()[:1] + ROCE.splitlines()[2:]),  # no rule
])
def test_structure_errors(text):
    with pytest.raises(ParseError):
        nvue.parse_roce_counters(text)


# -- the edges the mutation run (scripts/mutation nvue) found untested -------------------------------

def test_skipped_rows_carry_their_line_number_in_the_capture():
    lines = ROCE.splitlines()
    ecn = lines.index(ECN_ROW)
    text = "\n".join(lines[:ecn] + ["..."] + lines[ecn:]) + "\n"
    values, skipped = parse(text)
    assert [(s.line_no, s.text) for s in skipped] == [(ecn + 1, "...")]  # 1-based, blank lines counted too
    _, skipped = parse("\n" + text)
    assert [s.line_no for s in skipped] == [ecn + 2]
    assert len(values) == 9  # the rows after the skipped line are still read


def test_a_counter_is_read_up_to_the_largest_64_bit_count_and_refused_above():
    top = str((1 << 64) - 1)  # 20 digits: wider than the capture's column, so widen the rule's column
    # 8 more columns for "operational": inserted at the end of its column in the header, rule and rows
    wide = "\n".join(line[:43] + ("-" if set(line) <= {"-", " "} else " ") * 8 + line[43:] if len(line) > 43 else line
                     for line in ROCE.splitlines())
    wide_ecn = [line for line in wide.splitlines() if "ecn-marked-packets" in line][0]
    values, skipped = parse(wide.replace(wide_ecn, wide_ecn.replace("693777677344        ", top)))
    assert skipped == [] and values["tx-stats/tx-ecn-stats/ecn-marked-packets"] == (1 << 64) - 1
    with pytest.raises(ParseError, match="expected a packet count"):
        parse(wide.replace(wide_ecn, wide_ecn.replace("693777677344        ", str(1 << 64))))


def test_a_table_without_rows_is_no_counters_not_an_error():
    header_and_rule = "\n".join(ROCE.splitlines()[:2]) + "\n"
    assert parse(header_and_rule) == ({}, [])


def test_the_leaves_of_an_unknown_group_are_skipped_even_with_a_known_leaf_name():
    # a group this reader does not know (a later NVUE's), holding leaves named like known ones
    unknown = ["  rx-xyz-stats", "    roce-bytes                 0 Bytes                Rx XYZ Bytes",
               "    roce-packets               5                      Rx XYZ Packets"]
    lines = ROCE.splitlines()
    at = lines.index("  rx-pfc-stats")
    values, skipped = parse("\n".join(lines[:at] + unknown + lines[at:]) + "\n")
    assert [s.text for s in skipped] == [u.strip() for u in unknown]
    assert len(values) == 9 and values["rx-stats/rx-roce-stats/roce-packets"] == 0
