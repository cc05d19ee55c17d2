"""LLDP neighbours of a switch's interfaces -> ``fabric_roce_switch_if_neighbor_info`` (pure).

Which host (and which of its ports) is behind each switch interface: the RoCE side of job
attribution (the rules join ``neighbor_host`` with the scheduler's node names). Two sources feed it:

* SNMP (``snmp_switch`` modules ``lldp`` and ``lldp_v2``): IEEE 802.1AB LLDP-MIB ``lldpRemTable``
  (index lldpRemTimeMark.lldpRemLocalPortNum.lldpRemIndex), the local port named through
  ``lldpLocPortTable`` (lldpLocPortId when its subtype is interfaceName) or else IF-MIB ifName of the
  same number (the MIB: a port number equals the ifIndex unless the agent is a bridge numbering
  dot1dBasePort); and LLDP-V2-MIB ``lldpV2RemTable`` (802.1AB-2009; index
  lldpV2RemTimeMark.lldpV2RemLocalIfIndex.lldpV2RemLocalDestMACAddress.lldpV2RemIndex: the local
  port is an ifIndex).
* the SONiC CLI (``switch_cli`` command ``lldp``): ``show lldp table``.

The neighbour's port: its port ID, except when that ID is a MAC address (subtype macAddress, or a
MAC-shaped ID in the CLI table) and it sent a port description: Linux hosts running lldpd send the
MAC as port ID and the interface name (``ens1f0np0``) as description, the name the NIC series carry
as ``netdev``. A neighbour that sent no system name names no host: it is left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..catalog import mib
from ..hostnames import NameRule
from ..mapping import oid_of
from ..samples import Sample

METRIC = "fabric_roce_switch_if_neighbor_info"

# LldpPortIdSubtype / LldpV2PortIdSubtype
INTERFACE_ALIAS, PORT_COMPONENT, MAC_ADDRESS, NETWORK_ADDRESS, INTERFACE_NAME, AGENT_CIRCUIT_ID, LOCAL = range(1, 8)

# The columns walked (their OIDs are the catalog's rows on fabric_roce_switch_if_neighbor_info)
_LOC, _REM, _V2 = mib.LLDP_LOC_PORT.source, mib.LLDP_REM.source, mib.LLDP_V2_REM.source
LLDP_LOC_PORT_ID_SUBTYPE, LLDP_LOC_PORT_ID = oid_of(_LOC, "lldpLocPortIdSubtype"), oid_of(_LOC, "lldpLocPortId")
LLDP_REM_PORT_ID_SUBTYPE, LLDP_REM_PORT_ID = oid_of(_REM, "lldpRemPortIdSubtype"), oid_of(_REM, "lldpRemPortId")
LLDP_REM_PORT_DESC, LLDP_REM_SYS_NAME = oid_of(_REM, "lldpRemPortDesc"), oid_of(_REM, "lldpRemSysName")
LLDP_V2_REM_PORT_ID_SUBTYPE = oid_of(_V2, "lldpV2RemPortIdSubtype")
LLDP_V2_REM_PORT_ID = oid_of(_V2, "lldpV2RemPortId")
LLDP_V2_REM_PORT_DESC, LLDP_V2_REM_SYS_NAME = oid_of(_V2, "lldpV2RemPortDesc"), oid_of(_V2, "lldpV2RemSysName")

@dataclass(frozen=True)
class RemTable:
    """One MIB's remote table: the columns walked, the index length and where the local port is."""
    module: str  # the snmp_switch module name
    mib: str
    index_len: int
    local_port_at: int  # position of the local port (number or ifIndex) in the index
    local_is_ifindex: bool  # LLDP-V2: lldpV2RemLocalIfIndex; LLDP-MIB: lldpRemLocalPortNum
    port_id_subtype: tuple[int, ...]
    port_id: tuple[int, ...]
    port_desc: tuple[int, ...]
    sys_name: tuple[int, ...]
    local_port_columns: tuple[tuple[int, ...], ...] = ()  # lldpLocPortTable, walked beside

    @property
    def columns(self) -> tuple[tuple[int, ...], ...]:
        return (self.sys_name, self.port_id_subtype, self.port_id, self.port_desc) + self.local_port_columns


