"""The fast SNMPv3 session's checks on what comes back, against a scripted agent on 127.0.0.1 that
knows the keys and can misbehave on purpose: a wrong digest, a message from an earlier boot or
too far behind the agent's clock (RFC 3414 3.2 step 7), a Response at a lower security level, an
undecodable encrypted PDU -- each dropped, counted as ``rejected``, and the request failing as
``parse`` rather than taking the bad answer. An authenticated notInTimeWindow Report resyncs the
clock and the request is retried once.

The agent encodes with pyasn1 and pysnmp's specs (not our encoder) and encrypts/signs with
snmp_usm, whose keys, digests and ciphers tests/unit/transport/test_snmp_usm.py checks against pysnmp's."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from pyasn1.codec.ber import decoder, encoder
from pysnmp.proto import rfc1902
from pysnmp.proto.api import v2c
from pysnmp.proto.mpmod.rfc3412 import ScopedPDU, SNMPv3Message
from pysnmp.proto.secmod.rfc3414.service import UsmSecurityParameters

from fabric_exporter.errors import PollError
from fabric_exporter.transport import snmp_dropped, snmp_usm
from fabric_exporter.transport.snmp_fast_v3 import NOT_IN_TIME_WINDOWS, UNKNOWN_ENGINE_IDS, FastV3Session

ENGINE = b"\x80\x00\x1f\x88\x04scripted"
USER, AUTH_PW, PRIV_PW = b"fabric", b"auth-secret-1", b"priv-secret-1"
AUTH, PRIV = snmp_usm.AUTH_PROTOCOLS["sha"], snmp_usm.PRIV_PROTOCOLS["aes"]
AUTH_KEY, PRIV_KEY = snmp_usm.localized_keys("sha", "aes", AUTH_PW, PRIV_PW, ENGINE)
SYS_NAME = (1, 3, 6, 1, 2, 1, 1, 5, 0)


def v3_message(msg_id, flags, boots, etime, pdu, *, engine=ENGINE, user=USER, encrypt=True, tamper_digest=False):
    """A signed (flags & 1) and encrypted (flags & 2) SNMPv3 message from the agent's side."""
    scoped = ScopedPDU()
    scoped["contextEngineId"] = engine
    scoped["contextName"] = b""
    scoped["data"]["report" if isinstance(pdu, v2c.ReportPDU) else "response"] = pdu
    msg = SNMPv3Message()
    msg["msgVersion"] = 3
    g = msg["msgGlobalData"]
    g["msgID"], g["msgMaxSize"], g["msgFlags"], g["msgSecurityModel"] = msg_id, 65507, bytes([flags]), 3
    usm = UsmSecurityParameters()
    usm["msgAuthoritativeEngineId"] = engine
    usm["msgAuthoritativeEngineBoots"] = boots
    usm["msgAuthoritativeEngineTime"] = etime
    usm["msgUserName"] = user if flags & 1 else b""
    usm["msgAuthenticationParameters"] = bytes(AUTH.digest_length) if flags & 1 else b""
    priv_params = b""
    if flags & 2 and encrypt:
        ciphertext, priv_params = snmp_usm.encrypt(PRIV, PRIV_KEY, boots, etime, 7, encoder.encode(scoped))
        msg["msgData"]["encryptedPDU"] = ciphertext
    elif flags & 2:
        msg["msgData"]["encryptedPDU"] = b"\x00" * 5  # not a multiple of anything, not a scopedPDU
        priv_params = bytes(8)
    else:
        msg["msgData"]["plaintext"] = scoped
    usm["msgPrivacyParameters"] = priv_params
    msg["msgSecurityParameters"] = encoder.encode(usm)
    data = bytearray(encoder.encode(msg))
    if flags & 1:
        offset = bytes(data).find(bytes(AUTH.digest_length))
        signed = bytearray(snmp_usm.sign(AUTH, AUTH_KEY, data, offset))
        if tamper_digest:
            signed[offset] ^= 1
        data = signed
    return bytes(data)


def pdu_of(cls, request_id, varbinds):
    pdu = cls()
    v2c.apiPDU.set_defaults(pdu)
    v2c.apiPDU.set_request_id(pdu, request_id)
    v2c.apiPDU.set_varbinds(pdu, varbinds)
    return pdu


