"""ibdiagnet2 output files: ``ibdiagnet2.db_csv`` sections and ``ibdiagnet2.pm`` port blocks.

``ibdiagnet2.db_csv`` holds sections, each with its own header row::

    START_PM_INFO
    NodeGUID,PortGUID,PortNumber,LastUpdateTimestamp,port_xmit_data,...,symbol_error_counter,...
    0x0002c90300a10000,0x0002c90300a10000,1,NA,0x1234,...,-1
    END_PM_INFO

Header cells may carry leading spaces; ``-1`` and ``NA``/``N/A`` mean "not supported" and are
dropped (never published as a value). Numbers are decimal or ``0x`` hex.

``ibdiagnet2.pm`` holds one block per port: a header line of ``key=value`` pairs naming the port,
then ``counter=0xHEX`` lines (``NA`` for unsupported)::

    Port=1 Lid=0x0003 GUID=0x0002c90300a10000 Device=54000 Port Name=leaf-01/P1
    port_xmit_data=0x0000000000001234
    symbol_error_counter=NA

IBDIAGNET 2.10 frames each port block with a line of dashes; such frame lines are ignored.

Both files may hold a 32-bit (or narrower) PortCounters cell and its 64-bit ``*_extended`` twin.
The parsers keep the counters as the file names them; ``normalised`` keeps one value per counter:
the 64-bit one where both exist, data counters in bytes (the counters count 4-byte words), and
names the fixed-width counters sitting at their maximum (latched: their rate means nothing until
reset), as the sweep path does. Which names are fixed-width, word counters or two spellings of one
field is the catalog's (``PmFields``, built by the collector from the rows).

Skip-and-count: a db_csv row whose cell count does not match its header, text outside a section,
and a .pm line of unknown shape are skipped and counted (``skipped=``); a value that is not a
number, an unterminated section or an unreadable port header fails the parse.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import ParseError
from .guard import parser_entry
from .ib_common import parse_guid
from .skipped import SkippedLine, note

#: what this parser's skipped lines are counted under (collectors' parse_sources: skipped.sources_of)
SOURCES = ("ibdiagnet2.db_csv", "ibdiagnet2.pm")

_UNSUPPORTED = {"-1", "NA", "N/A", ""}
_MAX_SECTIONS = 1000


def _number(text: str, what: str) -> int | None:
    t = text.strip()
    if t in _UNSUPPORTED:
        return None
    try:
        value = int(t[2:], 16) if t[:2].lower() == "0x" else int(t, 10)
    except ValueError:
        raise ParseError(f"invalid number {text[:40]!r} for {what}") from None
    if value < 0:
        raise ParseError(f"negative value {text!r} for {what}")
    return value


@parser_entry
def parse_db_csv(text: str, skipped: list[SkippedLine] | None = None) -> dict[str, list[dict[str, str]]]:
    """All sections: name -> rows (dicts keyed by the stripped header cells)."""
    if not isinstance(text, str):
        raise ParseError("ibdiagnet2.db_csv must be text")
    sections: dict[str, list[dict[str, str]]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line.startswith("#"):
            continue
        if not line.startswith("START_"):
            note(skipped, "ibdiagnet2.db_csv", i, line)
            continue
        name = line[len("START_"):]
        if not name or name in sections or len(sections) >= _MAX_SECTIONS:
            raise ParseError(f"bad or repeated section {name[:40]!r}")
        body: list[str] = []
        first_line = i + 1
        while i < len(lines) and lines[i].strip() != f"END_{name}":
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            raise ParseError(f"section {name} has no END_{name}")
        i += 1
        rows: list[dict[str, str]] = []
        numbered = [(first_line + k, b) for k, b in enumerate(body) if b.strip()]
        if numbered:
            try:
                reader = list(csv.reader(b for _, b in numbered))
            except csv.Error as e:
                raise ParseError(f"section {name}: {e}") from None
            header = [h.strip() for h in reader[0]]
            if len(set(header)) != len(header) or not all(header):
                raise ParseError(f"section {name}: empty or repeated header cells")
            for (line_no, raw), cells in zip(numbered[1:], reader[1:]):
                if len(cells) != len(header):  # a row we cannot align with the header: never shift
                    note(skipped, "ibdiagnet2.db_csv", line_no, raw)
                    continue
                rows.append({h: c.strip() for h, c in zip(header, cells)})
        sections[name] = rows
    return sections


@dataclass
class PortPM:
    node_guid: int
    port: int
    counters: dict[str, int] = field(default_factory=dict)
    latched: set[str] = field(default_factory=set)  # fixed-width counters at their maximum (``normalised``)


@dataclass(frozen=True)
class PmFields:
    """What is known about the PM counter names (the catalog's rows, given by the collector: this
    module keeps no table of its own).

    widths       fixed-width (32-bit or narrower) fields: name -> bits; at all-ones the field is latched.
    spellings    a field's preferred name -> its other spellings, whose cell its 64-bit twin also replaces.
    in_bytes     data counters that count 4-byte words: name -> the name their value in bytes is published under.
    """

    widths: Mapping[str, int]
    spellings: Mapping[str, tuple[str, ...]]
    in_bytes: Mapping[str, str]


_TWIN_SUFFIXES = ("_extended", "Extended", "Ext")


def normalise(counters: dict[str, int], fields: PmFields) -> tuple[dict[str, int], set[str]]:
    """One value per counter: a 64-bit twin (``*_extended``, ``*Extended``, ``*Ext``) replaces its
    fixed-width cell under the cell's name; data counters in bytes (``fields.in_bytes``).
    Returns the counters and the fixed-width ones that sit at their maximum with no twin (latched)."""
    out: dict[str, int] = {}
    twins: dict[str, int] = {}
    for name, value in counters.items():
        suffix = next((x for x in _TWIN_SUFFIXES if name.endswith(x) and len(name) > len(x)), None)
        if suffix is None:
            out.setdefault(name, value)
        else:
            twins[name[:-len(suffix)]] = value
    wide = set()
    for stem, value in twins.items():
        cells = [c for c in (stem, *fields.spellings.get(stem, ())) if c in out]
        target = cells[0] if cells else stem
        for c in cells:
            del out[c]
        out[target] = value
        wide.add(target)
    widths = fields.widths
    latched = {name for name, value in out.items()
               if name in widths and name not in wide and value == (1 << widths[name]) - 1}
    for name, renamed in fields.in_bytes.items():
        if name in out:
            out[renamed] = out.pop(name) * 4
    return out, latched


def normalised(ports: list[PortPM], fields: PmFields) -> list[PortPM]:
    """The ports with their counters normalised (see ``normalise``) and latched fields named."""
    return [PortPM(pm.node_guid, pm.port, *normalise(pm.counters, fields)) for pm in ports]


_ID_COLUMNS = {"nodeguid", "portguid", "portnumber", "portnum", "lastupdatetimestamp", "lid"}


@parser_entry
def pm_info(sections: dict[str, list[dict[str, str]]]) -> list[PortPM]:
    """PM_INFO rows as per-port counters as the file names them (unsupported values dropped; see
    ``normalised``)."""
    out = []
    for row in sections.get("PM_INFO", []):
        node_guid, port = _row_port(row)
        pm = PortPM(node_guid, port)
        for key, value in row.items():
            if key.lower() in _ID_COLUMNS:
                continue
            n = _number(value, key)
            if n is not None:
                pm.counters[key] = n
        out.append(pm)
    return out


def _row_port(row: dict[str, str]) -> tuple[int, int]:
    lower = {k.lower(): v for k, v in row.items()}
    guid = lower.get("nodeguid")
    port = lower.get("portnumber", lower.get("portnum"))
    if guid is None or port is None:
        raise ParseError("row without NodeGUID/PortNumber")
    p = _number(port, "PortNumber")
    if p is None or p > 255:
        raise ParseError(f"invalid port number {port!r}")
    return parse_guid(guid), p


_TEMP_RE = re.compile(r"^(-?\d+(?:\.\d+)?)\s*C?$")


def _temperature(text: str) -> float | None:
    t = text.strip()
    if t in _UNSUPPORTED:
        return None
    m = _TEMP_RE.match(t)
    if not m:
        raise ParseError(f"invalid temperature {text[:20]!r}")
    return float(m.group(1))


@dataclass
class CableInfo:
    node_guid: int
    port: int
    temperature: float | None
    vendor: str
    part_number: str
    serial_number: str
    length: str


@parser_entry
def cable_info(sections: dict[str, list[dict[str, str]]]) -> list[CableInfo]:
    out = []
    for row in sections.get("CABLE_INFO", []):
        node_guid, port = _row_port(row)
        lower = {k.lower(): v for k, v in row.items()}
        length = next((lower[k] for k in ("lengthcopper", "lengthsmfiber", "lengthom3", "length")
                       if lower.get(k, "").strip() not in _UNSUPPORTED and k in lower), "")
        out.append(CableInfo(node_guid, port, _temperature(lower.get("temperature", "NA")),
                             lower.get("vendor", "").strip('"'), lower.get("pn", "").strip('"'),
                             lower.get("sn", "").strip('"'), length.strip('"')))
    return out


@parser_entry
def node_temperatures(sections: dict[str, list[dict[str, str]]]) -> dict[int, float]:
    out: dict[int, float] = {}
    for row in sections.get("TEMP_SENSING", []):
        lower = {k.lower(): v for k, v in row.items()}
        if "nodeguid" not in lower:
            raise ParseError("TEMP_SENSING row without NodeGUID")
        t = _temperature(lower.get("currenttemperature", "NA"))
        if t is not None:
            guid = parse_guid(lower["nodeguid"])
            if out.get(guid, t) != t:
                raise ParseError(f"TEMP_SENSING: node 0x{guid:016x} listed twice with different temperatures")
            out[guid] = t
    return out


_PM_HEADER_KEYS = re.compile(r"(Port|Lid|GUID|Device|Port Name)=(\S*)")


_FRAME = re.compile(r"^[-=]{3,}$")  # IBDIAGNET 2.10 frames port blocks with dashes


@parser_entry
def parse_pm(text: str, skipped: list[SkippedLine] | None = None) -> list[PortPM]:
    if not isinstance(text, str):
        raise ParseError("ibdiagnet2.pm must be text")
    out: list[PortPM] = []
    current: PortPM | None = None
    for n_line, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or _FRAME.match(line):
            continue
        if line.startswith("Port="):
            keys = dict(_PM_HEADER_KEYS.findall(line))
            if "GUID" not in keys or "Port" not in keys:
                raise ParseError(f"unreadable .pm port header {line[:80]!r}")
            port = _number(keys["Port"], "Port")
            if port is None or port > 255:
                raise ParseError(f"invalid port in {line[:80]!r}")
            current = PortPM(parse_guid(keys["GUID"]), port)
            out.append(current)
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or current is None or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", key):
            note(skipped, "ibdiagnet2.pm", n_line, line)
            continue
        if key in current.counters:
            raise ParseError(f"{key} twice for one port")
        n = _number(value, key)
        if n is not None:
            current.counters[key] = n
    return out


__all__ = ["parse_db_csv", "parse_pm", "pm_info", "cable_info", "node_temperatures", "normalised", "PortPM", "CableInfo",
           "PmFields"]


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse_db_csv": ("infiniband/ibdiagnet2.db_csv",),
    "parse_pm": ("infiniband/ibdiagnet2.pm",),
}
