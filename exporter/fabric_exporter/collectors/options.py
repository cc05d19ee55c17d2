"""A small checker for collectors' ``options:`` mappings, reporting problems with their key paths."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import bounds
from ..config import CHECK_FILES, parse_duration
from .base import ErrorSink

_MISSING = object()


class OptionReader:
    """Read typed options one by one; ``done()`` reports the keys nobody asked for as unknown."""

    def __init__(self, raw: dict, path: str, err: ErrorSink, base_dir: Path = Path(".")):
        self.raw = raw or {}
        self.key_path = path
        self.err = err
        self.base_dir = base_dir
        self._seen: set[str] = set()

    def _get(self, key: str) -> Any:
        self._seen.add(key)
        return self.raw.get(key, _MISSING)

    def _bad(self, key: str, message: str) -> None:
        self.err(f"{self.key_path}.{key}", message)

    def string(self, key: str, default: str | None = None, choices: Iterable[str] | None = None) -> str | None:
        v = self._get(key)
        if v is _MISSING:
            return default
        if not isinstance(v, str):
            self._bad(key, f"expected a string, got {v!r}")
            return default
        if choices is not None and v not in choices:
            self._bad(key, f"must be one of {', '.join(choices)}, got {v!r}")
            return default
        return v

    def integer(self, key: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
        v = self._get(key)
        if v is _MISSING:
            return default
        maximum = bounds.INTEGER_MAX if maximum is None else maximum
        if not isinstance(v, int) or isinstance(v, bool) or not minimum <= v <= maximum:
            shown = repr(v) if not isinstance(v, int) or abs(v) < 10**15 else "a value far too large"
            self._bad(key, f"expected an integer >= {minimum} and <= {maximum}, got {shown}")
            return default
        return v

    def number(self, key: str, default: float, minimum: float = 0.0, maximum: float = bounds.NUMBER_MAX) -> float:
        v = self._get(key)
        if v is _MISSING:
            return default
        problem = bounds.Range(minimum, maximum).problem(v)
        if problem:
            self._bad(key, problem)
            return default
        return float(v)

    def boolean(self, key: str, default: bool) -> bool:
        v = self._get(key)
        if v is _MISSING:
            return default
        if not isinstance(v, bool):
            self._bad(key, f"expected true or false, got {v!r}")
            return default
        return v

    def duration(self, key: str, default: float | None, within: bounds.Range = bounds.DURATION) -> float | None:
        v = self._get(key)
        if v is _MISSING:
            return default
        try:
            seconds = parse_duration(v)
        except ValueError as e:
            self._bad(key, str(e))
            return default
        problem = within.problem(seconds)
        if problem:
            self._bad(key, problem)
            return default
        return seconds

    def string_list(self, key: str, default: Iterable[str] = (), choices: Iterable[str] | None = None) -> tuple[str, ...]:
        v = self._get(key)
        if v is _MISSING:
            return tuple(default)
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            self._bad(key, "expected a list of strings")
            return tuple(default)
        if choices is not None:
            allowed = set(choices)
            for i, x in enumerate(v):
                if x not in allowed:
                    self.err(f"{self.key_path}.{key}[{i}]", f"unknown value {x!r} (known: {', '.join(sorted(allowed))})")
        return tuple(v)

    def regex(self, key: str) -> re.Pattern | None:
        v = self.string(key)
        if v is None:
            return None
        try:
            return re.compile(v)
        except re.error as e:
            self._bad(key, f"invalid regular expression: {e}")
            return None

    def path(self, key: str, must_exist: bool = True, directory: bool = False) -> str | None:
        v = self.string(key)
        if v is None:
            return None
        p = Path(v) if os.path.isabs(v) else self.base_dir / v
        if must_exist and CHECK_FILES.get() and not (p.is_dir() if directory else p.exists()):
            self._bad(key, f"{'directory' if directory else 'file'} not found: {p}")
        return str(p)

    def mapping(self, key: str) -> dict | None:
        v = self._get(key)
        if v is _MISSING:
            return None
        if not isinstance(v, dict):
            self._bad(key, "expected a mapping")
            return None
        return v

    def done(self) -> None:
        for key in self.raw:
            if key not in self._seen:
                self._bad(str(key), "unknown option")
