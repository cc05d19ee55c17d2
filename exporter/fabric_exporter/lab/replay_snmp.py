"""An SNMP agent answering from recorded walks, cheap enough to stand in for hundreds of switches.

One asyncio UDP endpoint on 127.0.0.1 answers GetRequest, GetNextRequest and GetBulkRequest for
every agent it holds, SNMPv2c (the community names the agent) and SNMPv3 USM (the context name
names it; one engine, noAuthNoPriv/authNoPriv/authPriv with the transport's own key, digest and
cipher functions, ``transport.snmp_usm``). Each agent is a recorded walk: ``.snmprec`` text (the
format snmpsim serves and ``SimulatedSwitch.render`` writes; tags 2 4 4x 64 65 66 67 70). A walk
is encoded once, when loaded: a request then costs a bisect and a join of ready varbind bytes, so
the responder measures the poller, not itself (snmpsim spends ~10x the poller's CPU per varbind).

Walks can hold several recordings of one agent (``epochs``); the one answered moves on every
``epoch_seconds``, so counters move between polls (and go back when the recordings wrap, as after a
counter reset). Agents may share one recording (a cluster of switches of the same model).

    python -m fabric_exporter.lab.replay_snmp --snmprec-dir DIR [--port N] [--v3-user U:AUTHPW:PRIVPW]

Not a general agent: no SET, no v1 traps, no VACM (every user sees every context).
"""

from __future__ import annotations

import asyncio
import bisect
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..transport import snmp_usm
from ..transport.snmp_ber import (
    GET_BULK_REQUEST, GET_NEXT_REQUEST, GET_REQUEST, REPORT, RESPONSE, BerError, _expect, _integer, _length,
    _tlv, decode_oid, decode_v3_message, encode_integer, encode_oid, encode_scoped_pdu, encode_v3_message,
)

END_OF_MIB_VIEW = b"\x82\x00"
NO_SUCH_OBJECT = b"\x80\x00"
NO_SUCH_INSTANCE = b"\x81\x00"
# usmStatsUnknownEngineIDs.0 / usmStatsNotInTimeWindows.0 / usmStatsUnknownUserNames.0 / WrongDigests.0
USM_UNKNOWN_ENGINE_IDS = (1, 3, 6, 1, 6, 3, 15, 1, 1, 4, 0)
USM_NOT_IN_TIME_WINDOWS = (1, 3, 6, 1, 6, 3, 15, 1, 1, 2, 0)
USM_UNKNOWN_USER_NAMES = (1, 3, 6, 1, 6, 3, 15, 1, 1, 3, 0)
USM_WRONG_DIGESTS = (1, 3, 6, 1, 6, 3, 15, 1, 1, 5, 0)
MAX_REPETITIONS = 200  # per request, whatever the manager asks (a UDP datagram stays below 64 KiB)
MAX_DATAGRAM = 65000


