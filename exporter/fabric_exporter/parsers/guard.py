"""The parsers' one promise — only ParseError escapes — kept for numbers too long to convert and
for JSON that does not decode (``load_json``).

``int()`` refuses strings over 4,300 digits with a ValueError (CPython's guard against quadratic
conversion) and ``float()`` of a huge int raises OverflowError; a regex ``\\d+`` lets either
through from hostile or corrupted output. Every public parser entry point is wrapped so those
become a ParseError naming the problem, and the collectors' ``except ParseError`` sees them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import TypeVar

from ..errors import ParseError

F = TypeVar("F", bound=Callable)


def parser_entry(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ParseError:
            raise
        except OverflowError:
            raise ParseError(f"{fn.__module__.rsplit('.', 1)[-1]}: a number is out of range") from None
        except ValueError as e:
            if "integer string conversion" not in str(e):
                raise
            raise ParseError(f"{fn.__module__.rsplit('.', 1)[-1]}: a number has more than 4300 digits") from None

    return wrapper  # type: ignore[return-value]


def load_json(text: str, what: str):
    """``text`` decoded as JSON; invalid or too deeply nested JSON is a ParseError naming ``what``, and so
    is an object with a key twice (``json.loads`` would keep the last value in silence)."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as e:
        raise ParseError(f"{what}: {e}") from None
    except (ValueError, RecursionError) as e:
        raise ParseError(f"{what}: invalid JSON: {str(e)[:80]}") from None


class _DuplicateKey(ValueError):
    """A key twice in one JSON object (a ValueError, so a caller's "not JSON" handler catches it too)."""

    def __init__(self, key: str):
        super().__init__(f"key {key[:60]!r} twice in one object")


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        raise _DuplicateKey(next(k for k, _v in pairs if k in seen or seen.add(k)))
    return out


def json_decoder() -> json.JSONDecoder:
    """A decoder (for ``raw_decode`` of several documents) that refuses a key twice in one object."""
    return json.JSONDecoder(object_pairs_hook=_unique_keys)
