"""A /metrics text against its committed golden file: ``FABRIC_UPDATE_GOLDEN=1`` rewrites the file;
a missing file is written and the test fails so it gets reviewed; a difference fails with a diff."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

UPDATE = os.environ.get("FABRIC_UPDATE_GOLDEN") == "1"


def check_golden(golden: Path, got: str) -> None:
    if UPDATE or not golden.exists():
        golden.write_text(got)
        if not UPDATE:
            pytest.fail(f"{golden.name} did not exist; written now -- review and commit it")
        return
    want = golden.read_text()
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), golden.name, "this run", n=1))
        pytest.fail(f"/metrics differs from {golden.name} (FABRIC_UPDATE_GOLDEN=1 to accept):\n{diff[:20000]}")
