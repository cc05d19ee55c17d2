"""The one validator of configuration values: the config's own keys and every collector's ``options:``.

Each read takes a mapping, a key and the key path of the mapping, and returns the typed value or,
when the value is wrong, reports ``<path>.<key>: <what is wrong>`` and returns the default, so one
pass reports every problem. One rule per kind (docs/configuration.md, "Value rules"):

- **string**: a non-empty string. A YAML number is read as its text (``fabric: 2024`` is "2024");
  a boolean is refused. ``choices``, when given, lists the only values allowed.
- **string list**: a list whose items follow the string rule.
- **integer**: a whole number (not a boolean) between ``minimum`` (0 unless stated) and
  ``maximum`` (``bounds.INTEGER_MAX`` unless stated).
- **number**: a finite integer or decimal between ``minimum`` (0 unless stated) and ``maximum``.
- **size**: a number of bytes, or a string with a binary unit (``8MiB``, ``512 KiB``, ``1GiB``),
  between ``minimum`` and ``maximum``.
- **duration**: a string with a unit (``500ms``, ``30s``, ``1m30s``), inside its ``bounds.Range``
  (``bounds.DURATION`` unless stated).
- **boolean**: ``true`` or ``false`` only.
- **path**: a string; relative paths are relative to the config file's directory; the file (or
  directory) must exist unless the check is syntax-only (``check-config --syntax-only``).
- **mapping**: unknown keys are errors (with the closest known key as a hint); required keys must
  be present.

``OptionReader`` is the view collectors use for their ``options:`` (``r.integer("ca_port", 0)``):
the same reads, bound to one mapping, and ``done()`` reports every key nobody read as unknown.
"""

from __future__ import annotations

import contextvars
import difflib
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .. import bounds
from ..durations import parse_duration
from .model import Secret

ErrorSink = Callable[[str, str], None]

# False while validating syntax only (``check-config --syntax-only``, like promtool's): files the
# config refers to (keys, hosts files, maps) are not required to exist on this machine.
CHECK_FILES: contextvars.ContextVar[bool] = contextvars.ContextVar("check_files", default=True)

_MISSING = object()

#: While set (config/schema.py), every read appends (key path, key or None, kind, facts) here, so the
#: JSON Schema is generated from the same reads that validate, never written a second time.
RECORDING: contextvars.ContextVar[list[tuple[str, str | None, str, dict]] | None] = \
    contextvars.ContextVar("validator_recording", default=None)


def _note(path: str, key: str | None, kind: str, **facts: Any) -> None:
    reads = RECORDING.get()
    if reads is not None:
        reads.append((path, key, kind, facts))


def closest(word: str, options: Iterable[str]) -> str | None:
    """The known word a typo most likely meant, or None."""
    found = difflib.get_close_matches(word, sorted(options), n=1, cutoff=0.75)
    return found[0] if found else None


SIZE_PATTERN = r"^\s*[0-9]+\s*(B|KiB|MiB|GiB)?\s*$"  # for the JSON Schema; _SIZE reads the same text
_SIZE = re.compile(r"^\s*([0-9]+)\s*(B|KiB|MiB|GiB)?\s*$")
_SIZE_UNITS = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def size_text(n: int) -> str:
    """A byte count in the largest binary unit that divides it (65536 -> '64KiB')."""
    for unit in ("GiB", "MiB", "KiB"):
        if n and n % _SIZE_UNITS[unit] == 0:
            return f"{n // _SIZE_UNITS[unit]}{unit}"
    return f"{n}B"


def _shown_integer(v: Any) -> str:
    return repr(v) if not isinstance(v, int) or abs(v) < 10**15 else "a value far too large"


