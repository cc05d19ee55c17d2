"""SNMPv3 (USM) without pysnmp per request: the fast path's UDP client, our BER codec, and snmp_usm.

Per request: the scopedPDU is encoded by snmp_ber, encrypted (DES-CBC / AES-CFB), signed (HMAC) and
sent; msgID and request-id are the same number. An answer is accepted only from the agent's address,
for a msgID in flight, with a wrapper that decodes (snmp_ber.decode_v3_message, bounds-checked), the
right digest (constant-time compare), inside the time window (RFC 3414 3.2 step 7), and -- for a
Response -- at the request's security level; anything else is counted in ``dropped`` and a request
whose only answers were unusable fails as ``parse``.

Engine discovery (RFC 3414 4) is a noAuthNoPriv request the agent answers with an
``unknownEngineID`` Report carrying its engine ID, boots and time. The session then behaves like the
pysnmp path (transport/snmp.py) on a restarted agent: a Report of ``unknownEngineID`` (new engine
ID) or ``notInTimeWindow`` (boots or clock moved) adopts the values the Report carries and retries
once; a timeout from an agent we had discovered rediscovers it and retries once. Other Reports are
the agent refusing us, and fail the request with the same text pysnmp gives (``WrongDigest``,
``DecryptionError``, ``UnknownUserName``...). No error text quotes a key or password.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from ..errors import AuthError, ConnectError, PollError, PollTimeoutError
from . import snmp_usm
from .snmp_ber import (
    GET_REQUEST,
    REPORT,
    RESPONSE,
    BerError,
    ScopedPdu,
    V3Message,
    decode_scoped_pdu,
    decode_v3_message,
    encode_encrypted_pdu,
    encode_pdu,
    encode_scoped_pdu,
    encode_v3_message,
)
from .snmp_fast import DatagramRejected, UdpSession
from .snmp_session import format_oid

log = logging.getLogger("fabric_exporter.snmp")

AUTH_FLAG, PRIV_FLAG, REPORTABLE_FLAG = 1, 2, 4
#: msgMaxSize we announce: the largest UDP payload over IPv4
MAX_MESSAGE_SIZE = 65507
#: RFC 3414 3.2 step 7: a message more than this many seconds older than our idea of the agent's clock is refused
TIME_WINDOW = 150
_MAX_BOOTS = (1 << 31) - 1

_USM_STATS = (1, 3, 6, 1, 6, 3, 15, 1, 1)
UNSUPPORTED_SEC_LEVELS, NOT_IN_TIME_WINDOWS, UNKNOWN_USER_NAMES, UNKNOWN_ENGINE_IDS, WRONG_DIGESTS, DECRYPTION_ERRORS = (
    _USM_STATS + (n, 0) for n in range(1, 7))
#: Report varbinds -> the text and name pysnmp's error indication has (transport/snmp.py shows them)
_REFUSALS = {
    UNSUPPORTED_SEC_LEVELS: ("Unsupported SNMP security level", "UnsupportedSecurityLevel"),
    NOT_IN_TIME_WINDOWS: ("SNMP message timing parameters not in windows of trust", "NotInTimeWindow"),
    UNKNOWN_USER_NAMES: ("Unknown USM user", "UnknownUserName"),
    WRONG_DIGESTS: ("Wrong SNMP PDU digest", "WrongDigest"),
    DECRYPTION_ERRORS: ("Ciphering services not available or ciphertext is broken", "DecryptionError"),
}


class UsmRejected(DatagramRejected):
    """An answer that decodes but fails the USM's checks (digest, time window, decryption, level)."""


