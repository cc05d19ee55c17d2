"""Shared test setup: the package is importable from the source tree, and tools are found."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "exporter") not in sys.path:
    sys.path.insert(0, str(ROOT / "exporter"))


def require_tool(name: str) -> str:
    """The path of a tool the tests need. CI installs every one; a missing tool fails loudly there."""
    path = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if Path(p).exists()), None)
    if path is None:
        import os

        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed: .ci/run should have installed it")
        pytest.skip(f"{name} is not installed (run .ci/run to install the test dependencies)")
    return path


EXAMPLES = ROOT / "examples"


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
