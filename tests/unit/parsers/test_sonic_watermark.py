"""SONiC watermarkstat and ``pfcstat --history`` parsers on sonic-utilities' own expected outputs
(tests/fixtures/real, provenance in its README), their failure modes, and fuzzed with hypothesis."""

from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers.sonic_cli import parse_pfc_history
from fabric_exporter.parsers.sonic_watermark import (
    parse_pg_watermark,
    parse_pg_watermark_json,
    parse_pool_watermark,
    parse_queue_watermark,
    parse_queue_watermark_json,
)
from tests.harness.captures import real_capture as real



def cells(rows) -> dict:
    return {(r.port, getattr(r, "queue", None) or getattr(r, "pg", None)): r.bytes for r in rows}


def parsed(fn, name):
    skipped: list = []
    out = fn(real(name), skipped=skipped)
    assert skipped == [], skipped  # every line of sonic-utilities' output is one we know
    return out


# -- queues ---------------------------------------------------------------------------------------

def test_queue_unicast_text_and_json_agree_and_hold_the_hand_read_values():
    text = parsed(parse_queue_watermark, "sonic_queue_watermark_unicast.txt")
    js = parsed(parse_queue_watermark_json, "sonic_queue_watermark_unicast.json")
    assert cells(text) == cells(js)
    c = cells(text)
    assert c[("Ethernet0", "UC0")] == 2057328 and c[("Ethernet0", "UC1")] == 2056704
    assert c[("Ethernet4", "UC4")] == 2567 and c[("Ethernet8", "UC9")] == 7696 and c[("Ethernet8", "UC0")] == 0
    assert len(c) == 30


def test_queue_persistent_and_all_queues():
    c = cells(parsed(parse_queue_watermark, "sonic_queue_persistent_watermark_unicast.txt"))
    assert c[("Ethernet0", "UC0")] == 3057328 and c[("Ethernet8", "UC8")] == 9528
    assert cells(parsed(parse_queue_watermark_json, "sonic_queue_persistent_watermark_unicast.json")) == c
    a = cells(parsed(parse_queue_watermark, "sonic_queue_watermark_all.txt"))
    assert a[("Ethernet0", "ALL21")] == 7654321 and a[("Ethernet8", "ALL22")] == 1998
    assert cells(parsed(parse_queue_watermark_json, "sonic_queue_watermark_all.json")) == a


def test_queue_na_gives_no_record_and_unconfigured_multicast_is_known():
    assert parsed(parse_queue_watermark, "sonic_queue_watermark_multicast_na.txt") == []
    assert parsed(parse_queue_watermark_json, "sonic_queue_watermark_multicast_na.json") == []
    assert parsed(parse_queue_watermark, "sonic_queue_watermark_multicast_unconfigured.txt") == []
    assert parsed(parse_queue_watermark_json, "sonic_queue_watermark_multicast_unconfigured.txt") == []


def test_queue_multi_asic_sections_back_to_back():
    c = cells(parsed(parse_queue_watermark, "sonic_queue_watermark_unicast_masic_all.txt"))
    # asic0's ports are all N/A, asic1's first port has values, its second is N/A
    assert c == {("Ethernet-BP256", f"UC{q}"): v for q, v in enumerate((2057328, 20, 2, 0, 0, 2, 2, 28))}
    assert cells(parsed(parse_queue_watermark, "sonic_queue_watermark_unicast_masic_asic1.txt")) == c
    m = cells(parsed(parse_queue_watermark, "sonic_queue_watermark_multicast_masic_all.txt"))
    assert m[("Ethernet-BP256", "MC11")] == 2057328 and m[("Ethernet-BP4", "MC15")] == 0
    assert ("Ethernet0", "MC8") not in m and len(m) == 24


# -- priority groups ------------------------------------------------------------------------------

@pytest.mark.parametrize("name,fn,first", [
    ("sonic_pg_watermark_shared.txt", parse_pg_watermark, 100),
    ("sonic_pg_watermark_shared.json", parse_pg_watermark_json, 100),
    ("sonic_pg_watermark_headroom.txt", parse_pg_watermark, 100),
    ("sonic_pg_watermark_headroom.json", parse_pg_watermark_json, 100),
    ("sonic_pg_persistent_watermark_shared.txt", parse_pg_watermark, 200),
    ("sonic_pg_persistent_watermark_headroom.json", parse_pg_watermark_json, 200),
])
def test_pg_single_asic(name, fn, first):
    c = cells(parsed(fn, name))
    assert len(c) == 24 and c[("Ethernet0", 0)] == first and c[("Ethernet4", 7)] == first + 307
    assert c[("Ethernet8", 3)] == first + 703


