"""Fixtures for the InfiniBand tests: a simulated fat tree (ibsim + opensm, real infiniband-diags) per
test module, and helpers to build the collector against it and read its samples.

The fixtures apply where they are imported: tests/e2e/infiniband/conftest.py for that folder, and
the few modules elsewhere that poll a CollectorHarness. Not in tests/conftest.py: the two autouse
ones would then wrap every test of the suite."""

from __future__ import annotations

import asyncio
import os
import shutil

import pytest

from fabric_exporter.collectors.base import PollContext
from fabric_exporter.collectors.infiniband import InfinibandCollector
from tests.harness.configs import parse_config
from fabric_exporter.lab.ibsim import FatTree, IbsimFabric
from fabric_exporter.serving.exposition import verify_enabled
from fabric_exporter.samples import PollResult
from fabric_exporter.serving.store import build_snapshot
from fabric_exporter.transport.factory import Transports

needs_ibsim = pytest.mark.skipif(shutil.which("ibsim") is None or shutil.which("ibqueryerrors") is None,
                                 reason="ibsim-utils/infiniband-diags not installed")

# 5 switches, 6 HCAs; leaf-01 port 3 <-> spine-01 port 1 enabled at 4x only (a degraded link).
LAB_TOPOLOGY = dict(spines=2, leaves=3, hcas_per_leaf=2, degraded=(("leaf-01", 3),))


def make_fabric(tmp_path_factory, name: str) -> IbsimFabric:
    topo = FatTree(**LAB_TOPOLOGY)
    return IbsimFabric(topo, tmp_path_factory.mktemp(name), sockname=f"fx{os.getpid()}{name}")


@pytest.fixture(scope="module")
def fabric(tmp_path_factory, request):
    if shutil.which("ibsim") is None:
        pytest.skip("ibsim not installed")
    f = make_fabric(tmp_path_factory, request.module.__name__.rsplit(".", 1)[-1][:12])
    f.start()
    try:
        yield f
    finally:
        f.stop()


def group_for(options: dict, *, transport: str = "local", timeout: str = "20s", host: str | None = None,
              credentials: dict | None = None):
    raw = {"name": "ib", "fabric": "lab", "collector": "infiniband", "transport": transport,
           "interval": "30s", "timeout": timeout, "options": options}
    top: dict = {"targets": [raw]}
    if host is not None:
        raw["hosts"] = [host]
    if credentials is not None:
        top["credentials"] = {"lab": credentials}
        raw["credentials"] = "lab"
    return parse_config(top).targets[0]


class CollectorHarness:
    """One collector instance (state kept between polls, as in the daemon) and its transports."""

    open_harnesses: list[CollectorHarness] = []

    def __init__(self, group):
        self.group = group
        self.transports = Transports()
        self.collector = InfinibandCollector(PollContext(group, group.hosts[0], self.transports))
        self.snapshot = None  # with FABRIC_VERIFY_RENDER: each poll rendered as the daemon does, chained
        CollectorHarness.open_harnesses.append(self)

    def close(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self.collector.close())
            loop.run_until_complete(self.transports.close())
        finally:
            loop.close()

    def poll(self) -> PollResult:
        # A plain event loop, not asyncio.run(): on the main thread asyncio.run() swaps the SIGINT
        # handler and repr()s the finished task, i.e. every sample of the poll (~0.2 s per 60k).
        loop = asyncio.new_event_loop()
        try:
            result = loop.run_until_complete(self._poll())
        finally:
            loop.close()
        if verify_enabled():  # on for these tests (fixture below), off in the bench that uses this harness
            # every poll's incremental render (on the previous poll's) is checked against a whole
            # render: exposition.RenderMismatch on a difference
            self.snapshot = build_snapshot(self.group.fabric, result.samples, 60, previous=self.snapshot)
        return result

    async def _poll(self) -> PollResult:
        try:
            return await self.collector.poll()
        finally:
            # asyncio.run() gives each poll a fresh loop: the SSH pool must not outlive it.
            await self.transports.close()
            self.transports.ssh = type(self.transports.ssh)()


@pytest.fixture(autouse=True, scope="module")
def _verify_render():
    """FABRIC_VERIFY_RENDER=1 for the IB tests: every harness poll is rendered incrementally on the
    one before and compared with a whole render (layout changes of ibsim included)."""
    was = os.environ.get("FABRIC_VERIFY_RENDER")
    os.environ["FABRIC_VERIFY_RENDER"] = "1"
    yield
    if was is None:
        del os.environ["FABRIC_VERIFY_RENDER"]
    else:
        os.environ["FABRIC_VERIFY_RENDER"] = was


@pytest.fixture(autouse=True, scope="module")
def _close_harnesses():
    """Each collector removes its discovery cache file on close, as in the daemon."""
    yield
    while CollectorHarness.open_harnesses:
        CollectorHarness.open_harnesses.pop().close()


def index(result: PollResult) -> dict[tuple[str, str, str], dict]:
    """(metric, node_name, port) -> {"labels":..., "value":...} for port series."""
    out = {}
    for s in result.samples:
        if "port" in s.labels and "node_name" in s.labels and "counter" not in s.labels:
            out[(s.name, s.labels["node_name"], s.labels["port"])] = {"labels": s.labels, "value": s.value}
    return out


def values(result: PollResult, name: str) -> dict[tuple[str, str], float]:
    return {(s.labels["node_name"], s.labels["port"]): s.value for s in result.samples if s.name == name}
