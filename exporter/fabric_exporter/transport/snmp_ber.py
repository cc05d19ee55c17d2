"""BER for SNMP, specialised: encode GET/GETBULK requests, decode Response PDUs into Varbinds.

Pure functions, bytes in, records out. This parses untrusted datagrams, so every length is checked
against the bytes that enclose it before anything is read, nothing recurses, and every problem --
truncation, a length past its container, trailing bytes, a tag we do not expect, a value out of its
SNMP range -- raises ``BerError`` (a PollError, reason ``parse``), never anything else.

It accepts what pysnmp/pyasn1 accept for these messages and decodes it to the same values
(tests/unit/transport/test_snmp_ber.py proves it with a hypothesis differential test), except that it is
stricter in three documented ways, raising ``BerStrictnessError``: indefinite lengths, constructed
(segmented) encodings of strings, and INTEGERs of more than 9 octets (no SNMP value needs more than
Counter64's 9; pyasn1 decodes an error-status of any size, and one of thousands of digits cannot even
be printed) are refused. Agents never send them; a parser that accepts them has more to get wrong.

Value kinds are those of ``transport.snmp.Varbind`` (what pysnmp's path produces), plus three for
the SNMPv2 exceptions, which the session filters out before collectors see anything.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import PollError

COUNTER32, COUNTER64, GAUGE, INTEGER, TIMETICKS, STRING, OTHER = (
    "counter32", "counter64", "gauge", "integer", "timeticks", "string", "other")
NO_SUCH_OBJECT, NO_SUCH_INSTANCE, END_OF_MIB_VIEW = "noSuchObject", "noSuchInstance", "endOfMibView"
EXCEPTIONS = frozenset((NO_SUCH_OBJECT, NO_SUCH_INSTANCE, END_OF_MIB_VIEW))

# PDU tags (context, constructed)
GET_REQUEST, GET_NEXT_REQUEST, RESPONSE, GET_BULK_REQUEST, REPORT = 0xA0, 0xA1, 0xA2, 0xA5, 0xA8

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_UINT32_MAX, _UINT64_MAX = (1 << 32) - 1, (1 << 64) - 1
#: pyasn1's own limits, kept so that both refuse the same inputs
_MAX_LENGTH_OCTETS = 8
_MAX_OID_ARC_CONTINUATION_OCTETS = 20
_MAX_OCTET_STRING = 65535  # SNMPv2-SMI OCTET STRING (SIZE (0..65535))
#: ours: Counter64's largest value takes 9 octets (a leading zero); any longer INTEGER is refused unread
_MAX_INTEGER_OCTETS = 9


class BerError(PollError):
    """A datagram that is not a well-formed SNMP message."""

    reason = "parse"


class BerStrictnessError(BerError):
    """Valid BER that we refuse on purpose (indefinite length, constructed strings, INTEGERs past 9 octets)."""


def _too_long_integer(length: int, what: str) -> BerStrictnessError:
    return BerStrictnessError(f"{what}: INTEGER of {length} octets (at most {_MAX_INTEGER_OCTETS})")


class Varbind(NamedTuple):
    oid: tuple[int, ...]
    kind: str
    value: object  # int for numeric kinds, bytes for strings, str for OTHER, None for exceptions


class Response(NamedTuple):
    version: int  # 0 = v1, 1 = v2c, as on the wire
    community: bytes
    pdu_type: int
    request_id: int
    error_status: int
    error_index: int
    varbinds: list[Varbind]


# -- decoding -----------------------------------------------------------------------------------

def _length(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The length octets at ``pos``: (length, position of the contents). The contents must fit in ``end``."""
    if pos >= end:
        raise BerError("truncated: length octets missing")
    first = data[pos]
    pos += 1
    if first < 0x80:
        length = first
    elif first == 0x80:
        raise BerStrictnessError("indefinite length refused")
    else:
        n = first & 0x7F
        if n > _MAX_LENGTH_OCTETS:
            raise BerError(f"length field of {n} octets")
        if pos + n > end:
            raise BerError("truncated: length octets cut short")
        length = int.from_bytes(data[pos:pos + n], "big")
        pos += n
    if length > end - pos:
        raise BerError(f"truncated: {length} octets announced, {end - pos} present")
    return length, pos


