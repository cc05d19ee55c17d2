"""`fabric-exporter lab` leaves the host alone (issue 20): run for a short while with every part it
can start (ibsim + opensm, snmpsim, the SSH hosts, Prometheus and Alertmanager when installed), with
link flaps driving ibsim's console, then stopped, it has changed nothing outside its work directory
and the temp dir. On an InfiniBand management node /var/cache/opensm and /var/log/opensm* belong to
the real subnet manager.

The check is a listing with content hashes of the system directories (tests/harness/host_state.py)
and of the checkout the lab is started from, before and after. The machine's own package manager
and services are left out there, each with its reason; anything else that changes is reported by
path (another run on the same machine writing there at the same time would show up too: the test
names the paths, so that is told apart from the lab in one look).
"""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from tests.conftest import ROOT, require_tool
from tests.harness.lab_process import running_lab
from tests.harness.host_state import SYSTEM_ROOTS, changes, opensm_system_paths, snapshot

CHECKOUT_SKIPPED = {str(ROOT / ".git")}  # git's own files; a worktree's .git is a file, also skipped


def checkout_snapshot() -> dict[str, str]:
    """The checkout the lab is started from (libumad2sim writes ./sys-<pid> into the cwd of every
    tool it is preloaded into); bytecode caches are Python's, not the lab's."""
    listing = snapshot([str(ROOT)], CHECKOUT_SKIPPED)
    return {p: v for p, v in listing.items() if "__pycache__" not in p and "/.hypothesis" not in p}


def post(port: int, path: str) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST")
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


@pytest.mark.slow
def test_the_lab_changes_nothing_outside_its_work_dir_and_the_temp_dir(tmp_path):
    for tool in ("ibsim", "opensm", "ibqueryerrors"):
        require_tool(tool)
    system_before, checkout_before = snapshot(SYSTEM_ROOTS), checkout_snapshot()
    opensm_before = opensm_system_paths()

    def every_target_up(lab) -> bool:  # ibsim, opensm and the tools ran
        ups = [line for line in lab.metrics().splitlines() if line.startswith("fabric_up{")]
        return len(ups) >= 8 and all(line.endswith(" 1.0") or line.endswith(" 1") for line in ups)

    with running_lab(tmp_path, "--interval", "2", "--racks", "2", "--hosts-per-rack", "2", "--nics", "1",
                     ready=every_target_up, up_within=150, cwd=ROOT) as lab:  # from the checkout, as scripts/lab
        post(lab.control, "/scenarios/link_flap")  # Unlink/ReLink through ibsim's console, a sweep by opensm
        time.sleep(6)  # three polls with the scenario on
    assert lab.proc.returncode == 0, lab.log()[-3000:]
    changed = changes(system_before, snapshot(SYSTEM_ROOTS)) + changes(checkout_before, checkout_snapshot())
    assert changed == [], "the lab changed files outside its work dir:\n" + "\n".join(changed)
    assert opensm_system_paths() == opensm_before
    # and opensm did keep state, where it should: its cache (guid2lid rewritten with the pinned
    # LIDs, neighbors), its subnet dump and its log
    ib = tmp_path / "lab" / "ib"  # running_lab's work dir
    assert (ib / "opensm-cache" / "neighbors").exists() and (ib / "opensm-cache" / "guid2lid").exists()
    assert (ib / "opensm-dump" / "opensm-subnet.lst").exists()
    assert b"SUBNET UP" in (ib / "opensm.log").read_bytes()
