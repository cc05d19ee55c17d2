"""The report's bounds and the checks of its time arguments (pure).

A report reads at most ``MAX_WINDOW_SECONDS`` of history, between 1970 and the year 3000, with
finite numbers everywhere: ``--from nan`` or ``--since 9999999999y`` are refused at the start with
one line, not found later as an error writing the output. Points per series are bounded by the
step (``collect.MAX_POINTS``); bytes per answer and time per request/run by the client (prom.py).
"""

from __future__ import annotations

import argparse
import math

from .prom import ReportError

MAX_WINDOW_SECONDS = 400 * 86400  # a year and some: longer than a POC, shorter than most retention
EARLIEST, LATEST = 0.0, 32503680000.0  # 1970-01-01 .. 3000-01-01 UTC
DEFAULT_DEADLINE_SECONDS = 600.0


def check_time(value: float, text: str) -> float:
    if not math.isfinite(value) or not EARLIEST <= value <= LATEST:
        raise ReportError(f"{text!r} is not a time between 1970 and 3000")
    return value


def check_window(seconds: float, what: str) -> None:
    if seconds > MAX_WINDOW_SECONDS:
        raise ReportError(f"{what} is {seconds / 86400:.0f} days: the report reads at most "
                          f"{MAX_WINDOW_SECONDS // 86400} days; report a shorter window")


def positive_seconds(text: str) -> float:
    """argparse type for --timeout, --deadline, --step: a finite number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_WINDOW_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def positive_bytes(text: str) -> int:
    """argparse type for --max-response-bytes: a whole number of bytes, at least 1 KiB."""
    if not text.isdigit() or int(text) < 1024:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of bytes (at least 1024)")
    return int(text)
