"""The ranges every configured duration and number must sit within.

The one validator (config/validator.py: the config's keys and collectors' options alike) asks every number
"is this value finite and within its range?" with these ranges and this one check. A
value outside them is refused at check-config, never clamped: a 401-digit interval is infinite, a
1 ms interval hammers every host, and neither is what the operator meant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .durations import format_duration


@dataclass(frozen=True)
class Range:
    """Closed range [minimum, maximum]; ``unit`` = "s" formats the bounds as durations."""

    minimum: float
    maximum: float
    unit: str = ""

    def _show(self, value: float) -> str:
        return format_duration(value) if self.unit == "s" else f"{value:g}"

    def problem(self, value: Any) -> str | None:
        """None when ``value`` is a finite number within the range; else what is wrong with it."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"expected a number, got {value!r}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be a finite number, got {value!r}"
        if not self.minimum <= value <= self.maximum:
            shown = self._show(value) if abs(value) < 1e15 else "a value far too large"
            return f"must be between {self._show(self.minimum)} and {self._show(self.maximum)}, got {shown}"
        return None


# Durations (seconds).
DURATION = Range(0.01, 30 * 86400.0, "s")  # any duration without a range of its own
INTERVAL = Range(0.1, 86400.0, "s")  # 100 ms: fast enough for tests and labs; 1 ms hammers every host
TIMEOUT = Range(0.01, 3600.0, "s")
CONNECT_TIMEOUT = Range(0.1, 300.0, "s")
KEEPALIVE = Range(1.0, 3600.0, "s")
MAX_BACKOFF = Range(1.0, 86400.0, "s")
HEADER_TIMEOUT = Range(0.5, 300.0, "s")  # web: a request's headers (and a TLS handshake)
IDLE_TIMEOUT = Range(1.0, 3600.0, "s")  # web: an idle keep-alive connection

# Numbers.
INTEGER_MAX = 10**9  # counts without a tighter maximum of their own
NUMBER_MAX = 1e9
PORT = Range(1, 65535)
