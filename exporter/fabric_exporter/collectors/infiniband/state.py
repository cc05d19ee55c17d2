"""What the collector knows about the fabric between polls: the topology, the ports it expects,
node facts, the node name map and the per-port sample memo.

Every port seen (in a discovery or a sweep) is remembered: one the sweep no longer returns is
reported missing (its counters withheld, the poll partial) instead of vanishing as if healthy, and a
port seen linked that is now down is flagged. Both are forgotten after ``forget_missing_after``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from pathlib import Path

from ...errors import ParseError
from ...parsers import ib_netdiscover, ib_nodenamemap, ib_queryerrors
from ...parsers.ib_common import guid_str
from .join import PortKey, SweptPort


@dataclass
class ExpectedPort:
    peer_guid: int | None  # the peer of the port's last up link
    peer_port: int | None
    last_up: float | None  # monotonic: when the port was last seen linked (topology or sweep)
    last_seen: float  # monotonic: when the port was last returned by a sweep or topology


@dataclass
class NodeFacts:
    guid: int
    type: str
    description: str
    ports_count: int
    system_guid: int | None
    last_seen: float


def link_up(link: ib_queryerrors.LinkInfo | None) -> bool:
    return link is not None and link.width is not None and link.state_id >= 2


# What a port's memoized samples (node and peer names, peer node and type, port GUID) are made of
# besides its own link. Assigning one moves FabricState.inputs_epoch (a new name map or topology,
# or a sweep that printed other node names), and so do the in-place changes (apply_topology,
# forget_gone): a memo of an earlier epoch is checked again, not trusted (mapping.py).
_MEMO_INPUTS = frozenset({"topology", "owners", "nodes", "name_map"})


class FabricState:
    def __setattr__(self, name, value) -> None:
        # (reads stay plain attribute reads: only the rare assignments pay for this)
        if name in _MEMO_INPUTS or (name == "sweep_names" and value != self.__dict__.get(name)):
            self.__dict__["inputs_epoch"] = self.__dict__.get("inputs_epoch", 0) + 1
        object.__setattr__(self, name, value)

    def __init__(self, forget_missing_after: float):
        self.inputs_epoch = 0
        self.forget_missing_after = forget_missing_after
        self.topology: ib_netdiscover.Topology | None = None
        self.owners: dict[int, tuple[int, int]] = {}  # port GUID -> (node GUID, port) of the topology
        self.topology_at: float | None = None  # monotonic
        self.topology_wall: float | None = None
        self.topology_stale = False  # the live sweep showed a change: rediscover on the next poll
        self.topology_changes = 0
        self.cache_nodes: frozenset[int] | None = None  # node GUIDs in the discovery cache file
        self.expected_ports: dict[PortKey, ExpectedPort] = {}
        self.nodes: dict[int, NodeFacts] = {}
        self.ticks: dict[int, int] = {}  # node GUID -> PortSamplesControl.Tick
        self.ticks_at: float | None = None
        self.name_map: dict[int, str] = {}
        self.name_map_mtime: float | None = None
        self.sweep_names: dict[int, str] = {}  # node GUID -> NodeDescription the last counter sweep printed
        # port -> the mapping's PortMemo (labels, kept samples, last counters), reused while its
        # signature holds (mapping.py)
        self.port_static: dict[PortKey, Any] = {}
        # node GUID -> (what its samples are made of, its node samples, its name if the host rule
        # does not match it): reused while the node's facts, name and tick are the same (mapping.py)
        self.node_static: dict[int, tuple] = {}
        # what each sweep's parses read before (lines, links), for the parser to reuse: one per
        # sweep, owned here so no parser state is shared between collectors or threads
        self.counter_lines = ib_queryerrors.PortLineMemo()
        self.error_lines = ib_queryerrors.PortLineMemo()

    # -- topology -----------------------------------------------------------------------------

    def needs_discovery(self, now: float, interval: float) -> bool:
        return self.topology is None or self.topology_stale or now - (self.topology_at or 0) >= interval

    def apply_topology(self, topology: ib_netdiscover.Topology) -> None:
        """A fresh discovery: node facts, and every linked port becomes (again) expected up."""
        now = time.monotonic()
        if self.topology is not None and topology.links() != self.topology.links():
            self.topology_changes += 1
        owners = topology.port_guid_owner()  # built once per discovery, read by every sweep
        if owners != self.owners or self._node_types(topology) != self._node_types(self.topology):
            self.port_static = {}  # the port memo holds port GUIDs and node types: rebuild it
        self.inputs_epoch += 1  # node facts replaced below, in place
        self.topology = topology
        self.owners = owners
        self.topology_at = now
        self.topology_wall = time.time()
        self.topology_stale = False
        for node in topology.nodes.values():
            self.nodes[node.guid] = NodeFacts(node.guid, node.type, node.description, node.ports_count,
                                              node.system_guid, now)
            for p in node.ports.values():
                self.expected_ports[(node.guid, p.port)] = ExpectedPort(p.peer_guid, p.peer_port, now, now)

    @staticmethod
    def _node_types(topology: ib_netdiscover.Topology | None) -> dict[int, str]:
        return {guid: node.type for guid, node in topology.nodes.items()} if topology is not None else {}

    def sweep_shows_change(self, counters: ib_queryerrors.QueryErrorsReport) -> bool:
        """True when the live sweep differs from the topology: a node it does not know or no longer
        finds, an up link it does not know, a link it has that is down now, or a LID that moved
        (the error sweep addresses the cache's LIDs)."""
        topo = self.topology
        if topo is None:
            return True
        tnodes = topo.nodes
        seen = 0
        for node in counters.nodes:
            tnode = tnodes.get(node.guid)
            if tnode is None:
                return True
            seen += 1
            for pc in node.ports:
                if pc.port is not None and pc.link is not None and self._port_changed(tnode, pc):
                    return True
        return seen != len(tnodes)

    def _port_changed(self, tnode: ib_netdiscover.Node, pc: ib_queryerrors.PortCounters) -> bool:
        link = pc.link
        tport = tnode.ports.get(pc.port)
        if link.peer_port_guid is None:  # not linked now
            return tport is not None
        peer = self.owners.get(link.peer_port_guid)
        if tport is None or peer is None or (tport.peer_guid, tport.peer_port) != (peer[0], link.peer_port):
            return True
        lid = tport.lid if tnode.type != "switch" else tnode.lid
        return lid is not None and link.lid != lid

    # -- names ----------------------------------------------------------------------------------

    def load_name_map(self, path: str | None, problems: list[str]) -> None:
        if not path:
            return
        try:
            mtime = Path(path).stat().st_mtime
            if mtime != self.name_map_mtime:
                self.name_map = ib_nodenamemap.parse(Path(path).read_text())
                self.name_map_mtime = mtime
        except (OSError, ParseError) as e:
            using = "the previous map" if self.name_map else "descriptions"
            problems.append(f"node name map {path}: {e} (using {using})")

    def name(self, guid: int | None, fallback: str) -> str:
        if guid is not None and guid in self.name_map:
            return self.name_map[guid]
        return fallback

    def node_name(self, guid: int) -> str:
        """The node's name: from the name map, else the NodeDescription the sweep printed, else the topology's."""
        facts = self.nodes.get(guid)
        return self.name(guid, self.sweep_names.get(guid) or (facts.description if facts else ""))

    def port_guid(self, node_guid: int, port: int) -> str:
        """A switch's ports share the node GUID; a CA port's GUID is known only from the topology."""
        facts = self.nodes.get(node_guid)
        if facts is not None and facts.type == "switch":
            return guid_str(node_guid)
        topo = self.topology
        if topo is not None and node_guid in topo.nodes and port in topo.nodes[node_guid].ports:
            return guid_str(topo.nodes[node_guid].ports[port].port_guid)
        return ""

    def peer_node(self, peer_port_guid: int) -> int | None:
        """The node GUID owning a peer port GUID (a switch's port 0 shares the node GUID)."""
        owner = self.owners.get(peer_port_guid)
        if owner is not None:
            return owner[0]
        return peer_port_guid if peer_port_guid in self.nodes else None

    def node_type(self, guid: int | None) -> str | None:
        facts = self.nodes.get(guid) if guid is not None else None
        return facts.type if facts else None

    # -- what the sweeps showed ---------------------------------------------------------------------

    def was_linked(self, key: PortKey, now: float) -> bool:
        exp = self.expected_ports.get(key)
        return exp is not None and exp.last_up is not None and now - exp.last_up <= self.forget_missing_after

    def record_sweep(self, ports: dict[PortKey, SweptPort], now: float) -> None:
        """Remember every port swept (linked or not): absent from a later sweep, it is "missing"."""
        expected_ports, nodes, owners = self.expected_ports, self.nodes, self.owners
        for key, p in ports.items():
            link = p.entry.link
            peer_guid = None
            # link_up() and peer_node(), inline: this runs for every port of every sweep
            if link is not None and (peer := link.peer_port_guid) is not None and link.width is not None \
                    and link.state_id >= 2:
                owner = owners.get(peer)
                peer_guid = owner[0] if owner is not None else peer if peer in nodes else None
            expected = expected_ports.get(key)
            if peer_guid is not None:
                if expected is None:
                    expected_ports[key] = ExpectedPort(peer_guid, link.peer_port, now, now)
                else:  # updated in place: no new object per port per poll
                    expected.peer_guid, expected.peer_port, expected.last_up, expected.last_seen = (
                        peer_guid, link.peer_port, now, now)
            elif expected is not None:
                expected.last_seen = now
            else:
                expected_ports[key] = ExpectedPort(None, None, None, now)
            facts = nodes.get(p.node_guid)
            if facts is not None:
                facts.last_seen = now

    def forget_gone(self, swept: dict[PortKey, SweptPort], now: float) -> None:
        """Forget ports and nodes nothing has returned for forget_missing_after, and the sample memo
        of ports this sweep did not return."""
        limit = self.forget_missing_after
        for key in [k for k, exp in self.expected_ports.items() if now - exp.last_seen > limit and k not in swept]:
            del self.expected_ports[key]
        for guid in [g for g, facts in self.nodes.items() if now - facts.last_seen > limit]:
            del self.nodes[guid]
            self.inputs_epoch += 1
        if len(self.port_static) > len(swept):
            for key in self.port_static.keys() - swept.keys():
                del self.port_static[key]