class FastV3Session(UdpSession):
    """SNMPv3/USM requests to one agent over a plain UDP socket (noAuthNoPriv, authNoPriv, authPriv)."""

    def __init__(self, user: bytes, auth: str | None, auth_password: bytes | None, priv: str | None,
                 priv_password: bytes | None, context: bytes, address: str, port: int, *, timeout: float,
                 retries: int, max_repetitions: int, limiter: asyncio.Semaphore):
        super().__init__(address, port, timeout=timeout, retries=retries, max_repetitions=max_repetitions,
                         limiter=limiter)
        self._user = user
        self._auth_name, self._priv_name = auth, priv
        self._auth = snmp_usm.AUTH_PROTOCOLS[auth] if auth else None
        self._priv = snmp_usm.PRIV_PROTOCOLS[priv] if priv else None
        self._auth_password, self._priv_password = auth_password, priv_password
        self._context = context
        self._level = (AUTH_FLAG if auth else 0) | (PRIV_FLAG if priv else 0)
        self._salt = snmp_usm.Salt()
        self._discovery = asyncio.Lock()
        #: security level each msgID in flight was sent with (discovery: 0)
        self._levels: dict[int, int] = {}
        # what we know of the agent's engine: ID, boots, time at ``_synced`` (monotonic), latest time seen
        self._engine_id: bytes | None = None
        self._boots = self._time = self._latest = 0
        self._synced = 0.0
        self._auth_key: bytes | None = None
        self._priv_key: bytes | None = None
        #: times this session forgot the agent's engine and rediscovered it
        self.rediscoveries = 0

    # -- the agent's engine ---------------------------------------------------------------------

    def _adopt(self, engine_id: bytes, boots: int, engine_time: int) -> None:
        if engine_id != self._engine_id:
            self._engine_id = engine_id
            if self._auth_name:
                self._auth_key, self._priv_key = snmp_usm.localized_keys(
                    self._auth_name, self._priv_name, self._auth_password or b"", self._priv_password, engine_id)
        self._boots, self._time, self._latest, self._synced = boots, engine_time, engine_time, time.monotonic()

    def _forget(self) -> None:
        self._engine_id = self._auth_key = self._priv_key = None

    def _engine_time(self) -> int:
        return min(self._time + int(time.monotonic() - self._synced), _MAX_BOOTS)

    async def _discover(self, what: str) -> None:
        async with self._discovery:
            if self._engine_id is not None:
                return  # another request of this session discovered it meanwhile
            report, msg = await self._send(what, GET_REQUEST, [], 0, discovery=True)
            if report.pdu_type != REPORT or not msg.engine_id:
                raise ConnectError(f"{self.description}: {what}: SNMPv3 engine discovery: the agent "
                                   f"answered without its engine ID")
            self._adopt(msg.engine_id, msg.boots, msg.time)

    # -- one message ----------------------------------------------------------------------------

    def _encode(self, msg_id: int, pdu: bytes, level: int, discovery: bool) -> bytes:
        if discovery:
            message, _ = encode_v3_message(msg_id, MAX_MESSAGE_SIZE, REPORTABLE_FLAG, b"", 0, 0, b"", 0, b"",
                                           encode_scoped_pdu(b"", b"", pdu))
            return bytes(message)
        engine_id = self._engine_id or b""
        boots, engine_time = self._boots, self._engine_time()
        scoped = encode_scoped_pdu(engine_id, self._context, pdu)
        priv_params = b""
        if level & PRIV_FLAG:
            ciphertext, priv_params = snmp_usm.encrypt(self._priv, self._priv_key, boots, engine_time,  # type: ignore[arg-type]
                                                       self._salt.next(), scoped)
            scoped = encode_encrypted_pdu(ciphertext)
        auth = self._auth if level & AUTH_FLAG else None
        message, offset = encode_v3_message(msg_id, MAX_MESSAGE_SIZE, level | REPORTABLE_FLAG, engine_id, boots,
                                            engine_time, self._user, auth.digest_length if auth else 0,
                                            priv_params, scoped)
        if auth is None:
            return bytes(message)
        return snmp_usm.sign(auth, self._auth_key, message, offset)  # type: ignore[arg-type]

    def _accept(self, data: bytes) -> tuple[int, Any]:
        msg = decode_v3_message(data)
        requested = self._levels.get(msg.msg_id)
        if requested is None:
            return msg.msg_id, None  # not ours (or given up): dropped without spending a digest on it
        if msg.security_model != 3:
            raise UsmRejected(f"security model {msg.security_model}, not USM")
        level = msg.flags & (AUTH_FLAG | PRIV_FLAG)
        if level == PRIV_FLAG:
            raise UsmRejected("privacy without authentication")
        if level & AUTH_FLAG:
            auth = self._auth
            if auth is None or self._auth_key is None or msg.engine_id != self._engine_id or msg.user != self._user:
                raise UsmRejected("an authenticated message for another engine or user")
            if not snmp_usm.verify(auth, self._auth_key, data, msg.auth_offset, msg.auth_params):
                raise UsmRejected("wrong digest")
        if level & PRIV_FLAG:
            if not msg.encrypted or self._priv is None or self._priv_key is None:
                raise UsmRejected("encrypted flag and msgData disagree")
            try:
                plain = snmp_usm.decrypt(self._priv, self._priv_key, msg.boots, msg.time, msg.priv_params, msg.data)
            except snmp_usm.UsmError as e:
                raise UsmRejected(f"cannot decrypt: {e}") from None
            try:
                scoped = decode_scoped_pdu(plain, padded=True)
            except BerError as e:
                raise UsmRejected(f"decrypted scopedPDU does not decode: {e}") from None
        elif msg.encrypted:
            raise UsmRejected("an encryptedPDU in a message not flagged private")
        else:
            scoped = decode_scoped_pdu(msg.data)
        if scoped.pdu_type == RESPONSE:
            if level != requested:
                raise UsmRejected("a response at another security level than the request")
            if scoped.request_id != msg.msg_id:
                raise UsmRejected("request-id and msgID differ")
            if level & AUTH_FLAG:
                self._check_time_window(msg)
        return msg.msg_id, (scoped, msg)

    def _check_time_window(self, msg: V3Message) -> None:
        """RFC 3414 3.2 step 7 (b), for the non-authoritative side: move our idea of the agent's clock
        forward with authentic messages; refuse a message from an earlier boot or too far behind."""
        if msg.boots > self._boots or (msg.boots == self._boots and msg.time > self._latest):
            self._boots, self._time, self._latest, self._synced = msg.boots, msg.time, msg.time, time.monotonic()
        if (self._boots == _MAX_BOOTS or msg.boots < self._boots
                or (msg.boots == self._boots and self._engine_time() > msg.time + TIME_WINDOW)):
            raise UsmRejected("message outside the time window (replayed or delayed)")

    async def _send(self, what: str, pdu_type: int, oids: list[tuple[int, ...]], max_repetitions: int,
                    discovery: bool = False) -> tuple[ScopedPdu, V3Message]:
        msg_id = self._new_id()
        pdu = encode_pdu(pdu_type, msg_id, oids, max_repetitions=max_repetitions)
        self._levels[msg_id] = 0 if discovery else self._level
        try:
            return await self._exchange(what, msg_id, self._encode(msg_id, pdu, self._levels[msg_id], discovery))
        finally:
            self._levels.pop(msg_id, None)

    # -- one request, with the engine's upkeep --------------------------------------------------

    async def _request(self, what: str, pdu_type: int, oids: list[tuple[int, ...]], max_repetitions: int = 0
                       ) -> ScopedPdu:
        if self._engine_id is None:
            await self._discover(what)
        for attempt in (1, 2):
            try:
                scoped, msg = await self._send(what, pdu_type, oids, max_repetitions)
            except PollTimeoutError:
                if attempt == 1 and self._engine_id is not None:  # a restarted agent ignoring the old engine ID?
                    self._note_rediscovery("timeout")
                    self._forget()
                    await self._discover(what)
                    continue
                raise
            if scoped.pdu_type == RESPONSE:
                return scoped
            oid = scoped.varbinds[0].oid if scoped.varbinds else ()
            if attempt == 1 and msg.engine_id and (oid in (UNKNOWN_ENGINE_IDS, NOT_IN_TIME_WINDOWS)
                                                   or msg.engine_id != self._engine_id):
                # the Report carries the agent's engine ID, boots and time: adopt them and try again. A
                # restarted agent with a new engine ID may report any refusal (snmpsim: unknown user)
                # for a request sent to the old one; the engine ID it signs with tells.
                self._note_rediscovery(_REFUSALS.get(oid, ("", "UnknownEngineID"))[1]
                                       if msg.engine_id == self._engine_id else "new engine ID")
                self._adopt(msg.engine_id, msg.boots, msg.time)
                continue
            raise self._refused(what, oid)
        raise AssertionError("unreachable")

    def _note_rediscovery(self, why: str) -> None:
        self.rediscoveries += 1
        log.info("SNMPv3 agent %s: %s; rediscovering its engine", self.description, why)

    def _refused(self, what: str, oid: tuple[int, ...]) -> PollError:
        if oid in _REFUSALS:
            text, name = _REFUSALS[oid]
            return AuthError(f"{self.description}: {what}: SNMPv3 refused: {text} ({name})")
        if oid == UNKNOWN_ENGINE_IDS:
            return ConnectError(f"{self.description}: {what}: Unknown SNMP engine ID encountered")
        return ConnectError(f"{self.description}: {what}: agent sent a Report: {format_oid(oid) or 'no varbind'}")
