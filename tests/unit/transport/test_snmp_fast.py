"""The v2c fast path's request handling against a scripted agent on 127.0.0.1 whose answers are
encoded by pyasn1/pysnmp (not by our codec): request-id matching, source-address check, retries,
garbage, tooBig, non-increasing OIDs, the in-flight bound, cancellation, and the engine option."""

from __future__ import annotations

import asyncio
import socket

import pytest
from pyasn1.codec.ber import decoder, encoder
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.proto.api import v2c

from fabric_exporter.config import Host
from fabric_exporter.errors import PollError, PollTimeoutError
from fabric_exporter.transport import snmp_fast
from fabric_exporter.transport.factory import Transports
from fabric_exporter.transport.snmp import SnmpSession
from fabric_exporter.transport import snmp_dropped
from fabric_exporter.transport.snmp_fast import FastSession

from tests.harness.switch import make_config, run

ROOT = (1, 3, 6, 1, 2, 1, 2, 2, 1, 10)


def response(request_id: int, varbinds, community: bytes = b"public", error_status: int = 0) -> bytes:
    pdu = v2c.ResponsePDU()
    v2c.apiPDU.set_defaults(pdu)
    v2c.apiPDU.set_request_id(pdu, request_id)
    v2c.apiPDU.set_error_status(pdu, error_status)
    v2c.apiPDU.set_varbinds(pdu, varbinds)
    msg = v2c.Message()
    v2c.apiMessage.set_defaults(msg)
    v2c.apiMessage.set_community(msg, community)
    v2c.apiMessage.set_pdu(msg, pdu)
    return encoder.encode(msg)


class Agent(asyncio.DatagramProtocol):
    """Decodes each request with pyasn1 and lets ``handler(agent, pdu, addr)`` answer it."""

    def __init__(self, handler):
        self.handler = handler
        self.requests: list = []
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        msg, _ = decoder.decode(data, asn1Spec=v2c.Message())
        pdu = msg["data"].getComponent()
        self.requests.append(pdu)
        self.handler(self, pdu, addr)

    def send(self, data, addr):
        self.transport.sendto(data, addr)


async def start_agent(handler):
    loop = asyncio.get_running_loop()
    transport, agent = await loop.create_datagram_endpoint(lambda: Agent(handler), local_addr=("127.0.0.1", 0))
    return agent, transport.get_extra_info("sockname")[1]


def session(port, **kw) -> FastSession:
    opts = {"timeout": 0.3, "retries": 1, "max_repetitions": 10, "limiter": asyncio.Semaphore(8), **kw}
    return FastSession(b"public", "127.0.0.1", port, **opts)


def table(n: int):
    return [(ROOT + (i,), rfc1902.Counter32(i * 10)) for i in range(1, n + 1)] + [
        ((1, 3, 6, 1, 2, 1, 2, 2, 1, 11, 1), rfc1902.Counter32(0))]


def bulk_answer(rows, reps_seen=None):
    """A GETBULK responder over ``rows`` (sorted (oid, value)), honouring max-repetitions."""

    def handler(agent, pdu, addr):
        start = tuple(pdu["variable-bindings"][0]["name"])
        reps = int(pdu["max-repetitions"])
        if reps_seen is not None:
            reps_seen.append(reps)
        after = [r for r in rows if r[0] > start][:reps] or [(start, rfc1905.endOfMibView)]
        agent.send(response(int(pdu["request-id"]), after), addr)

    return handler


def test_walk_gets_every_row_and_stops_at_subtree_end():
    async def go():
        agent, port = await start_agent(bulk_answer(table(23)))
        s = session(port)
        try:
            vbs = await s.walk(ROOT)
        finally:
            s.close()
            agent.transport.close()
        return vbs, s

    vbs, s = run(go())
    assert [(vb.oid[-1], vb.kind, vb.value) for vb in vbs] == [(i, "counter32", i * 10) for i in range(1, 24)]
    assert s.requests == 3 and s.varbinds == 23


