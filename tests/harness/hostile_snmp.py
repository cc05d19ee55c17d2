"""A hostile SNMPv2c agent on 127.0.0.1: serves a small switch honestly, then misbehaves on purpose.

It speaks just enough BER, with its own few-line encoder (not the exporter's codec, which it tests),
to answer GET and GETBULK. Honest answers come from ``rows`` (sorted (oid, tag, contents)); GETBULK
requests for OIDs under ``under`` (default: every GETBULK) get the ``mode``'s misbehaviour instead:

=====================  ==========================================================================
``honest``             no misbehaviour: the reference answer
``huge_strings``       every GETBULK answered with the next OID under the walked root and an
                       OCTET STRING of ``string_size`` bytes, for ever (a memory bomb)
``no_such_object``     the next OID inside the subtree with a noSuchObject (also ``no_such_instance``,
                       ``end_of_mib_view``): RFC 3416 never puts noSuch* in a GETBULK answer
``repeat_oid``         the requested OID itself again, with a value (non-increasing)
``huge_error_status``  an error-status INTEGER of ``integer_octets`` octets (thousands of digits)
``silent``             no answer at all
``big_answers_lost``   GETBULKs of more than 25 repetitions go unanswered, as on a path that drops
                       IP fragments; smaller ones are answered honestly
=====================  ==========================================================================

``requests`` counts the requests it received (by PDU type name; ``misbehaved``: those it answered
with its misbehaviour), ``bytes_sent`` what it sent back.

Use it in a test's own loop (``agent = await start_agent(...)``), in a thread for code that runs
its own loops (``with ThreadedAgent(...) as agent:``; tests/harness/switch.py's ``hostile_snmp``
fixture), or as a separate process, so its memory is not counted with the client's::

    python -m tests.harness.hostile_snmp huge_strings --port 0   # prints the port, serves until killed
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import threading

# -- just enough BER --------------------------------------------------------------------------------

TAG_INTEGER, TAG_OCTETS, TAG_NULL, TAG_OID = 0x02, 0x04, 0x05, 0x06
TAG_COUNTER32, TAG_GAUGE32, TAG_TIMETICKS, TAG_COUNTER64 = 0x41, 0x42, 0x43, 0x46
NO_SUCH_OBJECT, NO_SUCH_INSTANCE, END_OF_MIB_VIEW = 0x80, 0x81, 0x82
PDU_NAMES = {0xA0: "get", 0xA1: "getnext", 0xA5: "getbulk"}
RESPONSE = 0xA2

MODES = ("honest", "huge_strings", "no_such_object", "no_such_instance", "end_of_mib_view", "repeat_oid",
         "huge_error_status", "silent", "big_answers_lost")
#: ``big_answers_lost``: GETBULKs asking more repetitions than this get no answer
LOST_ABOVE_REPETITIONS = 25
_EXCEPTION_TAG = {"no_such_object": NO_SUCH_OBJECT, "no_such_instance": NO_SUCH_INSTANCE,
                  "end_of_mib_view": END_OF_MIB_VIEW}


def tlv(tag: int, contents: bytes) -> bytes:
    n = len(contents)
    if n < 0x80:
        return bytes((tag, n)) + contents
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes((tag, 0x80 | len(raw))) + raw + contents


def integer(value: int, tag: int = TAG_INTEGER) -> bytes:
    return tlv(tag, value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big", signed=True))


def oid_contents(oid: tuple[int, ...]) -> bytes:
    out = bytearray()
    for arc in (oid[0] * 40 + oid[1], *oid[2:]):
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        out.extend(reversed(chunk))
    return bytes(out)


def varbind(oid: tuple[int, ...], tag: int, contents: bytes) -> bytes:
    return tlv(0x30, tlv(TAG_OID, oid_contents(oid)) + tlv(tag, contents))


def response(community: bytes, request_id: int, varbinds: list[bytes], *, error_status: bytes | None = None,
             error_index: int = 0) -> bytes:
    status = error_status if error_status is not None else integer(0)
    pdu = tlv(RESPONSE, integer(request_id) + status + integer(error_index) + tlv(0x30, b"".join(varbinds)))
    return tlv(0x30, integer(1) + tlv(TAG_OCTETS, community) + pdu)


def _read(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, contents start, contents end) of the TLV at ``pos``; IndexError/ValueError on garbage."""
    tag, first = data[pos], data[pos + 1]
    pos += 2
    if first & 0x80:
        n = first & 0x7F
        if not 0 < n <= 4:
            raise ValueError("length form")
        length = int.from_bytes(data[pos:pos + n], "big")
        pos += n
    else:
        length = first
    if pos + length > len(data):
        raise ValueError("truncated")
    return tag, pos, pos + length