class Validator:
    """Reads typed values out of mappings; problems go to ``err`` (default: ``self.problems``)."""

    def __init__(self, err: ErrorSink | None = None, base_dir: Path = Path(".")):
        self.problems: list[str] = []
        self._sink = err
        self.base_dir = base_dir

    def err(self, path: str, message: str) -> None:
        if self._sink is not None:
            self._sink(path, message)
        else:
            self.problems.append(f"{path}: {message}")

    @staticmethod
    def _at(path: str, key: Any) -> str:
        return f"{path}.{key}" if path else str(key)

    # -- kinds -------------------------------------------------------------------------------

    def mapping(self, value: Any, path: str, allowed: Iterable[str], required: Iterable[str] = ()) -> dict:
        """``value`` as a mapping whose keys are all in ``allowed``; None is an empty mapping."""
        allowed, required = set(allowed), set(required)
        _note(path, None, "mapping", allowed=allowed, required=required)
        if value is None:
            value = {}
        if not isinstance(value, dict):
            self.err(path, f"expected a mapping, got {type(value).__name__}")
            return {}
        for key in value:
            if key not in allowed:
                hint = closest(str(key), allowed)
                self.err(self._at(path, key), "unknown key" + (f" (did you mean {hint!r}?)" if hint else ""))
        for key in sorted(required):
            if key not in value:
                self.err(self._at(path, key), "required key is missing")
        return value

    def _string_value(self, v: Any, where: str) -> str | None:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = str(v)
        if not isinstance(v, str) or not v:
            self.err(where, f"expected a non-empty string, got {v!r}")
            return None
        return v

    def string(self, d: dict, key: str, path: str, default: str | None = None,
               choices: Iterable[str] | None = None) -> str | None:
        _note(path, key, "string", default=default, choices=choices)
        if key not in d:
            return default
        v = self._string_value(d[key], self._at(path, key))
        if v is None:
            return default
        if choices is not None and v not in choices:
            self.err(self._at(path, key), f"must be one of {', '.join(choices)}, got {v!r}")
            return default
        return v

    def string_list(self, d: dict, key: str, path: str, default: Iterable[str] = (),
                    choices: Iterable[str] | None = None) -> tuple[str, ...]:
        _note(path, key, "string_list", default=tuple(default), choices=choices)
        if key not in d:
            return tuple(default)
        v = d[key]
        if not isinstance(v, list):
            self.err(self._at(path, key), f"expected a list of strings, got {v!r}")
            return tuple(default)
        items = [self._string_value(x, f"{self._at(path, key)}[{i}]") for i, x in enumerate(v)]
        if any(x is None for x in items):
            return tuple(default)
        if choices is not None:
            allowed = set(choices)
            for i, x in enumerate(items):
                if x not in allowed:
                    self.err(f"{self._at(path, key)}[{i}]", f"unknown value {x!r} (known: {', '.join(sorted(allowed))})")
        return tuple(items)  # type: ignore[arg-type]

    def integer(self, d: dict, key: str, path: str, default: int, minimum: int = 0,
                maximum: int | None = None) -> int:
        maximum = bounds.INTEGER_MAX if maximum is None else maximum
        _note(path, key, "integer", default=default, minimum=minimum, maximum=maximum)
        if key not in d:
            return default
        v = d[key]
        if not isinstance(v, int) or isinstance(v, bool) or not minimum <= v <= maximum:
            self.err(self._at(path, key), f"expected an integer between {minimum} and {maximum}, got {_shown_integer(v)}")
            return default
        return v

    def number(self, d: dict, key: str, path: str, default: float, minimum: float = 0.0,
               maximum: float = bounds.NUMBER_MAX) -> float:
        _note(path, key, "number", default=default, minimum=minimum, maximum=maximum)
        if key not in d:
            return default
        v = d[key]
        problem = bounds.Range(minimum, maximum).problem(v)
        if problem:
            self.err(self._at(path, key), problem)
            return default
        return float(v)

    def size(self, d: dict, key: str, path: str, default: int, minimum: int, maximum: int) -> int:
        _note(path, key, "size", default=default, minimum=minimum, maximum=maximum)
        if key not in d:
            return default
        v = d[key]
        m = _SIZE.match(v) if isinstance(v, str) else None
        n = int(m.group(1)) * _SIZE_UNITS[m.group(2)] if m else (v if isinstance(v, int) and not isinstance(v, bool)
                                                                 else None)
        if n is None or not minimum <= n <= maximum:
            self.err(self._at(path, key), f"expected a size between {size_text(minimum)} and {size_text(maximum)} "
                                          f"(bytes, or e.g. '32MiB'), got {_shown_integer(v)}")
            return default
        return n

    def boolean(self, d: dict, key: str, path: str, default: bool) -> bool:
        _note(path, key, "boolean", default=default)
        if key not in d:
            return default
        v = d[key]
        if not isinstance(v, bool):
            self.err(self._at(path, key), f"expected true or false, got {v!r}")
            return default
        return v

    def duration(self, d: dict, key: str, path: str, default: float | None,
                 within: bounds.Range = bounds.DURATION) -> float | None:
        _note(path, key, "duration", default=default, within=within)
        if key not in d:
            return default
        try:
            seconds = parse_duration(d[key])
        except ValueError as e:
            self.err(self._at(path, key), str(e))
            return default
        problem = within.problem(seconds)
        if problem:
            self.err(self._at(path, key), problem)
            return default
        return seconds

    def path(self, d: dict, key: str, path: str, must_exist: bool = True, directory: bool = False) -> str | None:
        _note(path, key, "path", directory=directory)
        v = self.string(d, key, path)
        if v is None:
            return None
        p = Path(v) if os.path.isabs(v) else self.base_dir / v
        if must_exist and CHECK_FILES.get() and not (p.is_dir() if directory else p.exists()):
            self.err(self._at(path, key), f"{'directory' if directory else 'file'} not found: {p}")
        return str(p)

    def regex(self, d: dict, key: str, path: str) -> re.Pattern | None:
        _note(path, key, "regex")
        v = self.string(d, key, path)
        if v is None:
            return None
        try:
            return re.compile(v)
        except re.error as e:
            self.err(self._at(path, key), f"invalid regular expression: {e}")
            return None

    def secret(self, d: dict, key: str, path: str, inline_key: str | None = None) -> Secret | None:
        """``<key>_file: path`` or ``<inline_key>: env:VAR`` / inline value."""
        file_key = f"{key}_file"
        _note(path, file_key, "path", directory=False)
        if inline_key:
            _note(path, inline_key, "secret")
        if file_key in d and inline_key and inline_key in d:
            self.err(path, f"give only one of {file_key} and {inline_key}")
        if file_key in d:
            p = self.path(d, file_key, path)
            return Secret(p, "file") if p else None
        if inline_key and inline_key in d:
            v = d[inline_key]
            if not isinstance(v, str) or not v:
                self.err(self._at(path, inline_key), "expected a string (a value or env:VAR)")
                return None
            if v.startswith("env:"):
                var = v[4:]
                if not var:
                    self.err(self._at(path, inline_key), "env: needs a variable name")
                    return None
                return Secret(var, "env")
            return Secret(v, "inline")
        return None


