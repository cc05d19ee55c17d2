"""SNMPv2c without pysnmp per request: a plain asyncio UDP client and the specialised BER codec.

pysnmp's per-request machinery (message framing, dispatcher, pyasn1 objects) costs ~20x what this
does per varbind (bench/bench_snmp.py), and v2c needs none of it. Each session owns one connected UDP
socket to its agent; a request is one encoded PDU and one future keyed by request-id. A datagram is
accepted only when it comes from the agent's address and port, decodes (snmp_ber refuses anything
malformed), is SNMPv2c with our community, and answers a request-id we have in flight; anything else
is counted and dropped, and a request whose only answers were undecodable fails as ``parse`` rather
than ``timeout``, without the retries (they are for lost datagrams; an agent that answered garbage
would answer it again). Retries resend the same request-id, so a late answer to the first try still counts.
Requests in flight per agent are bounded (``MAX_IN_FLIGHT_PER_AGENT``) across the sessions of a loop.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import weakref
from typing import Any

from ..errors import ConnectError, PollError
from . import snmp_dropped
from .snmp_ber import (
    GET_BULK_REQUEST,
    GET_REQUEST,
    Response,
    ScopedPdu,
    Varbind,
    decode_response,
    encode_message,
    encode_pdu,
)
from .snmp_session import SnmpSessionBase

#: GETBULK/GET requests one loop keeps in flight to one agent (address, port), whatever asks
MAX_IN_FLIGHT_PER_AGENT = 8
_EXPIRED = object()
_INT31 = (1 << 31) - 1


class DatagramRejected(PollError):
    """A well-formed message that fails the SNMP version's checks (community, USM digest...)."""

    reason = "parse"


class _Protocol(asyncio.DatagramProtocol):
    """Hands datagrams to its session; holds it weakly so an unused session can be collected."""

    def __init__(self, session: UdpSession):
        self.session = weakref.ref(session)

    def datagram_received(self, data: bytes, addr: Any) -> None:
        s = self.session()
        if s is not None:
            s._received(data, addr)

    def error_received(self, exc: Exception) -> None:  # ICMP port unreachable on the connected socket
        s = self.session()
        if s is not None:
            s._last_socket_error = exc