def test_wrong_request_id_and_foreign_source_are_dropped():
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stranger.bind(("127.0.0.1", 0))

    def handler(agent, pdu, addr):
        rid = int(pdu["request-id"])
        vbs = [((1, 3, 6, 1, 2, 1, 1, 3, 0), rfc1902.TimeTicks(99))]
        stranger.sendto(response(rid, [((1, 3, 6, 1, 2, 1, 1, 3, 0), rfc1902.TimeTicks(666))]), addr)  # spoof
        agent.send(response(rid + 1, [((1, 3, 6, 1, 2, 1, 1, 3, 0), rfc1902.TimeTicks(555))]), addr)
        agent.send(response(rid, vbs, community=b"other"), addr)
        agent.send(b"\x30\x03\x02\x01", addr)  # garbage
        agent.send(response(rid, vbs), addr)

    async def go():
        agent, port = await start_agent(handler)
        s = session(port)
        try:
            got = await s.get([(1, 3, 6, 1, 2, 1, 1, 3, 0)])
            await asyncio.sleep(0.05)
            # a connected socket never hands us another source's datagram; the check behind it still counts
            s._received(response(1, []), ("127.0.0.2", s._peer[1]))
        finally:
            s.close()
            agent.transport.close()
        return got, s

    before = dict(snmp_dropped.DROPPED)
    try:
        got, s = run(go())
    finally:
        stranger.close()
    assert got[(1, 3, 6, 1, 2, 1, 1, 3, 0)].value == 99
    # the spoofed one never reaches us (connected socket) or is dropped; the other three are dropped
    assert s.dropped >= 4
    delta = {r: n - before[r] for r, n in snmp_dropped.DROPPED.items()}
    # the self-metric fabric_snmp_datagrams_dropped_total counts them by reason
    assert delta["unmatched"] >= 1 and delta["rejected"] >= 1 and delta["undecodable"] >= 1
    assert delta["wrong_source"] >= 1
    assert sum(delta.values()) >= s.dropped  # process-wide: other sessions' drops may add to it


def test_retry_resends_and_a_late_answer_counts():
    seen = []

    def handler(agent, pdu, addr):
        seen.append(int(pdu["request-id"]))
        if len(seen) == 2:  # answer only the retry
            agent.send(response(seen[-1], [((1, 3, 6, 1, 2, 1, 1, 3, 0), rfc1902.TimeTicks(7))]), addr)

    async def go():
        agent, port = await start_agent(handler)
        s = session(port, retries=2)
        try:
            return await s.get([(1, 3, 6, 1, 2, 1, 1, 3, 0)])
        finally:
            s.close()
            agent.transport.close()

    got = run(go())
    assert got[(1, 3, 6, 1, 2, 1, 1, 3, 0)].value == 7
    assert len(seen) == 2 and seen[0] == seen[1]  # same request-id on the retry


def test_silence_is_a_timeout_and_garbage_only_is_parse():
    async def go(handler):
        agent, port = await start_agent(handler)
        s = session(port, timeout=0.2, retries=1)
        try:
            await s.get([(1, 3, 6, 1, 2, 1, 1, 3, 0)])
        except PollError as e:
            return e, len(agent.requests)
        finally:
            s.close()
            agent.transport.close()

    e, n = run(go(lambda agent, pdu, addr: None))
    assert isinstance(e, PollTimeoutError) and "no response after 2 requests of 0.2s" in str(e) and n == 2
    e, n = run(go(lambda agent, pdu, addr: agent.send(b"\x30\x84\xff\xff\xff\xff\x02", addr)))
    assert e.reason == "parse" and "no usable response" in str(e) and "truncated" in str(e)


def test_too_big_halves_max_repetitions_and_the_walk_completes():
    reps_seen: list[int] = []
    inner = bulk_answer(table(30), reps_seen)

    def handler(agent, pdu, addr):
        if int(pdu["max-repetitions"]) > 4:
            agent.send(response(int(pdu["request-id"]), [], error_status=1), addr)
        else:
            inner(agent, pdu, addr)

    async def go():
        agent, port = await start_agent(handler)
        s = session(port, max_repetitions=20)
        try:
            return await s.walk(ROOT), s
        finally:
            s.close()
            agent.transport.close()

    vbs, s = run(go())
    assert [vb.oid[-1] for vb in vbs] == list(range(1, 31))
    assert reps_seen and max(reps_seen) <= 4  # 20 -> 10 -> 5 -> 2 after three tooBig answers
    assert s.max_repetitions <= 4  # kept for the next walk


