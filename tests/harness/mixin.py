"""The mixin tests' fixtures: the repository's root and promtool (registered in tests/conftest.py)."""

import shutil

import pytest

from tests.harness import paths

REPO = str(paths.ROOT)


@pytest.fixture(scope="session")
def repo() -> str:
    return REPO


@pytest.fixture(scope="session")
def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is required (Debian package 'prometheus')")
    return path
