"""HTTP: /metrics, /healthz, /ready and the / status page.

Handlers only read in-memory state: /metrics joins pre-rendered snapshot bytes with the
self-metrics, so it answers in milliseconds even while polls hang. The daemon serves the app from
a thread of its own (web_thread.py); handlers reach the daemon's state through ``call``. TLS and basic auth follow
Prometheus exporter-toolkit's ``--web.config.file`` format.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import hashlib
import html
import itertools
import logging
import ssl
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import bcrypt
import yaml
from aiohttp import web
from aiohttp.payload import Payload

from .. import __version__
from ..config.strict_yaml import load_yaml
from ..config.model import ConfigError

log = logging.getLogger("fabric_exporter.web")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


# ---------------------------------------------------------------------------------------------
# exporter-toolkit web config


@dataclass
class WebSecurity:
    ssl_context: ssl.SSLContext | None = None
    users: dict[str, bytes] = field(default_factory=dict)  # user -> bcrypt hash
    headers: dict[str, str] = field(default_factory=dict)


_TLS_VERSIONS = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1,
                 "TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = ("NoClientCert", "RequestClientCert", "RequireAnyClientCert",
                "VerifyClientCertIfGiven", "RequireAndVerifyClientCert")


def load_web_config(path: str) -> WebSecurity:
    """Parse an exporter-toolkit web config file. Raises ConfigError with key paths."""
    problems: list[str] = []
    try:
        raw = load_yaml(Path(path).read_text(), aliases=True) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError([f"{path}: {e}"]) from None
    except ConfigError as e:  # duplicate keys (a second user entry would silently win), alias bombs
        raise ConfigError([f"{path}: {problem}" for problem in e.problems]) from None
    if not isinstance(raw, dict):
        raise ConfigError([f"{path}: expected a mapping"])
    base = Path(path).resolve().parent
    for key in raw:
        if key not in ("tls_server_config", "basic_auth_users", "http_server_config"):
            problems.append(f"{key}: unknown key")
    sec = WebSecurity()

    tls = raw.get("tls_server_config")
    if tls:
        known = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version",
                 "cipher_suites", "curve_preferences", "prefer_server_cipher_suites"}
        for key in tls:
            if key not in known:
                problems.append(f"tls_server_config.{key}: unknown key")
        cert, key_file = tls.get("cert_file"), tls.get("key_file")
        if not cert or not key_file:
            problems.append("tls_server_config: cert_file and key_file are required")
        else:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            try:
                ctx.load_cert_chain(base / cert, base / key_file)
            except (OSError, ssl.SSLError) as e:
                problems.append(f"tls_server_config: cannot load certificate/key: {e}")
            for k, attr in (("min_version", "minimum_version"), ("max_version", "maximum_version")):
                if k in tls:
                    if tls[k] not in _TLS_VERSIONS:
                        problems.append(f"tls_server_config.{k}: one of {', '.join(_TLS_VERSIONS)}")
                    else:
                        setattr(ctx, attr, _TLS_VERSIONS[tls[k]])
            auth = tls.get("client_auth_type", "NoClientCert")
            if auth not in _CLIENT_AUTH:
                problems.append(f"tls_server_config.client_auth_type: one of {', '.join(_CLIENT_AUTH)}")
            elif auth != "NoClientCert":
                ctx.verify_mode = ssl.CERT_REQUIRED if auth.startswith("Require") else ssl.CERT_OPTIONAL
                ca = tls.get("client_ca_file")
                if ca:
                    try:
                        ctx.load_verify_locations(base / ca)
                    except (OSError, ssl.SSLError) as e:
                        problems.append(f"tls_server_config.client_ca_file: {e}")
                elif "Verify" in auth:
                    problems.append("tls_server_config.client_ca_file: required to verify client certificates")
            sec.ssl_context = ctx

    users = raw.get("basic_auth_users") or {}
    if not isinstance(users, dict):
        problems.append("basic_auth_users: expected a mapping of user to bcrypt hash")
    else:
        for user, hashed in users.items():
            if not isinstance(hashed, str) or not hashed.startswith(("$2a$", "$2b$", "$2y$")):
                problems.append(f"basic_auth_users.{user}: expected a bcrypt hash")
            else:
                sec.users[str(user)] = hashed.encode()

    http_cfg = raw.get("http_server_config") or {}
    for key in http_cfg:
        if key not in ("headers", "http2"):
            problems.append(f"http_server_config.{key}: unknown key")
    headers = http_cfg.get("headers") or {}
    if not isinstance(headers, dict):
        problems.append("http_server_config.headers: expected a mapping")
    else:
        sec.headers = {str(k): str(v) for k, v in headers.items()}
    if problems:
        raise ConfigError([f"{path}: {p}" for p in problems])
    return sec


class BasicAuth:
    """exporter-toolkit basic auth without letting bcrypt stall the server or reveal user names.

    - bcrypt (~50-250 ms by design) runs on worker threads (the bcrypt package releases the GIL),
      at most ``workers`` at once; at most ``max_pending`` more wait, beyond that a request is
      answered 429 at once instead of queueing without bound. The event loop never runs bcrypt.
    - An unknown user is checked against a dummy hash of the same cost, so a wrong user and a
      wrong password take the same time (no user enumeration by timing).
    - Successful checks are remembered (LRU of ``cache_size``) under sha256(user, password, hash):
      every legitimate scraper (several Prometheus servers, several users) is served from the
      cache; the key holds no password, and a changed hash (reload) no longer matches. Failures
      are never cached, so a storm of wrong passwords cannot evict anyone.
    """

    def __init__(self, users: dict[str, bytes], *, workers: int = 2, max_pending: int = 128,
                 cache_size: int = 128):
        self.users = users
        self.workers = workers
        self.max_pending = max_pending
        self.cache_size = cache_size
        self._cache: OrderedDict[bytes, None] = OrderedDict()
        self._pool: ThreadPoolExecutor | None = None
        self._slots: asyncio.Semaphore | None = None
        self._pending = 0
        costs = [int(h.split(b"$")[2]) for h in users.values()] or [10]
        self._dummy = bcrypt.hashpw(b"fabric-exporter-dummy", bcrypt.gensalt(rounds=max(4, max(costs))))

    @staticmethod
    def credentials(request: web.Request) -> tuple[str, str] | None:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return None
        try:
            user, sep, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        return (user, password) if sep else None

    async def check(self, request: web.Request) -> bool | None:
        """True/False; None when too many checks are already waiting (answer 429)."""
        creds = self.credentials(request)
        if creds is None:
            return False
        user, password = creds
        hashed = self.users.get(user)
        key = hashlib.sha256(b"\0".join((user.encode(), password.encode(), hashed or b""))).digest()
        if hashed is not None and key in self._cache:
            self._cache.move_to_end(key)
            return True
        if self._pending >= self.max_pending:
            return None
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.workers)
            self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="fabric-bcrypt")
        self._pending += 1
        try:
            async with self._slots:
                ok = await asyncio.get_running_loop().run_in_executor(
                    self._pool, bcrypt.checkpw, password.encode(), hashed or self._dummy)
        finally:
            self._pending -= 1
        if not ok or hashed is None:
            return False
        self._cache[key] = None
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return True

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


# ---------------------------------------------------------------------------------------------
# connections: header timeout, idle timeout, a connection limit that keeps room for scrapes


class ConnectionGuard:
    """Slow clients cannot hold the server (the slowloris attack; aiohttp has no header timeout).

    - ``header_timeout``: from the moment a connection opens, or the first byte of its next request,
      the whole request head (up to the blank line) must arrive within this; else 408 and close.
      A silent connection is closed at the same deadline.
    - ``idle_timeout``: aiohttp's keep-alive timeout: a connection between requests is closed after it.
    - ``max_connections``: past the limit, within a quarter second, the connections that have been
      sending their headers longest (tricklers: part of a head and not the rest) are closed, else
      the longest idle (nothing received for 5 s), else the longest silent. Newcomers get that
      quarter second to send their request, so a scraper is never mistaken for a trickler. A quarter
      over the limit, a newcomer evicts at once or (every connection busy) is refused. So a scraper
      that sends its request at once always gets a slot, and file descriptors stay bounded.
    The TLS handshake is bounded by ``header_timeout`` too (asyncio's ssl_handshake_timeout).
    """

    def __init__(self, header_timeout: float = 10.0, idle_timeout: float = 60.0, max_connections: int = 256):
        self.header_timeout = header_timeout
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.connections: set[_GuardedProtocol] = set()
        self.evicted = 0
        self.refused = 0
        self._sweep: asyncio.TimerHandle | None = None
        self.header_timeouts = 0

    def wrap(self, factory):
        return lambda: _GuardedProtocol(factory(), self)

    def admit(self, conn: _GuardedProtocol) -> bool:
        # Over max_connections a newcomer is let in for a moment (up to a quarter more): its request
        # is not read yet, so a scraper and a trickler look alike now, but not 0.25 s later.
        loop = conn._loop
        if len(self.connections) >= self.max_connections + max(8, self.max_connections // 4):
            victim = self._victim(loop.time(), grace=0.0)
            if victim is None:
                self.refused += 1
                return False
            self.evicted += 1
            victim.drop()
        self.connections.add(conn)
        if len(self.connections) > self.max_connections and self._sweep is None:
            self._sweep = loop.call_later(0.25, self._trim, loop)
        return True

    def _trim(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sweep = None
        while len(self.connections) > self.max_connections:
            victim = self._victim(loop.time(), grace=0.25)
            if victim is None:
                break
            self.evicted += 1
            victim.drop()
        if len(self.connections) > self.max_connections:
            self._sweep = loop.call_later(0.25, self._trim, loop)

    def _victim(self, now: float, grace: float) -> _GuardedProtocol | None:
        heading = [c for c in self.connections if c.head_started is not None and now - c.head_started >= grace]
        trickling = [c for c in heading if c.received]
        if trickling:  # sent part of a request head and not the rest
            return min(trickling, key=lambda c: c.head_started)
        idle = [c for c in self.connections if c.head_started is None and now - c.last_received > 5.0]
        if idle:
            return min(idle, key=lambda c: c.last_received)
        return min(heading, key=lambda c: c.head_started) if heading else None  # silent


class _GuardedProtocol(asyncio.Protocol):
    """Wraps aiohttp's per-connection protocol, watching the bytes that come in."""

    def __init__(self, inner: asyncio.Protocol, guard: ConnectionGuard):
        self.inner = inner
        self.guard = guard
        self._loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.head_started: float | None = None  # set while a request head is still arriving
        self.last_received = self._loop.time()
        self.received = 0  # bytes of the request head now arriving
        self._tail = b""  # the last 3 bytes seen, to find a blank line split across reads
        self._timer: asyncio.TimerHandle | None = None

    # -- asyncio.Protocol ----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if not self.guard.admit(self):
            transport.abort()  # type: ignore[attr-defined]
            self.transport = None
            return
        self._start_head()
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.transport is None:
            return
        self.last_received = self._loop.time()
        if self.head_started is None:
            self._start_head()
        self.received += len(data)
        # Look for the end of the head; bytes after it start the next request (GETs carry no body).
        seen = self._tail + data
        end = seen.rfind(b"\r\n\r\n")
        if end >= 0:
            rest = seen[end + 4:]
            if rest.strip(b"\r\n"):
                self._start_head(restart=True)
            else:
                self._end_head()
        self._tail = seen[-3:]
        self.inner.data_received(data)

    def eof_received(self):
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._end_head()
        self.guard.connections.discard(self)
        if self.transport is not None:
            self.transport = None
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    # -- the header deadline -------------------------------------------------------------------------

    def _start_head(self, restart: bool = False) -> None:
        if self._timer is not None and not restart:
            return
        if self._timer is not None:
            self._timer.cancel()
        self.head_started = self._loop.time()
        self.received = 0
        self._timer = self._loop.call_later(self.guard.header_timeout, self._head_timed_out)

    def _end_head(self) -> None:
        self.head_started = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _head_timed_out(self) -> None:
        self._timer = None
        self.guard.header_timeouts += 1
        if self.transport is not None and not self.transport.is_closing():
            try:
                self.transport.write(b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n"
                                     b"Content-Length: 0\r\n\r\n")
            except (OSError, RuntimeError):
                pass
        self.drop()

    def drop(self) -> None:
        self._end_head()
        self.guard.connections.discard(self)
        if self.transport is not None:
            self.transport.close()  # flushes the 408, then connection_lost reaches aiohttp


class GuardedSite(web.TCPSite):
    """aiohttp's TCPSite with every connection passing through a ConnectionGuard."""

    def __init__(self, runner: web.AppRunner, host: str | None, port: int, *, guard: ConnectionGuard,
                 ssl_context: ssl.SSLContext | None = None, reuse_address: bool = True):
        super().__init__(runner, host, port, ssl_context=ssl_context, reuse_address=reuse_address)
        self.guard = guard

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site with its runner
        loop = asyncio.get_running_loop()
        server = self._runner.server
        assert server is not None
        extra = {"ssl_handshake_timeout": self.guard.header_timeout} if self._ssl_context else {}
        self._server = await loop.create_server(self.guard.wrap(server), self._host, self._port,
                                                ssl=self._ssl_context, backlog=self._backlog,
                                                reuse_address=self._reuse_address, **extra)
        sockets = self._server.sockets or ()
        self._bound_port = sockets[0].getsockname()[1] if sockets else self._port


# ---------------------------------------------------------------------------------------------
# the app


class PartsPayload(Payload):
    """A body written straight from its pieces in ~1 MB batches: no copy of the whole exposition
    (200+ MB at 1.6M samples) and memory bounded by the socket's write buffer, not the body."""

    _autoclose = True
    BATCH = 1 << 20

    def __init__(self, parts: list[bytes], content_type: str):
        super().__init__(parts, content_type=content_type)
        self._size = sum(map(len, parts))  # Content-Length: a scrape can tell a cut-off body

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return b"".join(self._value).decode(encoding, errors)

    async def write(self, writer) -> None:
        parts = self._value
        # Batch boundaries from the cumulative sizes, found in C (accumulate, bisect): at 10k targets
        # there are ~100k pieces, too many for a Python loop per piece on every scrape.
        ends = list(itertools.accumulate(map(len, parts)))
        start = 0
        while start < len(parts):
            limit = (ends[start - 1] if start else 0) + self.BATCH
            stop = bisect.bisect_right(ends, limit, lo=start)
            if stop > start:
                await writer.write(b"".join(parts[start:stop]))
            else:  # one piece larger than a batch (a family's joined gzip members): in slices, no copy
                view = memoryview(parts[start])
                for offset in range(0, len(view), self.BATCH):
                    await writer.write(view[offset:offset + self.BATCH])
                stop = start + 1
            start = stop


def build_app(daemon, security: WebSecurity | None = None, call=None) -> web.Application:
    """The app. ``call(fn, *args)`` runs ``fn`` where the daemon's state lives (its loop: see
    web_thread.DaemonCall) and gives its result; by default here, on the loop that serves."""
    security = security or WebSecurity()
    call = call or _call_here
    auth = BasicAuth(security.users) if security.users else None

    @web.middleware
    async def guard(request: web.Request, handler):
        allowed = True if auth is None else await auth.check(request)
        if allowed is None:
            response = web.Response(status=429, text="Too many authentication attempts in progress\n",
                                    headers={"Retry-After": "1"})
        elif not allowed:
            response = web.Response(status=401, text="Unauthorized\n",
                                    headers={"WWW-Authenticate": 'Basic realm="fabric-exporter"'})
        else:
            response = await handler(request)
        for k, v in security.headers.items():
            response.headers[k] = v
        return response

    async def metrics(request: web.Request) -> web.Response:
        # A join of bytes rendered (and gzip members compressed) when the polls landed.
        compressed = "gzip" in request.headers.get("Accept-Encoding", "")
        headers = {"Content-Type": CONTENT_TYPE}
        if compressed:
            headers["Content-Encoding"] = "gzip"
        # Here, not in a turn of the daemon's loop: exposition_parts takes the store's lock.
        parts = daemon.exposition_parts(compressed)
        return web.Response(body=PartsPayload(parts, CONTENT_TYPE), headers=headers)

    async def healthz(request: web.Request) -> web.Response:
        await call(_alive)  # alive = the daemon's loop takes turns, not only this server's
        return web.Response(text="ok\n")

    async def ready(request: web.Request) -> web.Response:
        pending = await call(_not_polled, daemon)
        if pending is None:
            return web.Response(text="ready\n")
        return web.Response(status=503, text=f"not ready: {pending} target(s) not polled yet\n")

    async def status(request: web.Request) -> web.Response:
        return web.Response(text=await call(status_page, daemon), content_type="text/html")

    app = web.Application(middlewares=[guard])
    if auth is not None:
        app.on_cleanup.append(lambda _app: _close_auth(auth))
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/ready", ready)
    app.router.add_get("/", status)
    return app


async def _call_here(fn, *args):
    return fn(*args)


def _alive() -> None:
    return None


def _not_polled(daemon) -> int | None:
    """None when ready, else how many targets were never polled."""
    if daemon.scheduler.ready():
        return None
    return sum(1 for s in daemon.scheduler.states.values() if not s.tried)


async def _close_auth(auth: BasicAuth) -> None:
    auth.close()


def _ago(ts: float | None, now: float) -> str:
    return "never" if ts is None else f"{now - ts:.1f}s ago"


def status_page(daemon) -> str:
    now = time.time()
    rows = []
    for s in sorted(daemon.scheduler.states.values(), key=lambda s: s.key):
        fresh = daemon.store.is_fresh(s.key)
        shown = s.state if fresh or not s.tried else "stale"
        errors = ", ".join(f"{r}={n}" for r, n in sorted(s.errors.items())) or "-"
        duration = "-" if s.last_duration is None else f"{s.last_duration * 1000:.0f} ms"
        rows.append(
            f"<tr class={shown}><td>{html.escape(s.group)}</td><td>{html.escape(s.host)}</td>"
            f"<td>{html.escape(s.collector)}</td><td>{html.escape(s.fabric)}</td><td>{shown}</td>"
            f"<td>{_ago(s.last_poll_end, now)}</td><td>{_ago(s.last_success, now)}</td><td>{duration}</td>"
            f"<td>{s.samples}</td><td>{html.escape(errors)}</td><td>{html.escape(s.last_error)}</td></tr>")
    reload = daemon.reload_status
    config = daemon.config_path
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>fabric-exporter</title>
<style>
body{{font-family:system-ui,sans-serif;margin:1.5em}} table{{border-collapse:collapse;font-size:90%}}
td,th{{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}}
tr.ok td:nth-child(5){{color:#070}} tr.failed td:nth-child(5),tr.stale td:nth-child(5){{color:#b00;font-weight:bold}}
tr.partial td:nth-child(5){{color:#a60}}
</style></head><body>
<h1>fabric-exporter {html.escape(__version__)}</h1>
<p>Config <code>{html.escape(str(config))}</code>; last reload {'succeeded' if reload.successful else 'FAILED'}.
<a href="/metrics">/metrics</a> · <a href="/healthz">/healthz</a> · <a href="/ready">/ready</a></p>
<table><tr><th>group</th><th>host</th><th>collector</th><th>fabric</th><th>state</th><th>last poll</th>
<th>last success</th><th>duration</th><th>samples</th><th>errors</th><th>last error</th></tr>
{''.join(rows)}
</table></body></html>
"""
