"""InfiniBand parsers on captures: real tool output from the ibsim lab (ibsim_*), and files written in
the layouts real EDR/HDR/NDR fabrics print (64-bit error counters, FDR10, split ports, 4x???,
unquoted and space-padded descriptions, latched 32-bit counters, ibdiagnet2 files)."""

from __future__ import annotations


import pytest

from fabric_exporter.collectors.infiniband.ibdiagnet import PM_FIELDS
from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import ib_diagnet, ib_netdiscover, ib_nodenamemap, ib_perfquery, ib_queryerrors

from tests.harness import paths

FIX = paths.FIXTURES / "infiniband"


def text(name: str) -> str:
    return (FIX / name).read_text()


# -- ibqueryerrors ------------------------------------------------------------------------------


def test_counters_sweep_from_ibsim_lists_every_port_with_link_info():
    report = ib_queryerrors.parse(text("ibsim_ibqueryerrors_counters_report_port.txt"))
    assert report.summary.nodes_checked == 8 == len(report.nodes)
    assert report.summary.ports_checked == sum(len(n.ports) for n in report.nodes)
    leaf2 = next(n for n in report.nodes if n.name == "leaf-02")
    assert leaf2.kind == "data" and leaf2.guid == 0x0002C90300A10100
    p4 = next(p for p in leaf2.ports if p.port == 4)
    assert set(p4.counters) == {"PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortUnicastXmitPkts",
                                "PortUnicastRcvPkts", "PortMulticastXmitPkts", "PortMulticastRcvPkts"}
    assert p4.suffixed == set(p4.counters)  # --counters renders every data counter "(x.xxxKB)"
    link = p4.link
    assert (link.state, link.phys_state, link.width, link.speed) == ("Active", "LinkUp", "12X", "10.0")
    assert (link.peer_port_guid, link.peer_port, link.peer_name) == (0x0002C90300A00100, 2, "spine-02")
    down = next(p for p in leaf2.ports if p.port == 30)
    assert (down.link.state, down.link.phys_state, down.link.width, down.link.peer_port) == ("Down", "Polling", None, None)
    # the degraded link in the lab topology (leaf-01 port 3 enabled at 4x only)
    leaf1 = next(n for n in report.nodes if n.name == "leaf-01")
    p3 = next(p for p in leaf1.ports if p.port == 3)
    assert (p3.link.width, p3.link.could_be_width, p3.link.could_be_speed) == ("4X", "12X", None)


def test_error_sweep_zero_threshold_from_ibsim():
    report = ib_queryerrors.parse(text("ibsim_ibqueryerrors_errors_zero_threshold.txt"))
    by_name = {n.name: n for n in report.nodes}
    assert by_name["gpu-003 mlx5_0"].guid is None  # CAs print no GUID in errors mode
    ca_port = by_name["gpu-003 mlx5_0"].ports[0]
    assert (ca_port.port, ca_port.port_guid, ca_port.counters) == (1, 0x2C90300B00031, {"PortRcvErrors": 3})
    leaf2 = by_name["leaf-02"]
    assert [p.port for p in leaf2.ports] == [None, 4]  # "port ALL" aggregate, then the port
    assert leaf2.ports[1].counters == {"SymbolErrorCounter": 7, "PortXmitWait": 123456}
    assert leaf2.ports[1].suffixed == set()  # error mode, 32-bit path: ibsim has no 64-bit error counters
    assert by_name["leaf-01"].ports[1].counters == {"LinkDownedCounter": 255}
    assert (report.summary.nodes_checked, report.summary.bad_ports, report.summary.pma_failures) == (8, 3, 0)


def test_error_sweep_with_data_and_link_info_from_ibsim():
    report = ib_queryerrors.parse(text("ibsim_ibqueryerrors_errors_data_report_port.txt"))
    leaf2 = next(n for n in report.nodes if n.name == "leaf-02")
    p4 = leaf2.ports[1]
    assert p4.counters["SymbolErrorCounter"] == 7 and p4.counters["PortXmitData"] == 576
    assert "PortXmitData" in p4.suffixed and "SymbolErrorCounter" not in p4.suffixed
    assert p4.link.peer_name == "spine-02"


