"""ibnetdiscover's default (block) output: every node with GUID, NodeDescription, LID and its linked ports.

    sysimgguid=0x7cfe9003009ce5b0
    switchguid=0x7cfe9003009ce5b0(7cfe9003009ce5b0)
    Switch	36 "S-7cfe9003009ce5b0"		# "ib-i1l1s01" enhanced port 0 lid 1719 lmc 0
    [10]	"H-7cfe9003003b4bde"[1](7cfe9003003b4bdf) 		# "o0001 HCA-1" lid 134 4xEDR
    [1]	"S-7cfe900300b07320"[1]		# "ib-i1l2s01" lid 1516 4xEDR

    caguid=0x7cfe9003003b4bde
    Ca	1 "H-7cfe9003003b4bde"		# "o0001 HCA-1"
    [1](7cfe9003003b4bdf) 	"S-7cfe9003009ce5b0"[10]		# lid 134 lmc 0 "ib-i1l1s01" lid 1719 4xEDR

Only linked ports appear (a down port has no line). ``4x???`` is printed when the speed is
unknown. ``-g`` (grouped) output adds ``#`` comment lines, ``Chassis N (guid ...)`` and ``Non-Chassis
Nodes`` headings, ``[ext N]`` port mappings and chassis comments after ``sysimgguid=``/``switchguid=``;
``-f`` appends `` s=.. w=.. v=..`` to port lines. ibdiagnet writes the same layout with port labels
(``[1](1/1/1)``, split ports of NDR switches). All are read; any other line of unknown shape is
skipped and counted (``skipped=``), while a port line (``[``...) we cannot read fails the parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from .guard import parser_entry
from .ib_common import SPEED_BY_NAME, parse_guid
from .skipped import SkippedLine, note

#: what this parser's skipped lines are counted under (collectors' parse_sources: skipped.sources_of)
SOURCES = ("ibnetdiscover",)

_ID = r'"([SHR])-([0-9a-fA-F]{1,16})"'
_HEADER_RE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+' + _ID + r'\s*(?:#\s*(.*))?$')
_SW_COMMENT_RE = re.compile(r'^(?:"(.*)"|([^"]*?))\s+(?:(enhanced|base) port 0\s+)?lid (\d+) lmc (\d+)\s*$')
_CA_COMMENT_RE = re.compile(r'^(?:"(.*)"|([^"]*))\s*$')  # some tools/versions print it unquoted
# ibdiagnet's port labels: "(1/1/1)", "(17/2)", "(65)", "(B9D0F0/0/0/1)". On a peer they have a '/', so
# they are never confused with a CA peer's port GUID; on the port's own side a GUID may follow.
_LABEL = r'(?:\([^()\s/]*/[^()\s]*\))?'
_OWN_LABEL = r'(?:\([^()\s]+\))?'
_TAIL = r'(?:\s+s=\d+ w=\d+ v=\d+(?: e=\d+)?)?(?:\s+slot \d+|\s+\(scp\))?\s*$'  # -f; Xsigo
# A switch port never prints its own GUID, so "(65)" after a switch's own port is a label too.
_SW_PORT_RE = re.compile(r'^\[(\d+)\]' + _OWN_LABEL + r'(?:\[ext (\d+)\])?\s+' + _ID + r'\[(\d+)\]' + _LABEL
                         + r'(?:\[ext \d+\])?\s*(?:\(([0-9a-fA-F]{1,16})\))?\s*#\s*"(.*)" lid (\d+) (\S+)' + _TAIL)
_CA_PORT_RE = re.compile(r'^\[(\d+)\]' + _OWN_LABEL + r'\(([0-9a-fA-F]{1,16})\)\s+'  + _ID + r'\[(\d+)\]' + _LABEL
                         + r'(?:\[ext \d+\])?\s*(?:\(([0-9a-fA-F]{1,16})\))?\s*#\s*lid (\d+) lmc (\d+) "(.*)" lid (\d+) (\S+)'
                         + _TAIL)
# -g headings: known, carry nothing we publish.
_GROUP_HEADING_RE = re.compile(r'^(?:Chassis \d+(?: \(guid 0x[0-9a-fA-F]+\))?|Non-Chassis Nodes|Hostname: .*)$')
_LINK_RE = re.compile(r"^(\d+|\?\?)x(.+)$")
_ASSIGN_RE = re.compile(r"^(vendid|devid|sysimgguid|switchguid|caguid|rtguid)=(0x[0-9a-fA-F]+)(?:\(([0-9a-fA-F]+)\))?"
                        r"\s*(?:#.*)?$")

_TYPES = {"Switch": "switch", "Ca": "ca", "Rt": "router"}


@dataclass(frozen=True)
class TopoPort:
    port: int
    port_guid: int
    lid: int | None  # the port's own LID (CA/router ports; a switch's ports share the node's LID)
    peer_guid: int  # peer NODE guid (from the "S-/H-" id)
    peer_type: str
    peer_port: int
    peer_port_guid: int | None  # printed for CA/router peers only
    peer_description: str
    peer_lid: int
    width_lanes: int | None  # None when the tool printed ??? for it
    speed: str | None  # generation name (SDR ... XDR), None when unknown ("4x???")


@dataclass
class TopoNode:
    guid: int
    type: str  # switch | ca | router
    ports_count: int
    description: str
    lid: int | None  # switch: port 0 LID
    system_guid: int | None
    ports: dict[int, TopoPort] = field(default_factory=dict)


@dataclass
class Topology:
    nodes: dict[int, TopoNode]

    def links(self) -> set[tuple[int, int, int, int]]:
        """Every linked port-end as (node_guid, port, peer_guid, peer_port)."""
        return {(n.guid, p.port, p.peer_guid, p.peer_port) for n in self.nodes.values() for p in n.ports.values()}

    def port_guid_owner(self) -> dict[int, tuple[int, int]]:
        """port GUID -> (node guid, port); switches' single port GUID maps to port 0."""
        owners: dict[int, tuple[int, int]] = {}
        for n in self.nodes.values():
            if n.type == "switch":
                owners[n.guid] = (n.guid, 0)
            for p in n.ports.values():
                if n.type != "switch":
                    owners[p.port_guid] = (n.guid, p.port)
                if p.peer_port_guid is not None:
                    owners.setdefault(p.peer_port_guid, (p.peer_guid, p.peer_port))
        return owners