def _expect(data: bytes, pos: int, end: int, tag: int, what: str) -> tuple[int, int]:
    if pos >= end:
        raise BerError(f"truncated: {what} missing")
    if data[pos] != tag:
        raise _bad_tag(data[pos], tag, what)
    return _length(data, pos + 1, end)


def _bad_tag(got: int, want: int, what: str) -> BerError:
    if got == want | 0x20 and want in (0x04, 0x44):
        return BerStrictnessError(f"{what}: constructed string encoding refused")
    return BerError(f"{what}: tag 0x{got:02x}, expected 0x{want:02x}")


def _integer(data: bytes, pos: int, end: int, what: str, lo: int | None, hi: int | None) -> tuple[int, int]:
    length, pos = _expect(data, pos, end, 0x02, what)
    if length > _MAX_INTEGER_OCTETS:
        raise _too_long_integer(length, what)
    value = int.from_bytes(data[pos:pos + length], "big", signed=True) if length else 0
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise BerError(f"{what}: {value} out of range")
    return value, pos + length


def decode_oid(data: bytes, pos: int, end: int) -> tuple[int, ...]:
    """The contents of an OBJECT IDENTIFIER in ``data[pos:end]``."""
    if pos >= end:
        raise BerError("empty OBJECT IDENTIFIER")
    chunk = data[pos:end]
    if chunk.isascii():  # every arc below 128: the usual case, done in C
        arcs = tuple(chunk)
    else:
        out = []
        append = out.append
        i, n = 0, len(chunk)
        while i < n:
            b = chunk[i]
            i += 1
            if b < 0x80:
                append(b)
                continue
            if b == 0x80:
                raise BerError("OBJECT IDENTIFIER arc with a leading 0x80 octet")
            value = 0
            count = 0
            while b >= 0x80:
                count += 1
                if count > _MAX_OID_ARC_CONTINUATION_OCTETS:
                    raise BerError("OBJECT IDENTIFIER arc too long")
                value = (value << 7) | (b & 0x7F)
                if i >= n:
                    raise BerError("truncated OBJECT IDENTIFIER arc")
                b = chunk[i]
                i += 1
            append((value << 7) | b)
        arcs = tuple(out)
    first = arcs[0]
    if first < 40:
        return (0,) + arcs
    if first < 80:
        return (1, first - 40) + arcs[1:]
    return (2, first - 80) + arcs[1:]


def _pretty_octets(raw: bytes) -> str:
    """pyasn1's OctetString.prettyPrint(): text if every octet is printable ASCII, else 0x-hex."""
    for x in raw:
        if x < 32 or x > 126:
            return "0x" + raw.hex()
    return raw.decode("latin-1")


#: OBJECT IDENTIFIER contents -> the decoded tuple. A poll meets the same OIDs poll after poll
#: (every row of every column), so each is decoded once and handed out as the same tuple; bounded,
#: started afresh when full (a hostile agent naming new OIDs gains nothing but a cleared cache).
_OID_CACHE: dict[bytes, tuple[int, ...]] = {}
_OID_CACHE_MAX = 1 << 17
_new = tuple.__new__  # a Varbind from a tuple, without the NamedTuple's Python-level __new__


def _cached_oid(data: bytes, pos: int, end: int) -> tuple[int, ...]:
    chunk = data[pos:end]
    oid = _OID_CACHE.get(chunk)
    if oid is None:
        oid = decode_oid(data, pos, end)
        if len(_OID_CACHE) >= _OID_CACHE_MAX:
            _OID_CACHE.clear()
        _OID_CACHE[chunk] = oid
    return oid


#: A numeric varbind's header -- SEQUENCE, OBJECT IDENTIFIER and the value's tag and length, all
#: short-form -- -> (its OID, kind, lowest and highest value its tag allows). A header is put here
#: only once the full decode below has checked it, so equal bytes later are the same valid header;
#: a page of counters then costs one dict look-up and one integer per varbind (the same OIDs and
#: value widths come back poll after poll). Bounded and started afresh when full, as _OID_CACHE.
_HEADER_CACHE: dict[bytes, tuple[tuple[int, ...], str, int, int]] = {}
#: numeric value tags -> (kind, lowest, highest): INTEGER is Integer32, the application types unsigned
_NUMERIC = {0x02: (INTEGER, _INT32_MIN, _INT32_MAX), 0x41: (COUNTER32, 0, _UINT32_MAX),
            0x42: (GAUGE, 0, _UINT32_MAX), 0x43: (TIMETICKS, 0, _UINT32_MAX), 0x46: (COUNTER64, 0, _UINT64_MAX)}


