"""parsers/ib_common.py, the vocabulary the IB parsers share (first written for mutants that
survived scripts/mutation ib_common): the old-OFED counter names, the link width/speed/state
vocabulary against the InfiniBand spec's figures, and the GUID/number readers' edges."""

from __future__ import annotations

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import ib_common, ib_perfquery, ib_queryerrors
from fabric_exporter.parsers.ib_common import PHYS_STATES, SPEED_BY_NAME, SPEEDS, WIDTH_LANES

# -- ib_common: counter names of older infiniband-diags/OFED ----------------------------------------

# Old name -> the name current perfquery/ibqueryerrors print (infiniband-diags renamed them in ~1.6).
OLD_TO_CURRENT = [
    ("XmtData", "PortXmitData"), ("RcvData", "PortRcvData"), ("XmtPkts", "PortXmitPkts"),
    ("RcvPkts", "PortRcvPkts"), ("XmtWait", "PortXmitWait"), ("SymbolErrors", "SymbolErrorCounter"),
    ("LinkRecovers", "LinkErrorRecoveryCounter"), ("LinkDowned", "LinkDownedCounter"),
    ("RcvErrors", "PortRcvErrors"), ("RcvRemotePhysErrors", "PortRcvRemotePhysicalErrors"),
    ("RcvSwRelayErrors", "PortRcvSwitchRelayErrors"), ("XmtDiscards", "PortXmitDiscards"),
    ("XmtConstraintErrors", "PortXmitConstraintErrors"), ("RcvConstraintErrors", "PortRcvConstraintErrors"),
    ("LinkIntegrityErrors", "LocalLinkIntegrityErrors"), ("ExcBufOverrunErrors", "ExcessiveBufferOverrunErrors"),
    ("XmtUcastPkts", "PortUnicastXmitPkts"), ("RcvUcastPkts", "PortUnicastRcvPkts"),
    ("XmtMcastPkts", "PortMulticastXmitPkts"), ("RcvMcastPkts", "PortMulticastRcvPkts"),
]


def test_perfquery_renames_every_old_ofed_counter_to_its_current_name():
    lines = "".join(f"{old}:{'.' * (33 - len(old))}{i + 1}\n" for i, (old, _new) in enumerate(OLD_TO_CURRENT))
    (block,) = ib_perfquery.parse("# Port extended counters: Lid 3 port 1\n" + lines)
    assert block.values == {new: i + 1 for i, (_old, new) in enumerate(OLD_TO_CURRENT)}


def test_ibqueryerrors_renames_old_ofed_counters_in_counter_lists():
    items = " ".join(f"[{old} == {i}]" for i, (old, _new) in enumerate(OLD_TO_CURRENT))
    report = ib_queryerrors.parse(f'Errors for 0x2 "sw"\n   GUID 0x2 port 3: {items}\n'
                                  "## Summary: 1 nodes checked, 1 bad nodes found\n")
    assert report.nodes[0].ports[0].counters == {new: i for i, (_old, new) in enumerate(OLD_TO_CURRENT)}


def test_current_and_unknown_counter_names_pass_through_unchanged():
    for _old, new in OLD_TO_CURRENT:
        assert ib_common.current_counter_name(new) == new
    assert ib_common.current_counter_name("PortVLXmitWait") == "PortVLXmitWait"


# -- ib_common: link width, speed and state as the tools print them --------------------------------

def _link(inner: str) -> ib_queryerrors.LinkInfo:
    line = f'       Link info:     17    1[  ] ==({inner})==>  0x2    5    3[  ] "peer" ( )\n'
    report = ib_queryerrors.parse(f'Data Counters for 0x1 "n"\n   GUID 0x1 port 1: [PortXmitData == 1]\n{line}'
                                  "## Summary: 1 nodes checked, 0 bad nodes found\n")
    return report.nodes[0].ports[0].link


