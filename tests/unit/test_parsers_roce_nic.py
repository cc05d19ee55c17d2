"""Parsers on real-layout captures (exact values), on broken input (ParseError, never a guess),
and fuzzed with hypothesis (arbitrary text raises nothing but ParseError)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric_exporter.errors import ParseError
from fabric_exporter.lab.roce_host import RoceHost
from fabric_exporter.parsers.ethtool import U64_MAX, parse_ethtool_stats, parse_u64
from fabric_exporter.parsers.rdma import (
    parse_host_dump, parse_hw_counters, parse_rdma_link, parse_rdma_statistic,
)

from tests.harness import paths

# -- ethtool -S -------------------------------------------------------------------------------------


def test_ethtool_mlx5_pfc_on_priority_3(fixture_text):
    stats = parse_ethtool_stats(fixture_text("ethtool_mlx5_pfc3.txt"))
    c = stats.counters
    assert c["rx_prio3_pause"] == 190344
    assert c["rx_prio3_pause_duration"] == 8412377
    assert c["tx_prio3_pause"] == 77120
    assert c["rx_prio3_pause_transition"] == 95170
    assert c["rx_bytes_phy"] == 35234134930113
    assert c["tx_pause_storm_warning_events"] == 1
    assert c["rx_out_of_buffer"] == 57
    assert "rx_prio0_pause" not in c  # PFC is off on priority 0: mlx5 prints no pause counter for it
    assert len(c) == 135 and not stats.ambiguous


def test_ethtool_bnxt_per_ring_names_keep_their_prefix(fixture_text):
    c = parse_ethtool_stats(fixture_text("ethtool_bnxt.txt")).counters
    assert c["[0]: rx_ucast_packets"] == 301229
    assert c["[1]: rx_ucast_packets"] == 288003
    assert c["rx_pfc_ena_frames_pri3"] == 120455
    assert c["pfc_pri3_rx_duration_us"] == 3310922
    assert c["rx_bytes"] == 17889322194410


def test_ethtool_ice_dotted_names(fixture_text):
    c = parse_ethtool_stats(fixture_text("ethtool_ice.txt")).counters
    assert c["rx_priority_3_xoff.nic"] == 11834 and c["rx_bytes.nic"] == 9012339004471


def test_ethtool_duplicate_names_with_different_values_are_not_published():
    stats = parse_ethtool_stats("NIC statistics:\n     rx_x: 1\n     rx_x: 2\n     rx_y: 3\n     rx_y: 3\n")
    assert stats.counters == {"rx_y": 3}
    assert stats.ambiguous == {"rx_x"}


@pytest.mark.parametrize("text", [
    "",
    "rx_packets: 1\n",                                   # no header
    "NIC statistics:\n     rx_packets: 12abc\n",        # not a number
    "NIC statistics:\n     rx_packets: -1\n",           # negative
    "NIC statistics:\n     rx_packets: 1.5\n",          # not an integer
    "NIC statistics:\n     rx_packets:\n",              # value cut off
    "NIC statistics:\n     rx_packets: 18446744073709551616\n",  # > u64
    "no stats available\n",
])
def test_ethtool_garbage_is_a_parse_error(text):
    # (a line without a colon is not a counter line: skipped and counted, see test below)
    with pytest.raises(ParseError):
        parse_ethtool_stats(text)


# -- hw_counters / rdma -----------------------------------------------------------------------------


def test_hw_counters_mlx5_drops_the_lifespan_setting(fixture_text):
    c = parse_hw_counters(fixture_text("hw_counters_mlx5.txt"))
    assert c["np_ecn_marked_roce_packets"] == 1290455
    assert c["rp_cnp_handled"] == 801223
    assert "lifespan" not in c and len(c) == 29


def test_hw_counters_irdma_and_bnxt_re(fixture_text):
    assert parse_hw_counters(fixture_text("hw_counters_irdma.txt"))["RxECNMrkd"] == 55120
    assert parse_hw_counters(fixture_text("hw_counters_bnxt_re.txt"))["tx_cnp_pkts"] == 301224


@pytest.mark.parametrize("text", ["np_cnp_sent:\n", "np_cnp_sent:x\n", "a:1\na:1\n"])
def test_hw_counters_garbage(text):
    with pytest.raises(ParseError):
        parse_hw_counters(text)


def test_rdma_statistic_text_and_json_agree(fixture_text):
    text = parse_rdma_statistic(fixture_text("rdma_statistic_mlx5.txt"))
    js = parse_rdma_statistic(fixture_text("rdma_statistic_mlx5.json"))
    assert text == js
    assert set(text) == {("mlx5_0", 1), ("mlx5_1", 1)}
    assert text[("mlx5_0", 1)]["np_cnp_sent"] == 884312
    assert text[("mlx5_1", 1)]["out_of_buffer"] == 2
    # and both agree with the sysfs files of the same port
    assert text[("mlx5_0", 1)] == {k: v for k, v in parse_hw_counters(fixture_text("hw_counters_mlx5.txt")).items()
                                   if k != "req_transport_retries_exceeded"} | {"rx_dct_connect": 0}


@pytest.mark.parametrize("text", [
    "link mlx5_0 np_cnp_sent 1\n",           # no /port
    "link mlx5_0/1 np_cnp_sent x\n",         # not a number
    "link mlx5_0/1 a 1\nlink mlx5_0/1 a 2\n",  # port twice
    '[{"ifname":"mlx5_0"}]',                 # no port
    '[{"ifname":"mlx5_0","port":1,"a":-1}]',  # negative
    '{"ifname":"mlx5_0","port":1}',          # not a list
    "[1, 2",                                  # cut short
])
def test_rdma_statistic_garbage(text):
    with pytest.raises(ParseError):
        parse_rdma_statistic(text)


def test_rdma_link_text_and_json(fixture_text):
    for name in ("rdma_link.txt", "rdma_link.json"):
        links = parse_rdma_link(fixture_text(name))
        assert [(l.device, l.port, l.state, l.netdev, l.lid) for l in links] == [
            ("mlx5_0", 1, "ACTIVE", "ens1f0np0", None), ("mlx5_1", 1, "DOWN", "ens2f0np0", None),
            ("mlx5_2", 1, "ACTIVE", None, 7)]


# -- the framed host dump ---------------------------------------------------------------------------


def test_host_dump_round_trip_from_the_lab_model():
    host = RoceHost.build("gpu-001", "mlx5", nics=3)
    host.advance(5)
    dump = parse_host_dump(host.render_dump())
    assert dump.mode == "sysfs" and dump.devices == {f"mlx5_{i}": "mlx5_core" for i in range(3)}
    assert [(p.device, p.port, p.netdev, p.link_layer, p.state) for p in dump.ports] == [
        (f"mlx5_{i}", 1, f"ens{i + 1}f0np0", "Ethernet", "4: ACTIVE") for i in range(3)]
    for p in host.ports:
        assert parse_hw_counters(dump.hw_counters[(p.device, 1)]) == {k: v for k, v in p.hw_counters.items()
                                                                       if k != "lifespan"}
        assert parse_ethtool_stats(dump.ethtool[p.netdev].text).counters == p.ethtool
        assert dump.ethtool[p.netdev].exit_status == 0


def test_host_dump_cut_short_is_a_parse_error():
    text = RoceHost.build("h", "mlx5", nics=2).render_dump()
    for cut in (len(text) // 3, len(text) - len("@@end\n")):
        with pytest.raises(ParseError, match="cut short"):
            parse_host_dump(text[:cut])


@pytest.mark.parametrize("text", [
    "", "hello\n", "@@fabric-roce 2 sysfs\n@@end\n", "@@fabric-roce 1 nfs\n@@end\n",
    "@@fabric-roce 1 sysfs\nstray\n@@end\n", "@@fabric-roce 1 sysfs\n@@bogus x\n@@end\n",
    "@@fabric-roce 1 sysfs\n@@port mlx5_0 1 eth0 Ethernet 4: ACTIVE\n@@end\n",  # port of an unannounced device
    "@@fabric-roce 1 sysfs\n@@ethtool eth0 x\n@@end\n",
    "@@fabric-roce 1 sysfs\n@@end\ntrailing\n",
])
def test_host_dump_garbage(text):
    with pytest.raises(ParseError):
        parse_host_dump(text)


# -- fuzzing --------------------------------------------------------------------------------------

PARSERS = [parse_ethtool_stats, parse_hw_counters, parse_rdma_statistic, parse_rdma_link, parse_host_dump]
_alphabet = st.sampled_from(list("@:/ \n\t_-.[]{}\",0123456789abcdefxyzNIC statisticslink") + ["\x00", "é", "\r"])
_fuzz = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_fuzz
@given(st.text())
def test_fuzz_arbitrary_text(text):
    for parse in PARSERS:
        try:
            parse(text)
        except ParseError:
            pass


@_fuzz
@given(st.text(alphabet=_alphabet, max_size=400))
def test_fuzz_structured_alphabet(text):
    for parse in PARSERS:
        for candidate in (text, "NIC statistics:\n" + text, "@@fabric-roce 1 sysfs\n" + text + "\n@@end\n",
                          "link mlx5_0/1 " + text, "[" + text + "]"):
            try:
                parse(candidate)
            except ParseError:
                pass


def _mutations():
    lines = RoceHost.build("h", "bnxt", nics=1).render_dump().splitlines()
    return st.tuples(st.integers(0, len(lines) - 1), st.text(max_size=30), st.sampled_from(["replace", "insert", "cut"])).map(
        lambda t: "\n".join(lines[:t[0]] + ([t[1]] if t[2] != "cut" else []) + lines[t[0] + (t[2] != "insert"):]) + "\n")


@_fuzz
@given(_mutations())
def test_fuzz_mutated_dump_never_yields_a_made_up_value(text):
    """A mutated dump either fails to parse or parses to values that all appear in the text."""
    try:
        dump = parse_host_dump(text)
        tables = [parse_hw_counters(t) for t in dump.hw_counters.values()]
        tables += [parse_ethtool_stats(o.text).counters for o in dump.ethtool.values() if o.exit_status == 0]
    except ParseError:
        return
    for table in tables:
        for name, value in table.items():
            assert f"{name}:{value}" in text or f"{name}: {value}" in text


@_fuzz
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20))
def test_fuzz_json_shapes(value):
    text = json.dumps(value)
    for parse in (parse_rdma_statistic, parse_rdma_link):
        try:
            parse(text)
        except ParseError:
            pass


@_fuzz
@given(_mutations(), st.booleans())
def test_fuzz_whole_pipeline_raises_only_poll_errors(text, expose):
    """Dump -> samples never crashes: a bad dump is a PollError (parse / command_failed), and every
    sample it does produce is a catalog metric with an allowed label set."""
    from fabric_exporter.catalog import family_of
    from fabric_exporter.collectors.roce_nic import RoceNicOptions, result_from_dump
    from fabric_exporter.errors import PollError

    try:
        result = result_from_dump(parse_host_dump(text), "h", RoceNicOptions(expose_unmapped=expose))
    except PollError:
        return
    for s in result.samples:
        spec = family_of(s.name)
        assert spec is not None and spec.allows_labels(s.name, ("fabric", *s.labels)), s


def test_ethtool_unknown_line_inside_the_table_is_skipped_and_counted():
    from fabric_exporter.parsers.ethtool import parse_ethtool_stats
    skipped = []
    stats = parse_ethtool_stats("NIC statistics:\n     rx_packets: 5\n     Per queue stats\n     tx_packets: 7\n",
                                skipped=skipped)
    assert stats.counters == {"rx_packets": 5, "tx_packets": 7}
    assert [(s.source, s.line_no, s.text) for s in skipped] == [("ethtool", 3, "Per queue stats")]


def test_lines_of_unknown_shape_are_skipped_and_counted_not_guessed():
    skipped = []
    assert parse_hw_counters("np_cnp_sent 1\na b:1\nrp_cnp_handled:4\n", skipped=skipped) == {"rp_cnp_handled": 4}
    assert parse_rdma_statistic("link mlx5_0/1 np_cnp_sent\nmlx5_0/1 np_cnp_sent 1\nlink mlx5_1/1 a 2\n",
                                skipped=skipped) == {("mlx5_1", 1): {"a": 2}}
    assert [(s.source, s.line_no) for s in skipped] == [("hw_counters", 1), ("hw_counters", 2),
                                                         ("rdma_statistic", 1), ("rdma_statistic", 2)]


def test_older_iproute2_rdma_link_without_netdev():
    # iproute2 4.x: an index prefix, no "link" word, and no netdev for a port without one
    links = parse_rdma_link("0/1: mlx5_0/1: state ACTIVE physical_state LINK_UP\n"
                            "1/1: mlx5_1/1: subnet_prefix fe80:0000:0000:0000 lid 7 sm_lid 1 lmc 0 state DOWN "
                            "physical_state DISABLED\n"
                            "    caps: <CM, IP_BASED_GIDS>\n")
    assert [(l.device, l.port, l.state, l.physical_state, l.netdev, l.lid) for l in links] == [
        ("mlx5_0", 1, "ACTIVE", "LINK_UP", None, None), ("mlx5_1", 1, "DOWN", "DISABLED", None, 7)]


def test_ethtool_usual_layout_reads_as_the_general_path():
    """The shortcut for header-then-counter-lines text gives what the line-by-line path gives for
    the same counters (a leading blank line sends the same text down the general path)."""
    
    real = paths.FIXTURES / "real"
    texts = [p.read_text() for p in sorted(real.glob("ethtool_*.txt"))]
    texts += ["NIC statistics:\n  a: 1\n  a: 2\n  b: 3\n", "NIC statistics:\n  a: 1\n  a: 1\n",
              "NIC statistics:\n", "NIC statistics:\n  a: 1\n  note\n  b: 2\n"]
    for text in texts:
        assert parse_ethtool_stats(text) == parse_ethtool_stats("\n" + text), text[:60]
    with pytest.raises(ParseError, match="does not fit in 64 bits"):
        parse_ethtool_stats("NIC statistics:\n  a: 18446744073709551616\n")
    assert parse_ethtool_stats("NIC statistics:\n  a: 18446744073709551615\n").counters == {"a": 2**64 - 1}

# -- the edges the mutation runs (scripts/mutation ethtool, rdma) found untested (issue 16) ----------

LF = "NIC statistics:\n     rx_packets: 10\n     tx_bytes_phy: 0\n     [0]: rx_ucast_packets: 7\n"


def test_crlf_output_takes_the_line_by_line_path_and_reads_the_same():
    lf = parse_ethtool_stats(LF)
    crlf = parse_ethtool_stats(LF.replace("\n", "\r\n"))
    assert lf.counters == crlf.counters == {"rx_packets": 10, "tx_bytes_phy": 0, "[0]: rx_ucast_packets": 7}
    assert lf.ambiguous == crlf.ambiguous == frozenset()


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_u64_boundaries_on_both_paths(newline):
    ok = f"NIC statistics:{newline}  big: {U64_MAX}{newline}  zero: 0{newline}"
    assert parse_ethtool_stats(ok).counters == {"big": 2**64 - 1, "zero": 0}
    with pytest.raises(ParseError, match="64 bits"):
        parse_ethtool_stats(f"NIC statistics:{newline}  big: {2**64}{newline}")


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_duplicate_names_with_different_values_are_ambiguous_not_guessed(newline):
    text = newline.join(["NIC statistics:", "  a: 1", "  a: 2", "  b: 5", "  b: 5", "  c: 3", ""])
    stats = parse_ethtool_stats(text)
    assert stats.counters == {"b": 5, "c": 3} and stats.ambiguous == frozenset({"a"})


@pytest.mark.parametrize("text", ["", "\n\n", "stats:\n a: 1\n",
                                  "NIC statistics:\n a: -1\n", "NIC statistics:\n a: 1x\n", 12])
def test_bad_ethtool_text_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_ethtool_stats(text)


@pytest.mark.parametrize("line", ["a 1", ": 1"])
def test_a_line_that_is_not_a_counter_is_skipped_and_counted(line):
    skipped: list = []
    stats = parse_ethtool_stats(f"NIC statistics:\n {line}\n  b: 2\n", skipped=skipped)
    assert stats.counters == {"b": 2}
    assert [s.text for s in skipped] == [line]


def test_parse_u64_boundaries():
    assert parse_u64("0", "x") == 0 and parse_u64(str(U64_MAX), "x") == U64_MAX
    assert parse_u64("0" * 20, "x") == 0
    for bad in (str(2**64), "1" * 21, "", "-1", " 1", "1.0"):
        with pytest.raises(ParseError):
            parse_u64(bad, "x")


def test_rdma_link_lid_bounds():
    line = "link mlx5_2/1 subnet_prefix fe80:0000:0000:0000 lid {} sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP\n"
    (link,) = parse_rdma_link(line.format(65535))
    assert link.lid == 65535
    with pytest.raises(ParseError):
        parse_rdma_link(line.format(65536))


def test_host_dump_sections_are_kept_and_short_port_lines_refused():
    dump_ = parse_host_dump("@@fabric-roce 1 rdma\n@@rdma_link 0\nlink a\n@@rdma_statistic 3\nstat b\n@@end\n")
    assert (dump_.rdma_link.exit_status, dump_.rdma_link.text) == (0, "link a\n")
    assert (dump_.rdma_statistic.exit_status, dump_.rdma_statistic.text) == (3, "stat b\n")
    with pytest.raises(ParseError):
        parse_host_dump("@@fabric-roce 1 sysfs\n@@device mlx5_0 mlx5_core\n@@port mlx5_0 1\n@@end\n")


# -- the edges the mutation run (scripts/mutation rdma) found untested (issue 21) ---------------------


def test_skipped_lines_are_counted_under_the_sources_the_parser_declares():
    """The self-metric's source label comes from the note; collectors start SOURCES at zero: they
    must be the same names, or a skipped line shows under a series no one pre-created."""
    from fabric_exporter.parsers import rdma

    skipped: list = []
    assert parse_hw_counters("a:1\nnot a counter\n", skipped=skipped) == {"a": 1}
    parse_rdma_link("link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev eth0\nsomething odd here\n",
                    skipped=skipped)
    assert parse_rdma_statistic("link mlx5_0/1 rx_write_requests 5 odd\nlink mlx5_0/2 a 1 b 2\n",
                                skipped=skipped) == {("mlx5_0", 2): {"a": 1, "b": 2}}
    assert [(s.source, s.line_no, s.text) for s in skipped] == [
        ("hw_counters", 2, "not a counter"), ("rdma_link", 2, "something odd here"),
        # the line as rdma printed it, for whoever reads the sample of skipped lines
        ("rdma_statistic", 1, "link mlx5_0/1 rx_write_requests 5 odd")]
    assert sorted(rdma.SOURCES) == sorted({s.source for s in skipped})


def test_a_20_digit_hw_counter_is_checked_against_64_bits():
    assert parse_hw_counters(f"rx_write_requests:{2**64 - 1}\nnp_cnp_sent:7\n") == {
        "rx_write_requests": 2**64 - 1, "np_cnp_sent": 7}
    with pytest.raises(ParseError):
        parse_hw_counters("rx_write_requests:99999999999999999999\nnp_cnp_sent:7\n")
    with pytest.raises(ParseError):
        parse_hw_counters(f"rx_write_requests:{2**64}\n")


def test_counts_the_host_left_out_are_read_per_section():
    """``@@dropped`` lines: how many unmapped counters the host's filter cut from each section."""
    dump_ = parse_host_dump("@@fabric-roce 1 sysfs\n@@device mlx5_0 mlx5_core\n@@port mlx5_0 1 eth0 Ethernet 4: ACTIVE\n"
                            "@@hw_counters mlx5_0 1\na:1\n@@dropped hw_counters mlx5_0 1 5\n"
                            "@@ethtool eth0 0\nNIC statistics:\n  b: 2\n@@dropped ethtool eth0 3\n@@end\n")
    assert dump_.dropped == {("hw_counters", ("mlx5_0", 1)): 5, ("ethtool", "eth0"): 3}
    assert dump_.hw_counters == {("mlx5_0", 1): "a:1\n"}
    assert (dump_.ethtool["eth0"].exit_status, dump_.ethtool["eth0"].text) == (0, "NIC statistics:\n  b: 2\n")
    for bad in ("@@dropped ethtool eth0 x 3", "@@dropped hw_counters mlx5_9 1 5", "@@dropped sysfs eth0 3"):
        with pytest.raises(ParseError, match="bad dropped line"):
            parse_host_dump(f"@@fabric-roce 1 sysfs\n@@device mlx5_0 mlx5_core\n{bad}\n@@end\n")


def test_dump_ports_are_immutable_values():
    """A parsed port is a value: frozen (so hashable), never changed in place after parsing."""
    import dataclasses

    dump_ = parse_host_dump("@@fabric-roce 1 sysfs\n@@device mlx5_0 mlx5_core\n@@port mlx5_0 1 eth0 Ethernet 4: ACTIVE\n"
                            "@@end\n")
    (port,) = dump_.ports
    assert (port.device, port.port, port.netdev, port.link_layer, port.state) == ("mlx5_0", 1, "eth0", "Ethernet",
                                                                                    "4: ACTIVE")
    assert {port: 1}[port] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        port.netdev = "eth1"  # type: ignore[misc]
