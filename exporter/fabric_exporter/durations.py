"""Durations as the config writes them: '500ms', '30s', '5m', '1h', '1m30s' (a unit is mandatory)."""

from __future__ import annotations

import math
import re
from typing import Any

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: Any) -> float:
    """'500ms', '30s', '5m', '1h', '1m30s' -> seconds. Bare numbers are refused (units are mandatory)."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"expected a duration such as 30s, got {text!r}")
    pos, total = 0, 0.0
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        if not m:
            raise ValueError(f"invalid duration {text!r} (use e.g. 500ms, 30s, 5m, 1h)")
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    if not math.isfinite(total):
        shown = repr(text) if len(text) <= 40 else f"{text[:12]!r}... ({len(text)} characters)"
        raise ValueError(f"duration {shown} is too large")
    if total <= 0:
        raise ValueError(f"duration {text!r} must be positive")
    return total


def format_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"