def test_hdr_error_sweep_extended_error_counters_and_link_hints():
    report = ib_queryerrors.parse(text("hdr_ibqueryerrors_errors_report_port.txt"))
    spine = report.nodes[0]
    assert spine.name == "MF0;spine-a1:MQM8790-HS2F/U1" and spine.guid == 0x9C0591030090E1A0
    p2 = spine.ports[1]
    assert p2.counters == {"SymbolErrorCounter": 12, "PortXmitWait": 4831250982}
    assert p2.suffixed == {"SymbolErrorCounter", "PortXmitWait"}  # 64-bit (IS_ADDL_PORT_CTRS_EXT_SUP)
    assert (p2.link.width, p2.link.speed) == ("4X", "53.125")
    p9 = spine.ports[2]
    assert (p9.link.width, p9.link.could_be_width) == ("2X", "4X")
    ca = report.nodes[1].ports[0]
    assert (ca.link.speed, ca.link.could_be_speed) == ("25.78125", "53.125")
    edge = report.nodes[2]
    p23, p31 = edge.ports
    assert p23.counters == {"LinkDownedCounter": 255, "PortXmitWait": 4294967295} and p23.suffixed == set()
    assert (p23.link.state_id, p23.link.phys_state_id) == (1, 2)
    assert (p31.link.speed, p31.link.could_be_speed) == ("10.0", "FDR10")
    assert report.summary.pma_failures == 2 and report.summary.nodes_checked == 1432


def test_ndr_counters_sweep_split_port_and_32bit_node():
    report = ib_queryerrors.parse(text("ndr_ibqueryerrors_counters_report_port.txt"))
    leaf = report.nodes[0]
    assert leaf.ports[0].counters["PortXmitData"] == 38716281036442
    assert leaf.ports[1].link.phys_state == "Disabled"
    split = leaf.ports[2].link
    assert (split.width, split.speed, split.peer_port) == ("2X", "106.25", 33)
    old = report.nodes[2].ports[0]
    assert set(old.counters) == {"PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts"}
    assert old.counters["PortXmitData"] == 4294967295


def test_failed_queries_on_stderr():
    stderr = ("ibwarn: [21494] mad_rpc: _do_madrpc failed; dport (Lid 10)\n"
              "ibwarn: [21494] print_errors: IB_GSI_PORT_COUNTERS query failed on leaf-02, Lid 10 port 33\n"
              "ibwarn: [1] query_cap_mask: classportinfo query failed on gpu-1 mlx5_0, Lid 7 port 1\n")
    assert ib_queryerrors.failed_queries(stderr) == [("leaf-02", 10, 33), ("gpu-1 mlx5_0", 7, 1)]


@pytest.mark.parametrize("bad", [
    "",  # empty output: never "no errors"
    "Errors for 0x1 \"x\"\n   GUID 0x1 port 1: [SymbolErrorCounter == 7]\n",  # no summary: incomplete run
    "## Summary: 1 nodes checked, 0 bad nodes found\nErrors for 0x1 \"x\"\n",  # text after the summary
    "   GUID 0x1 port 1: [SymbolErrorCounter == 7]\n## Summary: 1 nodes checked, 0 bad nodes found\n",
    "Errors for 0x1 \"x\"\n   GUID 0x1 port 1: [SymbolErrorCounter == -7]\n## Summary: 1 nodes checked, 0 bad nodes found\n",
    "Errors for 0x1 \"x\"\n   GUID 0x1 port 1: [A == 1] [A == 2]\n## Summary: 1 nodes checked, 0 bad nodes found\n",
    "Segmentation fault\n",
])
def test_ibqueryerrors_refuses_garbage(bad):
    with pytest.raises(ParseError):
        ib_queryerrors.parse(bad)


# -- ibnetdiscover ------------------------------------------------------------------------------


def test_ibnetdiscover_from_ibsim():
    topo = ib_netdiscover.parse(text("ibsim_ibnetdiscover.txt"))
    assert len(topo.nodes) == 8
    leaf2 = topo.nodes[0x0002C90300A10100]
    assert (leaf2.type, leaf2.description, leaf2.lid, leaf2.ports_count) == ("switch", "leaf-02", 10, 36)
    p1 = leaf2.ports[1]
    assert (p1.peer_guid, p1.peer_type, p1.peer_port, p1.peer_port_guid) == (0x2C90300B00030, "ca", 1, 0x2C90300B00031)
    assert (p1.width_lanes, p1.speed, p1.peer_description) == (12, "QDR", "gpu-003 mlx5_0")
    ca = topo.nodes[0x2C90300B00030]
    assert (ca.type, ca.description, ca.ports[1].port_guid, ca.ports[1].lid) == ("ca", "gpu-003 mlx5_0", 0x2C90300B00031, 107)
    assert topo.nodes[0x2C90300A00000].ports[1].width_lanes == 4  # the degraded uplink
    assert len(topo.links()) == 2 * (4 + 4)  # 4 HCA links + 4 uplinks, both ends
    assert topo.port_guid_owner()[0x2C90300B00031] == (0x2C90300B00030, 1)