def decode_varbinds(data: bytes, pos: int, end: int) -> list[Varbind]:
    """A VarBindList's SEQUENCE starting at ``pos``, which must end exactly at ``end``.

    One pass over the bytes. A numeric varbind whose header was seen before (_HEADER_CACHE) is read
    as that header and its value; any other goes through every check: short-form lengths (every
    varbind of a counter table) inline, long ones through ``_length``."""
    length, pos = _expect(data, pos, end, 0x30, "variable-bindings")
    if pos + length != end:
        raise BerError("bytes after variable-bindings")
    out: list[Varbind] = []
    append = out.append
    from_bytes = int.from_bytes
    oid_cache = _OID_CACHE
    header_cache = _HEADER_CACHE
    vb_class = Varbind
    while pos < end:
        if pos + 3 < end:
            hend = pos + 6 + data[pos + 3]
            known = header_cache.get(data[pos:hend])
            if known is not None:  # a checked header: 30 L 06 l <oid> T v, L = 4 + l + v
                vend = pos + 2 + data[pos + 1]
                if vend <= end:
                    value = from_bytes(data[hend:vend], "big", signed=True) if vend > hend else 0
                    if known[2] <= value <= known[3]:
                        append(_new(vb_class, (known[0], known[1], value)))
                        pos = vend
                        continue
                # truncated or out of range: the full decode below says which
        start = pos
        if data[pos] != 0x30:
            raise _bad_tag(data[pos], 0x30, "varbind")
        if pos + 1 < end and data[pos + 1] < 0x80:
            vend = pos + 2 + data[pos + 1]
            if vend > end:
                raise BerError(f"truncated: {data[pos + 1]} octets announced, {end - pos - 2} present")
            pos += 2
        else:
            vlen, pos = _length(data, pos + 1, end)
            vend = pos + vlen
        if pos >= vend or data[pos] != 0x06:
            raise BerError("varbind: name missing" if pos >= vend else f"varbind: name tag 0x{data[pos]:02x}")
        if pos + 1 < vend and data[pos + 1] < 0x80:
            oend = pos + 2 + data[pos + 1]
            if oend > vend:
                raise BerError(f"truncated: {data[pos + 1]} octets announced, {vend - pos - 2} present")
            pos += 2
        else:
            olen, pos = _length(data, pos + 1, vend)
            oend = pos + olen
        oid = oid_cache.get(data[pos:oend])
        if oid is None:
            oid = _cached_oid(data, pos, oend)
        pos = oend
        if pos >= vend:
            raise BerError(f"varbind {'.'.join(map(str, oid))}: value missing")
        tag = data[pos]
        if pos + 1 < vend and data[pos + 1] < 0x80:
            length = data[pos + 1]
            pos += 2
            if pos + length > vend:
                raise BerError(f"truncated: {length} octets announced, {vend - pos} present")
        else:
            length, pos = _length(data, pos + 1, vend)
        if pos + length != vend:
            raise BerError(f"varbind {'.'.join(map(str, oid))}: bytes after the value")
        numeric = _NUMERIC.get(tag)
        if numeric is not None:
            if length > _MAX_INTEGER_OCTETS:
                raise _too_long_integer(length, f"varbind {'.'.join(map(str, oid))}")
            value = from_bytes(data[pos:vend], "big", signed=True) if length else 0
            kind, lowest, highest = numeric
            if value < lowest or value > highest:
                if tag == 0x02:
                    raise BerError(f"Integer32 {value} out of range")
                raise BerError(f"value {value} out of range for tag 0x{tag:02x}")
            append(_new(vb_class, (oid, kind, value)))
            # every length short-form (a long form of a small length must not pass for a short one)
            if data[start + 1] < 0x80 and data[start + 3] < 0x80 and pos == start + 6 + data[start + 3]:
                if len(header_cache) >= _OID_CACHE_MAX:
                    header_cache.clear()
                header_cache[data[start:pos]] = (oid, kind, lowest, highest)
        elif tag == 0x04:
            if length > _MAX_OCTET_STRING:
                raise BerError(f"OCTET STRING of {length} octets")
            append(Varbind(oid, STRING, data[pos:vend]))
        elif tag == 0x80 or tag == 0x81 or tag == 0x82 or tag == 0x05:
            if length:
                raise BerError(f"{length} octets in a NULL-like value")
            append(Varbind(oid, OTHER, "") if tag == 0x05 else Varbind(
                oid, NO_SUCH_OBJECT if tag == 0x80 else NO_SUCH_INSTANCE if tag == 0x81 else END_OF_MIB_VIEW, None))
        elif tag == 0x40:
            if length != 4:
                raise BerError(f"IpAddress of {length} octets")
            append(Varbind(oid, STRING, data[pos:vend]))
        elif tag == 0x06:
            append(Varbind(oid, OTHER, ".".join(map(str, decode_oid(data, pos, vend)))))
        elif tag == 0x44:
            append(Varbind(oid, OTHER, _pretty_octets(data[pos:vend])))
        elif tag == 0x24 or tag == 0x64:
            raise BerStrictnessError("constructed string encoding refused")
        else:
            raise BerError(f"varbind {'.'.join(map(str, oid))}: unexpected value tag 0x{tag:02x}")
        pos = vend
    return out