class ScriptedAgent(asyncio.DatagramProtocol):
    """Discovery as RFC 3414 4 says; each authenticated request is answered by ``answer(agent, msg_id,
    request_id)``, which returns the datagrams to send back."""

    def __init__(self, answer):
        self.answer = answer
        self.boots, self.time = 3, 5000
        self.requests = 0

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        msg, _ = decoder.decode(data, asn1Spec=SNMPv3Message())
        msg_id = int(msg["msgGlobalData"]["msgID"])
        flags = bytes(msg["msgGlobalData"]["msgFlags"])[0]
        if not flags & 1:  # discovery
            report = pdu_of(v2c.ReportPDU, 0, [(UNKNOWN_ENGINE_IDS, rfc1902.Counter32(1))])
            self.transport.sendto(v3_message(msg_id, 0, self.boots, self.time, report), addr)
            return
        usm, _ = decoder.decode(bytes(msg["msgSecurityParameters"]), asn1Spec=UsmSecurityParameters())
        digest = bytes(usm["msgAuthenticationParameters"])
        offset = data.find(digest)
        assert snmp_usm.verify(AUTH, AUTH_KEY, data, offset, digest), "the session signed it wrongly"
        plain = snmp_usm.decrypt(PRIV, PRIV_KEY, int(usm["msgAuthoritativeEngineBoots"]),
                                 int(usm["msgAuthoritativeEngineTime"]), bytes(usm["msgPrivacyParameters"]),
                                 bytes(msg["msgData"]["encryptedPDU"]))
        scoped, _ = decoder.decode(plain, asn1Spec=ScopedPDU())
        request_id = int(scoped["data"].getComponent()["request-id"])
        self.requests += 1
        for datagram in self.answer(self, msg_id, request_id):
            self.transport.sendto(datagram, addr)

    def response(self, msg_id, request_id, *, flags=3, boots=None, etime=None, **kw):
        pdu = pdu_of(v2c.ResponsePDU, request_id, [(SYS_NAME, rfc1902.OctetString(b"switch-1"))])
        return v3_message(msg_id, flags, self.boots if boots is None else boots,
                          self.time if etime is None else etime, pdu, **kw)


@contextlib.asynccontextmanager
async def session_with(answer):
    """A FastV3Session to a ScriptedAgent answering with ``answer``; both closed on exit."""
    loop = asyncio.get_running_loop()
    transport, agent = await loop.create_datagram_endpoint(lambda: ScriptedAgent(answer),
                                                           local_addr=("127.0.0.1", 0))
    port = transport.get_extra_info("sockname")[1]
    s = FastV3Session(USER, "sha", AUTH_PW, "aes", PRIV_PW, b"", "127.0.0.1", port, timeout=0.3, retries=0,
                      max_repetitions=10, limiter=asyncio.Semaphore(8))
    try:
        yield s, agent
    finally:
        s.close()
        transport.close()


async def ask(answer):
    async with session_with(answer) as (s, agent):
        return await s.get([SYS_NAME]), s, agent


def test_a_well_behaved_agent_is_read():
    got, s, agent = asyncio.run(ask(lambda a, m, r: [a.response(m, r)]))
    assert got[SYS_NAME].value == b"switch-1" and s.dropped == 0 and s._boots == 3


BAD_ANSWERS = {
    "wrong digest": lambda a, m, r: [a.response(m, r, tamper_digest=True)],
    "earlier boot": lambda a, m, r: [a.response(m, r, boots=a.boots - 1)],
    "clock far behind": lambda a, m, r: [a.response(m, r, etime=a.time - 1000)],
    "lower security level": lambda a, m, r: [a.response(m, r, flags=1)],
    "no security at all": lambda a, m, r: [a.response(m, r, flags=0)],
    "undecryptable": lambda a, m, r: [a.response(m, r, encrypt=False)],
    "another user": lambda a, m, r: [a.response(m, r, user=b"someone")],
}


@pytest.mark.parametrize("case", sorted(BAD_ANSWERS))
def test_bad_answers_are_dropped_and_the_request_fails_as_parse(case):
    before = snmp_dropped.DROPPED["rejected"]
    with pytest.raises(PollError) as e:
        asyncio.run(ask(BAD_ANSWERS[case]))
    assert e.value.reason == "parse" and "no usable response" in str(e.value), str(e.value)
    assert snmp_dropped.DROPPED["rejected"] > before


def test_a_good_answer_after_a_bad_one_is_taken():
    got, s, _ = asyncio.run(ask(lambda a, m, r: [a.response(m, r, tamper_digest=True), a.response(m, r)]))
    assert got[SYS_NAME].value == b"switch-1" and s.dropped == 1


def test_the_clock_moves_forward_with_authentic_answers_only():
    def answer(a, m, r):
        a.time += 400  # more than the window: the session must follow the agent's clock
        return [a.response(m, r)]

    async def go():
        async with session_with(answer) as (s, agent):
            for _ in range(3):
                await s.get([SYS_NAME])
            return s._time, agent.time

    ours, theirs = asyncio.run(go())
    assert ours == theirs


def test_not_in_time_window_report_resyncs_and_retries_once():
    def answer(a, m, r):
        if a.requests == 1:  # the agent rebooted since discovery: it tells the new boots and time, signed
            a.boots, a.time = a.boots + 1, 10
            report = pdu_of(v2c.ReportPDU, r, [(NOT_IN_TIME_WINDOWS, rfc1902.Counter32(1))])
            return [v3_message(m, 1, a.boots, a.time, report)]
        return [a.response(m, r)]

    got, s, agent = asyncio.run(ask(answer))
    assert got[SYS_NAME].value == b"switch-1"
    assert (s._boots, s.rediscoveries, agent.requests) == (4, 1, 2)


def test_a_second_not_in_time_window_report_fails_as_auth():
    def answer(a, m, r):
        report = pdu_of(v2c.ReportPDU, r, [(NOT_IN_TIME_WINDOWS, rfc1902.Counter32(1))])
        return [v3_message(m, 1, a.boots, a.time, report)]

    with pytest.raises(PollError) as e:
        asyncio.run(ask(answer))
    assert e.value.reason == "auth" and "NotInTimeWindow" in str(e.value)
