"""Fuzzing the error-detail read (collectors/infiniband/details.py) on the real perfquery -E captures
and ibsim's -D output: garbage is a ParseError, and a block that is read is read whole (every field
of the attribute, each value taken from the input) -- never a partial set of causes."""

from __future__ import annotations


from hypothesis import given
from hypothesis import strategies as st

from fabric_exporter.collectors.infiniband import details
from fabric_exporter.errors import ParseError

from tests.harness import paths
from tests.unit.test_parsers_ib_fuzz import SETTINGS, _numbers_in, mutated

REAL = paths.FIXTURES / "real"
RCV_LINES = [line for p in sorted(REAL.glob("perfquery_E_*.txt")) for line in p.read_text().splitlines()]
# perfquery -D as it printed on ibsim (infiniband-diags 1.6 / Debian 12): no published capture was found
XMIT_LINES = """# PortXmitDiscardDetails counters: Lid 1 port 3
PortSelect:......................3
CounterSelect:...................0x0000
PortInactiveDiscards:............0
PortNeighborMTUDiscards:.........0
PortSwLifetimeLimitDiscards:.....9
PortSwHOQLifetimeLimitDiscards:..0""".splitlines()


@SETTINGS
@given(st.one_of(mutated(RCV_LINES + XMIT_LINES), st.text(max_size=400)), st.sampled_from(details.READS),
       st.sampled_from([1, 2, 3]))
def test_a_detail_block_is_read_whole_or_refused(text, read, port):
    _flag, _aggregate, kind, metrics = read
    try:
        values = details.read_block(text, port, kind, metrics, [])
    except ParseError:
        return
    assert set(values) == set(metrics.values())
    assert {int(v) for v in values.values()} <= _numbers_in(text)


def test_the_real_captures_are_read():
    text = "\n".join(RCV_LINES[:9]) + "\n"
    _flag, _aggregate, kind, metrics = details.READS[0]
    assert details.read_block(text, 1, kind, metrics, []) == dict.fromkeys(metrics.values(), 0.0)
    _flag, _aggregate, kind, metrics = details.READS[1]
    values = details.read_block("\n".join(XMIT_LINES), 3, kind, metrics, [])
    assert values["fabric_ib_port_transmit_lifetime_limit_discards_total"] == 9.0


def test_another_ports_block_or_attribute_is_refused():
    text = "\n".join(RCV_LINES[:9]) + "\n"
    rcv, xmit = details.READS
    for port, (_f, _a, kind, metrics) in ((2, rcv), (1, xmit)):
        try:
            details.read_block(text, port, kind, metrics, [])
        except ParseError:
            continue
        raise AssertionError("read another port's or attribute's block")
