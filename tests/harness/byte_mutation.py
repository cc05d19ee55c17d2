"""The decoders' differential tests, shared by v2c and v3: byte-level mutation of an encoded SNMP
message (each mutation sets a byte to one worth trying (a tag, a length form), flips a bit,
inserts, deletes or truncates, 1 to 4 times) and the check that our decoder agrees with pysnmp's."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hypothesis import strategies as st

from fabric_exporter.errors import PollError
from fabric_exporter.transport import snmp_ber


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


def check_agrees(data: bytes, ref_fn: Callable, ours_fn: Callable) -> None:
    """Our decoder (``ours_fn``: records or the BerError it raised) and pysnmp's (``ref_fn``: records
    or None) agree on ``data``; the only disagreement allowed is valid BER we refuse on purpose."""
    ref = ref_fn(data)
    got = ours_fn(data)
    if isinstance(got, snmp_ber.BerError):
        assert isinstance(got, PollError) and got.reason == "parse"
        if ref is not None:  # the only allowed disagreement: valid BER we refuse on purpose
            assert isinstance(got, snmp_ber.BerStrictnessError), (data.hex(), got, ref)
        return
    assert ref is not None, f"we accept what pysnmp refuses: {data.hex()} -> {got}"
    assert got == ref, data.hex()
