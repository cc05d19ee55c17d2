"""The cyclic GC's passes on a clock, not on allocation counts.

CPython (3.11) starts a young-generation pass when the *net* count of container allocations passes
its first threshold: allocations minus deallocations. A daemon that replaces its data poll after
poll (a new sample for an old one, a parsed line for the last poll's) allocates millions of objects
a minute at a net count near zero, so a young pass comes rarely and then walks everything made
since the last one; the middle generation likewise. At 10k GPUs those passes held the event loop
0.3-0.75 s (and with them every scrape and SNMP answer waiting, bench/RESULTS.md, issue 27).

So while the daemon runs, the thresholds only ever start a young pass (``PACED_THRESHOLDS``: the
first as before, the others out of reach), and ``GcPacer`` runs the passes itself: a young pass
every ``YOUNG_EVERY`` seconds (the objects of one second, milliseconds to walk), a middle pass
every ``MIDDLE_EVERY`` young ones (what survived those), and a full pass every ``FULL_EVERY``
seconds (every live object not frozen: ~2 s at 10k GPUs, so rarely). A garbage cycle is freed within
a second if it dies young, within ``MIDDLE_EVERY`` seconds if it outlived a young pass, and within
``FULL_EVERY`` if it outlived a middle one (an SSH channel in flight during a middle pass: the
asyncssh process, channel, reader and writer hold each other).
"""

from __future__ import annotations

import asyncio
import gc
import time

#: while the daemon runs: a young pass also per 50,000 net container allocations (CPython: 700,
#: which made the GC walk each poll's samples, alive until the next poll, over and over: 7.5-15 % of
#: the daemon's CPU, ~2-5 % at 50,000), the middle and full passes only from GcPacer
PACED_THRESHOLDS = (50_000, 1 << 30, 1 << 30)
YOUNG_EVERY = 1.0
MIDDLE_EVERY = 5
FULL_EVERY = 900.0


class GcPacer:
    """Runs the GC's passes on a clock (see the module docstring); ``passes`` counts them by generation."""

    def __init__(self, young_every: float = YOUNG_EVERY, middle_every: int = MIDDLE_EVERY,
                 full_every: float = FULL_EVERY, clock=time.monotonic) -> None:
        self.young_every, self.middle_every, self.full_every = young_every, middle_every, full_every
        self.clock = clock
        self.passes = [0, 0, 0]

    def generation_due(self, tick: int, full_due: bool) -> int:
        """Which generation the ``tick``-th pass (from 1) collects, and those younger with it."""
        if full_due:
            return 2
        return 1 if tick % self.middle_every == 0 else 0

    async def run(self) -> None:
        next_full = self.clock() + self.full_every
        tick = 0
        while True:
            await asyncio.sleep(self.young_every)
            tick += 1
            generation = self.generation_due(tick, self.clock() >= next_full)
            if generation == 2:
                next_full = self.clock() + self.full_every
            gc.collect(generation)
            self.passes[generation] += 1
