"""Poll failure reasons. Every failure a collector or transport raises carries one of these reasons,
which become the `reason` label of fabric_poll_errors_total."""

from __future__ import annotations

REASONS = ("timeout", "connect", "auth", "host_key", "command_failed", "output_too_large", "parse", "partial",
           "config", "internal")


class PollError(Exception):
    """A poll failed for a known reason; ``str()`` is the human-readable cause. A subclass names its
    reason as a class keyword (``class PollTimeoutError(PollError, reason="timeout")``), checked against
    ``REASONS`` when the class is defined, as a ``reason=`` given to one error is when it is raised."""

    reason = "internal"

    def __init_subclass__(cls, *, reason: str | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if reason is not None:
            cls.reason = _known_reason(reason)

    def __init__(self, message: str, *, reason: str | None = None):
        super().__init__(message)
        if reason is not None:
            self.reason = _known_reason(reason)


def _known_reason(reason: str) -> str:
    if reason not in REASONS:
        raise ValueError(f"unknown poll error reason {reason!r}")
    return reason


class PollTimeoutError(PollError, reason="timeout"):
    pass


class ConnectError(PollError, reason="connect"):
    pass


class AuthError(PollError, reason="auth"):
    pass


class HostKeyError(PollError, reason="host_key"):
    pass


class CommandError(PollError, reason="command_failed"):
    pass


class TargetConfigError(PollError, reason="config"):
    """The target refused what we asked as invalid (gNMI INVALID_ARGUMENT: a path it does not serve,
    a sample interval below its minimum): the exporter's configuration must change, not the target."""


class OutputTooLargeError(PollError, reason="output_too_large"):
    """A command printed more than ``limits.max_output_bytes``: reading stopped, the command was ended."""


class ParseError(PollError, ValueError, reason="parse"):
    """A parser met text it cannot read. Parsers raise only this, never anything else."""


# Names of release 0.1.0 (the exceptions were renamed since to end in Error). Plugin collectors written
# against them keep importing; each use warns once so their authors know to move.
_RENAMED = {"PollTimeout": "PollTimeoutError", "CommandFailed": "CommandError",
            "OutputTooLarge": "OutputTooLargeError"}


def __getattr__(name: str):
    if name in _RENAMED:
        import warnings

        new = _RENAMED[name]
        warnings.warn(f"fabric_exporter.errors.{name} is now {new}; the old name will be removed",
                      DeprecationWarning, stacklevel=2)
        return globals()[new]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