LLDP_MIB = RemTable("lldp", "LLDP-MIB", 3, 1, False, LLDP_REM_PORT_ID_SUBTYPE, LLDP_REM_PORT_ID, LLDP_REM_PORT_DESC,
                    LLDP_REM_SYS_NAME, (LLDP_LOC_PORT_ID_SUBTYPE, LLDP_LOC_PORT_ID))
LLDP_V2_MIB = RemTable("lldp_v2", "LLDP-V2-MIB", 4, 1, True, LLDP_V2_REM_PORT_ID_SUBTYPE, LLDP_V2_REM_PORT_ID,
                       LLDP_V2_REM_PORT_DESC, LLDP_V2_REM_SYS_NAME)
REM_TABLES: dict[str, RemTable] = {t.module: t for t in (LLDP_MIB, LLDP_V2_MIB)}

_MAC_TEXT = re.compile(r"^[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(\1[0-9A-Fa-f]{2}){4}$")


@dataclass(frozen=True)
class Neighbor:
    interface: str  # the switch's interface (ifName)
    host: str  # the neighbour's LLDP system name
    port: str  # the neighbour's port (see the module docstring)


def neighbor_port(port_id: str, port_desc: str, is_mac: bool) -> str:
    """The neighbour's port name: its port ID, or its description when the ID is a MAC address."""
    return port_desc if is_mac and port_desc else port_id


def looks_like_mac(text: str) -> bool:
    return bool(_MAC_TEXT.match(text))


def _text(value: object) -> str:
    """An SNMP OCTET STRING as text: UTF-8 where it is (SnmpAdminString), else its bytes in hex.
    Anything that is not an OCTET STRING (a wrong type, an exception value) is no text: ""."""
    if not isinstance(value, bytes):
        return ""
    try:
        text = value.decode("utf-8").strip()
    except UnicodeDecodeError:
        return value.hex(":")
    return text if text.isprintable() else value.hex(":")


def _port_id(value: object, subtype: int | None) -> str:
    """lldpRemPortId by its subtype: a MAC address as aa:bb:cc:dd:ee:ff, names as text."""
    if subtype == MAC_ADDRESS and isinstance(value, bytes) and len(value) == 6:
        return value.hex(":")
    return _text(value)


def _rows(varbinds: Iterable, column: tuple[int, ...], index_len: int, bad: list[int]) -> dict[tuple[int, ...], object]:
    n = len(column)
    rows = {}
    for vb in varbinds:
        index = tuple(vb.oid[n:])
        if len(index) != index_len:
            bad[0] += 1
            continue
        rows[index] = vb.value
    return rows


