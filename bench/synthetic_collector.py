"""A collector that does no I/O, for measuring the daemon's own costs at scale (bench_serving.py).

Loaded with ``FABRIC_EXPORTER_PLUGINS=synthetic_collector`` (bench/ on PYTHONPATH). Each target
publishes ``series`` fabric_roce_rx_bytes_total series (16 devices x ports, one netdev each) whose
values grow every poll, like real counters. ``busy_ms`` > 0 also spends that much CPU per poll
in 1 ms slices, each a turn of the event loop (as parsing and mapping a real target's answers
does), to measure /metrics while the loop is saturated (bench_serving.py --busy-ms).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass

from fabric_exporter.collectors import Collector, register
from fabric_exporter.collectors.options import OptionReader
from fabric_exporter.samples import PollResult, Sample


@dataclass(frozen=True)
class Options:
    series: int
    busy_ms: float = 0.0


@register
class SyntheticCollector(Collector):
    name = "bench_synthetic"
    transports = ("local",)

    @classmethod
    def parse_options(cls, raw, path, err, *, base_dir=None):
        r = OptionReader(raw, path, err)
        series = r.integer("series", 160)
        busy_ms = r.number("busy_ms", 0.0)
        r.done()
        return Options(series=series, busy_ms=busy_ms)

    def __init__(self, ctx):
        super().__init__(ctx)
        self._polls = itertools.count(1)

    async def poll(self) -> PollResult:
        n = next(self._polls)
        for _ in range(round(self.options.busy_ms)):
            end = time.process_time() + 0.001
            while time.process_time() < end:
                pass
            await asyncio.sleep(0)
        host = self.host.name
        return PollResult([
            Sample("fabric_roce_rx_bytes_total",
                   {"host": host, "device": f"mlx5_{i % 16}", "port": str(1 + i // 16), "netdev": f"eth{i}"},
                   n * 1_000_003 + i * 7919)
            for i in range(self.options.series)])
