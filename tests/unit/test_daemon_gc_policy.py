"""The daemon runs the cyclic GC's passes on a clock (gcpacing.GcPacer) with thresholds that only
ever start a young pass (PACED_THRESHOLDS): counted by net allocations, passes came rarely and
walked everything made since, holding the loop 0.3-0.75 s at 10k GPUs (bench/RESULTS.md, issue 27).
Checked here: the daemon applies the thresholds and runs the pacer while it runs and gives the
embedding process its own thresholds back when it stops; the pacer's schedule; and garbage cycles
are collected within the bounds the module promises: a young one within one young period, one that
outlived a young pass at the next middle pass, one that outlived a middle pass at the full pass."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest
import yaml

from fabric_exporter.collectors import Collector, register, unregister
from fabric_exporter.daemon import Daemon
from fabric_exporter.gcpacing import PACED_THRESHOLDS, GcPacer
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
    gc.set_threshold(*PACED_THRESHOLDS)
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
    assert before != PACED_THRESHOLDS

    async def go():
        daemon = Daemon(str(config), listen_address="127.0.0.1:0")
        run = asyncio.create_task(daemon.run())
        try:
            async with asyncio.timeout(20):
                while not daemon.scheduler.ready():
                    await asyncio.sleep(0.05)
            await asyncio.sleep(1.2)  # one young period: the pacer has run a pass
            return gc.get_threshold(), list(daemon.gc_pacer.passes)
        finally:
            daemon.request_stop()
            await asyncio.wait_for(run, 10)

    try:
        while_running, passes = asyncio.run(go())
    finally:
        gc.unfreeze()  # the daemon froze this test session's objects; collect them as usual again
    assert while_running == PACED_THRESHOLDS and passes[0] >= 1
    assert gc.get_threshold() == before


def _allocate_containers(n: int) -> list:
    """``n`` net new GC-tracked containers (kept alive, as a poll's samples are until the next poll)."""
    return [[] for _ in range(n)]


def test_a_young_cycle_is_still_collected_within_the_first_threshold(daemon_thresholds):
    young = PACED_THRESHOLDS[0]
    node = Node()
    gone = weakref.ref(node)
    del node
    kept = _allocate_containers(young + 1)  # a young collection is due once the count passes `young`
    assert gone() is None
    del kept


def test_allocations_alone_never_start_a_middle_or_full_pass(daemon_thresholds):
    """Those are the long ones (everything promoted since the last): only the pacer runs them."""
    young = PACED_THRESHOLDS[0]
    gc.collect()
    node = Node()
    gone = weakref.ref(node)
    gc.collect(0)  # it survives, alive, into the middle generation
    del node
    kept = _allocate_containers((young + 1) * 30)  # 30 young passes: 3 middle ones at CPython's 10
    assert gone() is not None
    del kept


def test_the_pacer_runs_young_passes_a_middle_one_every_n_and_a_full_one_on_its_clock():
    pacer = GcPacer(middle_every=5)
    assert [pacer.generation_due(tick, False) for tick in range(1, 11)] == [0, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    assert pacer.generation_due(3, True) == 2 and pacer.generation_due(5, True) == 2


def test_the_pacer_collects_each_cycle_within_its_bound(daemon_thresholds):
    """A cycle that dies young goes at the first (young) pass, one that outlived a young pass at the
    first middle pass, one that outlived a middle pass only at the full pass, when its clock says so.
    (The test allocates too little for an allocation-started young pass to come between.)"""
    died: dict[str, int] = {}
    running: list[int] = []  # the generation of the pass under way

    def on_pass(phase, info):
        if phase == "start":
            running[:] = [info["generation"]]

    async def scenario() -> bool:
        now = [0.0]
        pacer = GcPacer(young_every=0.01, middle_every=3, full_every=100.0, clock=lambda: now[0])

        async def until(done) -> None:
            async with asyncio.timeout(10):
                while not done():
                    await asyncio.sleep(0.002)

        gc.collect()
        old, middle, young = Node(), None, None
        gc.collect(1)  # `old` survives a middle pass: the old generation
        middle = Node()
        gc.collect(0)  # `middle` survives a young pass: the middle generation
        young = Node()
        # held here: a weakref inside the garbage would be cleared without its callback
        refs = [weakref.ref(node, lambda _ref, name=name: died.setdefault(name, running[0]))
                for name, node in (("old", old), ("middle", middle), ("young", young))]
        del old, middle, young
        task = asyncio.create_task(pacer.run())
        try:
            await until(lambda: pacer.passes[1] >= 2)  # two middle passes, no full one yet
            old_alive = "old" not in died and pacer.passes[2] == 0
            now[0] = 1000.0
            await until(lambda: pacer.passes[2] >= 1)
            return old_alive and all(r() is None for r in refs)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    gc.callbacks.append(on_pass)
    try:
        old_alive = asyncio.run(scenario())
    finally:
        gc.callbacks.remove(on_pass)
    assert old_alive
    assert died == {"young": 0, "middle": 1, "old": 2}
