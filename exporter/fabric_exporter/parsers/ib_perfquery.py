"""perfquery output: one or more counter blocks (``-l``/port lists print several)::

    # Port extended counters: Lid 1719 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)
    PortSelect:......................1
    CounterSelect:...................0x0000
    PortXmitData:....................36298026860928
    ...

``perfquery --vlxmitcounters`` (kind ``vl_xmit_wait``: ``PortVLXmitWait0`` ... ``PortVLXmitWait15``,
16-bit fields; the header has no CapMask)::

    # PortVLXmitWaitCounters counters: Lid 1 port 1
    PortSelect:......................1
    CounterSelect:...................0x0000
    PortVLXmitWait0:.................0
    ...

and ``perfquery -c`` (PortSamplesControl), whose ``Tick`` is the PortXmitWait tick multiplier::

    # PortSamplesControl: Lid 1 port 1
    OpCode:..........................1
    Tick:............................0x0
    ...

Values are decimal, except CounterSelect/CapMask/Tick-style fields printed as ``0x..`` hex.
Older OFED names (``XmtData``, ``SymbolErrors``, ...) are renamed to the current ones. A line of
unknown shape is skipped and counted (``skipped=``); an unknown ``#`` header starts no block, so the
fields under it are skipped too rather than filed under the previous block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from .guard import parser_entry
from .ib_common import current_counter_name
from .skipped import SkippedLine, note

#: what this parser's skipped lines are counted under (collectors' parse_sources: skipped.sources_of)
SOURCES = ("perfquery",)

_HEADER_RE = re.compile(r"^# (Port counters|Port extended counters|PortSamplesControl|[A-Za-z ]+?):?\s*"
                        r"Lid (\d+) port (\d+)(?: \(CapMask: (0x[0-9a-fA-F]+)(?: CapMask2: (0x[0-9a-fA-F]+))?\))?\s*$")
_FIELD_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*):\.*(\S+)\s*$")


@dataclass
class PerfBlock:
    kind: str  # "counters" | "extended" | "samples_control" | other header text
    lid: int
    port: int
    cap_mask: int | None
    cap_mask2: int | None
    values: dict[str, int] = field(default_factory=dict)


def _value(text: str, name: str) -> int:
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError:
        raise ParseError(f"invalid value {text!r} for {name}") from None


@parser_entry
def parse(text: str, skipped: list[SkippedLine] | None = None) -> list[PerfBlock]:
    if not isinstance(text, str):
        raise ParseError("perfquery output must be text")
    blocks: list[PerfBlock] = []
    block: PerfBlock | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("perfquery: iberror:"):
            raise ParseError(f"perfquery failed: {line[:120]}")
        if line.startswith("#"):
            m = _HEADER_RE.match(line)
            if not m:
                note(skipped, "perfquery", n, line)
                block = None
                continue
            kind = {"Port counters": "counters", "Port extended counters": "extended",
                    "PortSamplesControl": "samples_control",
                    "PortVLXmitWaitCounters counters": "vl_xmit_wait"}.get(m.group(1), m.group(1).strip().lower())
            block = PerfBlock(kind, int(m.group(2)), int(m.group(3)),
                              int(m.group(4), 16) if m.group(4) else None,
                              int(m.group(5), 16) if m.group(5) else None)
            blocks.append(block)
            continue
        m = _FIELD_RE.match(line)
        if not m or block is None:
            note(skipped, "perfquery", n, line)
            continue
        name = current_counter_name(m.group(1))
        if name in block.values:
            raise ParseError(f"{name} twice in one block")
        block.values[name] = _value(m.group(2), name)
    if not blocks:
        raise ParseError("perfquery printed no counters")
    return blocks


__all__ = ["parse", "PerfBlock"]


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse": ("infiniband/edr_perfquery_extended.txt", "infiniband/qdr_perfquery_basic_latched.txt"),
}