def test_default_pages_take_a_64_row_column_in_one_request_and_a_cut_page_is_asked_on():
    """At the default max-repetitions a 64-port switch's column (65 rows with the one past its end)
    is one round trip once its size is known; an agent cutting a page to its message size (RFC 3416
    4.2.3: fewer varbinds than asked, no error) is asked on from where it stopped."""
    from fabric_exporter.collectors.snmp_switch.options import SnmpSwitchOptions
    from fabric_exporter.transport.snmp import DEFAULT_MAX_REPETITIONS

    assert SnmpSwitchOptions().max_repetitions == DEFAULT_MAX_REPETITIONS == 100
    reps_seen: list[int] = []
    rows = table(64)
    cut: list[int] = []
    whole = bulk_answer(rows, reps_seen)

    def handler(agent, pdu, addr):
        if cut:  # an agent whose message size holds 30 varbinds
            start = tuple(pdu["variable-bindings"][0]["name"])
            reps_seen.append(int(pdu["max-repetitions"]))
            agent.send(response(int(pdu["request-id"]), [r for r in rows if r[0] > start][:30]), addr)
        else:
            whole(agent, pdu, addr)

    async def go():
        agent, port = await start_agent(handler)
        s = session(port, max_repetitions=DEFAULT_MAX_REPETITIONS)
        try:
            first = await s.walk(ROOT)
            requests = s.requests
            sized = await s.walk(ROOT, expected_rows=len(first))
            sized_requests = s.requests - requests
            cut.append(1)
            requests = s.requests
            short = await s.walk(ROOT, expected_rows=len(first))
            return first, sized, sized_requests, short, s.requests - requests
        finally:
            s.close()
            agent.transport.close()

    first, sized, sized_requests, short, short_requests = run(go())
    assert [vb.oid[-1] for vb in first] == [vb.oid[-1] for vb in sized] == [vb.oid[-1] for vb in short] == list(
        range(1, 65))
    # unknown size: 25 then 50 (rows 26-64 and the next column's first); known: 65 in one page
    assert reps_seen[:3] == [25, 50, 65] and sized_requests == 1
    assert short_requests == 3 and reps_seen[3:] == [65, 65, 65]  # 30 + 30 + 4 and the next column's first


def test_big_pages_lost_on_the_way_fall_back_to_fragment_safe_pages_for_the_session():
    """A network that drops IP fragments loses every answer of more than ~1,500 bytes: an agent that
    answered before but not a big page is asked again at FRAGMENT_SAFE_REPETITIONS, kept from then
    on. An agent that never answered gets no second try (its silence is not about page size)."""
    from fabric_exporter.transport.snmp_session import FRAGMENT_SAFE_REPETITIONS

    reps_seen: list[int] = []
    whole = bulk_answer(table(64), reps_seen)

    def handler(agent, pdu, addr):
        if "max-repetitions" not in pdu:  # a GET: small, it arrives
            agent.send(response(int(pdu["request-id"]), [(ROOT + (1,), rfc1902.Counter32(10))]), addr)
        elif int(pdu["max-repetitions"]) <= FRAGMENT_SAFE_REPETITIONS:
            whole(agent, pdu, addr)
        else:
            reps_seen.append(int(pdu["max-repetitions"]))  # answered in fragments that never arrive

    async def go():
        agent, port = await start_agent(handler)
        s = session(port, max_repetitions=100)
        silent = session(port, max_repetitions=100)
        try:
            await s.get([ROOT + (1,)])
            first = await s.walk(ROOT)
            seen = len(reps_seen)
            again = await s.walk(ROOT, expected_rows=len(first))
            with pytest.raises(PollTimeoutError):
                await silent.walk(ROOT, expected_rows=64)  # never answered: the timeout stands
            return first, again, seen, s, silent
        finally:
            s.close()
            silent.close()
            agent.transport.close()

    first, again, seen, s, silent = run(go())
    assert [vb.oid[-1] for vb in first] == [vb.oid[-1] for vb in again] == list(range(1, 65))
    # the first walk: 25 answered, two tries at 50 lost, then 25 + 25; the next one 3 x 22 for 65 rows
    assert reps_seen[:seen] == [25, 50, 50, 25, 25]
    assert reps_seen[seen:] == [22, 22, 22, 65, 65]  # then the silent agent: two tries at 65, no fallback
    assert s.fragment_fallbacks == 1 and s.max_repetitions == FRAGMENT_SAFE_REPETITIONS
    assert s.pages.max_repetitions == FRAGMENT_SAFE_REPETITIONS  # later polls' sessions start there
    assert silent.fragment_fallbacks == 0 and silent.max_repetitions == 100


