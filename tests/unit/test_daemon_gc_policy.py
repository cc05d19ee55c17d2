"""The daemon runs with larger cyclic-GC thresholds (daemon.GC_THRESHOLDS): a young collection per
50,000 net container allocations instead of per 700, because each poll's samples live until the
next poll and the default thresholds made the collector walk them over and over (bench/RESULTS.md,
issue 27). Checked here: the daemon applies them while it runs and gives the embedding process its
own back when it stops, and garbage cycles are still collected within the bound the constant's
comment promises, with no explicit gc.collect()."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest
import yaml

from fabric_exporter.collectors import Collector, register, unregister
from fabric_exporter.daemon import GC_THRESHOLDS, Daemon
from fabric_exporter.samples import PollResult, Sample


class OneSample(Collector):
    name = "test_gc_policy_one_sample"
    transports = ("local",)

    async def poll(self) -> PollResult:
        return PollResult([Sample("fabric_roce_rx_bytes_total", {"host": "localhost", "device": "mlx5_0", "port": "1",
                                                                 "netdev": "eth0"}, 7.0)])


@pytest.fixture
def one_sample_collector():
    register(OneSample)
    yield OneSample
    unregister(OneSample.name)


@pytest.fixture
def daemon_thresholds():
    """The daemon's thresholds in this process, with GC on, for one test."""
    before, was_enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()
    yield
    gc.set_threshold(*before)
    if not was_enabled:
        gc.disable()


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic GC can free it


def test_the_daemon_runs_with_its_thresholds_and_restores_the_previous_ones(tmp_path, one_sample_collector):
    config = tmp_path / "fabric.yaml"
    config.write_text(yaml.safe_dump({"targets": [{
        "name": "one", "fabric": "lab", "collector": OneSample.name, "transport": "local",
        "interval": "30s", "timeout": "5s"}]}))
    before = gc.get_threshold()
    assert before != GC_THRESHOLDS

    async def go():
        daemon = Daemon(str(config), listen_address="127.0.0.1:0")
        run = asyncio.create_task(daemon.run())
        try:
            async with asyncio.timeout(20):
                while not daemon.scheduler.ready():
                    await asyncio.sleep(0.05)
            return gc.get_threshold()
        finally:
            daemon.request_stop()
            await asyncio.wait_for(run, 10)

    try:
        while_running = asyncio.run(go())
    finally:
        gc.unfreeze()  # the daemon froze this test session's objects; collect them as usual again
    assert while_running == GC_THRESHOLDS
    assert gc.get_threshold() == before


def _allocate_containers(n: int) -> list:
    """``n`` net new GC-tracked containers (kept alive, as a poll's samples are until the next poll)."""
    return [[] for _ in range(n)]


def test_a_young_cycle_is_collected_within_the_first_threshold(daemon_thresholds):
    young = GC_THRESHOLDS[0]
    node = Node()
    gone = weakref.ref(node)
    del node
    kept = _allocate_containers(young + 1)  # a young collection is due once the count passes `young`
    assert gone() is None
    del kept


def test_a_cycle_that_outlived_a_young_collection_is_collected_within_the_second(daemon_thresholds):
    young, middle, _ = GC_THRESHOLDS
    gc.collect()  # every generation's count at zero: the arithmetic below is exact
    node = Node()
    gone = weakref.ref(node)
    gc.collect(0)  # it survives, alive, into the middle generation, which young collections skip
    del node
    kept = _allocate_containers(young + 1)
    assert gone() is not None  # one young collection ran and left it
    # the middle generation is collected at the young collection after `middle` of them
    kept += _allocate_containers((young + 1) * middle + 1000)
    assert gone() is None
    del kept
