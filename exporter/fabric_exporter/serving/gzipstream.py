"""One gzip stream (RFC 1952) assembled from pieces compressed when they change, not per scrape.

A scrape's gzip body is a single gzip member: a header, raw deflate data, an empty final block and
the trailer (CRC-32 and length of the text). The deflate data is the concatenation of pieces, each
compressed on its own with the text that precedes it in the body as the dictionary and ended with a
sync flush (``deflate_piece``): a deflate stream may refer to the last 32 KiB of output, whichever
block produced it, and a sync flush ends on a byte boundary with no final bit, so the pieces join
into one valid stream. Neighbouring pieces of a column (one family across targets) differ in little
but a host name and the values, so a piece compressed against its predecessor costs a fraction of
a gzip member of its own (which restarts the dictionary and pays an 18-byte header and trailer).

A piece's compressed bytes are valid only after the very text it was compressed against: callers
keep that text (the object) beside the bytes and compress again when the predecessor changed.

The trailer's CRC-32 is combined from the CRCs of the pieces' texts (``crc32_combine``, zlib's
GF(2) method with table lookups: Python's zlib does not expose it).
"""

from __future__ import annotations

import operator
import struct
import zlib
from typing import NamedTuple

# Level 1: ~130 MB/s on exposition text; level 6 costs 2x the CPU there for ~20% fewer bytes. A piece
# under SMALL bytes (a target's family of a few lines) costs mostly setting up the compressor, and
# ends a deflate block of its own (its Huffman tree, a sync marker): level 6 makes up for that at
# about the same cost (8-line pieces: 1.47x one gzip stream's size at level 1, 1.21x at level 6).
GZIP_LEVEL = 1
SMALL_LEVEL = 6
SMALL = 4096
WINDOW = 1 << 15  # deflate's distance limit: a dictionary longer than this is cut to its tail

# magic, deflate, no flags, mtime 0 (equal text gives equal bytes), XFL 4 (fastest), OS 255 (unknown)
HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\xff"
_FINAL_BLOCK = b"\x03\x00"  # an empty block with fixed Huffman codes and the final bit set


def deflate_piece(text: bytes, preceding: bytes = b"") -> bytes:
    """``text`` as raw deflate blocks ending in a sync flush, compressed with ``preceding`` (the
    text just before it in the body; b"" at the start of a stream) as the dictionary."""
    if not text:
        return b""
    preceding = preceding[-WINDOW:]
    # A window and hash table sized to the text and its dictionary: zlib's full-size ones (~270 KB,
    # allocated and cleared per compressor) cost ~60 us, more than compressing a line. Any window
    # is valid: the compressor only refers less far back; the reader keeps 32 KiB.
    window_bits = max(9, min(15, (len(preceding) + len(text) - 1).bit_length()))
    level = SMALL_LEVEL if len(text) < SMALL else GZIP_LEVEL
    if preceding:
        compressor = zlib.compressobj(level, zlib.DEFLATED, -window_bits, window_bits - 7, zdict=preceding)
    else:
        compressor = zlib.compressobj(level, zlib.DEFLATED, -window_bits, window_bits - 7)
    return compressor.compress(text) + compressor.flush(zlib.Z_SYNC_FLUSH)


class Segment(NamedTuple):
    """Consecutive deflate pieces of a body (each compressed against the text before it), with the
    CRC-32 and length of the text they decode to."""

    deflate: bytes
    crc: int
    size: int


def trailer(crc: int, size: int) -> bytes:
    """The end of a member whose deflate data so far decodes to ``size`` bytes with CRC-32 ``crc``."""
    return _FINAL_BLOCK + struct.pack("<II", crc, size & 0xFFFFFFFF)


def member(segments: list[Segment]) -> list[bytes]:
    """A gzip member of ``segments`` in order, as pieces to concatenate ([] for no text)."""
    crc = size = 0
    parts = [HEADER]
    for segment in segments:
        if segment.size:
            crc = crc32_combine(crc, segment.crc, segment.size)
            size += segment.size
            parts.append(segment.deflate)
    if not size:
        return []
    parts.append(trailer(crc, size))
    return parts


class MemberCache:
    """The last member built, handed out again while its segments are the very same objects (scrapes
    between polls: no CRC combined again)."""

    def __init__(self) -> None:
        self._segments: tuple[Segment, ...] = ()
        self._parts: list[bytes] = []

    def member(self, segments: list[Segment]) -> list[bytes]:
        if len(segments) != len(self._segments) or not all(map(operator.is_, segments, self._segments)):
            self._segments, self._parts = tuple(segments), member(segments)
        return list(self._parts)


# -- CRC-32 combination (zlib's crc32_combine: multiplication modulo the CRC polynomial, reflected) --

_POLY = 0xEDB88320


def _multmodp(a: int, b: int) -> int:
    """a(x) * b(x) modulo p(x), in the reflected bit order of a CRC-32 register."""
    m = 1 << 31
    product = 0
    while a:
        if a & m:
            product ^= b
            a ^= m
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1
    return product


def _x2n_table() -> list[int]:
    table = [1 << 30]  # x^1
    for _ in range(31):
        table.append(_multmodp(table[-1], table[-1]))  # x^(2^n)
    return table


_X2N = _x2n_table()


def _nibble_tables(a: int) -> tuple[list[int], ...]:
    """Multiplication by a(x) modulo p(x) as eight tables, one per nibble of a register: being
    linear, the product is the XOR of the eight entries. (The 32-step loop of ``_multmodp`` per
    factor made a member's CRC cost ~30 us per segment.)"""
    by_bit = [0] * 32  # a(x) times the register with only bit m set, x^(31 - m)
    b = a
    for m in range(31, -1, -1):
        by_bit[m] = b
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1  # times x
    tables = []
    for j in range(8):
        table = [0] * 16
        for v in range(1, 16):
            low = v & -v
            table[v] = table[v ^ low] ^ by_bit[4 * j + low.bit_length() - 1]
        tables.append(table)
    return tuple(tables)


_TIMES_X2N = [_nibble_tables(a) for a in _X2N]  # times x^(2^k), k = 0..31 (x^(2^32) = x: the cycle)


def _times_x8n(crc: int, n: int) -> int:
    """crc(x) * x^(8n) modulo p(x): the register moved on by n zero bytes."""
    k = 3
    while n:
        if n & 1:
            t0, t1, t2, t3, t4, t5, t6, t7 = _TIMES_X2N[k & 31]
            crc = (t0[crc & 15] ^ t1[crc >> 4 & 15] ^ t2[crc >> 8 & 15] ^ t3[crc >> 12 & 15]
                   ^ t4[crc >> 16 & 15] ^ t5[crc >> 20 & 15] ^ t6[crc >> 24 & 15] ^ t7[crc >> 28])
        n >>= 1
        k += 1
    return crc


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """The CRC-32 of A + B from crc1 = crc32(A), crc2 = crc32(B) and len2 = len(B)."""
    return _times_x8n(crc1, len2) ^ crc2
