"""Fixtures for the latency-probe tests."""

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "latency"


@pytest.fixture
def capture():
    def read(name: str) -> str:
        return (FIXTURES / name).read_text()
    return read
