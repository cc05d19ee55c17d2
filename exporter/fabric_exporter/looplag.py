"""How late the daemon's event loop wakes: its saturation, as operators see it.

The daemon's loop runs every poll's I/O (scrapes are served from a thread of their own,
serving/web_thread.py). A callback that holds the loop (a big synchronous step, a garbage
collection) delays all of them: SNMP answers and tools' output wait for their turn. A probe task asks to sleep
``PROBE_INTERVAL`` again and again and records how much later than asked it woke, as the histogram
``fabric_event_loop_lag_seconds``: its quantiles say how long the loop is held, and
``rate(..._sum)`` the share of time it was behind. On one core, that share nears 1 before polls
miss their deadlines (docs/sizing.md, "When to split").
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import time

from .catalog import CATALOG
from .samples import Sample, histogram_samples, le_labels

FAMILY = "fabric_event_loop_lag_seconds"
#: seconds the probe sleeps between wake-ups: ten wake-ups a second cost the loop ~0.1 ms
PROBE_INTERVAL = 0.1


class LoopLag:
    """A histogram of the probe's lateness (cumulative counts, sum, count), and the probe itself."""

    def __init__(self) -> None:
        self.bounds: tuple[float, ...] = CATALOG[FAMILY].buckets
        self._le = le_labels(self.bounds)
        self._counts = [0] * (len(self.bounds) + 1)  # per bucket, not cumulative; the last is +Inf
        self.sum = 0.0
        self.count = 0

    def observe(self, late: float) -> None:
        late = max(0.0, late)
        self._counts[bisect.bisect_left(self.bounds, late)] += 1
        self.sum += late
        self.count += 1

    def state(self) -> tuple:
        """A value that changes whenever an observation is added (the self-metrics' cache key)."""
        return (self.count, self.sum)

    def samples(self) -> list[Sample]:
        # Read from the web thread while the loop observes: the buckets and the count come from
        # one copy of the counts (consistent); the sum may hold one observation more or less.
        counts = self._counts.copy()
        cumulative = list(itertools.accumulate(counts))
        return histogram_samples(FAMILY, {}, self._le, cumulative, cumulative[-1], self.sum)

    async def run(self, interval: float = PROBE_INTERVAL) -> None:
        """Sleep ``interval`` again and again, observing how much later than asked each wake-up came."""
        clock = time.monotonic
        while True:
            asked = clock() + interval
            await asyncio.sleep(interval)
            self.observe(clock() - asked)
