"""The fast path's BER decoder against the reference: pyasn1 decoding with pysnmp's message spec and
the pysnmp path's own value conversion (transport.snmp._convert).

Generated Response PDUs (every value kind, OID arcs up to 2^32-1, the three SNMPv2 exceptions),
encoded by pyasn1, must decode to the same records; byte-mutated ones must decode to the same records
or be refused by both. The one asymmetry allowed is documented in snmp_ber: valid BER we refuse on
purpose (indefinite lengths, constructed strings) raises BerStrictnessError -- never the reverse,
and never any exception but BerError.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyasn1.codec.ber import decoder, encoder
from pyasn1.error import PyAsn1Error
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.proto.api import v2c

from fabric_exporter.transport import snmp_ber
from fabric_exporter.transport.snmp import _convert

from tests.harness import byte_mutation
from tests.harness.byte_mutation import mutate_bytes

U32 = (1 << 32) - 1
EXCEPTION_KINDS = {rfc1905.NoSuchObject: snmp_ber.NO_SUCH_OBJECT, rfc1905.NoSuchInstance: snmp_ber.NO_SUCH_INSTANCE,
                   rfc1905.EndOfMibView: snmp_ber.END_OF_MIB_VIEW}


def reference_decode(data: bytes):
    """What pysnmp makes of a v2c Response datagram: (community, request-id, error-status,
    error-index, varbinds), or None when it refuses the message."""
    try:
        msg, rest = decoder.decode(data, asn1Spec=v2c.Message())
        if rest or int(msg["version"]) not in (0, 1):
            return None
        pdu = msg["data"].getComponent()
        if not isinstance(pdu, rfc1905.ResponsePDU):
            return None
        out = []
        for vb in pdu["variable-bindings"]:
            name, value = vb["name"], vb[""].getComponent()
            while isinstance(value, (rfc1902.ObjectSyntax, rfc1902.SimpleSyntax, rfc1902.ApplicationSyntax)):
                value = value.getComponent()
            kind = EXCEPTION_KINDS.get(type(value))
            out.append(snmp_ber.Varbind(tuple(name), kind, None) if kind else _convert(name, value))
        return (bytes(msg["community"]), int(pdu["request-id"]), int(pdu["error-status"]),
                int(pdu["error-index"]), out)
    # pyasn1 raises OverflowError itself on an 8-octet length past sys.maxsize: pysnmp drops such a datagram
    except (PyAsn1Error, ValueError, TypeError, IndexError, KeyError, OverflowError):
        return None


def ours(data: bytes):
    try:
        r = snmp_ber.decode_response(data)
    except snmp_ber.BerError as e:
        return e
    return (r.community, r.request_id, r.error_status, r.error_index, r.varbinds)


# -- generators ---------------------------------------------------------------------------------

arcs = st.integers(0, U32)
oids = st.one_of(
    st.tuples(st.integers(0, 1), st.integers(0, 39)),
    st.tuples(st.just(2), st.integers(0, U32 - 80)),
).flatmap(lambda head: st.lists(st.one_of(st.integers(0, 300), arcs), max_size=24).map(lambda t: head + tuple(t)))

values = st.one_of(
    st.integers(-(1 << 31), (1 << 31) - 1).map(rfc1902.Integer32),
    st.binary(max_size=300).map(rfc1902.OctetString),
    oids.map(rfc1902.ObjectIdentifier),
    st.binary(min_size=4, max_size=4).map(rfc1902.IpAddress),
    st.integers(0, U32).map(rfc1902.Counter32),
    st.integers(0, U32).map(rfc1902.Gauge32),
    st.integers(0, U32).map(rfc1902.TimeTicks),
    st.binary(max_size=40).map(rfc1902.Opaque),
    st.integers(0, (1 << 64) - 1).map(rfc1902.Counter64),
    st.sampled_from([rfc1905.noSuchObject, rfc1905.noSuchInstance, rfc1905.endOfMibView,
                     rfc1902.Null("")]),
)


@st.composite
def responses(draw) -> bytes:
    vbs = draw(st.lists(st.tuples(oids, values), max_size=30))
    pdu = v2c.ResponsePDU()
    v2c.apiPDU.set_defaults(pdu)
    v2c.apiPDU.set_request_id(pdu, draw(st.integers(-(1 << 31), (1 << 31) - 1)))
    v2c.apiPDU.set_error_status(pdu, draw(st.sampled_from([0, 0, 0, 1, 2, 5, 18])))
    v2c.apiPDU.set_error_index(pdu, draw(st.integers(0, len(vbs))))
    v2c.apiPDU.set_varbinds(pdu, vbs)
    msg = v2c.Message()
    v2c.apiMessage.set_defaults(msg)
    v2c.apiMessage.set_community(msg, draw(st.binary(max_size=40)))
    v2c.apiMessage.set_pdu(msg, pdu)
    return encoder.encode(msg)


# Tags and length forms of a v2c Response worth writing over a byte.
INTERESTING_BYTES = [0x00, 0x01, 0x7F, 0x80, 0x81, 0x82, 0x84, 0x88, 0x89, 0xFF,
                     0x02, 0x04, 0x05, 0x06, 0x24, 0x30, 0x40, 0x41, 0x46, 0x64, 0xA2]


@st.composite
def mutated(draw) -> bytes:
    return mutate_bytes(draw, draw(responses()), INTERESTING_BYTES)


def check_agrees(data: bytes) -> None:
    byte_mutation.check_agrees(data, reference_decode, ours)


SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(responses())
def test_generated_responses_decode_as_pysnmp_does(data):
    ref = reference_decode(data)
    assert ref is not None
    assert ours(data) == ref


# no shrinking: a failing example is printed as it is (pyasn1 makes shrinking take minutes)
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(mutated())
def test_mutated_responses_agree_or_both_refuse(data):
    check_agrees(data)


@SETTINGS
@given(st.binary(max_size=200))
def test_random_bytes_never_escape_as_anything_but_ber_error(data):
    check_agrees(data)


def test_every_truncation_of_a_response_is_refused():
    vbs = [((1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6, 1), rfc1902.Counter64(2 ** 64 - 1)),
           ((1, 3, 6, 1, 2, 1, 2, 2, 1, 2, U32), rfc1902.OctetString(b"Ethernet0" * 20)),
           ((1, 3, 6, 1, 4, 1, 9, 9, 813), rfc1905.endOfMibView)]
    pdu = v2c.ResponsePDU()
    v2c.apiPDU.set_defaults(pdu)
    v2c.apiPDU.set_varbinds(pdu, vbs)
    msg = v2c.Message()
    v2c.apiMessage.set_defaults(msg)
    v2c.apiMessage.set_pdu(msg, pdu)
    whole = encoder.encode(msg)
    assert ours(whole) == reference_decode(whole)
    assert [vb.kind for vb in ours(whole)[4]] == ["counter64", "string", snmp_ber.END_OF_MIB_VIEW]
    for cut in range(len(whole)):
        assert isinstance(ours(whole[:cut]), snmp_ber.BerError), cut


def _small_response(community: bytes = b"pub") -> bytes:
    body = b"\x02\x01\x01" + bytes((0x04, len(community))) + community + bytes.fromhex("a20b0201000201000201003000")
    return bytes((0x30, len(body))) + body


def test_strictness_refusals_are_named():
    plain = _small_response()
    assert reference_decode(plain) is not None and ours(plain) == reference_decode(plain)
    indefinite = b"\x30\x80" + plain[2:] + b"\x00\x00"
    assert reference_decode(indefinite) is not None  # pyasn1 reads it...
    got = ours(indefinite)  # ...we refuse it, by name
    assert isinstance(got, snmp_ber.BerStrictnessError) and "indefinite" in str(got)
    body = b"\x02\x01\x01" + b"\x24\x05\x04\x03pub" + bytes.fromhex("a20b0201000201000201003000")
    constructed = bytes((0x30, len(body))) + body
    assert reference_decode(constructed) is not None
    got = ours(constructed)
    assert isinstance(got, snmp_ber.BerStrictnessError) and "constructed" in str(got)


def _tlv(tag: int, contents: bytes) -> bytes:
    n = len(contents)
    head = bytes((n,)) if n < 0x80 else bytes((0x82,)) + n.to_bytes(2, "big")
    return bytes((tag,)) + head + contents


def test_integers_past_nine_octets_are_refused_before_they_are_read():
    """An error-status of 2,000 octets (~4,800 digits): pyasn1 reads it, and printing it raised
    ValueError (int's 4,300-digit limit), a poll ``internal`` with a traceback (issue 25). We refuse any
    INTEGER longer than Counter64's 9 octets, by name; so does a varbind value."""
    huge = b"\x7f" + b"\xff" * 1999
    vb = _tlv(0x30, _tlv(0x06, bytes((43, 6, 1))) + _tlv(0x05, b""))
    pdu = _tlv(0xA2, _tlv(0x02, b"\x01") + _tlv(0x02, huge) + _tlv(0x02, b"\x00") + _tlv(0x30, vb))
    data = _tlv(0x30, _tlv(0x02, b"\x01") + _tlv(0x04, b"public") + pdu)
    assert reference_decode(data) is not None and reference_decode(data)[2].bit_length() == 15999
    got = ours(data)
    assert isinstance(got, snmp_ber.BerStrictnessError) and str(got) == "error-status: INTEGER of 2000 octets (at most 9)"
    nine = b"\x00" + b"\xff" * 8  # Counter64's largest value: still read
    for value, ok in ((_tlv(0x46, nine), True), (_tlv(0x46, b"\x00" + nine), False), (_tlv(0x02, huge), False)):
        vb = _tlv(0x30, _tlv(0x06, bytes((43, 6, 1))) + value)
        pdu = _tlv(0xA2, _tlv(0x02, b"\x01") + _tlv(0x02, b"\x00") + _tlv(0x02, b"\x00") + _tlv(0x30, vb))
        got = ours(_tlv(0x30, _tlv(0x02, b"\x01") + _tlv(0x04, b"public") + pdu))
        if ok:
            assert got[4][0].value == (1 << 64) - 1
        else:
            assert isinstance(got, snmp_ber.BerStrictnessError) and "INTEGER of" in str(got) and "1.3.6.1" in str(got)


def test_length_past_the_datagram_is_refused_not_read():
    # a varbind list announcing 2^31 octets inside a small datagram
    body = b"\x02\x01\x01\x04\x01p" + b"\xa2\x11\x02\x01\x00\x02\x01\x00\x02\x01\x00\x30\x84\x80\x00\x00\x00" + \
        b"\x30\x00"
    data = bytes((0x30, len(body))) + body
    got = ours(data)
    assert isinstance(got, snmp_ber.BerError) and "truncated" in str(got)
    assert reference_decode(data) is None


def test_requests_we_encode_are_what_pyasn1_reads():
    oids_ = [(1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6), (1, 3, 6, 1, 4, 1, U32, 0)]
    data = snmp_ber.encode_message(1, b"public", snmp_ber.encode_pdu(
        snmp_ber.GET_BULK_REQUEST, -5, oids_, max_repetitions=25))
    msg, rest = decoder.decode(data, asn1Spec=v2c.Message())
    assert rest == b""
    pdu = msg["data"].getComponent()
    assert isinstance(pdu, rfc1905.GetBulkRequestPDU)
    assert (int(pdu["request-id"]), int(pdu["non-repeaters"]), int(pdu["max-repetitions"])) == (-5, 0, 25)
    assert [tuple(vb["name"]) for vb in pdu["variable-bindings"]] == oids_
    get = snmp_ber.encode_message(1, b"c", snmp_ber.encode_pdu(snmp_ber.GET_REQUEST, 7, oids_[:1]))
    msg, _ = decoder.decode(get, asn1Spec=v2c.Message())
    assert isinstance(msg["data"].getComponent(), rfc1905.GetRequestPDU)


def test_cached_varbind_lists_are_the_encoded_ones():
    """A GETBULK page's start OID is encoded once and cached: the cached bytes are what encoding it
    afresh gives, for each OID (never another OID's), and a list of several is never cached as one."""
    from fabric_exporter.transport import snmp_ber

    a, b = (1, 3, 6, 1, 2, 1, 2, 2, 1, 10, 5), (1, 3, 6, 1, 2, 1, 2, 2, 1, 10, 300)
    for oid in (a, b, a, b):
        expected = snmp_ber._tlv(0x30, snmp_ber._tlv(0x30, snmp_ber.encode_oid(oid) + b"\x05\x00"))
        assert snmp_ber.encode_varbind_list([oid]) == expected
    both = snmp_ber.encode_varbind_list([a, b])
    assert both == snmp_ber._tlv(0x30, snmp_ber.encode_varbind_list([a])[2:] + snmp_ber.encode_varbind_list([b])[2:])
    for value in (0, 1, 127, 128, 255, 256, -1, -128, -129, 2**31 - 1):
        raw = value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big", signed=True)
        assert snmp_ber.encode_integer(value) == bytes((2, len(raw))) + raw

# -- the edges the mutation run (scripts/mutation snmp_ber) found untested (issue 21) -----------------


def test_a_varbind_cut_after_its_name_tag_or_with_a_constructed_value_is_refused():
    """Two varbinds agents never send, at the very end of a datagram: each is a refusal naming why,
    never a varbind silently dropped and never an IndexError from reading past the bytes."""
    name = snmp_ber.encode_oid((1, 3, 6, 1, 2))
    good = _tlv(0x30, _tlv(0x30, name + bytes((0x04, 0x01, 0x41))))
    assert snmp_ber.decode_varbinds(good, 0, len(good)) == [snmp_ber.Varbind((1, 3, 6, 1, 2), snmp_ber.STRING, b"A")]
    constructed = _tlv(0x30, _tlv(0x30, name + bytes((0x24, 0x03, 0x04, 0x01, 0x41))))
    with pytest.raises(snmp_ber.BerStrictnessError, match="constructed"):
        snmp_ber.decode_varbinds(constructed, 0, len(constructed))
    cut = _tlv(0x30, bytes((0x30, 0x01, 0x06)))  # the name's tag is the datagram's last byte
    with pytest.raises(snmp_ber.BerError, match="truncated"):
        snmp_ber.decode_varbinds(cut, 0, len(cut))


def test_a_name_with_a_long_form_length_reads_as_the_short_form_does():
    """BER lets a length take the long form (``81 04`` for 4); pyasn1 accepts it, so must we."""
    long_name = bytes((0x06, 0x81, 0x04)) + snmp_ber.encode_oid((1, 3, 6, 1, 2))[2:]
    data = _tlv(0x30, _tlv(0x30, long_name + bytes((0x04, 0x01, 0x41))))
    assert snmp_ber.decode_varbinds(data, 0, len(data)) == [snmp_ber.Varbind((1, 3, 6, 1, 2), snmp_ber.STRING, b"A")]


def _response_with(varbinds: bytes) -> bytes:
    """A v2c Response (request-id 1, no error) around these encoded varbinds."""
    pdu = _tlv(0xA2, _tlv(0x02, b"\x01") + _tlv(0x02, b"\x00") + _tlv(0x02, b"\x00") + _tlv(0x30, varbinds))
    return _tlv(0x30, _tlv(0x02, b"\x01") + _tlv(0x04, b"public") + pdu)


@pytest.mark.parametrize("tag, largest", [(0x41, U32), (0x42, U32), (0x43, U32), (0x46, (1 << 64) - 1)],
                         ids=["Counter32", "Gauge32", "TimeTicks", "Counter64"])
def test_unsigned_values_are_read_up_to_their_largest_and_refused_one_past_it(tag, largest):
    name = snmp_ber.encode_oid((1, 3, 6, 1, 2, 1, 2, 2, 1, 10, 1))
    for value, accepted in ((largest, True), (largest + 1, False)):
        data = _response_with(_tlv(0x30, name + _tlv(tag, value.to_bytes(value.bit_length() // 8 + 1, "big"))))
        assert (reference_decode(data) is not None) == accepted, value  # pysnmp draws the same line
        check_agrees(data)
        if accepted:
            assert ours(data)[4][0].value == largest


def test_a_datagram_ending_inside_a_varbind_or_before_its_pdu_is_refused_as_ber():
    """Three datagrams whose last byte is a tag with nothing after it (a value's, the PDU's missing
    altogether): each is a BerError, never an IndexError from reading past the bytes."""
    name = snmp_ber.encode_oid((1, 3, 6, 1, 2))
    value_tag_last = _response_with(_tlv(0x30, name + b"\x04"))
    assert isinstance(ours(value_tag_last), snmp_ber.BerError) and reference_decode(value_tag_last) is None
    no_pdu = _tlv(0x30, _tlv(0x02, b"\x01") + _tlv(0x04, b"public"))
    assert isinstance(ours(no_pdu), snmp_ber.BerError) and reference_decode(no_pdu) is None
    with pytest.raises(snmp_ber.BerError, match="PDU missing"):  # a scopedPDU with its contexts only
        snmp_ber.decode_scoped_pdu(_tlv(0x30, _tlv(0x04, b"engine") + _tlv(0x04, b"")))


def test_a_name_of_indefinite_length_is_refused_even_when_128_octets_follow():
    """``06 80``: an OBJECT IDENTIFIER may not have an indefinite length (pysnmp refuses it too), and
    0x80 is not a short-form length of 128 -- not even when 128 octets of arcs and a value follow."""
    arcs = bytes((43,)) + bytes((6,)) * 127
    data = _response_with(_tlv(0x30, b"\x06\x80" + arcs + b"\x05\x00"))
    assert reference_decode(data) is None
    got = ours(data)
    assert isinstance(got, snmp_ber.BerStrictnessError) and "indefinite" in str(got)
    check_agrees(data)


def test_request_oids_under_every_root_arc_encode_as_pyasn1_reads_them():
    """Roots 0 and 1 take 40 second arcs, root 2 any number (2.999 is in use); any other OID is
    refused before a request is sent."""
    from pyasn1.type import univ

    for oid in ((0, 0), (1, 39, 7), (2, 0), (2, 999, 3), (2, 100, 1, U32)):
        encoded = snmp_ber.encode_oid(oid)
        assert tuple(decoder.decode(encoded, asn1Spec=univ.ObjectIdentifier())[0]) == oid
        assert snmp_ber.decode_oid(encoded, 2, len(encoded)) == oid
    for bad in ((1,), (3, 1), (0, 40), (1, 40, 1), (1, 3, -1)):
        with pytest.raises(ValueError, match="not an encodable"):
            snmp_ber.encode_oid(bad)


def test_a_known_numeric_header_decodes_as_the_full_checks_do():
    """A varbind header already checked is read from _HEADER_CACHE: the same varbinds (the very OID
    tuple) as the first decode, and every value or length the header's tag refuses is refused with
    the full decode's words. A long-form length that happens to span as many octets as a short-form
    header is never kept as one."""
    snmp_ber._HEADER_CACHE.clear()
    name = snmp_ber.encode_oid((1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6, 7))

    def vb(tag: int, raw: bytes) -> bytes:
        return _tlv(0x30, name + _tlv(tag, raw))

    for tag, raw, refused in ((0x41, b"\x00\xff", b"\xff\xff"), (0x46, b"\x01", b"\x80"),
                              (0x02, b"\x00\x7f\xff\xff\xff", b"\x00\x80\x00\x00\x00")):
        first = ours(_response_with(vb(tag, raw)))
        assert snmp_ber._HEADER_CACHE, "a short-form numeric header is kept"
        again = ours(_response_with(vb(tag, raw)))
        assert again == first == reference_decode(_response_with(vb(tag, raw)))
        assert again[4][0].oid is first[4][0].oid
        # the same header (same value length), a value its tag refuses: refused by the full checks
        bad = _response_with(vb(tag, refused))
        check_agrees(bad)
        assert isinstance(ours(bad), snmp_ber.BerError) and reference_decode(bad) is None
        # the header's varbind cut short of its value: truncated, not read past the list
        cut = vb(tag, raw)[:-1]
        data = _tlv(0x30, cut)
        with pytest.raises(snmp_ber.BerError, match="truncated"):
            snmp_ber.decode_varbinds(data, 0, len(data))
    # 30 81 LL 06 05 <5 arcs> T v: a long-form SEQUENCE length over a 5-octet name puts the value
    # where a short-form header of 12 octets would end; it must decode (and keep nothing) as it reads
    snmp_ber._HEADER_CACHE.clear()
    short_name = snmp_ber.encode_oid((1, 3, 6, 1, 2, 1))
    assert len(short_name) == 7
    long_form = bytes((0x30, 0x81, len(short_name) + 3)) + short_name + b"\x41\x01\x05"
    for _ in range(2):
        data = _response_with(long_form)
        check_agrees(data)
        assert ours(data)[4] == [snmp_ber.Varbind((1, 3, 6, 1, 2, 1), snmp_ber.COUNTER32, 5)]
    assert not snmp_ber._HEADER_CACHE