def _expire(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(_EXPIRED)


class UdpSession(SnmpSessionBase):
    """One connected UDP socket to an agent, requests matched to answers by an id; the SNMP version's
    encoding and checks are the subclass's (``_accept``)."""

    def __init__(self, address: str, port: int, *, timeout: float, retries: int, max_repetitions: int,
                 limiter: asyncio.Semaphore):
        super().__init__(address, port, timeout=timeout, retries=retries, max_repetitions=max_repetitions)
        self._limiter = limiter
        self._transport: asyncio.DatagramTransport | None = None
        self._peer: tuple[str, int] | None = None
        self._pending: dict[int, asyncio.Future] = {}
        self._next_id = secrets.randbits(31)  # unpredictable: a spoofer must guess it and our port
        self._last_bad: PollError | None = None
        self._last_socket_error: Exception | None = None
        #: datagrams dropped: wrong source, undecodable, failing the version's checks, unknown request-id
        self.dropped = 0

    async def _open(self) -> asyncio.DatagramTransport:
        if self._transport is None or self._transport.is_closing():
            loop = asyncio.get_running_loop()
            try:
                infos = await loop.getaddrinfo(self.address, self.port, type=socket.SOCK_DGRAM)
                family, _, _, _, sockaddr = infos[0]
                transport, _ = await loop.create_datagram_endpoint(lambda: _Protocol(self), remote_addr=sockaddr,
                                                                   family=family)
            except OSError as e:  # unresolvable name, no route
                raise ConnectError(f"{self.description}: cannot resolve address: {e}") from None
            self._transport = transport  # type: ignore[assignment]
            self._peer = transport.get_extra_info("peername")[:2]
            weakref.finalize(self, transport.close)
        return self._transport  # type: ignore[return-value]

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    def _received(self, data: bytes, addr: Any) -> None:
        if self._peer is None or addr[0] != self._peer[0] or addr[1] != self._peer[1]:
            self._drop("wrong_source")
            return
        try:
            request_id, result = self._accept(data)
        except PollError as e:  # BerError, or the version's own checks
            self._drop("rejected" if isinstance(e, DatagramRejected) else "undecodable")
            self._last_bad = e
            return
        fut = self._pending.get(request_id)
        if fut is None or fut.done():
            self._drop("unmatched")  # late (already answered, or given up) or never asked
            return
        fut.set_result(result)

    def _drop(self, reason: str) -> None:
        self.dropped += 1
        snmp_dropped.count(reason)

    def _accept(self, data: bytes) -> tuple[int, Any]:
        """(the id the datagram answers, what the request gets), or a PollError to drop it."""
        raise NotImplementedError

    async def _request(self, what: str, pdu_type: int, oids: list[tuple[int, ...]], max_repetitions: int = 0
                       ) -> Response | ScopedPdu:
        """Send one request PDU in the version's message; its answer (error status, varbinds)."""
        raise NotImplementedError

    async def _get_request(self, what: str, oids: list[tuple[int, ...]]) -> list[Varbind]:
        return self._check(what, await self._request(what, GET_REQUEST, oids))

    async def _bulk_request(self, what: str, oid: tuple[int, ...], max_repetitions: int) -> list[Varbind]:
        return self._check(what, await self._request(what, GET_BULK_REQUEST, [oid], max_repetitions))

    def _check(self, what: str, answer: Response | ScopedPdu) -> list[Varbind]:
        if answer.error_status:
            raise self.status_error(what, answer.error_status, answer.error_index)
        return answer.varbinds

    def _new_id(self) -> int:
        self._next_id = request_id = (self._next_id + 1) & _INT31
        return request_id

    async def _exchange(self, what: str, request_id: int, payload: bytes) -> Any:
        """Send ``payload`` (resent on each retry) until its answer arrives; PollError subclasses otherwise."""
        transport = await self._open()
        loop = asyncio.get_running_loop()
        self._last_bad = self._last_socket_error = None
        async with self._limiter:
            try:
                for _ in range(self.retries + 1):
                    fut = loop.create_future()
                    self._pending[request_id] = fut
                    timer = loop.call_later(self.timeout, _expire, fut)
                    try:
                        transport.sendto(payload)
                        result = await fut
                    finally:
                        timer.cancel()
                    if result is not _EXPIRED:
                        return result
                    if self._last_bad is not None:  # it answered, unusably: resending would get the same
                        break
            finally:
                self._pending.pop(request_id, None)
        if self._last_bad is not None:
            raise PollError(f"{self.description}: {what}: no usable response: {self._last_bad}", reason="parse")
        if self._last_socket_error is not None:
            raise ConnectError(f"{self.description}: {what}: no response ({self._last_socket_error})")
        raise self.timeout_error(what)


class FastSession(UdpSession):
    """SNMPv2c requests to one agent over a plain UDP socket."""

    timeout_hint = " (SNMPv2c agents also stay silent on a wrong community)"

    def __init__(self, community: bytes, address: str, port: int, *, timeout: float, retries: int,
                 max_repetitions: int, limiter: asyncio.Semaphore):
        super().__init__(address, port, timeout=timeout, retries=retries, max_repetitions=max_repetitions,
                         limiter=limiter)
        self._community = community

    def _accept(self, data: bytes) -> tuple[int, Any]:
        resp = decode_response(data)
        if resp.version != 1 or resp.community != self._community:
            raise DatagramRejected("a response of another SNMP version or community")
        return resp.request_id, resp

    async def _request(self, what: str, pdu_type: int, oids: list[tuple[int, ...]], max_repetitions: int = 0
                       ) -> Response:
        request_id = self._new_id()
        payload = encode_message(1, self._community, encode_pdu(pdu_type, request_id, oids,
                                                                max_repetitions=max_repetitions))
        return await self._exchange(what, request_id, payload)
