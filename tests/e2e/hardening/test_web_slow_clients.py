"""Issue 16 defect 5: slow and idle clients cannot hold the web server.

A real daemon on 127.0.0.1 under a 256-fd limit (prlimit), as the issue's attack ran under 1,024:
300 connections trickle a header byte every 0.5 s while a legitimate client scrapes. Before the
fix the server ran out of descriptors and the scraper got nothing; now the tricklers are cut at the
header timeout or evicted at the connection limit, and every scrape succeeds. Silent connections
and idle keep-alive connections are closed at their timeouts. Every loop is bounded by a deadline.
"""

from __future__ import annotations

import select
import socket
import time
import urllib.request

import pytest
import yaml

from tests.harness.daemon import DaemonProcess
from tests.harness.faultlab import process_status

HEADER_TIMEOUT = 2.0
IDLE_TIMEOUT = 4.0


def _config(tmp_path, web: dict | None = None):
    config = tmp_path / "config.yaml"
    raw = {"targets": [{"name": "local", "fabric": "f1", "collector": "roce_nic", "transport": "local",
                        "interval": "5s", "timeout": "4s", "hosts": ["localhost"]}]}
    if web:
        raw["web"] = web
    config.write_text(yaml.safe_dump(raw))
    return config


@pytest.fixture
def daemon(tmp_path):
    web = {"header_timeout": f"{HEADER_TIMEOUT:g}s", "idle_timeout": f"{IDLE_TIMEOUT:g}s", "max_connections": 64}
    with DaemonProcess(_config(tmp_path, web), wrapper=("prlimit", "--nofile=256:256", "--")) as d:
        d.wait_http(30)
        yield d


def _readable(sock: socket.socket) -> bool:
    poller = select.poll()  # not select(): descriptors above 1023
    poller.register(sock, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(0))


def _closed_by_server(sock: socket.socket) -> bool:
    readable = _readable(sock)
    if not readable:
        return False
    try:
        data = sock.recv(4096)
    except OSError:
        return True
    return data == b"" or data.startswith(b"HTTP/1.1 408")


def test_trickling_clients_do_not_starve_a_scraper(daemon):
    socks: list[socket.socket] = []
    for _ in range(300):
        try:
            s = socket.create_connection(("127.0.0.1", daemon.port), timeout=2)
            s.sendall(b"GET /metrics HTTP/1.1\r\n")
            socks.append(s)
        except OSError:
            break  # refused or reset at the limit: the server's choice
    ok = tries = 0
    closed = 0
    try:
        end = time.monotonic() + 8
        while time.monotonic() < end:
            for s in list(socks):
                try:
                    if _closed_by_server(s):
                        raise OSError("closed")
                    s.sendall(b"X")
                except OSError:
                    closed += 1
                    socks.remove(s)
                    s.close()
            tries += 1
            try:
                with urllib.request.urlopen(daemon.base + "/metrics", timeout=3) as r:
                    ok += r.status == 200 and b"fabric_up" in r.read()
            except OSError:
                pass
            time.sleep(0.5)
        fds = process_status(daemon.proc.pid)["fds"]
    finally:
        for s in socks:
            s.close()
    assert ok == tries, f"legitimate scrapes: {ok}/{tries}"
    assert not socks or closed > 200, f"only {closed} trickling connections were cut"
    assert fds < 64 + 40, f"daemon holds {fds} fds with max_connections 64"


def test_silent_and_idle_connections_are_closed_at_their_timeouts(daemon):
    silent = socket.create_connection(("127.0.0.1", daemon.port), timeout=10)
    idle = socket.create_connection(("127.0.0.1", daemon.port), timeout=10)
    idle.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert idle.recv(4096).startswith(b"HTTP/1.1 200")
    opened = time.monotonic()
    closed_at = {}
    try:
        while len(closed_at) < 2 and time.monotonic() - opened < IDLE_TIMEOUT + 6:
            for name, s in (("silent", silent), ("idle", idle)):
                if name not in closed_at and _closed_by_server(s):
                    closed_at[name] = time.monotonic() - opened
            time.sleep(0.1)
    finally:
        silent.close()
        idle.close()
    assert set(closed_at) == {"silent", "idle"}, closed_at
    assert closed_at["silent"] < HEADER_TIMEOUT + 2
    assert IDLE_TIMEOUT - 1 < closed_at["idle"] < IDLE_TIMEOUT + 3
