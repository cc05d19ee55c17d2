"""Byte-level mutation of an encoded SNMP message, for the decoders' differential tests: each
mutation sets a byte to one worth trying (a tag, a length form), flips a bit, inserts, deletes or
truncates, 1 to 4 times."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hypothesis import strategies as st


def mutate_bytes(draw: Callable, data: bytes, interesting: Sequence[int]) -> bytes:
    """``data`` with 1-4 mutations drawn by ``draw``; a "set" writes one of ``interesting``."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["set", "set", "flip", "insert", "delete", "truncate"]))
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        if op == "set":
            data[i] = draw(st.sampled_from(interesting))
        elif op == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=3))
        elif op == "delete":
            del data[i]
        else:
            del data[i:]
    return bytes(data)