def test_ibnetdiscover_edge_cases():
    topo = ib_netdiscover.parse(text("edge_ibnetdiscover.txt"))
    leaf = topo.nodes[0x1070FD0300C4D2A8]
    assert leaf.description == "MF0;leaf-b2:MQM8790-HS2F/U1" and leaf.lid == 187
    assert (leaf.ports[18].width_lanes, leaf.ports[18].speed) == (4, None)  # "4x???"
    assert (leaf.ports[33].width_lanes, leaf.ports[33].speed, leaf.ports[33].peer_port) == (2, "NDR", 33)
    assert topo.nodes[0x9C0591030090E1A0].description == " spine-a1 with spaces "
    old = topo.nodes[0x0002C903004A7B10]
    assert (old.description, old.ports, old.system_guid) == ("old-qdr-hca HCA-1", {}, 0x0002C903004A7B13)


@pytest.mark.parametrize("bad", [
    "",
    'Switch\t8 "S-0000000000000001"\t\t# "x" base port 0 lid 1 lmc 0\n[9]\t"H-02"[1](3)\t\t# "y" lid 2 4xSDR\n',
    'Switch\t8 "H-0000000000000001"\t\t# "x" base port 0 lid 1 lmc 0\n',
    '[1]\t"H-02"[1](3)\t\t# "y" lid 2 4xSDR\n',
    'Switch\t8 "S-01"\t\t# "x" base port 0 lid 1 lmc 0\n[1]\t"H-02"[1](3)\t\t# "y" lid 2 4xWAT\n',
    "hello world\n",
])
def test_ibnetdiscover_refuses_garbage(bad):
    with pytest.raises(ParseError):
        ib_netdiscover.parse(bad)


# -- perfquery ----------------------------------------------------------------------------------


def test_perfquery_ibsim_basic_extended_and_loop():
    basic = ib_perfquery.parse(text("ibsim_perfquery_basic.txt"))[0]
    assert (basic.kind, basic.lid, basic.port, basic.cap_mask) == ("counters", 10, 4, 0x1300)
    assert basic.values["SymbolErrorCounter"] == 7 and basic.values["PortXmitWait"] == 123456
    assert basic.values["QP1Dropped"] == 0
    ext = ib_perfquery.parse(text("ibsim_perfquery_extended.txt"))[0]
    assert ext.kind == "extended" and "SymbolErrorCounter" not in ext.values  # ibsim: data counters only
    loop = ib_perfquery.parse(text("ibsim_perfquery_loop.txt"))
    assert [b.port for b in loop] == list(range(1, 37))


def test_perfquery_edr_extended_with_error_counters():
    block = ib_perfquery.parse(text("edr_perfquery_extended.txt"))[0]
    assert (block.cap_mask, block.cap_mask2) == (0x5A00, 0x2)
    assert block.values["PortXmitWait"] == 9120453371 and block.values["QP1Dropped"] == 3
    assert block.values["PortRcvSwitchRelayErrors"] == 233


def test_perfquery_latched_and_samples_control():
    block = ib_perfquery.parse(text("qdr_perfquery_basic_latched.txt"))[0]
    assert block.values["PortXmitData"] == 2**32 - 1 and block.values["SymbolErrorCounter"] == 2**16 - 1
    tick = ib_perfquery.parse(text("perfquery_samples_control.txt"))[0]
    assert (tick.kind, tick.values["Tick"]) == ("samples_control", 7)


@pytest.mark.parametrize("bad", ["", "perfquery: iberror: failed: classportinfo query\n",
                                 "PortXmitData:....1\n", "# Port counters: Lid 1 port 1 (CapMask: 0x1300)\nX:....abc\n"])
def test_perfquery_refuses_garbage(bad):
    with pytest.raises(ParseError):
        ib_perfquery.parse(bad)


# -- node name map ------------------------------------------------------------------------------


