"""Fuzzing every InfiniBand parser: garbage gives ParseError (never another exception), and whatever a
parser does return was read from its input (no made-up values)."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric_exporter.collectors.infiniband.ibdiagnet import PM_FIELDS
from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import ib_diagnet, ib_netdiscover, ib_nodenamemap, ib_perfquery, ib_queryerrors

from tests.harness import paths

FIX = paths.FIXTURES / "infiniband"
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _fixture_lines(*names: str) -> list[str]:
    lines: list[str] = []
    for n in names:
        lines += (FIX / n).read_text().splitlines()
    return lines


QE_LINES = _fixture_lines("ibsim_ibqueryerrors_errors_data_report_port.txt", "hdr_ibqueryerrors_errors_report_port.txt",
                          "ndr_ibqueryerrors_counters_report_port.txt")
ND_LINES = _fixture_lines("edge_ibnetdiscover.txt", "ibsim_ibnetdiscover.txt")
PQ_LINES = _fixture_lines("edr_perfquery_extended.txt", "qdr_perfquery_basic_latched.txt", "perfquery_samples_control.txt")
VL_LINES = _fixture_lines("ibsim_perfquery_vlxmitcounters.txt")
DB_LINES = _fixture_lines("ibdiagnet2.db_csv")
PM_LINES = _fixture_lines("ibdiagnet2.pm")
MAP_LINES = _fixture_lines("node-name-map.txt")

# Structure-aware garbage: real lines shuffled, duplicated, truncated, with characters flipped.
def mutated(lines: list[str]):
    line = st.one_of(
        st.sampled_from(lines),
        st.builds(lambda s, i: s[:i], st.sampled_from(lines), st.integers(0, 200)),
        st.builds(lambda s, i, c: s[:i] + c + s[i + 1:], st.sampled_from(lines), st.integers(0, 200),
                  st.sampled_from(list("0x9 -\"[]()=:,.#\t") + ["\x00", "é", "4294967296", "NA"])),
        st.text(max_size=80),
    )
    return st.lists(line, max_size=40).map("\n".join)


def _numbers_in(text: str) -> set[int]:
    found = set()
    for tok in re.findall(r"0x[0-9a-fA-F]+|\d+", text):
        found.add(int(tok, 16) if tok.lower().startswith("0x") else int(tok))
    return found


def _check(parse, text):
    try:
        return parse(text)
    except ParseError:
        return None


@SETTINGS
@given(st.one_of(mutated(QE_LINES), st.text(max_size=400)))
def test_ibqueryerrors_fuzz(text):
    report = _check(ib_queryerrors.parse, text)
    if report is None:
        return
    numbers = _numbers_in(text)
    for node in report.nodes:
        for port in node.ports:
            assert set(port.counters.values()) <= numbers
            if port.link and port.link.peer_port is not None:
                assert port.link.peer_port in numbers


@SETTINGS
@given(st.one_of(mutated(ND_LINES), st.text(max_size=400)))
def test_ibnetdiscover_fuzz(text):
    topo = _check(ib_netdiscover.parse, text)
    if topo is None:
        return
    numbers = _numbers_in(text)
    for node in topo.nodes.values():
        assert node.guid in numbers or f"{node.guid:x}" in text.lower()
        for port in node.ports.values():
            assert port.peer_port in numbers and port.port in numbers


@SETTINGS
@given(st.one_of(mutated(PQ_LINES), st.text(max_size=400)))
def test_perfquery_fuzz(text):
    blocks = _check(ib_perfquery.parse, text)
    if blocks is None:
        return
    numbers = _numbers_in(text)
    for b in blocks:
        assert set(b.values.values()) <= numbers


@SETTINGS
@given(st.one_of(mutated(VL_LINES + PQ_LINES[:12]), st.text(max_size=400)))
def test_perfquery_vl_xmit_wait_fuzz(text):
    from fabric_exporter.collectors.infiniband.focus import vl_xmit_wait

    blocks = _check(ib_perfquery.parse, text)
    if blocks is None:
        return
    numbers = _numbers_in(text)
    for b in blocks:
        vl = vl_xmit_wait(b)
        assert set(vl) <= set(range(16)) and set(vl.values()) <= numbers
        if vl:
            assert any(f"PortVLXmitWait{n}" in text for n in vl)


@SETTINGS
@given(st.one_of(mutated(DB_LINES), st.text(max_size=400)))
def test_ibdiagnet_db_csv_fuzz(text):
    def parse(t):
        sections = ib_diagnet.parse_db_csv(t)
        return (ib_diagnet.normalised(ib_diagnet.pm_info(sections), PM_FIELDS), ib_diagnet.cable_info(sections),
                ib_diagnet.node_temperatures(sections))

    result = _check(parse, text)
    if result is None:
        return
    numbers = _numbers_in(text)
    for pm in result[0]:
        assert set(_as_read(pm.counters)) <= numbers


@SETTINGS
@given(st.one_of(mutated(PM_LINES), st.text(max_size=400)))
def test_ibdiagnet_pm_fuzz(text):
    ports = _check(lambda t: ib_diagnet.normalised(ib_diagnet.parse_pm(t), PM_FIELDS), text)
    if ports is None:
        return
    numbers = _numbers_in(text)
    for p in ports:
        assert set(_as_read(p.counters)) <= numbers


def _as_read(counters):
    """Counter values as the file printed them: *_bytes are data counters in 4-byte words x 4."""
    for name, value in counters.items():
        assert not name.endswith("_bytes") or value % 4 == 0
        yield value // 4 if name.endswith("_bytes") else value


@SETTINGS
@given(st.one_of(mutated(MAP_LINES), st.text(max_size=300)))
def test_node_name_map_fuzz(text):
    names = _check(ib_nodenamemap.parse, text)
    if names is None:
        return
    for name in names.values():
        assert name and name in text


@SETTINGS
@given(st.binary(max_size=300))
def test_binary_garbage_never_crashes(data):
    text = data.decode("latin-1")
    for parse in (ib_queryerrors.parse, ib_netdiscover.parse, ib_perfquery.parse, ib_diagnet.parse_pm,
                  ib_diagnet.parse_db_csv, ib_nodenamemap.parse):
        _check(parse, text)
