"""Running a coroutine from a synchronous test."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """The coroutine's result, on a fresh event loop closed after (as the daemon's one loop is)."""
    return asyncio.run(coro)