def neighbors_from_walks(table: RemTable, walks: dict[tuple[int, ...], list], if_names: dict[int, str],
                         problems: list[str]) -> list[Neighbor]:
    """The neighbours in one MIB's walked columns (``walks``: column OID -> its varbinds), the local
    ports named by ``if_names`` (ifIndex -> ifName) or, for LLDP-MIB, by lldpLocPortTable. Rows
    with an index of the wrong length are counted in ``problems``; a neighbour without a system
    name, or on a local port no name is known for, is left out (the latter counted)."""
    bad = [0]
    sys_names = _rows(walks.get(table.sys_name, ()), table.sys_name, table.index_len, bad)
    subtypes = _rows(walks.get(table.port_id_subtype, ()), table.port_id_subtype, table.index_len, bad)
    port_ids = _rows(walks.get(table.port_id, ()), table.port_id, table.index_len, bad)
    descs = _rows(walks.get(table.port_desc, ()), table.port_desc, table.index_len, bad)
    local_names: dict[int, str] = {}
    if table.local_port_columns:
        loc_sub = _rows(walks.get(LLDP_LOC_PORT_ID_SUBTYPE, ()), LLDP_LOC_PORT_ID_SUBTYPE, 1, bad)
        loc_ids = _rows(walks.get(LLDP_LOC_PORT_ID, ()), LLDP_LOC_PORT_ID, 1, bad)
        local_names = {index[0]: _text(value) for index, value in loc_ids.items()
                       if loc_sub.get(index) == INTERFACE_NAME and _text(value)}
    out: list[Neighbor] = []
    unnamed: set[int] = set()
    for index in sorted(sys_names):
        host = _text(sys_names[index])
        if not host:
            continue
        local = index[table.local_port_at]
        interface = (if_names.get(local) if table.local_is_ifindex
                     else local_names.get(local) or if_names.get(local))
        if not interface:
            unnamed.add(local)
            continue
        subtype = subtypes.get(index)
        subtype = subtype if isinstance(subtype, int) else None
        port_id = _port_id(port_ids.get(index, b""), subtype)
        desc = _text(descs.get(index, b""))
        out.append(Neighbor(interface, host, neighbor_port(port_id, desc, subtype == MAC_ADDRESS)))
    if bad[0]:
        problems.append(f"{table.mib}: {bad[0]} varbinds with an unexpected index skipped")
    if unnamed:
        problems.append(f"{table.mib}: neighbours on local port(s) {', '.join(map(str, sorted(unnamed)[:10]))} "
                        f"left out: no interface name for them (neither lldpLocPortId nor ifName)")
    return out


def neighbor_samples(switch: str, neighbors: Iterable[Neighbor], wanted: Callable[[str], bool],
                     name_rule: NameRule | None) -> list[Sample]:
    """One info sample per (interface, neighbour host, neighbour port), the host mapped by ``name_rule``
    (the scheduler's node name; a name it does not match is kept as the neighbour sent it)."""
    seen: set[tuple[str, str, str]] = set()
    out: list[Sample] = []
    for nb in neighbors:
        if not wanted(nb.interface):
            continue
        host = (name_rule.apply(nb.host) if name_rule is not None else None) or nb.host
        key = (nb.interface, host, nb.port)
        if key in seen:
            continue
        seen.add(key)
        out.append(Sample(METRIC, {"switch": switch, "interface": nb.interface, "neighbor_host": host,
                                   "neighbor_port": nb.port}, 1.0))
    return out


def map_neighbor_hosts(samples: list[Sample], name_rule: NameRule | None) -> list[Sample]:
    """``samples`` with every neighbour host mapped by ``name_rule`` (other samples as they are)."""
    if name_rule is None:
        return samples
    others = [s for s in samples if s.name != METRIC]
    by_switch: dict[str, list[Neighbor]] = {}
    for s in samples:
        if s.name == METRIC:
            by_switch.setdefault(s.labels["switch"], []).append(
                Neighbor(s.labels["interface"], s.labels["neighbor_host"], s.labels["neighbor_port"]))
    for switch, neighbors in by_switch.items():
        others += neighbor_samples(switch, neighbors, lambda _name: True, name_rule)
    return others


def neighbors_from_cli(rows: Iterable) -> list[Neighbor]:
    """``show lldp table`` records (parsers.sonic_cli.LldpNeighbor) -> neighbours; rows without a
    system name are left out."""
    return [Neighbor(r.local_port, r.remote_device,
                     neighbor_port(r.remote_port_id, r.remote_port_descr, looks_like_mac(r.remote_port_id)))
            for r in rows if r.remote_device]


__all__ = ["LLDP_MIB", "LLDP_V2_MIB", "METRIC", "Neighbor", "REM_TABLES", "RemTable", "looks_like_mac",
           "map_neighbor_hosts", "neighbor_port", "neighbor_samples", "neighbors_from_cli", "neighbors_from_walks"]
