"""The fast SNMPv3 path's decoder of untrusted datagrams against the reference: pyasn1 with pysnmp's
own specs (SNMPv3Message, UsmSecurityParameters, ScopedPDU).

Generated SNMPv3 messages (plaintext Response/Report scoped PDUs with every value kind, or encrypted
PDUs; every USM field at its range's edges) must decode to the same fields; byte-mutated ones must
decode to the same fields or be refused by both, and nothing but BerError may escape. The reference
refuses trailing bytes after the message and after the USM parameters, as we do. The decrypted
scopedPDU (which may carry cipher padding) is checked the same way.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyasn1.codec.ber import decoder, encoder
from pyasn1.error import PyAsn1Error
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.proto.api import v2c
from pysnmp.proto.mpmod.rfc3412 import ScopedPDU, SNMPv3Message
from pysnmp.proto.secmod.rfc3414.service import UsmSecurityParameters

from fabric_exporter.transport import snmp_ber
from fabric_exporter.transport.snmp import _convert

from tests.harness import byte_mutation
from tests.harness.byte_mutation import mutate_bytes
from tests.unit.transport.test_snmp_ber import EXCEPTION_KINDS, oids, values

I31 = (1 << 31) - 1
REFUSED = (PyAsn1Error, ValueError, TypeError, IndexError, KeyError, OverflowError)


def _reference_scoped(scoped) -> tuple | None:
    pdu = scoped["data"].getComponent()
    if not isinstance(pdu, (rfc1905.ResponsePDU, rfc1905.ReportPDU)):
        return None
    out = []
    for vb in pdu["variable-bindings"]:
        name, value = vb["name"], vb[""].getComponent()
        while isinstance(value, (rfc1902.ObjectSyntax, rfc1902.SimpleSyntax, rfc1902.ApplicationSyntax)):
            value = value.getComponent()
        kind = EXCEPTION_KINDS.get(type(value))
        out.append(snmp_ber.Varbind(tuple(name), kind, None) if kind else _convert(name, value))
    pdu_type = snmp_ber.RESPONSE if isinstance(pdu, rfc1905.ResponsePDU) else snmp_ber.REPORT
    return (bytes(scoped["contextEngineId"]), bytes(scoped["contextName"]), pdu_type, int(pdu["request-id"]),
            int(pdu["error-status"]), int(pdu["error-index"]), out)


def reference_decode(data: bytes):
    """What pysnmp's specs make of an SNMPv3 datagram, or None when they refuse it."""
    try:
        msg, rest = decoder.decode(data, asn1Spec=SNMPv3Message())
        if rest or int(msg["msgVersion"]) != 3:
            return None
        g = msg["msgGlobalData"]
        usm, rest = decoder.decode(bytes(msg["msgSecurityParameters"]), asn1Spec=UsmSecurityParameters())
        if rest:
            return None
        head = (int(g["msgID"]), int(g["msgMaxSize"]), bytes(g["msgFlags"])[0], int(g["msgSecurityModel"]),
                bytes(usm["msgAuthoritativeEngineId"]), int(usm["msgAuthoritativeEngineBoots"]),
                int(usm["msgAuthoritativeEngineTime"]), bytes(usm["msgUserName"]),
                bytes(usm["msgAuthenticationParameters"]), bytes(usm["msgPrivacyParameters"]))
        body = msg["msgData"]
        if body.getName() == "encryptedPDU":
            return head + (("encrypted", bytes(body["encryptedPDU"])),)
        scoped = _reference_scoped(body["plaintext"])
        return None if scoped is None else head + (("plain",) + scoped,)
    except REFUSED:
        return None


def ours(data: bytes):
    try:
        m = snmp_ber.decode_v3_message(data)
        assert data[m.auth_offset:m.auth_offset + len(m.auth_params)] == m.auth_params
        head = (m.msg_id, m.max_size, m.flags, m.security_model, m.engine_id, m.boots, m.time, m.user,
                m.auth_params, m.priv_params)
        if m.encrypted:
            return head + (("encrypted", m.data),)
        return head + (("plain",) + tuple(snmp_ber.decode_scoped_pdu(m.data)),)
    except snmp_ber.BerError as e:
        return e


def check_agrees(data: bytes, ref_fn=reference_decode, ours_fn=ours) -> None:
    byte_mutation.check_agrees(data, ref_fn, ours_fn)


# -- generators ---------------------------------------------------------------------------------

edge31 = st.one_of(st.integers(0, I31), st.sampled_from([0, 1, 127, 128, 255, 256, I31]))


