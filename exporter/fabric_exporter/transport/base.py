"""Interfaces between collectors and transports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..errors import OutputTooLargeError


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    exit_status: int
    stdout: str
    stderr: str

    def describe_failure(self) -> str:
        tail = (self.stderr.strip() or self.stdout.strip()).splitlines()[-3:]
        detail = " | ".join(tail) if tail else "no output"
        what = f"killed by signal {-self.exit_status}" if self.exit_status < 0 else f"exit status {self.exit_status}"
        return f"{self.argv[0] if self.argv else '?'}: {what}: {detail}"


class OutputLimit:
    """The most stdout+stderr bytes one command may print (config ``limits.max_output_bytes``).

    One object shared by every runner and updated in place on reload. Output is counted as it
    arrives, so a host printing gigabytes costs at most this much memory before it is cut off.
    """

    def __init__(self, max_bytes: int = 32 << 20):
        self.max_bytes = max_bytes

    def exceeded(self, runner: str, command: str, action: str) -> OutputTooLargeError:
        """The one error every runner gives when ``command`` passed the limit (``action``: what it did then)."""
        return OutputTooLargeError(f"{runner}: {command} printed more than {self.max_bytes} bytes "
                                   f"(limits.max_output_bytes); {action}")


#: default of ``limits.max_snmp_poll_bytes``: ~45x what one poll of a 1,000-port switch reads
DEFAULT_SNMP_POLL_BYTES = 32 << 20


class ReadBudget:
    """The bytes of SNMP responses one poll may read (config ``limits.max_snmp_poll_bytes``), all its
    GETs and walks together.

    A collector's PollContext holds one and the scheduler restarts it when each poll begins, so a
    session cached across polls charges each poll afresh. An agent that answers every GETBULK with
    one more 60 kB string is stopped here, not by the poll's deadline after hundreds of MB.
    """

    def __init__(self, max_bytes: int = DEFAULT_SNMP_POLL_BYTES):
        self.max_bytes = max_bytes
        self.used = 0

    def restart(self, max_bytes: int | None = None) -> None:
        if max_bytes is not None:
            self.max_bytes = max_bytes
        self.used = 0

    def charge(self, nbytes: int, where: str) -> None:
        """Count ``nbytes`` just read; OutputTooLargeError once the poll is past its budget."""
        self.used += nbytes
        if self.used > self.max_bytes:
            raise OutputTooLargeError(f"{where}: the poll's SNMP responses passed {self.max_bytes} bytes "
                                      f"(limits.max_snmp_poll_bytes); stopped reading")


class CommandRunner(Protocol):
    """Runs one command (an argument list, never a shell string) where the target lives."""

    description: str

    async def run(self, argv: Sequence[str], *, timeout: float, stdin: str | None = None) -> CommandResult:
        """Run ``argv``; raise PollTimeoutError / ConnectError / AuthError / HostKeyError on transport failure.

        A non-zero exit status is returned, not raised: only the caller knows what it means
        (ibqueryerrors exits 1 when it found errors).
        """
        ...

    async def close(self) -> None: ...
