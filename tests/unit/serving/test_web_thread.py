"""The HTTP server on its own thread: a scrape needs no turn of the daemon's loop, neither for its
pieces nor for its body; /healthz still needs the daemon's loop; binding errors and stop behave."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from fabric_exporter.serving.web import ConnectionGuard, build_app
from fabric_exporter.serving.web_thread import DaemonCall, WebThread

PIECES = [bytes([65 + i % 26]) * (1 << 20) + b"\n" for i in range(48)]  # 48 MB: far past socket buffers


class PiecesDaemon:
    """Hands out PIECES from whichever thread asks, and notes which one did."""

    def __init__(self) -> None:
        self.asked_on: list[int] = []

    def exposition_parts(self, gzip: bool = False) -> list[bytes]:
        self.asked_on.append(threading.get_ident())
        return list(PIECES)


def _get(url: str, out: dict, done: threading.Event | None = None) -> None:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            out["status"], out["body"] = response.status, response.read()
    except (OSError, urllib.error.URLError) as e:
        out["error"] = e
    if done is not None:
        done.set()


async def _serve(daemon, call: DaemonCall) -> WebThread:
    server = WebThread(build_app(daemon, call=call), "127.0.0.1", 0, guard=ConnectionGuard())
    await server.start()
    return server


def test_a_scrape_is_served_whole_while_the_daemon_loop_is_blocked():
    # The daemon's loop (this one) stays blocked, no await, for the whole scrape: neither taking the
    # pieces nor writing the ~48 MB body may wait for a turn of it. At 10k GPUs that loop can be a
    # second behind (bench_cluster), and a scrape that waited for it was as late.
    async def run():
        daemon, call = PiecesDaemon(), DaemonCall(asyncio.get_running_loop())
        server = await _serve(daemon, call)
        out: dict = {}
        done = threading.Event()
        client = threading.Thread(target=_get, args=(f"http://127.0.0.1:{server.bound_port}/metrics", out, done))
        client.start()
        try:
            answered_while_blocked = done.wait(30)
        finally:
            await asyncio.to_thread(client.join, 10)
            await server.stop()
        return daemon, call, out, answered_while_blocked

    daemon, call, out, answered_while_blocked = asyncio.run(run())
    assert "error" not in out, out.get("error")
    assert answered_while_blocked, "the scrape waited for the blocked daemon loop"
    assert out["status"] == 200 and out["body"] == b"".join(PIECES)
    assert call.calls == 0 and daemon.asked_on and threading.get_ident() not in daemon.asked_on


def test_healthz_needs_a_turn_of_the_daemon_loop():
    # A liveness probe must fail when the daemon's loop is stuck, even though the server's own is not.
    async def run():
        call = DaemonCall(asyncio.get_running_loop())
        server = await _serve(None, call)
        out: dict = {}
        answered = threading.Event()
        client = threading.Thread(target=_get, args=(f"http://127.0.0.1:{server.bound_port}/healthz", out, answered))
        try:
            client.start()
            # This (the daemon's) loop stays blocked, no await, until the handler asked for its turn.
            for _ in range(2000):
                if call.calls:
                    break
                time.sleep(0.005)
            asked = call.calls == 1
            answered_while_blocked = answered.wait(0.3)
            await asyncio.to_thread(client.join, 10)
        finally:
            await server.stop()
        return asked, answered_while_blocked, out

    asked, answered_while_blocked, out = asyncio.run(run())
    assert asked
    assert not answered_while_blocked
    assert out.get("status") == 200 and out["body"] == b"ok\n"


def test_a_port_in_use_is_raised_by_start_and_leaves_no_thread():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        async def run():
            server = WebThread(build_app(None), "127.0.0.1", port, guard=ConnectionGuard())
            with pytest.raises(OSError):
                await server.start()
            return server

        server = asyncio.run(run())
        assert not server._thread.is_alive()


def test_stop_closes_the_listener_and_ends_the_thread():
    async def run():
        server = await _serve(None, DaemonCall(asyncio.get_running_loop()))
        port = server.bound_port
        out: dict = {}
        await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/healthz", out)
        await server.stop()
        return server, port, out

    server, port, out = asyncio.run(run())
    assert out["status"] == 200
    assert not server._thread.is_alive()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
