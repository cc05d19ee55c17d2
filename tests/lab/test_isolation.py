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
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from ..conftest import ROOT, require_tool
from ..harness.daemon import free_port, package_env
from ..harness.host_state import SYSTEM_ROOTS, changes, opensm_system_paths, snapshot

CHECKOUT_SKIPPED = {str(ROOT / ".git")}  # git's own files; a worktree's .git is a file, also skipped


def checkout_snapshot() -> dict[str, str]:
    """The checkout the lab is started from (libumad2sim writes ./sys-<pid> into the cwd of every
    tool it is preloaded into); bytecode caches are Python's, not the lab's."""
    listing = snapshot([str(ROOT)], CHECKOUT_SKIPPED)
    return {p: v for p, v in listing.items() if "__pycache__" not in p and "/.hypothesis" not in p}


def metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def post(port: int, path: str) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST")
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


@pytest.mark.slow
def test_the_lab_changes_nothing_outside_its_work_dir_and_the_temp_dir(tmp_path):
    for tool in ("ibsim", "opensm", "ibqueryerrors"):
        require_tool(tool)
    port, control, prom = free_port(), free_port(), free_port()
    workdir = tmp_path / "lab"
    log_path = tmp_path / "lab.log"
    system_before, checkout_before = snapshot(SYSTEM_ROOTS), checkout_snapshot()
    opensm_before = opensm_system_paths()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(  # from the checkout, as a newcomer runs scripts/lab
            [sys.executable, "-m", "fabric_exporter", "lab", "--workdir", str(workdir), "--interval", "2",
             "--racks", "2", "--hosts-per-rack", "2", "--nics", "1", "--web.listen-address", f"127.0.0.1:{port}",
             "--control-address", f"127.0.0.1:{control}", "--prometheus-address", f"127.0.0.1:{prom}"],
            cwd=ROOT, env=package_env(), stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 150
            while time.monotonic() < deadline:  # every target up: ibsim, opensm and the tools ran
                assert proc.poll() is None, log_path.read_text()[-3000:]
                try:
                    ups = [line for line in metrics(port).splitlines() if line.startswith("fabric_up{")]
                    if len(ups) >= 8 and all(line.endswith(" 1.0") or line.endswith(" 1") for line in ups):
                        break
                except OSError:
                    pass
                time.sleep(1)
            else:
                raise AssertionError("lab did not come up:\n" + log_path.read_text()[-3000:])
            post(control, "/scenarios/link_flap")  # Unlink/ReLink through ibsim's console, a sweep by opensm
            time.sleep(6)  # three polls with the scenario on
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    out = log_path.read_text()
    assert proc.returncode == 0, out[-3000:]
    changed = changes(system_before, snapshot(SYSTEM_ROOTS)) + changes(checkout_before, checkout_snapshot())
    assert changed == [], "the lab changed files outside its work dir:\n" + "\n".join(changed)
    assert opensm_system_paths() == opensm_before
    # and opensm did keep state, where it should: its cache (guid2lid rewritten with the pinned
    # LIDs, neighbors), its subnet dump and its log
    ib = workdir / "ib"
    assert (ib / "opensm-cache" / "neighbors").exists() and (ib / "opensm-cache" / "guid2lid").exists()
    assert (ib / "opensm-dump" / "opensm-subnet.lst").exists()
    assert b"SUBNET UP" in (ib / "opensm.log").read_bytes()