def decode_pdu(data: bytes, pos: int, end: int) -> tuple[int, int, int, int, list[Varbind]]:
    """A PDU (GetResponse/Report layout) at ``pos`` ending exactly at ``end``:
    (pdu type, request-id, error-status, error-index, varbinds)."""
    if pos >= end:
        raise BerError("truncated: PDU missing")
    pdu_type = data[pos]
    if pdu_type not in (RESPONSE, REPORT):
        raise BerError(f"PDU type 0x{pdu_type:02x} is not a Response")
    length, pos = _length(data, pos + 1, end)
    if pos + length != end:
        raise BerError("bytes after the PDU")
    request_id, pos = _integer(data, pos, end, "request-id", _INT32_MIN, _INT32_MAX)
    error_status, pos = _integer(data, pos, end, "error-status", None, None)
    error_index, pos = _integer(data, pos, end, "error-index", 0, _INT32_MAX)
    return pdu_type, request_id, error_status, error_index, decode_varbinds(data, pos, end)


def decode_response(data: bytes) -> Response:
    """An SNMPv1/v2c message carrying a Response PDU. Raises BerError on anything else."""
    end = len(data)
    length, pos = _expect(data, 0, end, 0x30, "message")
    if pos + length != end:
        raise BerError(f"{end - pos - length} bytes after the message")
    version, pos = _integer(data, pos, end, "version", 0, 1)
    clen, pos = _expect(data, pos, end, 0x04, "community")
    community = data[pos:pos + clen]
    pos += clen
    pdu_type, request_id, error_status, error_index, varbinds = decode_pdu(data, pos, end)
    if pdu_type != RESPONSE:
        raise BerError("an SNMPv1/v2c message carries a Report PDU")
    return Response(version, community, pdu_type, request_id, error_status, error_index, varbinds)


# -- SNMPv3 (RFC 3412 message, RFC 3414 USM security parameters) ------------------------------

_V3_MIN_MAX_SIZE = 484


class V3Message(NamedTuple):
    """An SNMPv3 message's wrapper, decoded; the scoped PDU is left for after authentication."""

    msg_id: int
    max_size: int
    flags: int  # bit 0 auth, bit 1 priv, bit 2 reportable
    security_model: int
    engine_id: bytes
    boots: int
    time: int
    user: bytes
    auth_params: bytes
    auth_offset: int  # where auth_params' contents start in the datagram (zeroed to check the digest)
    priv_params: bytes
    encrypted: bool  # msgData is an encryptedPDU (its contents in ``data``) rather than a plaintext ScopedPDU
    data: bytes


class ScopedPdu(NamedTuple):
    context_engine_id: bytes
    context_name: bytes
    pdu_type: int
    request_id: int
    error_status: int
    error_index: int
    varbinds: list[Varbind]


def _octets(data: bytes, pos: int, end: int, what: str) -> tuple[bytes, int]:
    length, pos = _expect(data, pos, end, 0x04, what)
    return data[pos:pos + length], pos + length


