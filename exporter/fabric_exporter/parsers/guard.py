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
    """``text`` decoded as JSON; invalid or too deeply nested JSON is a ParseError naming ``what``."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ParseError(f"{what}: invalid JSON: {str(e)[:80]}") from None
