"""A real Slurm on loopback (fabric_exporter.lab.slurm) for the slurm_jobs tests."""

from __future__ import annotations

import pytest

from fabric_exporter.lab.slurm import SlurmLab
from tests.conftest import require_tool

NODES = tuple(f"gpu-node-{i:03d}" for i in range(1, 7))


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    for t in ("munged", "slurmctld", "slurmd", "squeue", "sbatch"):
        require_tool(t)
    with SlurmLab(tmp_path_factory.mktemp("slurm"), NODES) as lab:
        yield lab