def test_pg_multi_asic_16_groups_and_na_rows():
    c = cells(parsed(parse_pg_watermark, "sonic_pg_watermark_shared_masic_all.txt"))
    assert len(c) == 6 * 16 and c[("Ethernet4", 15)] == 215 and c[("Ethernet-BP260", 9)] == 209
    p = cells(parsed(parse_pg_watermark, "sonic_pg_persistent_watermark_headroom_masic_all.txt"))
    assert ("Ethernet4", 0) not in p and ("Ethernet-BP260", 0) not in p  # N/A rows: nothing
    assert p[("Ethernet0", 8)] == 500 and p[("Ethernet-BP256", 15)] == 507 and p[("Ethernet-BP0", 3)] == 0
    assert len(p) == 4 * 16
    assert cells(parsed(parse_pg_watermark, "sonic_pg_watermark_headroom_masic_all.txt"))[("Ethernet-BP256", 2)] == 102


# -- buffer pools ---------------------------------------------------------------------------------

def pools(name):
    return {(r.namespace, r.pool): r.bytes for r in parsed(parse_pool_watermark, name)}


def test_pools():
    assert pools("sonic_buffer_pool_watermark.txt") == {
        (None, "egress_lossless_pool"): 1000, (None, "egress_lossy_pool"): 2000, (None, "ingress_lossless_pool"): 3000}
    assert pools("sonic_buffer_pool_persistent_watermark.txt")[(None, "ingress_lossless_pool")] == 4000
    assert pools("sonic_headroom_pool_watermark.txt") == {(None, "ingress_lossless_pool"): 432640}
    assert pools("sonic_headroom_pool_persistent_watermark.txt") == {(None, "ingress_lossless_pool"): 863616}
    # multi-ASIC: each ASIC's own pool of the same name; asic0's is N/A
    assert pools("sonic_buffer_pool_watermark_masic_all.txt") == {("asic1", "ingress_lossless_pool"): 3000}
    assert pools("sonic_headroom_pool_watermark_masic_all.txt") == {("asic1", "ingress_lossless_pool"): 432640}


# -- PFC history ----------------------------------------------------------------------------------

def history(name):
    return {(r.port, r.priority): (r.values.get("RX Pause Transitions"), r.values.get("Total RX Pause Time US"))
            for r in parsed(parse_pfc_history, name)}


def test_pfc_history():
    h = history("sonic_pfc_counters_history.txt")
    assert len(h) == 24
    assert h[("Ethernet0", 0)] == (12, 12_000_000) and h[("Ethernet4", 3)] == (43, 40_000_003)
    assert h[("Ethernet8", 7)] == (87, 80_000_007)
    cleared = history("sonic_pfc_counters_history_after_clear.txt")
    assert set(cleared.values()) == {(0, 0)} and len(cleared) == 24
    a = history("sonic_pfc_counters_history_all.txt")
    assert a[("Ethernet-BP256", 0)] == (None, None) and a[("Ethernet-BP4", 1)] == (81, 80_000_001)
    assert len(a) == 48
    assert history("sonic_pfc_counters_history_asic0_all.txt")[("Ethernet-BP0", 6)] == (66, 60_000_006)


def test_pfc_history_after_a_clear_note_and_with_an_unknown_row():
    text = "Last cached time was 2026-12-01 10:00:00.123456\n" + real("sonic_pfc_counters_history.txt")
    text = text.replace("Ethernet4        PFC2", "Ethernet4        XYZ2", 1)
    skipped: list = []
    rows = parse_pfc_history(text, skipped=skipped)
    assert len(rows) == 23 and len(skipped) == 1 and "XYZ2" in skipped[0].text


# -- what is not watermarkstat's output -----------------------------------------------------------

def test_a_row_that_does_not_fit_is_skipped_and_counted_never_shifted():
    text = real("sonic_queue_watermark_unicast.txt").replace("      0   2704    416     20", "   2704    416     20")
    skipped: list = []
    c = cells(parse_queue_watermark(text, skipped=skipped))
    assert len(skipped) == 1 and skipped[0].source == "sonic_queue_watermark"
    assert skipped[0].line_no == 4  # the capture's 4th line: title, header, dash line, then Ethernet0
    assert not any(port == "Ethernet0" for port, _ in c) and len(c) == 20


