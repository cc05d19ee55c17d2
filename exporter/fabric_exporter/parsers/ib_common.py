"""Shared InfiniBand vocabulary: link widths, speeds and states as the diags tools print them."""

from __future__ import annotations

import re

from ..errors import ParseError
from .guard import parser_entry

# Active/supported width as mad_dump_linkwidth prints it -> lanes.
WIDTH_LANES = {"1X": 1, "2X": 2, "4X": 4, "8X": 8, "12X": 12}

# Lane signalling rate as the tools print it (Gbps) -> (generation, effective data Gb/s per lane
# after line encoding). FDR10 prints as "10.0 Gbps (FDR10)".
SPEEDS = {
    "2.5": ("SDR", 2.0),
    "5.0": ("DDR", 4.0),
    "10.0": ("QDR", 8.0),
    "FDR10": ("FDR10", 10.0),
    "14.0625": ("FDR", 13.64),
    "25.78125": ("EDR", 25.0),
    "53.125": ("HDR", 50.0),
    "106.25": ("NDR", 100.0),
    "212.5": ("XDR", 200.0),
}
# ibnetdiscover prints the generation name ("4xEDR"); same table keyed by name.
SPEED_BY_NAME = {gen: (gen, rate) for gen, rate in SPEEDS.values()}

PORT_STATES = {"Down": 1, "Initialize": 2, "Init": 2, "Armed": 3, "Active": 4, "ActDefer": 5}
PHYS_STATES = {"Sleep": 1, "Polling": 2, "Disabled": 3, "PortConfigurationTraining": 4, "LinkUp": 5,
               "LinkErrorRecovery": 6, "PhyTest": 7}


def speed_key(text: str) -> str:
    """'25.78125 Gbps' -> '25.78125'; '10.0 Gbps (FDR10)' -> 'FDR10'. Unknown -> ParseError."""
    t = text.strip()
    if "FDR10" in t:
        return "FDR10"
    if not t.endswith("Gbps"):
        raise ParseError(f"unknown link speed {text!r}")
    key = t[:-4].strip()
    if key not in SPEEDS:
        raise ParseError(f"unknown link speed {text!r}")
    return key


_GUID_RE = re.compile(r"\s*(?:0[xX])?([0-9a-fA-F]{1,16})\s*")


@parser_entry
def parse_guid(text: str) -> int:
    m = _GUID_RE.fullmatch(text)
    if not m:
        raise ParseError(f"invalid GUID {text!r}")
    return int(m.group(1), 16)


def guid_str(guid: int) -> str:
    return f"0x{guid:016x}"


@parser_entry
def parse_uint(text: str, what: str) -> int:
    t = text.strip()
    if not t.isascii() or not t.isdigit():
        raise ParseError(f"invalid {what} {text!r}")
    return int(t)


# Counter names of older infiniband-diags/OFED (perfquery, ibqueryerrors before ~1.6) -> the names
# current versions print. Parsers normalise to the current names, so one mapping serves both.
OLD_COUNTER_NAMES = {
    "XmtData": "PortXmitData", "RcvData": "PortRcvData", "XmtPkts": "PortXmitPkts", "RcvPkts": "PortRcvPkts",
    "XmtWait": "PortXmitWait", "SymbolErrors": "SymbolErrorCounter", "LinkRecovers": "LinkErrorRecoveryCounter",
    "LinkDowned": "LinkDownedCounter", "RcvErrors": "PortRcvErrors", "RcvRemotePhysErrors": "PortRcvRemotePhysicalErrors",
    "RcvSwRelayErrors": "PortRcvSwitchRelayErrors", "XmtDiscards": "PortXmitDiscards",
    "XmtConstraintErrors": "PortXmitConstraintErrors", "RcvConstraintErrors": "PortRcvConstraintErrors",
    "LinkIntegrityErrors": "LocalLinkIntegrityErrors", "ExcBufOverrunErrors": "ExcessiveBufferOverrunErrors",
    "XmtUcastPkts": "PortUnicastXmitPkts", "RcvUcastPkts": "PortUnicastRcvPkts",
    "XmtMcastPkts": "PortMulticastXmitPkts", "RcvMcastPkts": "PortMulticastRcvPkts",
}


def current_counter_name(name: str) -> str:
    return OLD_COUNTER_NAMES.get(name, name)
