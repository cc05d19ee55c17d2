"""The simulated fabric keeps opensm's state to itself, and its LIDs are the same on every machine
(issue 20).

- The fabric the IB fixture starts (``make_fabric``, the same factory) creates and changes nothing
  under /var/cache/opensm, /var/log/opensm*, /etc/opensm or the rest of /var and /etc; opensm's
  cache, subnet dump and log are in the fabric's work directory instead.
- LIDs are pinned: two fabrics started from nothing (fresh work dirs, fresh caches) give every port
  the LID of ``FatTree.lids()``, so a golden file can check them.
"""

from __future__ import annotations

import os
import subprocess

from fabric_exporter.lab.ibsim import FatTree, IbsimFabric

from tests.harness.host_state import SYSTEM_ROOTS, changes, opensm_system_paths, snapshot
from tests.harness.infiniband import LAB_TOPOLOGY, make_fabric, needs_ibsim

pytestmark = needs_ibsim


def test_the_fixture_fabric_keeps_opensm_state_in_its_work_dir(tmp_path_factory):
    before, opensm_before = snapshot(SYSTEM_ROOTS), opensm_system_paths()
    fabric = make_fabric(tmp_path_factory, "isolation")
    with fabric:
        fabric.unlink("leaf-01", 3)  # a topology change: opensm sweeps and rewrites its cache
        fabric.relink("leaf-01", 3)
        env = {**os.environ, **fabric.env()}
        subprocess.run(["ibnetdiscover"], env=env, cwd=fabric.workdir, capture_output=True, timeout=60, check=True)
    changed = changes(before, snapshot(SYSTEM_ROOTS))
    assert changed == [], "the simulated fabric changed files outside its work dir:\n" + "\n".join(changed)
    assert opensm_system_paths() == opensm_before
    work = fabric.workdir
    assert {p.name for p in (work / "opensm-cache").iterdir()} >= {"guid2lid", "neighbors"}
    assert (work / "opensm-dump" / "opensm-subnet.lst").exists()
    assert b"SUBNET UP" in (work / "opensm.log").read_bytes()
    # opensm read no config of the host's real SM: its config file names only the work dir
    for line in (work / "opensm.conf").read_text().splitlines():
        if line and not line.startswith("#") and "/" in line:
            assert line.split(" ", 1)[1].startswith(str(work)), line


def port_lids(fabric: IbsimFabric) -> dict[int, int]:
    """Port GUID -> LID as the fabric reports it (ibnetdiscover's port list)."""
    out = subprocess.run(["ibnetdiscover", "-p"], env={**os.environ, **fabric.env()}, cwd=fabric.workdir,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    lids: dict[int, int] = {}
    for line in out.splitlines():
        fields = line.split()
        # "SW <lid> <port> <guid> ..." / "CA <lid> <port> <port guid> ...": a switch's GUID is its
        # port 0's, so the first four words of each line are a port GUID and its LID
        if len(fields) >= 4 and fields[0] in ("SW", "CA"):
            lids[int(fields[3], 16)] = int(fields[1])
    return lids


def test_lids_are_pinned_and_the_same_from_a_fresh_cache(tmp_path_factory):
    topo = FatTree(**LAB_TOPOLOGY)
    seen = []
    for run in range(2):
        with make_fabric(tmp_path_factory, f"lids{run}") as fabric:
            assert (fabric.cache_dir / "guid2lid").exists()
            seen.append(port_lids(fabric))
    assert seen[0] == seen[1] == topo.lids()
    # the pinned scheme: switches first (leaves, then spines), then HCA ports, from 1
    assert seen[0][topo.nodes["leaf-01"].guid] == 1
    assert seen[0][topo.nodes["spine-01"].guid] == 4
    assert seen[0][topo.nodes["gpu-001"].port_guid(1)] == 6


def test_guid2lid_is_opensm_cache_format():
    text = FatTree(spines=1, leaves=2, hcas_per_leaf=1, switch_ports=8).guid2lid()
    # one "<port guid> <lid> <lid>" entry per port, each ended by an empty line (opensm's reader
    # runs a value on until one: without it, the whole file would be one entry and be ignored)
    assert text.split("\n\n")[:2] == ["0x0002c90300a10000 0x0001 0x0001", "0x0002c90300a10100 0x0002 0x0002"]
    assert text.count("\n\n") == 5 and text.endswith("\n\n")
