"""parsers/ib_netdiscover.py: the edges the mutation run (scripts/mutation ib_netdiscover) showed the
capture tests in test_parsers.py left untested."""

from __future__ import annotations


import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import ib_netdiscover

from tests.harness import paths

EDGE = (paths.FIXTURES / "infiniband" / "edge_ibnetdiscover.txt").read_text()
LEAF, SPINE, CA = 0x1070FD0300C4D2A8, 0x9C0591030090E1A0, 0x1070FD0300B21A4E


def test_port_guid_owner_maps_ca_ports_to_their_port_and_switches_to_port_0():
    owners = ib_netdiscover.parse(EDGE).port_guid_owner()
    assert owners[CA + 1] == (CA, 1)  # a CA port has its own GUID
    assert owners[LEAF] == (LEAF, 0) and owners[SPINE] == (SPINE, 0)  # a switch answers on port 0
    # a switch port's GUID is the switch's: its ports are not owners of their own
    assert set(owners) == {LEAF, SPINE, CA + 1}  # a CA node GUID names no port


def test_port_guid_owner_learns_a_peer_port_the_topology_has_no_node_for():
    leaf_only = EDGE.split("\n\n")[0] + "\n\n" + EDGE.split("\n\n")[1] + "\n"
    owners = ib_netdiscover.parse(leaf_only).port_guid_owner()
    assert owners[CA + 1] == (CA, 1)  # from the leaf's port 5 line: "H-…"[1](1070fd0300b21a4f)


@pytest.mark.parametrize("width", ["3x", "16x", "0x"])
def test_a_link_width_the_spec_does_not_have_is_refused(width):
    with pytest.raises(ParseError, match="link width"):
        ib_netdiscover.parse(EDGE.replace("lid 412 4xHDR", f"lid 412 {width}HDR", 1))


def test_a_blank_line_ends_the_node_its_ports_belong_to():
    text = EDGE.replace('[17]\t"S-9c0591030090e1a0"[2]', '\n[17]\t"S-9c0591030090e1a0"[2]', 1)
    skipped: list = []
    try:
        topo = ib_netdiscover.parse(text, skipped=skipped)
    except ParseError:
        return  # refusing a port line outside any node is also right
    leaf = topo.nodes[LEAF] if isinstance(topo.nodes, dict) and LEAF in topo.nodes else \
        next(n for n in (topo.nodes.values() if isinstance(topo.nodes, dict) else topo.nodes) if n.guid == LEAF)
    assert 17 not in leaf.ports  # never attached to the node above the blank line


@pytest.mark.parametrize("count", ["0", "256"])
def test_a_port_count_outside_1_to_255_is_refused(count):
    with pytest.raises(ParseError, match="port count"):
        ib_netdiscover.parse(EDGE.replace('Switch\t41 "S-1070fd0300c4d2a8"', f'Switch\t{count} "S-1070fd0300c4d2a8"', 1))


def test_an_unreadable_node_comment_is_refused():
    with pytest.raises(ParseError, match="node comment"):
        ib_netdiscover.parse(EDGE.replace('# "MF0;leaf-b2:MQM8790-HS2F/U1" enhanced port 0 lid 187 lmc 0',
                                          '# "leaf-b2 with an unterminated quote', 1))


def test_each_peer_id_kind_names_its_node_type():
    leaf = ib_netdiscover.parse(EDGE).nodes[LEAF]
    assert (leaf.ports[5].peer_type, leaf.ports[17].peer_type) == ("ca", "switch")
    router = EDGE.replace('[5]\t"H-1070fd0300b21a4e"[1]', '[5]\t"R-1070fd0300b21a4e"[1]', 1)
    assert ib_netdiscover.parse(router).nodes[LEAF].ports[5].peer_type == "router"