def _unsigned(tag: int, value: int) -> bytes:
    return _tlv(tag, value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big"))


def encode_value(tag: str, text: str) -> bytes:
    """One ``.snmprec`` value as BER."""
    if tag == "2":
        return encode_integer(int(text))
    if tag == "4":
        return _tlv(0x04, text.encode())
    if tag == "4x":
        return _tlv(0x04, bytes.fromhex(text))
    if tag == "64":
        return _tlv(0x40, bytes(int(x) for x in text.split(".")))
    if tag in ("65", "66", "67", "70"):
        return _unsigned({"65": 0x41, "66": 0x42, "67": 0x43, "70": 0x46}[tag], int(text))
    if tag == "6":
        return encode_oid(tuple(int(x) for x in text.split(".")))
    raise ValueError(f"snmprec tag {tag!r} not supported")


@dataclass
class Walk:
    """One recorded walk: OIDs in order, and each one's encoded ``SEQUENCE {name, value}``."""

    oids: list[tuple[int, ...]]
    varbinds: list[bytes]

    @classmethod
    def from_snmprec(cls, text: str) -> Walk:
        rows = []
        for line in text.splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            oid, tag, value = line.split("|", 2)
            key = tuple(int(x) for x in oid.split("."))
            rows.append((key, _tlv(0x30, encode_oid(key) + encode_value(tag, value))))
        rows.sort()
        return cls([r[0] for r in rows], [r[1] for r in rows])

    def get(self, oid: tuple[int, ...]) -> bytes:
        i = bisect.bisect_left(self.oids, oid)
        if i < len(self.oids) and self.oids[i] == oid:
            return self.varbinds[i]
        return _tlv(0x30, encode_oid(oid) + NO_SUCH_INSTANCE)

    def next_index(self, oid: tuple[int, ...]) -> int:
        return bisect.bisect_right(self.oids, oid)


@dataclass
class Agent:
    epochs: list[Walk]


@dataclass
class V3User:
    name: str
    auth: str  # snmp_usm.AUTH_PROTOCOLS key: md5 sha sha256 sha512
    auth_password: str
    priv: str | None = None  # snmp_usm.PRIV_PROTOCOLS key: des aes aes128 aes256
    priv_password: str | None = None


@dataclass
class Counters:
    requests: int = 0
    varbinds: int = 0
    errors: int = 0
    reports: int = 0


@dataclass
class ReplayResponder:
    """Answers datagrams from ``agents`` (community / context name -> Agent)."""

    agents: dict[str, Agent]
    users: list[V3User] = field(default_factory=list)
    epoch_seconds: float = 30.0
    engine_id: bytes = bytes.fromhex("80001f8804") + b"fabric-replay"
    counters: Counters = field(default_factory=Counters)

    def __post_init__(self) -> None:
        self._boots = 1
        self._started = time.monotonic()
        self._users = {}
        for u in self.users:
            auth_key, priv_key = snmp_usm.localized_keys(u.auth, u.priv, u.auth_password.encode(),
                                                         u.priv_password.encode() if u.priv_password else None,
                                                         self.engine_id)
            self._users[u.name.encode()] = (u, snmp_usm.AUTH_PROTOCOLS[u.auth], auth_key,
                                            snmp_usm.PRIV_PROTOCOLS[u.priv] if u.priv else None, priv_key)
        self._salt = snmp_usm.Salt()

    def _walk(self, name: bytes) -> Walk | None:
        agent = self.agents.get(name.decode("utf-8", "replace"))
        if agent is None:
            return None
        # counted from the responder's start: the first poll reads the first recording, so recordings
        # made to outlast a run are never wrapped (a wrap reads as the agent restarting)
        return agent.epochs[int((time.monotonic() - self._started) / self.epoch_seconds) % len(agent.epochs)]

    def _engine_time(self) -> int:
        return int(time.monotonic() - self._started)

    # -- PDUs -------------------------------------------------------------------------------------

    def _answer_pdu(self, walk: Walk, data: bytes, pos: int, end: int) -> bytes:
        """The Response PDU to the request PDU at ``pos``."""
        pdu_type = data[pos]
        if pdu_type not in (GET_REQUEST, GET_NEXT_REQUEST, GET_BULK_REQUEST):
            raise BerError(f"PDU type 0x{pdu_type:02x} not served")
        length, pos = _length(data, pos + 1, end)
        end = pos + length
        request_id, pos = _integer(data, pos, end, "request-id", None, None)
        first, pos = _integer(data, pos, end, "non-repeaters", None, None)
        second, pos = _integer(data, pos, end, "max-repetitions", None, None)
        vlen, pos = _expect(data, pos, end, 0x30, "variable-bindings")
        oids = []
        while pos < end:
            blen, pos = _expect(data, pos, end, 0x30, "varbind")
            bend = pos + blen
            olen, opos = _expect(data, pos, bend, 0x06, "name")
            oids.append(decode_oid(data, opos, opos + olen))
            pos = bend
        out: list[bytes] = []
        if pdu_type == GET_REQUEST:
            out = [walk.get(oid) for oid in oids]
        elif pdu_type == GET_NEXT_REQUEST:
            for oid in oids:
                i = walk.next_index(oid)
                out.append(walk.varbinds[i] if i < len(walk.oids) else _tlv(0x30, encode_oid(oid) + END_OF_MIB_VIEW))
        else:
            non_repeaters = max(0, min(first, len(oids)))
            repetitions = max(0, min(second, MAX_REPETITIONS))
            for oid in oids[:non_repeaters]:
                i = walk.next_index(oid)
                out.append(walk.varbinds[i] if i < len(walk.oids) else _tlv(0x30, encode_oid(oid) + END_OF_MIB_VIEW))
            repeaters = oids[non_repeaters:]
            starts = [walk.next_index(oid) for oid in repeaters]
            size = 0
            for r in range(repetitions):
                row = []
                for k, oid in enumerate(repeaters):
                    i = starts[k] + r
                    row.append(walk.varbinds[i] if i < len(walk.oids)
                               else _tlv(0x30, encode_oid(oid) + END_OF_MIB_VIEW))
                size += sum(map(len, row))
                if size > MAX_DATAGRAM - 1000 and out:
                    break  # RFC 3416 4.2.3: fewer repetitions rather than tooBig
                out.extend(row)
                if all(starts[k] + r >= len(walk.oids) for k in range(len(repeaters))):
                    break
        self.counters.varbinds += len(out)
        return _tlv(RESPONSE, encode_integer(request_id) + b"\x02\x01\x00\x02\x01\x00" + _tlv(0x30, b"".join(out)))

    # -- messages ---------------------------------------------------------------------------------

    def answer(self, data: bytes) -> bytes | None:
        """The reply datagram to ``data``, or None to drop it (garbage, unknown community or user)."""
        self.counters.requests += 1
        try:
            end = len(data)
            length, pos = _expect(data, 0, end, 0x30, "message")
            version, vpos = _integer(data, pos, end, "version", 0, 3)
            if version == 3:
                return self._answer_v3(data)
            if version != 1:
                return None
            clen, pos = _expect(data, vpos, end, 0x04, "community")
            walk = self._walk(data[pos:pos + clen])
            if walk is None:
                return None
            pdu = self._answer_pdu(walk, data, pos + clen, end)
            return _tlv(0x30, encode_integer(1) + _tlv(0x04, data[pos:pos + clen]) + pdu)
        except (BerError, IndexError, ValueError):
            self.counters.errors += 1
            return None

    def _report(self, msg, oid: tuple[int, ...]) -> bytes:
        """An unauthenticated Report (RFC 3414 3.2): discovery, unknown user, wrong digest, time window."""
        self.counters.reports += 1
        varbind = _tlv(0x30, encode_oid(oid) + _unsigned(0x41, self.counters.reports))
        pdu = _tlv(REPORT, encode_integer(msg.msg_id) + b"\x02\x01\x00\x02\x01\x00" + _tlv(0x30, varbind))
        return self._wrap(msg, encode_scoped_pdu(self.engine_id, b"", pdu), 0, b"", None)

    def _wrap(self, msg, scoped: bytes, level: int, user: bytes, keys) -> bytes:
        boots, now = self._boots, self._engine_time()
        priv_params = b""
        if level & 2:
            _u, _auth, _ak, priv, priv_key = keys
            ciphertext, priv_params = snmp_usm.encrypt(priv, priv_key, boots, now, self._salt.next(), scoped)
            scoped = _tlv(0x04, ciphertext)
        auth = keys[1] if level & 1 else None
        message, offset = encode_v3_message(msg.msg_id, 65507, level, self.engine_id, boots, now, user,
                                            auth.digest_length if auth else 0, priv_params, scoped)
        if auth is None:
            return bytes(message)
        return snmp_usm.sign(auth, keys[2], message, offset)

    def _answer_v3(self, data: bytes) -> bytes | None:
        msg = decode_v3_message(data)
        level = msg.flags & 3
        if msg.engine_id != self.engine_id:
            return self._report(msg, USM_UNKNOWN_ENGINE_IDS)  # discovery (RFC 3414 4)
        keys = self._users.get(msg.user)
        if keys is None:
            return self._report(msg, USM_UNKNOWN_USER_NAMES)
        _u, auth, auth_key, priv, priv_key = keys
        if level & 1:
            if not snmp_usm.verify(auth, auth_key, data, msg.auth_offset, msg.auth_params):
                return self._report(msg, USM_WRONG_DIGESTS)
            if msg.boots != self._boots or abs(msg.time - self._engine_time()) > 150:
                return self._report(msg, USM_NOT_IN_TIME_WINDOWS)
        if level & 2:
            if priv is None:
                return None
            plain = snmp_usm.decrypt(priv, priv_key, msg.boots, msg.time, msg.priv_params, msg.data)
        else:
            plain = msg.data
        end = len(plain)
        length, pos = _expect(plain, 0, end, 0x30, "scopedPDU")
        end = pos + length  # decrypted DES data may carry padding after it
        elen, pos = _expect(plain, pos, end, 0x04, "contextEngineID")
        pos += elen
        nlen, pos = _expect(plain, pos, end, 0x04, "contextName")
        walk = self._walk(plain[pos:pos + nlen])
        if walk is None:
            return None
        pdu = self._answer_pdu(walk, plain, pos + nlen, end)
        return self._wrap(msg, encode_scoped_pdu(self.engine_id, plain[pos:pos + nlen], pdu), level, msg.user, keys)


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, responder: ReplayResponder):
        self.responder = responder
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr) -> None:
        reply = self.responder.answer(data)
        if reply is not None and self.transport is not None:
            self.transport.sendto(reply, addr)


