"""Poll failure reasons. Every failure a collector or transport raises carries one of these reasons,
which become the `reason` label of fabric_poll_errors_total."""

from __future__ import annotations

REASONS = ("timeout", "connect", "auth", "host_key", "command_failed", "output_too_large", "parse", "partial",
           "internal")


class PollError(Exception):
    """A poll failed for a known reason; ``str()`` is the human-readable cause."""

    reason = "internal"

    def __init__(self, message: str, *, reason: str | None = None):
        super().__init__(message)
        if reason is not None:
            if reason not in REASONS:
                raise ValueError(f"unknown poll error reason {reason!r}")
            self.reason = reason


class PollTimeout(PollError):
    reason = "timeout"


class ConnectError(PollError):
    reason = "connect"


class AuthError(PollError):
    reason = "auth"


class HostKeyError(PollError):
    reason = "host_key"


class CommandFailed(PollError):
    reason = "command_failed"


class OutputTooLarge(PollError):
    """A command printed more than ``limits.max_output_bytes``: reading stopped, the command was ended."""

    reason = "output_too_large"


class ParseError(PollError, ValueError):
    """A parser met text it cannot read. Parsers raise only this, never anything else."""

    reason = "parse"
