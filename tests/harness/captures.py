"""The real captures published by others (tests/fixtures/real/, provenance in its README)."""

from __future__ import annotations

from tests.harness import paths

REAL = paths.FIXTURES / "real"


def real_capture(name: str) -> str:
    """The text of one capture, by its file name under tests/fixtures/real/."""
    return (REAL / name).read_text()
