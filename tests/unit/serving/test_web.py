"""fabric_exporter.serving.web: the web config file, the web options, basic auth, the /metrics payload and
the status page. In-process (the real aiohttp app on 127.0.0.1 where a server is needed); the
daemon-process tests of the web server are tests/e2e/hardening/test_web_slow_clients.py (slow and idle
clients under an fd limit), tests/e2e/daemon/test_daemon.py (endpoints, TLS and auth from a web config
file) and tests/e2e/daemon/test_serving.py (gzip bodies read by a real Prometheus). /ready turning 200
is checked with Scheduler.ready() in tests/unit/test_scheduler.py."""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from types import SimpleNamespace

import bcrypt
import pytest
from aiohttp import ClientSession, ClientTimeout
from aiohttp.test_utils import TestServer

from fabric_exporter.serving import web
from fabric_exporter.config import ConfigError
from fabric_exporter.serving.web import PartsPayload, WebSecurity, build_app, load_web_config, status_page
from tests.harness.configs import parse_config

COST = 6

# -- the web config file (--web.config.file) --------------------------------------------------------


def test_duplicate_users_in_the_web_config_are_refused(tmp_path):
    config = tmp_path / "web.yaml"
    config.write_text("basic_auth_users:\n  prom: $2b$12$aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
                      "  prom: $2b$12$bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n")
    with pytest.raises(ConfigError) as e:
        load_web_config(str(config))
    assert e.value.problems == [f"{config}: line 3: duplicate key 'prom' (first given on line 2); remove one of them"]


# -- the ``web:`` options of the main config (what ConnectionGuard is built from) -------------------

def test_web_timeouts_and_limit_are_validated():
    base = {"targets": [{"name": "local", "fabric": "f1", "collector": "roce_nic", "transport": "local",
                         "interval": "5s", "timeout": "4s", "hosts": ["localhost"]}]}
    options = parse_config(base).web
    assert (options.header_timeout, options.idle_timeout, options.max_connections) == (10.0, 60.0, 256)
    for bad in ({"header_timeout": "0s"}, {"idle_timeout": "2h"}, {"max_connections": 2},
                {"max_connections": 10**6}, {"header_timeout": 5}):
        with pytest.raises(ConfigError, match="web\\."):
            parse_config({**base, "web": bad})


# -- basic auth: bcrypt off the event loop, bounded, the same cost for unknown users, a cache that
# serves more than one user (issue 16 defect 4). bcrypt is the real one, observed (which thread, how
# many at once, with which hash) by a wrapper.

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


# -- /metrics: the cached pieces written as one body ------------------------------------------------

def test_a_piece_larger_than_a_write_batch_goes_out_whole_in_slices():
    written: list[bytes] = []

    class Writer:
        async def write(self, chunk) -> None:
            written.append(bytes(chunk))

    big = bytes(range(256)) * ((3 * PartsPayload.BATCH) // 256 + 7)
    parts = [b"head", big, b"tail", b"x" * 10]
    asyncio.run(PartsPayload(parts, "text/plain").write(Writer()))
    assert b"".join(written) == b"".join(parts)
    assert max(map(len, written)) <= PartsPayload.BATCH


# -- the status page (/) ----------------------------------------------------------------------------

def _target(**kw) -> SimpleNamespace:
    fields = {"key": ("g", "h"), "group": "g", "host": "h", "collector": "roce_nic", "fabric": "f", "state": "ok",
              "tried": True, "errors": {}, "last_duration": 0.25, "last_poll_end": None, "last_success": None,
              "samples": 7, "last_error": ""}
    return SimpleNamespace(**{**fields, **kw})


def test_the_status_page_escapes_what_targets_print_and_marks_stale_ones():
    """A host name or an error message is text from config files and remote tools: it is escaped,
    never markup. A target whose data went stale shows "stale", whatever its last state."""
    hostile = _target(key=("g", "x"), host="<script>alert(1)</script>", state="failed",
                      errors={"parse": 2, "connect": 1}, last_error='bad "output" <b>here</b> & more')
    stale = _target(key=("g", "y"), host="gpu-stale")
    fresh = _target(key=("g", "z"), host="gpu-fresh", last_duration=None)
    daemon = SimpleNamespace(
        scheduler=SimpleNamespace(states={t.key: t for t in (fresh, stale, hostile)}),
        store=SimpleNamespace(is_fresh=lambda key: key != ("g", "y")),
        reload_status=SimpleNamespace(successful=False), config_path="/etc/fabric/<x>.yaml")
    page = status_page(daemon)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "bad &quot;output&quot; &lt;b&gt;here&lt;/b&gt; &amp; more" in page
    assert "<td>connect=1, parse=2</td>" in page  # reasons sorted
    assert "<code>/etc/fabric/&lt;x&gt;.yaml</code>; last reload FAILED" in page
    rows = ["<tr class=" + row for row in page.split("<tr class=")[1:]]  # one per target, in one line
    assert [r.split("<td>")[2].split("</td>")[0] for r in rows] == [
        "&lt;script&gt;alert(1)&lt;/script&gt;", "gpu-stale", "gpu-fresh"]  # sorted by key
    assert rows[1].startswith("<tr class=stale>") and "<td>stale</td>" in rows[1]
    assert rows[2].startswith("<tr class=ok>") and "<td>250 ms</td>" not in rows[2] and "<td>-</td>" in rows[2]
    assert "<td>250 ms</td>" in rows[0] and "<td>never</td>" in rows[0]


def test_security_headers_are_set_on_every_answer_even_a_refusal():
    headers = {"X-Frame-Options": "DENY", "Content-Security-Policy": "default-src 'none'"}
    users = {"prom": bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4))}

    async def scenario():
        server = TestServer(build_app(daemon=None, security=WebSecurity(users=users, headers=headers)),
                            host="127.0.0.1")
        await server.start_server()
        try:
            async with ClientSession(timeout=ClientTimeout(total=30)) as s:
                out = []
                for auth in (_auth("prom", "pw"), _auth("prom", "wrong")):
                    async with s.get(server.make_url("/healthz"), headers=auth) as r:
                        out.append((r.status, {k: r.headers.get(k) for k in headers}, await r.text()))
                return out
        finally:
            await server.close()

    ok, refused = asyncio.run(scenario())
    assert ok == (200, headers, "ok\n")
    assert refused == (401, headers, "Unauthorized\n")