def test_node_name_map():
    names = ib_nodenamemap.parse(text("node-name-map.txt"))
    assert names == {0x1070FD0300C4D2A8: "leaf-b2", 0x9C0591030090E1A0: "spine-a1", 0x1070FD0300B21A4E: "gpu-node-017"}
    with pytest.raises(ParseError):
        ib_nodenamemap.parse("notaguid name\n")
    with pytest.raises(ParseError):
        ib_nodenamemap.parse('0x10 "unterminated\n')


# -- ibdiagnet2 ---------------------------------------------------------------------------------


def test_ibdiagnet_db_csv_sections():
    sections = ib_diagnet.parse_db_csv(text("ibdiagnet2.db_csv"))
    assert set(sections) == {"NODES", "PM_INFO", "PM_PORT_SAMPLES_CONTROL", "CABLE_INFO", "TEMP_SENSING"}
    pm = ib_diagnet.normalised(ib_diagnet.pm_info(sections), PM_FIELDS)
    spine = pm[0]
    assert (spine.node_guid, spine.port) == (0x9C0591030090E1A0, 2)
    assert spine.counters["port_xmit_wait"] == 0x11FF6B726  # hex cell
    # the 64-bit twin replaces the pinned 32-bit cell, in bytes; port_rcv_data has no twin: latched
    assert spine.counters["port_xmit_data_bytes"] == 13723100472336 * 4
    assert "port_xmit_data" not in spine.counters and "port_xmit_data_extended" not in spine.counters
    assert spine.counters["port_rcv_data_bytes"] == 4294967295 * 4
    assert spine.latched == {"port_rcv_data"}
    assert "qp1_dropped" not in spine.counters  # -1: unsupported, never published
    assert "qp1_dropped" not in pm[1].counters  # NA
    cables = ib_diagnet.cable_info(sections)
    assert (cables[0].temperature, cables[0].part_number, cables[0].serial_number) == (38.0, "MFS1S00-H010V", "MT2121FT04231")
    assert cables[1].temperature is None and cables[1].length == "2 m"
    assert ib_diagnet.node_temperatures(sections) == {0x9C0591030090E1A0: 52.0}


def test_ibdiagnet_pm_file():
    ports = ib_diagnet.normalised(ib_diagnet.parse_pm(text("ibdiagnet2.pm")), PM_FIELDS)
    assert [(p.node_guid, p.port) for p in ports] == [(0x9C0591030090E1A0, 2), (0x9C0591030090E1A0, 9)]
    assert ports[0].counters["port_xmit_wait"] == 0x11FF6B726
    assert "qp1_dropped" not in ports[0].counters
    assert ports[1].counters == {"port_xmit_data_bytes": 0, "symbol_error_counter": 0,
                                 "port_rcv_remote_physical_errors": 3}


@pytest.mark.parametrize("bad", ["START_PM_INFO\nNodeGUID,PortNumber\n0x1,1\n",  # no END
                                 "START_PM_INFO\nNodeGUID,PortNumber,x\n0x1,1,zz\nEND_PM_INFO\n",  # bad value
                                 "START_PM_INFO\nNodeGUID,NodeGUID\nEND_PM_INFO\n"])  # repeated header
def test_ibdiagnet_refuses_garbage(bad):
    with pytest.raises(ParseError):
        ib_diagnet.pm_info(ib_diagnet.parse_db_csv(bad))
    with pytest.raises(ParseError):
        ib_diagnet.parse_pm("Port=1 Lid=0x1 GUID=0x1 Device=1 Port Name=x\nport_xmit_data=0xZZ\n")


def test_ibdiagnet_skips_and_counts_lines_it_cannot_align():
    skipped = []
    sections = ib_diagnet.parse_db_csv("loose text\nSTART_PM_INFO\nNodeGUID,PortNumber,x\n0x1,1\n0x2,1,5\n"
                                       "END_PM_INFO\n", skipped=skipped)
    assert [(pm.node_guid, pm.counters) for pm in ib_diagnet.pm_info(sections)] == [(2, {"x": 5})]
    pms = ib_diagnet.parse_pm("port_xmit_data=0x1\n" + "-" * 40 + "\nPort=1 Lid=0x1 GUID=0x1 Device=1 Port Name=x\n"
                              "port_xmit_wait=0x5\nsomething odd\n" + "-" * 40 + "\n", skipped=skipped)
    assert [(pm.port, pm.counters) for pm in pms] == [(1, {"port_xmit_wait": 5})]
    assert [(s.source, s.line_no) for s in skipped] == [
        ("ibdiagnet2.db_csv", 1), ("ibdiagnet2.db_csv", 4), ("ibdiagnet2.pm", 1), ("ibdiagnet2.pm", 5)]


