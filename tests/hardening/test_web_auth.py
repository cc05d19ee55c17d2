"""Issue 16 defect 4: bcrypt off the event loop, bounded, the same cost for unknown users, and a
cache that serves more than one user. The real aiohttp app on 127.0.0.1; bcrypt is the real one,
observed (which thread, how many at once, with which hash) by a wrapper."""

from __future__ import annotations

import asyncio
import base64
import threading
import time

import bcrypt
import pytest
from aiohttp import ClientSession, ClientTimeout
from aiohttp.test_utils import TestServer

from fabric_exporter import web
from fabric_exporter.web import WebSecurity, build_app

COST = 6


@pytest.fixture
def observed_bcrypt(monkeypatch):
    real = bcrypt.checkpw
    calls: list[dict] = []
    running = {"now": 0, "max": 0}
    lock = threading.Lock()

    def checkpw(password: bytes, hashed: bytes) -> bool:
        with lock:
            running["now"] += 1
            running["max"] = max(running["max"], running["now"])
        try:
            calls.append({"thread": threading.get_ident(), "cost": int(hashed.split(b"$")[2]), "hash": hashed})
            time.sleep(0.02)  # long enough for overlapping checks to show
            return real(password, hashed)
        finally:
            with lock:
                running["now"] -= 1

    monkeypatch.setattr(web.bcrypt, "checkpw", checkpw)
    return calls, running


def _users(*names: str) -> dict[str, bytes]:
    return {n: bcrypt.hashpw(f"pw-{n}".encode(), bcrypt.gensalt(rounds=COST)) for n in names}


def _auth(user: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


async def _serve(users):
    server = TestServer(build_app(daemon=None, security=WebSecurity(users=users)), host="127.0.0.1")
    await server.start_server()
    return server


def test_unknown_user_costs_a_bcrypt_check_of_the_same_cost(observed_bcrypt):
    calls, _ = observed_bcrypt

    async def scenario():
        server = await _serve(_users("prom"))
        try:
            async with ClientSession(timeout=ClientTimeout(total=30)) as s:
                for user, password, status in (("prom", "wrong", 401), ("nobody", "wrong", 401),
                                               ("prom", "pw-prom", 200)):
                    async with s.get(server.make_url("/healthz"), headers=_auth(user, password)) as r:
                        assert r.status == status, (user, r.status)
        finally:
            await server.close()

    asyncio.run(scenario())
    assert len(calls) == 3, "an unknown user must cost a bcrypt check too"
    assert {c["cost"] for c in calls} == {COST}


def test_bcrypt_runs_off_the_loop_at_most_two_at_once(observed_bcrypt):
    calls, running = observed_bcrypt

    async def scenario():
        server = await _serve(_users("prom"))
        loop_thread = threading.get_ident()
        try:
            async with ClientSession(timeout=ClientTimeout(total=60)) as s:
                async def attempt(i):
                    async with s.get(server.make_url("/healthz"), headers=_auth("prom", f"wrong{i}")) as r:
                        return r.status
                statuses = await asyncio.gather(*(attempt(i) for i in range(20)))
        finally:
            await server.close()
        return loop_thread, statuses

    loop_thread, statuses = asyncio.run(scenario())
    assert statuses == [401] * 20
    assert len(calls) == 20 and all(c["thread"] != loop_thread for c in calls)
    assert 1 <= running["max"] <= 2


def test_the_cache_serves_several_users_and_never_failures(observed_bcrypt):
    calls, _ = observed_bcrypt

    async def scenario():
        server = await _serve(_users("prom-a", "prom-b", "prom-c"))
        try:
            async with ClientSession(timeout=ClientTimeout(total=30)) as s:
                for _ in range(3):
                    for user in ("prom-a", "prom-b", "prom-c"):
                        async with s.get(server.make_url("/healthz"), headers=_auth(user, f"pw-{user}")) as r:
                            assert r.status == 200
                    async with s.get(server.make_url("/healthz"), headers=_auth("prom-a", "wrong")) as r:
                        assert r.status == 401
        finally:
            await server.close()

    asyncio.run(scenario())
    # One check per user (then cached), and every wrong password checked again.
    assert len(calls) == 3 + 3


def test_too_many_waiting_checks_get_429_not_an_unbounded_queue(observed_bcrypt, monkeypatch):
    original = web.BasicAuth.__init__

    def small(self, users, **kw):
        original(self, users, workers=1, max_pending=3)

    monkeypatch.setattr(web.BasicAuth, "__init__", small)

    async def scenario():
        server = await _serve(_users("prom"))
        try:
            async with ClientSession(timeout=ClientTimeout(total=60)) as s:
                async def attempt(i):
                    async with s.get(server.make_url("/healthz"), headers=_auth("prom", f"wrong{i}")) as r:
                        return r.status
                return await asyncio.gather(*(attempt(i) for i in range(12)))
        finally:
            await server.close()

    statuses = asyncio.run(scenario())
    assert set(statuses) == {401, 429} and statuses.count(401) >= 3