def _link(text: str) -> tuple[int | None, str | None]:
    m = _LINK_RE.match(text)
    if not m:
        raise ParseError(f"unreadable link width/speed {text!r}")
    if text.startswith("??x"):  # width unknown to the tool: print what it knows, nothing invented
        gen = text[3:]
        return None, (gen if gen in SPEED_BY_NAME else None)
    width = int(m.group(1))
    if width not in (1, 2, 4, 8, 12):
        raise ParseError(f"invalid link width {text!r}")
    gen = m.group(2)
    if gen == "???":
        return width, None
    if gen not in SPEED_BY_NAME:
        raise ParseError(f"unknown link speed {text!r}")
    return width, gen


@parser_entry
def parse(text: str, skipped: list[SkippedLine] | None = None) -> Topology:
    if not isinstance(text, str):
        raise ParseError("ibnetdiscover output must be text")
    nodes: dict[int, TopoNode] = {}
    node: TopoNode | None = None
    sysimg: int | None = None
    sysimg_line: tuple[int, str] | None = None  # where the pending sysimgguid= was (no node took it yet)
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            if not line:
                node = None
            continue
        if _GROUP_HEADING_RE.match(line):
            node = None
            continue
        if m := _ASSIGN_RE.match(line):
            if m.group(1) == "sysimgguid":
                if sysimg_line is not None:  # a second one before any node: the first belongs to none
                    note(skipped, "ibnetdiscover", *sysimg_line)
                sysimg, sysimg_line = parse_guid(m.group(2)), (n, line)
            continue
        if m := _HEADER_RE.match(line):
            kind, nports, id_kind, id_guid, comment = m.groups()
            guid = parse_guid(id_guid)
            ntype = _TYPES[kind]
            if {"switch": "S", "ca": "H", "router": "R"}[ntype] != id_kind:
                raise ParseError(f"node id {id_kind}-{id_guid} does not match type {kind}")
            nports_i = int(nports)
            if not 0 < nports_i <= 255:
                raise ParseError(f"invalid port count {nports}")
            desc, lid = "", None
            if comment is not None:
                c = comment.strip()
                if ntype == "switch" and (sm := _SW_COMMENT_RE.match(c)):
                    desc = sm.group(1) if sm.group(1) is not None else sm.group(2)
                    lid = int(sm.group(4))
                elif cm := _CA_COMMENT_RE.match(c):
                    desc = cm.group(1) if cm.group(1) is not None else cm.group(2)
                else:
                    raise ParseError(f"unreadable node comment {c[:80]!r}")
            if guid in nodes:
                raise ParseError(f"node 0x{guid:x} listed twice")
            node = nodes[guid] = TopoNode(guid, ntype, nports_i, desc, lid, sysimg)
            sysimg, sysimg_line = None, None
            continue
        if line.startswith("["):
            if node is None:
                raise ParseError("port line outside a node block")
            if node.type == "switch":
                m = _SW_PORT_RE.match(line)
                if not m:
                    raise ParseError(f"unreadable switch port line {line[:100]!r}")
                (port, _ext, pk, pg, pport, ppguid, pdesc, plid, link) = m.groups()
                port_guid, own_lid = node.guid, None
            else:
                m = _CA_PORT_RE.match(line)
                if not m:
                    raise ParseError(f"unreadable CA port line {line[:100]!r}")
                (port, own_guid, pk, pg, pport, ppguid, own_lid_s, _lmc, pdesc, plid, link) = m.groups()
                port_guid, own_lid = parse_guid(own_guid), int(own_lid_s)
            port_i = int(port)
            if not 0 < port_i <= node.ports_count:
                raise ParseError(f"port {port_i} outside 1..{node.ports_count}")
            if port_i in node.ports:
                raise ParseError(f"port {port_i} listed twice")
            width, speed = _link(link)
            node.ports[port_i] = TopoPort(
                port_i, port_guid, own_lid, parse_guid(pg), {"S": "switch", "H": "ca", "R": "router"}[pk],
                int(pport), parse_guid(ppguid) if ppguid else None, pdesc, int(plid), width, speed)
            continue
        note(skipped, "ibnetdiscover", n, line)
    if sysimg_line is not None:  # after the last node: no node header took it
        note(skipped, "ibnetdiscover", *sysimg_line)
    if not nodes:
        raise ParseError("ibnetdiscover printed no nodes")
    return Topology(nodes)


__all__ = ["parse", "Topology", "TopoNode", "TopoPort"]


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse": ("infiniband/ibsim_ibnetdiscover.txt", "infiniband/edge_ibnetdiscover.txt"),
}