def decode_v3_message(data: bytes) -> V3Message:
    """An SNMPv3 message with USM security parameters. Raises BerError on anything else.

    Checks what pysnmp's message spec constrains (ranges, msgFlags of one octet, userName of at most
    32 octets), and refuses trailing bytes at every level. The scoped PDU is not decoded here: it may
    be encrypted, and a plaintext one is decoded only once the digest has been checked."""
    end = len(data)
    length, pos = _expect(data, 0, end, 0x30, "message")
    if pos + length != end:
        raise BerError(f"{end - pos - length} bytes after the message")
    version, pos = _integer(data, pos, end, "msgVersion", 0, _INT32_MAX)
    if version != 3:
        raise BerError(f"msgVersion {version} is not SNMPv3")
    glen, pos = _expect(data, pos, end, 0x30, "msgGlobalData")
    gend = pos + glen
    msg_id, pos = _integer(data, pos, gend, "msgID", 0, _INT32_MAX)
    max_size, pos = _integer(data, pos, gend, "msgMaxSize", _V3_MIN_MAX_SIZE, _INT32_MAX)
    flags, pos = _octets(data, pos, gend, "msgFlags")
    if len(flags) != 1:
        raise BerError(f"msgFlags of {len(flags)} octets")
    model, pos = _integer(data, pos, gend, "msgSecurityModel", 3, _INT32_MAX)
    if pos != gend:
        raise BerError("bytes after msgGlobalData's fields")
    slen, pos = _expect(data, pos, end, 0x04, "msgSecurityParameters")
    send = pos + slen
    ulen, pos = _expect(data, pos, send, 0x30, "UsmSecurityParameters")
    if pos + ulen != send:
        raise BerError("bytes after UsmSecurityParameters")
    engine_id, pos = _octets(data, pos, send, "msgAuthoritativeEngineID")
    boots, pos = _integer(data, pos, send, "msgAuthoritativeEngineBoots", 0, _INT32_MAX)
    etime, pos = _integer(data, pos, send, "msgAuthoritativeEngineTime", 0, _INT32_MAX)
    user, pos = _octets(data, pos, send, "msgUserName")
    if len(user) > 32:
        raise BerError(f"msgUserName of {len(user)} octets")
    alen, pos = _expect(data, pos, send, 0x04, "msgAuthenticationParameters")
    auth_offset = pos
    auth_params = data[pos:pos + alen]
    pos += alen
    priv_params, pos = _octets(data, pos, send, "msgPrivacyParameters")
    if pos != send:
        raise BerError("bytes after msgPrivacyParameters")
    if pos >= end:
        raise BerError("truncated: msgData missing")
    if data[pos] == 0x04:
        dlen, dpos = _length(data, pos + 1, end)
        encrypted, body = True, data[dpos:dpos + dlen]
    elif data[pos] == 0x30:
        dlen, dpos = _length(data, pos + 1, end)
        encrypted, body = False, data[pos:dpos + dlen]
    elif data[pos] == 0x24:
        raise BerStrictnessError("msgData: constructed string encoding refused")
    else:
        raise _bad_tag(data[pos], 0x30, "msgData")
    if dpos + dlen != end:
        raise BerError("bytes after msgData")
    return V3Message(msg_id, max_size, flags[0], model, engine_id, boots, etime, user, auth_params, auth_offset,
                     priv_params, encrypted, body)


def decode_scoped_pdu(data: bytes, *, padded: bool = False) -> ScopedPdu:
    """A ScopedPDU carrying a Response or Report PDU. ``padded``: bytes after it are the cipher's
    padding (decrypted DES-CBC data) and are ignored, as RFC 3414 8.1.1.3 says."""
    end = len(data)
    length, pos = _expect(data, 0, end, 0x30, "scopedPDU")
    if not padded and pos + length != end:
        raise BerError(f"{end - pos - length} bytes after the scopedPDU")
    end = pos + length
    engine_id, pos = _octets(data, pos, end, "contextEngineID")
    name, pos = _octets(data, pos, end, "contextName")
    return ScopedPdu(engine_id, name, *decode_pdu(data, pos, end))


def encode_scoped_pdu(context_engine_id: bytes, context_name: bytes, pdu: bytes) -> bytes:
    return _tlv(0x30, _tlv(0x04, context_engine_id) + _tlv(0x04, context_name) + pdu)


def encode_encrypted_pdu(ciphertext: bytes) -> bytes:
    return _tlv(0x04, ciphertext)