@st.composite
def scoped_pdus(draw):
    vbs = draw(st.lists(st.tuples(oids, values), max_size=12))
    pdu = draw(st.sampled_from([v2c.ResponsePDU, v2c.ReportPDU]))()
    v2c.apiPDU.set_defaults(pdu)
    v2c.apiPDU.set_request_id(pdu, draw(st.integers(-(1 << 31), I31)))
    v2c.apiPDU.set_error_status(pdu, draw(st.sampled_from([0, 0, 1, 5])))
    v2c.apiPDU.set_error_index(pdu, draw(st.integers(0, len(vbs))))
    v2c.apiPDU.set_varbinds(pdu, vbs)
    scoped = ScopedPDU()
    scoped["contextEngineId"] = draw(st.binary(max_size=32))
    scoped["contextName"] = draw(st.binary(max_size=20))
    scoped["data"]["report" if isinstance(pdu, v2c.ReportPDU) else "response"] = pdu
    return scoped


@st.composite
def v3_messages(draw) -> bytes:
    usm = UsmSecurityParameters()
    usm["msgAuthoritativeEngineId"] = draw(st.binary(max_size=32))
    usm["msgAuthoritativeEngineBoots"] = draw(edge31)
    usm["msgAuthoritativeEngineTime"] = draw(edge31)
    usm["msgUserName"] = draw(st.binary(max_size=32))
    usm["msgAuthenticationParameters"] = draw(st.one_of(st.just(b""), st.binary(min_size=12, max_size=48)))
    usm["msgPrivacyParameters"] = draw(st.one_of(st.just(b""), st.binary(min_size=8, max_size=8)))
    msg = SNMPv3Message()
    msg["msgVersion"] = 3
    g = msg["msgGlobalData"]
    g["msgID"] = draw(edge31)
    g["msgMaxSize"] = draw(st.one_of(st.integers(484, I31), st.sampled_from([484, 65507, I31])))
    g["msgFlags"] = bytes([draw(st.integers(0, 255))])
    g["msgSecurityModel"] = draw(st.sampled_from([3, 3, 3, 4, I31]))
    msg["msgSecurityParameters"] = encoder.encode(usm)
    if draw(st.booleans()):
        msg["msgData"]["encryptedPDU"] = draw(st.binary(max_size=300))
    else:
        msg["msgData"]["plaintext"] = draw(scoped_pdus())
    return encoder.encode(msg)


# Tags and length forms of a v3 message and scopedPDU worth writing over a byte.
INTERESTING_BYTES = [0x00, 0x01, 0x03, 0x7F, 0x80, 0x81, 0x82, 0x84, 0x88, 0x89, 0xFF,
                     0x02, 0x04, 0x05, 0x06, 0x24, 0x30, 0x40, 0x41, 0x46, 0xA2, 0xA8]


def mutate(draw, data: bytes) -> bytes:
    return mutate_bytes(draw, data, INTERESTING_BYTES)


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NO_SHRINK = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                     phases=[Phase.explicit, Phase.reuse, Phase.generate])


@SETTINGS
@given(v3_messages())
def test_generated_v3_messages_decode_as_pysnmp_does(data):
    ref = reference_decode(data)
    assert ref is not None
    assert ours(data) == ref


@NO_SHRINK
@given(st.data())
def test_mutated_v3_messages_agree_or_both_refuse(d):
    check_agrees(mutate(d.draw, d.draw(v3_messages())))


@SETTINGS
@given(st.binary(max_size=200))
def test_random_bytes_never_escape_as_anything_but_ber_error(data):
    check_agrees(data)
    check_agrees(b"\x30" + bytes([len(data) & 0x7F]) + b"\x02\x01\x03" + data)


# -- a decrypted scopedPDU (cipher padding after it is ignored, as pysnmp ignores it) ----------

def reference_scoped(data: bytes):
    try:
        scoped, _rest = decoder.decode(data, asn1Spec=ScopedPDU())
        return _reference_scoped(scoped)
    except REFUSED:
        return None


def ours_scoped(data: bytes):
    try:
        return tuple(snmp_ber.decode_scoped_pdu(data, padded=True))
    except snmp_ber.BerError as e:
        return e


@NO_SHRINK
@given(st.data())
def test_decrypted_scoped_pdus_agree_or_both_refuse(d):
    data = encoder.encode(d.draw(scoped_pdus())) + d.draw(st.binary(max_size=7))
    if d.draw(st.booleans()):
        data = mutate(d.draw, data)
    check_agrees(data, reference_scoped, ours_scoped)


