"""TCP ports for perftest servers."""

from __future__ import annotations


class PortPool:
    """Ports for perftest servers: one per running probe, handed out round-robin, and held back after
    a server we stopped waiting for, until its ``timeout`` wrapper has surely killed it."""

    def __init__(self, low: int, high: int):
        self.low, self.high = low, high
        self._next = low
        self._busy: dict[int, float] = {}  # port -> monotonic time it is free again (inf: in use)

    def acquire(self, now: float) -> int | None:
        size = self.high - self.low + 1
        for _ in range(size):
            port = self._next
            self._next = self.low + (self._next - self.low + 1) % size
            if self._busy.get(port, 0.0) <= now:
                self._busy[port] = float("inf")
                return port
        return None

    def release(self, port: int, free_at: float = 0.0) -> None:
        if free_at > 0:
            self._busy[port] = free_at
        else:
            self._busy.pop(port, None)
