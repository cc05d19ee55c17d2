"""Node name maps in the infiniband-diags ``--node-name-map`` format.

One node per line: a GUID (``0x...`` hex, or any C integer literal) then the name, usually quoted::

    # leaf switches
    0x0002c90300a10000 "leaf-b2"
    0x0002c90300b00010 gpu-001        # unquoted: the rest of the line

Blank lines and ``#`` comments are skipped, as the tools do.
"""

from __future__ import annotations

from ..errors import ParseError
from .guard import parser_entry


def _guid(token: str) -> int:
    t = token.lower()
    try:
        if t.startswith("0x"):
            value = int(t[2:], 16)
        elif len(t) > 1 and t.startswith("0"):
            value = int(t[1:], 8)
        else:
            value = int(t, 10)
    except ValueError:
        raise ParseError(f"invalid GUID {token!r} in node name map") from None
    if not 0 <= value < 1 << 64:
        raise ParseError(f"GUID {token!r} out of range")
    return value


@parser_entry
def parse(text: str) -> dict[int, str]:
    if not isinstance(text, str):
        raise ParseError("node name map must be text")
    names: dict[int, str] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        guid = _guid(parts[0].split("#", 1)[0])
        rest = parts[1].strip() if len(parts) > 1 else ""
        if rest.startswith('"'):
            end = rest.find('"', 1)
            if end < 0:
                raise ParseError(f"line {lineno}: unterminated quoted name")
            name = rest[1:end]
        else:
            name = rest.split("#", 1)[0].strip()
        if not name or any(ord(c) < 32 for c in name):
            raise ParseError(f"line {lineno}: missing or invalid name")
        names[guid] = name
    return names


__all__ = ["parse"]


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse": ("infiniband/node-name-map.txt",),
}