def test_every_truncation_of_a_v3_message_is_refused():
    scoped = ScopedPDU()
    scoped["contextEngineId"] = b"\x80\x00\x1f\x88\x04engine"
    scoped["contextName"] = b"ctx"
    pdu = v2c.ResponsePDU()
    v2c.apiPDU.set_defaults(pdu)
    v2c.apiPDU.set_varbinds(pdu, [((1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6, 1), rfc1902.Counter64(2 ** 64 - 1))])
    scoped["data"]["response"] = pdu
    usm = UsmSecurityParameters()
    for k, v in (("msgAuthoritativeEngineId", b"\x80\x00\x1f\x88\x04engine"), ("msgAuthoritativeEngineBoots", 3),
                 ("msgAuthoritativeEngineTime", 1000), ("msgUserName", b"fabric"),
                 ("msgAuthenticationParameters", bytes(24)), ("msgPrivacyParameters", b"")):
        usm[k] = v
    msg = SNMPv3Message()
    msg["msgVersion"] = 3
    for k, v in (("msgID", 7), ("msgMaxSize", 65507), ("msgFlags", b"\x01"), ("msgSecurityModel", 3)):
        msg["msgGlobalData"][k] = v
    msg["msgSecurityParameters"] = encoder.encode(usm)
    msg["msgData"]["plaintext"] = scoped
    whole = encoder.encode(msg)
    assert ours(whole) == reference_decode(whole)
    for cut in range(len(whole)):
        assert isinstance(ours(whole[:cut]), snmp_ber.BerError), cut


def test_messages_we_encode_are_what_pyasn1_reads():
    pdu = snmp_ber.encode_pdu(snmp_ber.GET_BULK_REQUEST, 99, [(1, 3, 6, 1, 2, 1, 2, 2)], max_repetitions=25)
    scoped = snmp_ber.encode_scoped_pdu(b"\x80\x00engine", b"ctx", pdu)
    data, offset = snmp_ber.encode_v3_message(99, 65507, 7, b"\x80\x00engine", I31, 12345, b"fabric", 48,
                                              b"saltsalt", snmp_ber.encode_encrypted_pdu(b"\xff" * 200))
    assert data[offset:offset + 48] == bytes(48)
    ref = reference_decode(bytes(data))
    assert ref == (99, 65507, 7, 3, b"\x80\x00engine", I31, 12345, b"fabric", bytes(48), b"saltsalt",
                   ("encrypted", b"\xff" * 200))
    assert snmp_ber.decode_v3_message(bytes(data)).auth_offset == offset
    plain, offset = snmp_ber.encode_v3_message(1, 484, 4, b"", 0, 0, b"", 0, b"", scoped)
    msg, rest = decoder.decode(bytes(plain), asn1Spec=SNMPv3Message())
    assert rest == b"" and isinstance(msg["msgData"]["plaintext"]["data"].getComponent(), rfc1905.GetBulkRequestPDU)


def _message(**kw) -> bytes:
    args = {"msg_id": 5, "max_size": 65507, "flags": 3, "engine_id": b"\x80\x00engine", "boots": 1, "engine_time": 2,
            "user": b"fabric", "auth_length": 12, "priv_params": b"saltsalt",
            "msg_data": snmp_ber.encode_encrypted_pdu(b"\x01" * 16)}
    args.update(kw)
    data, _ = snmp_ber.encode_v3_message(*args.values())
    return bytes(data)


def _raw(version: int = 3, flags: bytes = b"\x03", model: int = 3) -> bytes:
    """A message built field by field, for the fields encode_v3_message fixes."""
    tlv, integer = snmp_ber._tlv, snmp_ber.encode_integer
    usm = tlv(0x30, tlv(0x04, b"e") + integer(1) + integer(2) + tlv(0x04, b"u") + tlv(0x04, bytes(12))
              + tlv(0x04, b"saltsalt"))
    header = tlv(0x30, integer(5) + integer(65507) + tlv(0x04, flags) + integer(model))
    return tlv(0x30, integer(version) + header + tlv(0x04, usm) + snmp_ber.encode_encrypted_pdu(b"\x01" * 16))


EDGES = {
    "built by hand": (_raw(), True),
    "user of 32 octets": (_message(user=b"u" * 32), True),
    "user of 33 octets": (_message(user=b"u" * 33), False),
    "msgMaxSize 484": (_message(max_size=484), True),
    "msgMaxSize 483": (_message(max_size=483), False),
    "msgID 2^31-1": (_message(msg_id=I31), True),
    "msgID 2^31": (_message(msg_id=I31 + 1), False),
    "msgID -1": (_message(msg_id=-1), False),
    "boots 2^31": (_message(boots=I31 + 1), False),
    "time -1": (_message(engine_time=-1), False),
    "msgFlags of 2 octets": (_raw(flags=b"\x03\x00"), False),
    "msgFlags of 0 octets": (_raw(flags=b""), False),
    "security model 2": (_raw(model=2), False),
    "msgVersion 1": (_raw(version=1), False),
    "msgVersion 2^31": (_raw(version=I31 + 1), False),
}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_range_and_size_edges_agree_with_pysnmps_specs(name):
    data, accepted = EDGES[name]
    assert (reference_decode(data) is not None) == accepted, name  # the case says what it claims
    check_agrees(data)