# -- real-world layouts: older OFED names, ibnetdiscover -g / -f, unknown lines ----------------------

def test_older_ofed_counter_names_are_read_as_the_current_ones():
    blocks = ib_perfquery.parse("# Port counters: Lid 3 port 1\nPortSelect:......................1\n"
                                "SymbolErrors:....................7\nLinkDowned:......................2\n"
                                "XmtData:.........................100\nRcvData:.........................200\n"
                                "XmtWait:.........................9\n")
    assert blocks[0].values == {"PortSelect": 1, "SymbolErrorCounter": 7, "LinkDownedCounter": 2,
                                "PortXmitData": 100, "PortRcvData": 200, "PortXmitWait": 9}
    report = ib_queryerrors.parse('Errors for 0x2 "sw"\n   GUID 0x2 port 3: [SymbolErrors == 5] [XmtDiscards == 1]\n'
                                  "## Summary: 1 nodes checked, 1 bad nodes found\n")
    assert report.nodes[0].ports[0].counters == {"SymbolErrorCounter": 5, "PortXmitDiscards": 1}


def test_perfquery_unknown_lines_and_headers_are_skipped_and_counted():
    skipped = []
    blocks = ib_perfquery.parse("# Port counters: Lid 3 port 1\nSymbolErrorCounter:..............7\n"
                                "a note from a newer perfquery\n# PortSomethingNew: whatever\nFoo:....1\n",
                                skipped=skipped)
    assert [(b.port, b.values) for b in blocks] == [(1, {"SymbolErrorCounter": 7})]
    assert [s.line_no for s in skipped] == [3, 4, 5]  # Foo is under the unknown header: not filed under port 1


def test_ibnetdiscover_grouped_and_full_output():
    text = ('#\n# Topology file\n#\n\nChassis 1 (guid 0x0008f104003f083a)\n\n# Spine Nodes\n'
            'vendid=0x8f1\ndevid=0x5a30\nsysimgguid=0x8f104003f083a\t\t# Chassis 1 (ISR9288 Voltaire)\n'
            'switchguid=0x8f104004125c5(8f104004125c5)\t# ISR9288/ISR9096 Voltaire sFB-12D Chassis 1 spine 1\n'
            'Switch\t24 "S-0008f104004125c5"\t\t# "ISR9288 Voltaire" base port 0 lid 9 lmc 0\n'
            '[1][ext 3]\t"S-0008f10400410015"[1]\t\t# "SW-6IB4 Voltaire" lid 3 4xSDR s=1 w=2 v=3\n\n'
            'Non-Chassis Nodes\n\nvendid=0x8f1\ndevid=0x5a06\n'
            'switchguid=0x8f10400410015(8f10400410015)\n'
            'Switch\t8 "S-0008f10400410015"\t\t# "SW-6IB4 Voltaire" base port 0 lid 3 lmc 0\n'
            '[1]\t"S-0008f104004125c5"[1][ext 3]\t\t# "ISR9288 Voltaire" lid 9 ??xSDR\n')
    skipped = []
    topo = ib_netdiscover.parse(text, skipped=skipped)
    assert skipped == []  # every line is one -g/-f prints
    spine = topo.nodes[0x8F104004125C5]
    assert spine.system_guid == 0x8F104003F083A and spine.ports[1].speed == "SDR" and spine.ports[1].width_lanes == 4
    leaf_port = topo.nodes[0x8F10400410015].ports[1]
    assert (leaf_port.width_lanes, leaf_port.speed) == (None, "SDR")  # "??" width: unknown, not guessed


def test_ibnetdiscover_unknown_line_between_nodes_is_skipped_but_a_bad_port_line_fails():
    skipped = []
    text = ('Switch\t8 "S-0008f10400410015"\t\t# "sw" base port 0 lid 3 lmc 0\n'
            '[1]\t"H-0008f10403961354"[1](8f10403961355)\t\t# "hca" lid 4 4xSDR\n\n'
            'ibwarn: [1234] some diagnostic the tool printed\n')
    assert len(ib_netdiscover.parse(text, skipped=skipped).nodes) == 1
    assert [s.source for s in skipped] == ["ibnetdiscover"]
    with pytest.raises(ParseError):
        ib_netdiscover.parse(text.replace("4xSDR", "4xSDR junk"))