def test_non_increasing_oid_fails_the_walk_as_partial():
    def handler(agent, pdu, addr):
        agent.send(response(int(pdu["request-id"]), [(ROOT + (5,), rfc1902.Counter32(1)),
                                                      (ROOT + (3,), rfc1902.Counter32(1))]), addr)

    async def go():
        agent, port = await start_agent(handler)
        s = session(port)
        try:
            await s.walk(ROOT)
        except PollError as e:
            return e
        finally:
            s.close()
            agent.transport.close()

    e = run(go())
    assert e.reason == "partial" and "non-increasing OID" in str(e)


def test_in_flight_requests_per_agent_are_bounded_and_cancel_cleans_up():
    peak = {"now": 0, "max": 0}
    held = []

    def handler(agent, pdu, addr):
        peak["now"] += 1
        peak["max"] = max(peak["max"], peak["now"])
        held.append((int(pdu["request-id"]), addr))

    async def release(agent):
        while True:
            await asyncio.sleep(0.05)
            for rid, addr in held[:]:
                held.remove((rid, addr))
                peak["now"] -= 1
                agent.send(response(rid, [((1, 3, 6, 1, 2, 1, 1, 3, 0), rfc1902.TimeTicks(1))]), addr)

    async def go():
        agent, port = await start_agent(handler)
        limiter = asyncio.Semaphore(snmp_fast.MAX_IN_FLIGHT_PER_AGENT)
        sessions = [session(port, timeout=5, limiter=limiter) for _ in range(4)]
        releaser = asyncio.create_task(release(agent))
        try:
            await asyncio.gather(*(s.get([(1, 3, 6, 1, 2, 1, 1, 3, 0)]) for s in sessions for _ in range(6)))
            # a cancelled request leaves nothing pending behind
            task = asyncio.create_task(sessions[0].get([(1, 3, 6, 1, 2, 1, 1, 3, 0)]))
            await asyncio.sleep(0.01)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return [len(s._pending) for s in sessions]
        finally:
            releaser.cancel()
            for s in sessions:
                s.close()
            agent.transport.close()

    pending = run(go())
    assert peak["max"] == snmp_fast.MAX_IN_FLIGHT_PER_AGENT
    assert pending == [0, 0, 0, 0]


@pytest.mark.parametrize("engine,cls", [(None, FastSession), ("fast", FastSession), ("pysnmp", SnmpSession)])
def test_snmp_engine_option_picks_the_path(tmp_path, engine, cls):
    options = {"snmp_engine": engine} if engine else {}
    cfg = make_config(tmp_path, [{"name": "g", "fabric": "lab", "collector": "snmp_switch", "transport": "snmp",
                                  "credentials": "c", "hosts": [{"name": "s1", "address": "127.0.0.1"}],
                                  "options": options}],
                      {"c": {"type": "snmp", "version": "2c", "community": "public"}})
    group = cfg.targets[0]

    async def go():
        t = Transports()
        try:
            return t.snmp(group, Host("s1", "127.0.0.1"))
        finally:
            await t.close()

    assert type(run(go())) is cls


def test_snmp_engine_option_is_validated(tmp_path):
    from fabric_exporter.config import ConfigError

    with pytest.raises(ConfigError, match="snmp_engine"):
        make_config(tmp_path, [{"name": "g", "fabric": "lab", "collector": "snmp_switch", "transport": "snmp",
                                "credentials": "c", "hosts": [{"name": "s1", "address": "127.0.0.1"}],
                                "options": {"snmp_engine": "turbo"}}],
                    {"c": {"type": "snmp", "version": "2c", "community": "public"}})
