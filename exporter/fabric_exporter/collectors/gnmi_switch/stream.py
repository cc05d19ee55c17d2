"""gnmi_switch's stream mode: one long-lived Subscribe STREAM per switch, run by a background task
that keeps the switch's latest values; a poll only reads them. A watchdog resubscribes when no
update came within ``WATCHDOG_INTERVALS`` sample intervals (SONiC's SAMPLE streams have stalled in
releases: sonic-net/sonic-buildimage#22201, #28586); until the new subscription has synced the
polls fail, so the series go stale instead of freezing."""

from __future__ import annotations

import asyncio
from typing import Any

from ...errors import ConnectError, ParseError, PollError, PollTimeoutError, TargetConfigError
from ...parsers import gnmi as p
from .decode import SonicState
from .session import _pb

WATCHDOG_INTERVALS = 3


class GnmiStream:
    """The stream of one switch. ``owner`` is its collector: the dialect's paths, the states to fill
    (``_new_state``, ``_apply``, SONiC's name maps), the session, and ``_state``, the latest state
    the polls read (set at each ``sync_response``, dropped when the stream goes stale)."""

    def __init__(self, owner: Any) -> None:
        self.owner = owner
        self.session = owner.session
        self.sample_interval: float = owner.sample_interval
        self._task: asyncio.Task | None = None
        self._synced = asyncio.Event()
        self._error: PollError | None = None
        self._skipped: list = []
        self.updates = 0
        self.resubscribes = 0
        self.last_update = 0.0

    async def latest(self, remaining: float) -> tuple[Any, list]:
        """The switch's latest state and what was skipped since the last call; starts the stream on
        first use and waits up to ``remaining`` seconds for its first sync."""
        where = self.session.where
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._forever(), name=f"gnmi-{self.owner.switch}")
        if not self._synced.is_set():
            try:
                await asyncio.wait_for(self._synced.wait(), timeout=remaining)
            except TimeoutError:
                raise (self._error or PollTimeoutError(
                    f"{where}: gNMI stream: no sync_response within the poll's deadline")) from None
        state = self.owner._state
        loop = asyncio.get_running_loop()
        if state is None or not self._synced.is_set():
            raise self._error or PollTimeoutError(f"{where}: gNMI stream restarting")
        if self.owner._sampled() and loop.time() - self.last_update > WATCHDOG_INTERVALS * self.sample_interval:
            raise PollTimeoutError(f"{where}: gNMI stream stalled: no update in "
                                   f"{WATCHDOG_INTERVALS} x {self.sample_interval:g}s")
        skipped, self._skipped = self._skipped, []
        return state, skipped

    def _mark_stale(self, error: PollError) -> None:
        self._synced.clear()
        self._error = error
        self.owner._state = None

    async def _forever(self) -> None:
        failures = 0
        while True:
            try:
                await self._once()
                failures = 0
            except asyncio.CancelledError:
                raise
            except PollTimeoutError as e:  # the watchdog: resubscribe at once
                self._mark_stale(e)
                self.resubscribes += 1
                failures = 0
                continue
            except PollError as e:
                self._mark_stale(e)
                failures += 1
            except Exception as e:  # a bug here must not end the stream for good
                self._mark_stale(PollError(f"{self.session.where}: gNMI stream: {type(e).__name__}: {e}",
                                           reason="internal"))
                failures += 1
            self.resubscribes += 1
            # backoff: 0.5 s, 1 s, 2 s ... never more than one sample interval
            await asyncio.sleep(min(self.sample_interval, 0.5 * (2 ** max(0, failures - 1))) if failures else 0)

    async def _once(self) -> None:
        grpc, _, g_grpc = _pb()
        owner, session = self.owner, self.session
        where = session.where
        loop = asyncio.get_running_loop()
        state = owner._new_state()
        skipped: list = []
        if isinstance(state, SonicState) and not owner._maps_loaded:
            await owner._load_maps(state, skipped, timeout=max(5.0, 2 * self.sample_interval))
        groups = owner._groups(owner._paths())
        if len(groups) != 1:
            raise TargetConfigError(f"{where}: a stream subscribes under one target")
        target, paths = next(iter(groups.items()))
        stub = g_grpc.gNMIStub(session.channel())
        call = stub.Subscribe(metadata=session.metadata())
        watchdog = WATCHDOG_INTERVALS * self.sample_interval if owner._sampled() else None
        self.updates = 0
        # The watchdog is one timer, moved on lazily: it fires at the deadline it was last set to and
        # then looks at when the last update came (an asyncio.wait_for per read cost a task per
        # notification, a third of the stream's own CPU). A stall cancels the call, which ends the read.
        stalled = False
        timer: asyncio.TimerHandle | None = None

        def check() -> None:
            nonlocal stalled, timer
            if loop.time() - self.last_update >= watchdog:
                stalled = True
                call.cancel()
            else:
                timer = loop.call_at(self.last_update + watchdog, check)

        self.last_update = loop.time()
        if watchdog is not None:
            timer = loop.call_at(self.last_update + watchdog, check)
        source = owner.dialect.source
        try:
            await call.write(session.request(target, paths, "stream"))
            while True:
                response = await call.read()
                if response is grpc.aio.EOF:
                    raise ConnectError(f"{where}: gNMI stream ended by the target")
                self.last_update = loop.time()
                if response.sync_response:
                    owner._state = state
                    self._error = None
                    self._synced.set()
                    continue
                if response.HasField("update"):
                    try:
                        owner._apply(state, response, skipped)
                    except ParseError as e:
                        p.note(skipped, source, 0, str(e))
                    self.updates += 1
                    if len(skipped) and len(self._skipped) < 1000:
                        self._skipped.extend(skipped)
                    skipped.clear()
        except (asyncio.CancelledError, grpc.aio.AioRpcError) as e:
            task = asyncio.current_task()
            if stalled and not (task is not None and task.cancelling()):
                raise PollTimeoutError(f"{where}: gNMI stream stalled: no update in "
                                       f"{WATCHDOG_INTERVALS} x {self.sample_interval:g}s; resubscribing") from None
            if isinstance(e, asyncio.CancelledError):
                raise
            raise await session.status_error(e) from None
        finally:
            if timer is not None:
                timer.cancel()
            call.cancel()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
