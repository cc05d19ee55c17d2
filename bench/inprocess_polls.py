"""A config's targets polled in this process, by a Scheduler that starts no tasks of its own: for
the benches that measure one poll itself (its CPU split, what it allocates) with no daemon around it.

    transports, sched, collectors, poll_ok = in_process_polls(cfg)
    await asyncio.gather(*(poll_ok(key, c) for key, c in collectors.items()))
    await transports.close()
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable


def in_process_polls(cfg: Any) -> tuple[Any, Any, dict, Callable[[Any, Any], Awaitable[None]]]:
    """(transports, scheduler, key -> collector, poll_ok): ``poll_ok(key, collector)`` runs one poll
    through the scheduler (deadline, snapshot, store) and raises unless it ended ``ok``, so a
    bench never measures a failing poll as if it were a cheap one. Close the transports after."""
    from fabric_exporter.collectors import PollContext
    from fabric_exporter.scheduler import Scheduler
    from fabric_exporter.serving.store import SnapshotStore
    from fabric_exporter.transport.factory import Transports

    transports = Transports()
    sched = Scheduler(transports, SnapshotStore())
    sched.apply(cfg, start_tasks=False)
    collectors = {key: cls(PollContext(group, host, transports))
                  for key, (group, host, cls) in sched.targets(cfg).items()}

    async def poll_ok(key, collector) -> None:
        state = await sched.poll(key, collector)
        if state.state != "ok":
            raise RuntimeError(f"{key}: {state.state} {state.last_error}")

    return transports, sched, collectors, poll_ok
