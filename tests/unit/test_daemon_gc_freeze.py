"""The daemon freezes its long-lived objects out of the cyclic GC (daemon.freeze_long_lived): at
start-up, and again once every target was polled, so that a full collection does not walk the
modules, config and collectors' tables while a scrape waits (bench/bench_gnmi.py --scrape-p99)."""

from __future__ import annotations

import asyncio
import gc

import pytest
import yaml

from fabric_exporter.collectors import Collector, register, unregister
from fabric_exporter import daemon as daemon_module
from fabric_exporter.daemon import Daemon
from fabric_exporter.samples import PollResult, Sample


class SlowFirstPoll(Collector):
    """Answers one sample after a second: what its first poll builds exists only after the
    start-up freeze."""

    name = "test_slow_first_poll"
    transports = ("local",)

    async def poll(self) -> PollResult:
        await asyncio.sleep(1.0)
        return PollResult([Sample("fabric_roce_rx_bytes_total", {"host": "localhost", "device": "mlx5_0", "port": "1",
                                                                 "netdev": "eth0"}, 7.0)])


@pytest.fixture
def slow_collector():
    register(SlowFirstPoll)
    yield SlowFirstPoll
    unregister(SlowFirstPoll.name)


def _tracked(obj) -> bool:
    """Is ``obj`` in one of the collector's generations (frozen objects are in none)?"""
    return any(o is obj for gen in range(3) for o in gc.get_objects(generation=gen))


def test_long_lived_objects_are_frozen_at_start_and_once_every_target_was_polled(tmp_path, slow_collector,
                                                                               monkeypatch):
    config = tmp_path / "fabric.yaml"
    config.write_text(yaml.safe_dump({"targets": [{
        "name": "slow", "fabric": "lab", "collector": SlowFirstPoll.name, "transport": "local",
        "interval": "30s", "timeout": "5s"}]}))
    freezes: list[tuple[int, bool, int]] = []  # (snapshots in the store, states still tracked, frozen after)
    real_freeze = daemon_module.freeze_long_lived

    async def go():
        daemon = Daemon(str(config), listen_address="127.0.0.1:0")

        def recording_freeze() -> int:
            states = daemon.scheduler.states
            snapshots = len(daemon.store._snapshots)  # noqa: SLF001
            frozen = real_freeze()
            freezes.append((snapshots, bool(states) and _tracked(states), frozen))
            return frozen

        monkeypatch.setattr(daemon_module, "freeze_long_lived", recording_freeze)
        run = asyncio.create_task(daemon.run())
        try:
            async with asyncio.timeout(20):
                while len(freezes) < 2:
                    await asyncio.sleep(0.05)
                snapshot = next(iter(daemon.store._snapshots.values()))  # noqa: SLF001
                return _tracked(snapshot)
        finally:
            daemon.request_stop()
            await asyncio.wait_for(run, 10)

    try:
        snapshot_tracked = asyncio.run(go())
    finally:
        gc.unfreeze()  # the rest of the test session collects as usual
    (at_start, at_ready) = freezes[:2]
    # at start-up: before the first poll's snapshot (the poll takes a second), the states frozen
    assert at_start[0] == 0 and not at_start[1] and at_start[2] > 1000
    # once every target was polled: the snapshot exists, and is frozen by this second freeze
    assert at_ready[0] == 1 and at_ready[2] > at_start[2]
    assert not snapshot_tracked
