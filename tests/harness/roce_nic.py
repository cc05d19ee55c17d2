"""Fixtures for the roce_nic tests: fixture files, a lab GPU host served by a real sshd, and a
helper that polls through the real scheduler/store and reads the exposition back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.harness import paths
from tests.harness.aio import run  # noqa: F401  (tests import it from here)
from tests.harness.configs import parse_config
from fabric_exporter.lab.roce_host import RoceHost, write_fake_tools
from fabric_exporter.scheduler import Scheduler
from fabric_exporter.store import SnapshotStore
from fabric_exporter.transport.factory import Transports
from tests.harness.sshd import SSHD

FIXTURES = paths.FIXTURES / "roce_nic"


@pytest.fixture
def fixture_text():
    return lambda name: (FIXTURES / name).read_text()


@dataclass
class LabHost:
    """A RoceHost whose files a real sshd serves: call ``publish()`` after changing counters."""

    model: RoceHost
    sysfs: Path
    data: Path
    bin: Path
    sshd: SSHD

    def publish(self) -> None:
        self.model.write_sysfs(self.sysfs)
        self.model.write_tool_outputs(self.data)


@pytest.fixture
def lab_factory(tmp_path):
    started: list[SSHD] = []

    def make(vendor: str = "mlx5", nics: int = 2, pfc_priorities=(3,), name: str = "gpu-001", **sshd_options) -> LabHost:
        root = tmp_path / f"{name}-{len(started)}"
        model = RoceHost.build(name, vendor, nics=nics, pfc_priorities=pfc_priorities)
        lab = LabHost(model, root / "sys", root / "data", root / "bin", None)  # type: ignore[arg-type]
        lab.publish()
        write_fake_tools(lab.bin, lab.data)
        sshd = SSHD(root, path_dirs=[lab.bin], sysfs_tree=lab.sysfs, **sshd_options)
        started.append(sshd)
        lab.sshd = sshd.start()
        return lab

    yield make
    for sshd in started:
        sshd.stop()


def group(name: str, hosts: list, *, credentials: str = "lab", options: dict | None = None,
          timeout: str = "5s", transport: str = "ssh") -> dict:
    g = {"name": name, "fabric": "f1", "collector": "roce_nic", "transport": transport, "hosts": hosts,
         "interval": "30s", "timeout": timeout, "options": options or {}}
    if transport == "ssh":
        g["credentials"] = credentials
    return g


class Poller:
    """Real scheduler + store + transports; keeps SSH connections between polls like the daemon."""

    def __init__(self, raw_config: dict):
        self.config = parse_config(raw_config)
        self.transports = Transports()
        self.scheduler = Scheduler(self.transports, SnapshotStore())
        self.scheduler.apply(self.config, start_tasks=False)

    async def poll(self):
        states = await self.scheduler.poll_all_once()
        return {s.host: s for s in states}, samples_of(self.scheduler.store.render().decode())

    async def close(self):
        await self.transports.close()

    async def poll_once(self):
        """One poll (as ``poll``), the transports closed after."""
        try:
            return await self.poll()
        finally:
            await self.close()


def samples_of(text: str) -> dict[tuple[str, frozenset], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in found, f"duplicate series {key}"
            found[key] = s.value
    return found


def series(samples: dict, name: str, **labels) -> dict[frozenset, float]:
    """The series of ``name`` whose labels include ``labels``: {all labels: value}."""
    want = set(labels.items())
    return {lbls: v for (n, lbls), v in samples.items() if n == name and want <= set(lbls)}


def one(samples: dict, name: str, **labels) -> float:
    found = series(samples, name, **labels)
    assert len(found) == 1, f"{name} {labels}: expected one series, found {len(found)}: {found}"
    return next(iter(found.values()))