def decode_oid(contents: bytes) -> tuple[int, ...]:
    arcs, value = [], 0
    for b in contents:
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            arcs.append(value)
            value = 0
    first = arcs[0]
    head = (0, first) if first < 40 else (1, first - 40) if first < 80 else (2, first - 80)
    return head + tuple(arcs[1:])


def decode_request(data: bytes) -> tuple:
    """(version, community, pdu type, request-id, non-repeaters, max-repetitions, [oids]) of a request."""
    _, pos, end = _read(data, 0)
    _, vpos, vend = _read(data, pos)
    version = int.from_bytes(data[vpos:vend], "big")
    _, cpos, cend = _read(data, vend)
    community = data[cpos:cend]
    pdu_type, pos, end = _read(data, cend)
    fields = []
    for _ in range(3):
        _, ipos, iend = _read(data, pos)
        fields.append(int.from_bytes(data[ipos:iend], "big", signed=True))
        pos = iend
    _, pos, lend = _read(data, pos)
    oids = []
    while pos < lend:
        _, vbpos, vbend = _read(data, pos)
        _, opos, oend = _read(data, vbpos)
        oids.append(decode_oid(data[opos:oend]))
        pos = vbend
    return version, community, pdu_type, fields[0], fields[1], fields[2], oids


# -- the agent --------------------------------------------------------------------------------------

SYS_UPTIME = (1, 3, 6, 1, 2, 1, 1, 3, 0)
IF_NUMBER = (1, 3, 6, 1, 2, 1, 2, 1, 0)
IF_NAME = (1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 1)
IF_HC_IN_OCTETS = (1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6)


def switch_rows(ports: int = 4, uptime: int = 123_456) -> list[tuple[tuple[int, ...], int, bytes]]:
    """A small honest switch: sysUpTime, ifNumber, ifName and ifHCInOctets of ``ports`` ports."""
    rows = [(SYS_UPTIME, TAG_TIMETICKS, integer(uptime)[2:]), (IF_NUMBER, TAG_INTEGER, integer(ports)[2:])]
    for i in range(1, ports + 1):
        rows.append((IF_NAME + (i,), TAG_OCTETS, f"Ethernet{i}".encode()))
        rows.append((IF_HC_IN_OCTETS + (i,), TAG_COUNTER64, integer(1000 * i)[2:]))
    return sorted(rows)