class OptionReader:
    """The validator bound to one ``options:`` mapping: read typed options one by one; ``done()``
    reports the keys nobody asked for as unknown. Same rules as the config's own keys."""

    def __init__(self, raw: dict, path: str, err: ErrorSink, base_dir: Path = Path(".")):
        self.raw = raw or {}
        self.key_path = path
        self.err = err
        self.base_dir = base_dir
        self.validator = Validator(err, base_dir)
        self._seen: set[str] = set()

    def _read(self, key: str) -> str:
        self._seen.add(key)
        return key

    def value(self, key: str, default: Any = None) -> Any:
        """The key's raw value (``default`` when absent), for a shape the caller checks itself."""
        _note(self.key_path, key, "any")
        return self.raw.get(self._read(key), default)

    def _get(self, key: str) -> Any:  # the name collectors used before value(); kept for them
        return self.raw.get(self._read(key), _MISSING)

    def _bad(self, key: str, message: str) -> None:
        self.err(f"{self.key_path}.{key}", message)

    def string(self, key: str, default: str | None = None, choices: Iterable[str] | None = None) -> str | None:
        return self.validator.string(self.raw, self._read(key), self.key_path, default, choices)

    def integer(self, key: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
        return self.validator.integer(self.raw, self._read(key), self.key_path, default, minimum, maximum)

    def number(self, key: str, default: float, minimum: float = 0.0, maximum: float = bounds.NUMBER_MAX) -> float:
        return self.validator.number(self.raw, self._read(key), self.key_path, default, minimum, maximum)

    def size(self, key: str, default: int, minimum: int, maximum: int) -> int:
        return self.validator.size(self.raw, self._read(key), self.key_path, default, minimum, maximum)

    def boolean(self, key: str, default: bool) -> bool:
        return self.validator.boolean(self.raw, self._read(key), self.key_path, default)

    def duration(self, key: str, default: float | None, within: bounds.Range = bounds.DURATION) -> float | None:
        return self.validator.duration(self.raw, self._read(key), self.key_path, default, within)

    def string_list(self, key: str, default: Iterable[str] = (), choices: Iterable[str] | None = None) -> tuple[str, ...]:
        return self.validator.string_list(self.raw, self._read(key), self.key_path, default, choices)

    def regex(self, key: str) -> re.Pattern | None:
        return self.validator.regex(self.raw, self._read(key), self.key_path)

    def path(self, key: str, must_exist: bool = True, directory: bool = False) -> str | None:
        return self.validator.path(self.raw, self._read(key), self.key_path, must_exist, directory)

    def mapping(self, key: str) -> dict | None:
        """A nested mapping (its keys are the caller's to check), or None when absent."""
        _note(self.key_path, key, "object")
        v = self.raw.get(self._read(key), _MISSING)
        if v is _MISSING:
            return None
        if not isinstance(v, dict):
            self.err(f"{self.key_path}.{key}", "expected a mapping")
            return None
        return v

    def done(self) -> None:
        _note(self.key_path, None, "mapping", allowed=set(self._seen), required=set())
        for key in self.raw:
            if key not in self._seen:
                self.err(f"{self.key_path}.{key}", "unknown option")
