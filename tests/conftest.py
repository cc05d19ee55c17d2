"""Shared test setup: the package is importable from the source tree, and tools are found."""

from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.harness.paths import EXAMPLES, ROOT

if str(ROOT / "exporter") not in sys.path:
    sys.path.insert(0, str(ROOT / "exporter"))


def require_tool(name: str) -> str:
    """The path of a tool the tests need. CI installs every one; a missing tool fails loudly there."""
    path = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if Path(p).exists()), None)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed: .ci/run should have installed it")
        pytest.skip(f"{name} is not installed (run .ci/run to install the test dependencies)")
    return path


def load_example(name: str, tmp_path: Path, *, base_dir: Path | None = None):
    """Parse examples/<name> as a deployed host would, with stand-in files for its key paths."""
    import yaml

    from tests.harness.configs import parse_config

    raw = yaml.safe_load((EXAMPLES / name).read_text())
    for cred in (raw.get("credentials") or {}).values():
        for key in ("private_key_file", "known_hosts_file"):
            if key in cred:
                (tmp_path / key).write_text("x\n")
                cred[key] = str(tmp_path / key)
    return parse_config(raw, base_dir=base_dir or tmp_path)


# The two lanes (tests/harness/lanes.py): a test that starts a process is marked "external" here, from
# what its code and fixtures refer to; `scripts/test --fast` runs the others. A test left in the fast
# lane cannot start a process at all: the guard makes a start the walk missed fail loudly.
from tests.harness.lanes import (  # noqa: E402
    MARKER, ProcessFinder, ProcessGuard, build_library_caches, classify, starts_processes)

# Fixtures that tests in several folders use, each defined once in tests/harness/ and registered here by
# being imported (a fixture that one folder alone uses lives in that folder's conftest.py).
from tests.harness.mixin import promtool, repo  # noqa: E402,F401
from tests.harness.roce_nic import fixture_text, lab_factory  # noqa: E402,F401
from tests.harness.switch import hostile_snmp, snmpsim, switches  # noqa: E402,F401

# matplotlib writes its font list to $MPLCONFIGDIR (else ~/.cache/matplotlib): tests write only in their
# own directories and the temp dir. Inherited by the subprocesses tests start.
os.environ.setdefault("MPLCONFIGDIR", tempfile.mkdtemp(prefix="fabric-tests-matplotlib-"))

_guard = ProcessGuard()


def pytest_configure(config) -> None:
    _guard.install()


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items) -> None:
    finder = ProcessFinder()
    for item in items:
        why = classify(item, finder)
        if why:
            item.add_marker(MARKER)
            item.user_properties.append(("starts a process", why))


def pytest_collection_finish(session) -> None:
    if any(item.get_closest_marker(MARKER) is None for item in session.items):
        build_library_caches()  # while no test runs, so the guard is off


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item) -> None:
    _guard.allowed = item.get_closest_marker(MARKER) is not None  # through the test's call
    _guard.test = item.nodeid


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem) -> None:
    # Teardown may end a module's servers an external test started (stopping one is no start, but
    # it is not this test's doing either).
    _guard.allowed = True


@pytest.hookimpl(trylast=True)
def pytest_runtest_logfinish(nodeid, location) -> None:
    # A daemon run in-process freezes every live object out of the cyclic GC (daemon.freeze_long_lived);
    # the next test in this worker must not inherit that (a cycle it frees would never be collected).
    if gc.get_freeze_count():
        gc.unfreeze()


@pytest.fixture
@starts_processes
def local_commands() -> None:
    """Asked for by a test whose config has the exporter run commands through its local transport:
    those are real processes that no code the lane walk reads shows (the config decides)."""
