"""HTTP: /metrics, /healthz, /ready and the / status page.

Handlers only read in-memory state: /metrics joins pre-rendered snapshot bytes with the
self-metrics, so it answers in milliseconds even while polls hang. TLS and basic auth follow
Prometheus exporter-toolkit's ``--web.config.file`` format.
"""

from __future__ import annotations

import base64
import gzip
import html
import logging
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path

import bcrypt
import yaml
from aiohttp import web
from prometheus_client import generate_latest

from . import __version__
from .config import ConfigError, load_yaml

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


def _check_basic_auth(request: web.Request, users: dict[str, bytes], cache: dict) -> bool:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Basic "):
        return False
    try:
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return False
    hashed = users.get(user)
    if hashed is None:
        return False
    # bcrypt is deliberately slow (~50 ms); remember successful pairs so scrapes stay cheap.
    token = (user, password)
    if cache.get(token) == hashed:
        return True
    if bcrypt.checkpw(password.encode(), hashed):
        cache.clear()
        cache[token] = hashed
        return True
    return False


# ---------------------------------------------------------------------------------------------
# the app


def build_app(daemon, security: WebSecurity | None = None) -> web.Application:
    security = security or WebSecurity()
    auth_cache: dict = {}

    @web.middleware
    async def guard(request: web.Request, handler):
        if security.users and not _check_basic_auth(request, security.users, auth_cache):
            response = web.Response(status=401, text="Unauthorized\n",
                                    headers={"WWW-Authenticate": 'Basic realm="fabric-exporter"'})
        else:
            response = await handler(request)
        for k, v in security.headers.items():
            response.headers[k] = v
        return response

    async def metrics(request: web.Request) -> web.Response:
        started = time.perf_counter()
        body = daemon.store.render() + generate_latest(daemon.self_registry)
        headers = {"Content-Type": CONTENT_TYPE}
        if "gzip" in request.headers.get("Accept-Encoding", ""):
            body = gzip.compress(body, compresslevel=1)
            headers["Content-Encoding"] = "gzip"
        daemon.last_render_seconds = time.perf_counter() - started
        return web.Response(body=body, headers=headers)

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def ready(request: web.Request) -> web.Response:
        if daemon.scheduler.ready():
            return web.Response(text="ready\n")
        pending = [f"{s.group}/{s.host}" for s in daemon.scheduler.states.values() if not s.tried]
        return web.Response(status=503, text=f"not ready: {len(pending)} target(s) not polled yet\n")

    async def status(request: web.Request) -> web.Response:
        return web.Response(text=status_page(daemon), content_type="text/html")

    app = web.Application(middlewares=[guard])
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/ready", ready)
    app.router.add_get("/", status)
    return app


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
