"""Where things are, for every test: computed once here from this file, so a test module's own depth
in tests/ never matters (a test moved to another folder keeps finding its captures)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"
EXAMPLES = ROOT / "examples"
PACKAGE = ROOT / "exporter" / "fabric_exporter"