def encode_v3_message(msg_id: int, max_size: int, flags: int, engine_id: bytes, boots: int, engine_time: int,
                      user: bytes, auth_length: int, priv_params: bytes, msg_data: bytes) -> tuple[bytearray, int]:
    """An SNMPv3/USM message around ``msg_data`` (a ScopedPDU, or an encryptedPDU OCTET STRING), with
    ``auth_length`` zero octets as msgAuthenticationParameters: (message, offset of those octets),
    so the digest computed over the message can be written in place."""
    head = _tlv(0x04, engine_id) + encode_integer(boots) + encode_integer(engine_time) + _tlv(0x04, user)
    rest = _tlv(0x04, bytes(auth_length)) + _tlv(0x04, priv_params)
    usm = _tlv(0x30, head + rest)
    params = _tlv(0x04, usm)
    header = encode_integer(3) + _tlv(0x30, encode_integer(msg_id) + encode_integer(max_size)
                                      + _tlv(0x04, bytes((flags,))) + encode_integer(3))
    body = header + params + msg_data
    message = bytearray(_tlv(0x30, body))
    offset = (len(message) - len(body) + len(header) + (len(params) - len(usm)) + (len(usm) - len(head) - len(rest))
              + len(head) + 2)
    return message, offset


# -- encoding -----------------------------------------------------------------------------------

def _enc_length(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes((0x80 | len(raw),)) + raw


def _tlv(tag: int, contents: bytes) -> bytes:
    n = len(contents)
    if n < 0x80:
        return bytes((tag, n)) + contents
    return bytes((tag,)) + _enc_length(n) + contents


#: INTEGERs 0..127 (versions, flags, security model, max-repetitions...), encoded once
_SMALL_INTEGERS = tuple(bytes((0x02, 1, v)) for v in range(0x80))


def encode_integer(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _SMALL_INTEGERS[value]
    return _tlv(0x02, value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big", signed=True))


def encode_oid(oid: tuple[int, ...]) -> bytes:
    if len(oid) < 2 or oid[0] > 2 or (oid[0] < 2 and oid[1] > 39) or any(a < 0 for a in oid):
        raise ValueError(f"not an encodable OBJECT IDENTIFIER: {oid}")
    out = bytearray()
    for arc in (oid[0] * 40 + oid[1],) + tuple(oid[2:]):
        if arc < 0x80:
            out.append(arc)
            continue
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        out.extend(reversed(chunk))
    return _tlv(0x06, bytes(out))


_NULL_VALUE = b"\x05\x00"


#: OID -> its VarBindList of one varbind (a GETBULK page's start): a walk asks from the same OIDs
#: poll after poll. Bounded, started afresh when full, as _OID_CACHE.
_VARBIND_LIST_CACHE: dict[tuple[int, ...], bytes] = {}


def encode_varbind_list(oids: list[tuple[int, ...]]) -> bytes:
    if len(oids) == 1 and oids[0].__class__ is tuple:
        encoded = _VARBIND_LIST_CACHE.get(oids[0])
        if encoded is None:
            encoded = _tlv(0x30, _tlv(0x30, encode_oid(oids[0]) + _NULL_VALUE))
            if len(_VARBIND_LIST_CACHE) >= _OID_CACHE_MAX:
                _VARBIND_LIST_CACHE.clear()
            _VARBIND_LIST_CACHE[oids[0]] = encoded
        return encoded
    return _tlv(0x30, b"".join(_tlv(0x30, encode_oid(o) + _NULL_VALUE) for o in oids))


def encode_pdu(pdu_type: int, request_id: int, oids: list[tuple[int, ...]], *, non_repeaters: int = 0,
               max_repetitions: int = 0) -> bytes:
    """A GetRequest (error fields 0) or GetBulkRequest (non-repeaters, max-repetitions) PDU."""
    if pdu_type == GET_BULK_REQUEST:
        fields = encode_integer(non_repeaters) + encode_integer(max_repetitions)
    else:
        fields = b"\x02\x01\x00\x02\x01\x00"
    return _tlv(pdu_type, encode_integer(request_id) + fields + encode_varbind_list(oids))


def encode_message(version: int, community: bytes, pdu: bytes) -> bytes:
    """An SNMPv1 (0) / v2c (1) message around an encoded PDU."""
    return _tlv(0x30, encode_integer(version) + _tlv(0x04, community) + pdu)