async def serve(responder: ReplayResponder, port: int = 0, host: str = "127.0.0.1"):
    """Listen; returns (transport, port)."""
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(lambda: _Protocol(responder), local_addr=(host, port))
    return transport, transport.get_extra_info("sockname")[1]


def load_dir(directory: str | os.PathLike) -> dict[str, Agent]:
    """``NAME.snmprec`` (one recording) or ``NAME/*.snmprec`` (epochs, in name order) per agent."""
    agents: dict[str, Agent] = {}
    root = Path(directory)
    for path in sorted(root.iterdir()):
        if path.suffix == ".snmprec":
            agents[path.stem] = Agent([Walk.from_snmprec(path.read_text())])
        elif path.is_dir():
            epochs = [Walk.from_snmprec(p.read_text()) for p in sorted(path.glob("*.snmprec"))]
            if epochs:
                agents[path.name] = Agent(epochs)
    return agents


def _main(argv: list[str] | None = None) -> None:
    import argparse
    import json

    ap = argparse.ArgumentParser(description="SNMP replay agent (v2c community / v3 context = agent name)")
    ap.add_argument("--snmprec-dir", required=True)
    ap.add_argument("--alias", action="append", default=[],
                    help="NAME=RECORDING: serve RECORDING's walks under another name too (many switches, one model)")
    ap.add_argument("--aliases-file", help="JSON {name: recording}")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--listeners", type=int, default=1,
                    help="listen on this many sockets (ports from --port up, or free ones with --port 0), each "
                         "answering every agent: one per switch makes each its own agent address, as in a "
                         "real fabric (the daemon bounds the requests in flight per address and port)")
    ap.add_argument("--port-file", help="write the ports here once listening (space-separated)")
    ap.add_argument("--epoch-seconds", type=float, default=30.0)
    ap.add_argument("--v3-user", action="append", default=[],
                    help="NAME:AUTH:AUTHPASS[:PRIV:PRIVPASS] (e.g. bench:sha:authpass:aes128:privpass)")
    args = ap.parse_args(argv)
    agents = load_dir(args.snmprec_dir)
    aliases = dict(a.split("=", 1) for a in args.alias)
    if args.aliases_file:
        aliases.update(json.loads(Path(args.aliases_file).read_text()))
    for name, recording in aliases.items():
        agents[name] = agents[recording]
    users = []
    for spec in args.v3_user:
        parts = spec.split(":")
        users.append(V3User(parts[0], parts[1], parts[2], *(parts[3:5] if len(parts) >= 5 else ())))
    responder = ReplayResponder(agents, users, args.epoch_seconds)

    async def run() -> None:
        ports = [(await serve(responder, args.port + i if args.port else 0))[1] for i in range(max(1, args.listeners))]
        if args.port_file:
            tmp = Path(args.port_file + ".tmp")
            tmp.write_text(" ".join(map(str, ports)))
            os.replace(tmp, args.port_file)
        await asyncio.Event().wait()

    asyncio.run(run())


__all__ = ["Agent", "ReplayResponder", "V3User", "Walk", "encode_value", "load_dir", "serve"]

if __name__ == "__main__":
    _main()
