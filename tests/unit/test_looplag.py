"""The event-loop lag probe (looplag.py): a loop held by a synchronous step shows in the histogram
as one late wake-up of about the hold; a free loop's wake-ups are on time."""

import asyncio
import time

from fabric_exporter.looplag import FAMILY, LoopLag


def _buckets(lag: LoopLag) -> dict[str, float]:
    return {labels["le"]: value for name, labels, value in lag.samples() if name == FAMILY + "_bucket"}


def test_observations_land_in_their_buckets_cumulatively_bounds_inclusive():
    lag = LoopLag()
    for late in (0.0, 0.005, 0.2, 0.3, 7.0, -0.001):  # a wake-up before time counts as 0
        lag.observe(late)
    buckets = _buckets(lag)
    assert buckets == {"0.005": 3, "0.025": 3, "0.1": 3, "0.25": 4, "0.5": 5, "1.0": 5, "2.5": 5, "5.0": 5,
                       "+Inf": 6}
    totals = {name: value for name, _labels, value in lag.samples() if not name.endswith("_bucket")}
    assert totals == {FAMILY + "_count": 6, FAMILY + "_sum": 7.505}
    assert lag.state() == (6, 7.505)


def test_a_loop_held_by_a_blocking_step_shows_one_late_wake_up_of_about_the_hold():
    async def scenario() -> LoopLag:
        lag = LoopLag()
        probe = asyncio.create_task(lag.run(interval=0.02))
        await asyncio.sleep(0.1)  # a few wake-ups on time first
        time.sleep(0.6)  # a synchronous step holding the loop
        await asyncio.sleep(0.1)
        probe.cancel()
        await asyncio.gather(probe, return_exceptions=True)
        return lag

    lag = asyncio.run(scenario())
    buckets = _buckets(lag)
    assert lag.count >= 3
    assert buckets["+Inf"] - buckets["0.5"] == 1  # the hold: one wake-up 0.5-1 s late (0.6 s less the sleep)
    assert buckets["1.0"] == lag.count
    assert 0.55 <= lag.sum <= 1.0