class HostileAgent(asyncio.DatagramProtocol):
    def __init__(self, mode: str = "honest", *, rows=None, community: bytes = b"public",
                 under: tuple[int, ...] = (), string_size: int = 60_000, integer_octets: int = 2000):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {MODES}")
        self.mode = mode
        self.rows = sorted(rows if rows is not None else switch_rows())
        self.community = community
        self.under = tuple(under)
        self.string_size = string_size
        self.integer_octets = integer_octets
        self.requests: collections.Counter = collections.Counter()
        self.bytes_sent = 0
        self._root_of: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.transport: asyncio.DatagramTransport | None = None

    @property
    def port(self) -> int:
        return self.transport.get_extra_info("sockname")[1]

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr) -> None:
        try:
            version, community, pdu_type, request_id, non_rep, max_reps, oids = decode_request(data)
        except (IndexError, ValueError):
            self.requests["undecodable"] += 1
            return
        self.requests[PDU_NAMES.get(pdu_type, hex(pdu_type))] += 1
        if version != 1 or community != self.community or not oids:
            return  # a v2c agent stays silent on a wrong community
        answer = self.answer(pdu_type, request_id, oids, max_reps)
        if answer is not None:
            self.bytes_sent += len(answer)
            self.transport.sendto(answer, addr)

    # -- what to answer ---------------------------------------------------------------------------

    def answer(self, pdu_type: int, request_id: int, oids: list[tuple[int, ...]], max_reps: int) -> bytes | None:
        if self.mode == "silent":
            return None
        if self.mode == "big_answers_lost" and pdu_type == 0xA5:
            if max_reps > LOST_ABOVE_REPETITIONS:
                self.requests["misbehaved"] += 1
                return None
            return response(self.community, request_id, self.bulk(oids[0], max(1, max_reps)))
        hostile = pdu_type == 0xA5 and oids[0][:len(self.under)] == self.under and self.mode != "honest"
        if hostile:
            self.requests["misbehaved"] += 1
            return self.misbehave(request_id, oids[0])
        if pdu_type == 0xA5:
            return response(self.community, request_id, self.bulk(oids[0], max(1, max_reps)))
        found = dict((oid, (tag, contents)) for oid, tag, contents in self.rows)
        vbs = [varbind(o, *found[o]) if o in found else varbind(o, NO_SUCH_OBJECT, b"") for o in oids]
        return response(self.community, request_id, vbs)

    def bulk(self, start: tuple[int, ...], reps: int) -> list[bytes]:
        after = [r for r in self.rows if r[0] > start][:reps]
        if not after:
            return [varbind(start, END_OF_MIB_VIEW, b"")]
        return [varbind(*r) for r in after]

    def next_oid(self, start: tuple[int, ...]) -> tuple[int, ...]:
        """The row after ``start`` in the walk it continues: rows ROOT.1, ROOT.2, ... of the OID a
        walk first asked for (we remember which root each OID we handed out belongs to)."""
        root = self._root_of.pop(start, start)
        nxt = root + ((start[len(root)] if len(start) > len(root) else 0) + 1,)
        self._root_of[nxt] = root
        return nxt

    def misbehave(self, request_id: int, start: tuple[int, ...]) -> bytes:
        mode = self.mode
        if mode == "huge_strings":
            vb = varbind(self.next_oid(start), TAG_OCTETS, b"x" * self.string_size)
        elif mode in _EXCEPTION_TAG:
            vb = varbind(self.next_oid(start), _EXCEPTION_TAG[mode], b"")
        elif mode == "repeat_oid":
            vb = varbind(start, TAG_COUNTER32, b"\x01")
        else:  # huge_error_status
            status = tlv(TAG_INTEGER, b"\x7f" + b"\xff" * (self.integer_octets - 1))
            return response(self.community, request_id, [varbind(start, TAG_NULL, b"")], error_status=status,
                            error_index=1)
        return response(self.community, request_id, [vb])


async def start_agent(mode: str = "honest", *, port: int = 0, **kw) -> HostileAgent:
    """A HostileAgent listening on 127.0.0.1 (``port`` 0: any free one) in the running loop."""
    loop = asyncio.get_running_loop()
    _, agent = await loop.create_datagram_endpoint(lambda: HostileAgent(mode, **kw), local_addr=("127.0.0.1", port))
    return agent


class ThreadedAgent:
    """A HostileAgent in its own thread and event loop: ``with ThreadedAgent("silent") as agent:``."""

    def __init__(self, mode: str = "honest", **kw):
        self._args = (mode, kw)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="hostile-snmp")
        self.agent: HostileAgent | None = None

    @property
    def port(self) -> int:
        return self.agent.port

    @property
    def requests(self) -> collections.Counter:
        return self.agent.requests

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        self._loop.call_soon_threadsafe(setattr, self.agent, "mode", mode)

    def __enter__(self) -> ThreadedAgent:
        self._thread.start()
        mode, kw = self._args
        self.agent = asyncio.run_coroutine_threadsafe(start_agent(mode, **kw), self._loop).result(5)
        return self

    def __exit__(self, *exc) -> None:
        if self.agent is not None and self.agent.transport is not None:
            self._loop.call_soon_threadsafe(self.agent.transport.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=MODES)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--string-size", type=int, default=60_000)
    ap.add_argument("--counts", help="rewrite this file with the request counts (JSON) every 0.5 s")
    args = ap.parse_args()

    async def serve() -> None:
        agent = await start_agent(args.mode, port=args.port, string_size=args.string_size)
        print(agent.port, flush=True)
        while True:
            await asyncio.sleep(0.5)
            if args.counts:
                with open(args.counts + ".tmp", "w") as f:
                    json.dump(dict(agent.requests), f)
                os.replace(args.counts + ".tmp", args.counts)

    asyncio.run(serve())


if __name__ == "__main__":
    main()
