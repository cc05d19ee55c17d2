"""The HTTP server on a thread and event loop of its own, so a scrape is not served in the polls' turns.

On the daemon's loop, a body went out in ~1 MB batches, each waiting for the loop's next turn behind
the polls' callbacks: at 10k GPUs (a saturated loop; 22 MB gzip, ~385 MB plain) a scrape took
p99 2.5 s gzip and 8.5 s plain. Here /metrics takes the exposition's pieces (immutable bytes)
under the store's lock (``Daemon.exposition_parts``; the scheduler holds it while a poll lands),
never waiting for the daemon's loop, which at 10k GPUs can be a second behind. The body is then
written by this thread, which needs only the GIL between socket writes.

/ready and the status page take one turn of the daemon's loop (``DaemonCall``) to read its state;
/healthz takes one too, so it still answers only while the daemon's loop runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ssl
import threading
from typing import Any, Callable

from aiohttp import web

from .web import ConnectionGuard, GuardedSite


class DaemonCall:
    """Runs a function on the daemon's loop from a handler on another loop, and gives its result.

    A function (not a coroutine): it runs in one turn, so what it reads is consistent. A handler
    cancelled while it waits (the client went away) cancels the call if it has not started."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.calls = 0  # turns of the daemon's loop taken: tests count them

    async def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        self.calls += 1
        if asyncio.get_running_loop() is self.loop:
            return fn(*args)
        done: concurrent.futures.Future = concurrent.futures.Future()

        def run() -> None:
            if done.set_running_or_notify_cancel():
                try:
                    done.set_result(fn(*args))
                except BaseException as e:  # noqa: BLE001 - handed to the waiting handler
                    done.set_exception(e)

        self.loop.call_soon_threadsafe(run)
        return await asyncio.wrap_future(done)


class WebThread:
    """An aiohttp app on (host, port) behind a ConnectionGuard, served from a thread of its own."""

    def __init__(self, app: web.Application, host: str | None, port: int, *, guard: ConnectionGuard,
                 ssl_context: ssl.SSLContext | None = None, keepalive_timeout: float = 75.0):
        self.app = app
        self.host = host
        self.port = port
        self.guard = guard
        self.ssl_context = ssl_context
        self.keepalive_timeout = keepalive_timeout
        self.bound_port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    async def start(self) -> int:
        """Bind and serve; the bound port. Raises what binding raised (OSError, ValueError...)."""
        started: concurrent.futures.Future = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._serve, args=(started,), name="fabric-web", daemon=True)
        self._thread.start()
        try:
            self.bound_port = await asyncio.wrap_future(started)
        except BaseException:
            await asyncio.to_thread(self._thread.join, 2.0)
            raise
        return self.bound_port

    def _serve(self, started: concurrent.futures.Future) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            try:
                port = loop.run_until_complete(self._bind())
            except BaseException as e:  # noqa: BLE001 - given to start(), which raises it
                loop.run_until_complete(self._cleanup())
                started.set_exception(e)
                return
            started.set_result(port)
            loop.run_forever()
        finally:
            loop.close()

    async def _bind(self) -> int:
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False,
                                     keepalive_timeout=self.keepalive_timeout)
        await self._runner.setup()
        site = GuardedSite(self._runner, self.host, self.port, guard=self.guard, ssl_context=self.ssl_context)
        await site.start()
        sockets = site._server.sockets if site._server else []  # noqa: SLF001 - aiohttp has no public accessor
        return sockets[0].getsockname()[1] if sockets else self.port

    async def _cleanup(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def stop(self, timeout: float = 1.5) -> None:
        """Close the listener and the connections (within ``timeout``), then end the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        try:
            await asyncio.wait_for(asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._cleanup(), loop)),
                                   timeout)
        finally:
            try:
                loop.call_soon_threadsafe(loop.stop)
            except RuntimeError:  # the loop closed on its own meanwhile
                pass
            await asyncio.to_thread(thread.join, 0.5)