@pytest.mark.parametrize("fn,text,message", [
    (parse_queue_watermark, "Egress shared pool occupancy per unicast queue:\nPort UC0\n", "not followed by a table"),
    (parse_queue_watermark, real("sonic_queue_watermark_unicast.txt").replace("UC3", "XX3"), "unexpected column"),
    (parse_queue_watermark, real("sonic_queue_watermark_unicast.txt").replace("1986", "19x6"), "expected a count"),
    (parse_queue_watermark, real("sonic_queue_watermark_unicast.txt") + "Ethernet0" + " 1" * 10 + "\n", "twice"),
    (parse_queue_watermark, "Error: something else\n", "no table"),
    (parse_queue_watermark_json, "{}", "expected a JSON array"),
    (parse_queue_watermark_json, '[{"Port": "Ethernet0", "UC0": "-5"}]', "expected a count"),
    (parse_queue_watermark_json, '[{"Port": "Ethernet0", "PG0": "5"}]', "unexpected key"),
    (parse_queue_watermark_json, '[{"Port": "Ethernet0"}] [{"Port": "Ethernet0"}]', "twice"),
    (parse_pg_watermark, real("sonic_pg_watermark_shared.txt").replace("PG3", "UC3"), "unexpected column"),
    (parse_pool_watermark, real("sonic_buffer_pool_watermark.txt").replace("Bytes", "Cells"), "unexpected columns"),
    (parse_pfc_history, real("sonic_pfc_counters_history.txt").replace("12,000,000", "12,00,000"), "expected a count"),
    (parse_pfc_history, real("sonic_pfc_counters_history.txt").replace("Total RX", "Totes RX"), "unexpected columns"),
])
def test_malformed_output_is_a_parse_error(fn, text, message):
    with pytest.raises(ParseError, match=message):
        fn(text)


def test_json_from_several_namespaces_is_read_whole():
    one = '[{"Port": "Ethernet0", "UC0": "7", "UC1": "N/A"}]'
    two = '[{"Port": "Ethernet-BP256", "UC0": 9}]'
    assert cells(parse_queue_watermark_json(one + "\n" + two + "\n")) == {("Ethernet0", "UC0"): 7,
                                                                         ("Ethernet-BP256", "UC0"): 9}


FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LINES = sum((real(n).splitlines() for n in ("sonic_queue_watermark_unicast_masic_all.txt", "sonic_pg_watermark_shared.txt",
                                            "sonic_buffer_pool_watermark_masic_all.txt", "sonic_pfc_counters_history_all.txt",
                                            "sonic_queue_watermark_all.json")), [])


@FUZZ
@given(st.lists(st.one_of(st.sampled_from(LINES), st.text(max_size=40)), max_size=30).map("\n".join))
def test_fuzzed_lines_give_records_or_a_parse_error(text):
    for fn in (parse_queue_watermark, parse_queue_watermark_json, parse_pg_watermark, parse_pg_watermark_json,
               parse_pool_watermark, parse_pfc_history):
        try:
            for r in fn(text):
                values = [r.bytes] if hasattr(r, "bytes") else list(r.values.values())
                assert all(0 <= value < 2**64 for value in values)
        except ParseError:
            pass


def test_another_commands_table_is_skipped_not_read_as_this_one():
    skipped: list = []
    with pytest.raises(ParseError, match="no table"):
        parse_queue_watermark(real("sonic_pg_watermark_shared.txt"), skipped=skipped)
    assert len(skipped) == len(real("sonic_pg_watermark_shared.txt").splitlines())
    # a PG table after a queue table: the queue table is read, the PG lines are skipped and counted
    skipped = []
    text = real("sonic_queue_watermark_unicast.txt") + "\n" + real("sonic_pg_watermark_shared.txt")
    assert len(parse_queue_watermark(text, skipped=skipped)) == 30 and len(skipped) == 6


def test_json_value_types():
    assert cells(parse_queue_watermark_json('[{"Port": "Ethernet0", "UC0": 0, "UC1": "1,024"}]')) == {
        ("Ethernet0", "UC0"): 0, ("Ethernet0", "UC1"): 1024}
    for bad in ('[{"Port": "Ethernet0", "UC0": true}]', '[{"Port": "Ethernet0", "UC0": 1.5}]',
                f'[{{"Port": "Ethernet0", "UC0": {2**64}}}]', '[{"Port": 5}]', '[5]', '[{"Port": "Ethernet0"}] x'):
        with pytest.raises(ParseError):
            parse_queue_watermark_json(bad)


def test_a_header_that_does_not_fit_its_dash_line_fails():
    text = real("sonic_buffer_pool_watermark.txt").replace("                 Pool    Bytes", "          Pool Name  Bytes")
    with pytest.raises(ParseError, match="does not fit"):
        parse_pool_watermark(text)


def test_pools_of_one_name_in_one_namespace_twice_fail_but_across_namespaces_are_two():
    one = real("sonic_buffer_pool_watermark.txt")
    with pytest.raises(ParseError, match="twice"):
        parse_pool_watermark(one + one)
    two = one.replace("occupancy:", "occupancy: (Namespace asic0)") + one.replace("occupancy:", "occupancy: (Namespace asic1)")
    assert len(parse_pool_watermark(two)) == 6