# (width, speed as printed, generation, link data rate in Gb/s after line encoding: IBTA roadmap figures,
# e.g. 4X QDR = 32 Gb/s of its 40 Gb/s signalling (8b/10b), 4X FDR = 54.54 (64b/66b), 4X EDR = 100)
LINK_RATES = [
    ("1X", "2.5 Gbps", "SDR", 2.0), ("4X", "2.5 Gbps", "SDR", 8.0), ("4X", "5.0 Gbps", "DDR", 16.0),
    ("4X", "10.0 Gbps", "QDR", 32.0), ("4X", "10.0 Gbps (FDR10)", "FDR10", 40.0),
    ("4X", "14.0625 Gbps", "FDR", 54.56), ("4X", "25.78125 Gbps", "EDR", 100.0), ("2X", "53.125 Gbps", "HDR", 100.0),
    ("4X", "53.125 Gbps", "HDR", 200.0), ("8X", "106.25 Gbps", "NDR", 800.0), ("12X", "212.5 Gbps", "XDR", 2400.0),
]


@pytest.mark.parametrize(("width", "printed", "gen", "gbps"), LINK_RATES)
def test_link_width_and_speed_give_the_spec_data_rate(width, printed, gen, gbps):
    link = _link(f" {width}     {printed} Active/  LinkUp")
    assert link.width == width
    generation, lane_rate = SPEEDS[link.speed]
    assert generation == gen
    assert WIDTH_LANES[link.width] * lane_rate == pytest.approx(gbps)
    assert SPEED_BY_NAME[gen] == (gen, lane_rate)  # ibnetdiscover's "4xEDR" names the same rate


def test_every_width_the_tools_print_has_its_lane_count():
    assert {w: WIDTH_LANES[_link(f" {w}  25.78125 Gbps Active/  LinkUp").width] for w in WIDTH_LANES} == {
        "1X": 1, "2X": 2, "4X": 4, "8X": 8, "12X": 12}


# PortState and PortPhysicalState numbers of the IB spec (PortInfo), as ibstat/iblinkinfo name them.
@pytest.mark.parametrize(("state", "state_id"), [("Down", 1), ("Init", 2), ("Initialize", 2), ("Armed", 3),
                                                 ("Active", 4), ("ActDefer", 5)])
def test_port_state_numbers(state, state_id):
    assert _link(f"                {state}/  LinkUp").state_id == state_id


@pytest.mark.parametrize(("phys", "phys_id"), [("Sleep", 1), ("Polling", 2), ("Disabled", 3),
                                               ("PortConfigurationTraining", 4), ("LinkUp", 5),
                                               ("LinkErrorRecovery", 6), ("PhyTest", 7)])
def test_physical_state_numbers(phys, phys_id):
    link = _link(f"                Down/  {phys}")
    assert (link.state_id, link.phys_state_id) == (1, phys_id)
    assert set(PHYS_STATES) == {"Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp",
                                "LinkErrorRecovery", "PhyTest"}


def test_speed_key_reads_what_the_tools_print_and_refuses_the_rest():
    assert ib_common.speed_key("  25.78125 Gbps  ") == "25.78125"
    assert ib_common.speed_key("10.0 Gbps (FDR10)") == "FDR10"
    assert ib_common.speed_key("10.0 Gbps") == "10.0"
    for bad in ("3.0 Gbps", "25.78125", "25.78125 Mbps", "Gbps", ""):
        with pytest.raises(ParseError):
            ib_common.speed_key(bad)


def test_parse_guid_accepts_the_tools_spellings_only():
    assert ib_common.parse_guid("0x0002c903000e0b72") == 0x0002C903000E0B72
    assert ib_common.parse_guid("0X1F") == 0x1F
    assert ib_common.parse_guid("  abcdef  ") == 0xABCDEF
    assert ib_common.parse_guid("ffffffffffffffff") == (1 << 64) - 1
    for bad in ("", "0x", "0x1ffffffffffffffff", "0xg1", "-1", "0x1 2"):
        with pytest.raises(ParseError):
            ib_common.parse_guid(bad)


def test_guid_str_is_zero_padded_hex_and_round_trips():
    assert ib_common.guid_str(0x2C9) == "0x00000000000002c9"
    assert ib_common.guid_str((1 << 64) - 1) == "0xffffffffffffffff"
    assert ib_common.parse_guid(ib_common.guid_str(0x0002C903000E0B72)) == 0x0002C903000E0B72


def test_parse_uint_takes_ascii_decimal_only():
    assert ib_common.parse_uint(" 42 ", "lid") == 42
    assert ib_common.parse_uint("0", "lid") == 0
    for bad in ("", "-1", "4.2", "0x10", "\u00b2", "\u0661\u0662"):  # superscript two, Arabic-Indic digits
        with pytest.raises(ParseError):
            ib_common.parse_uint(bad, "lid")
