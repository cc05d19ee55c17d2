"""Fixtures for the roce_nic tests: fixture files, a lab GPU host served by a real sshd, and target
groups (polling through the real scheduler and store: tests/harness/polling.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness import paths
from tests.harness.aio import run  # noqa: F401  (tests import it from here)
from fabric_exporter.lab.roce_host import RoceHost, write_fake_tools
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
