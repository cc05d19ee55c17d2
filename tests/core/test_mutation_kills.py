"""Tests written for the mutants that survived tests/core (issue 16, "Test strength"): exposition's
boundaries and escaping, Scheduler.ready() and /ready turning 200, backoff starting and resetting,
and the state a poll leaves. Public functions only; in-process and fast (scripts/mutation runs
them once per mutant)."""

from __future__ import annotations

import asyncio
import math
import random

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.utils import floatToGoString

from fabric_exporter.collectors import Collector, register, unregister
from tests.harness.configs import parse_config
from fabric_exporter.errors import PollError
from fabric_exporter.exposition import (UnknownMetricError, family_header, format_value, render_chunks)
from fabric_exporter.catalog import family_of
from fabric_exporter.samples import PollResult, Sample
from fabric_exporter.scheduler import GROUP_HOST, Scheduler, backoff_delay
from fabric_exporter.sharding import parse_shard
from fabric_exporter.store import SnapshotStore
from fabric_exporter.web import build_app

LABELS = {"host": "h1", "device": "mlx5_0", "port": "1", "netdev": "eth0"}
NAME = "fabric_roce_rx_bytes_total"

# -- exposition ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 1, -1, 7, 999_999, 1_000_000, 1_000_001, 1_200_000, 10**7, 123_456_789,
                                   10**15 - 1, 10**15, -10**15, -10**15 + 1, -10**15 - 1, 2**53 - 1, 2**53, 2**53 + 1,
                                   2**63 - 1, 2**64 - 1, 2**64, 0.0, 0.5, -0.5, 1e6, 1.5e-7, 1e21, float("inf"),
                                   float("-inf")])
def test_format_value_matches_prometheus_client_at_every_boundary(value):
    assert format_value(value) == floatToGoString(value)


def _values_around_every_boundary() -> list:
    """Floats and ints on both sides of every switch in format_value: 6 and 7 integer digits,
    integral or not, 10**15 and 10**16 (Python's repr turns exponent at 1e16), 2**53 (ints past it
    are not all floats), negative and positive, zero's sign, infinities, NaN; plus a seeded sweep
    over magnitudes from 1e-9 to 1e22."""
    rng = random.Random(12)
    fixed = [123_456.0, 999_999.0, 999_999.5, 1_000_000.0, 1_000_000.5, 1_234_567.5, 4_363_776.0, 1e7, 1.25e7,
             -1_234_567.0, -1e7, 1e15, 1e16, 1.5e16, -1e16, 0.0, -0.0, float("inf"), float("-inf"),
             float("nan"), 5e-324, 123_456, 999_999, 1_000_000, -999_999, -9_999_999_999_999_999,
             -(10**16), -(2**53) - 1, 2**53 + 1, 2**54 - 1, 2**54 + 1, 10**16 + 1, 10**21 + 1]
    floats = [rng.uniform(0.1, 9.9) * 10.0 ** rng.randint(-9, 22) * rng.choice((1, -1)) for _ in range(3000)]
    integral = [float(rng.randrange(10 ** rng.randint(1, 18))) for _ in range(3000)]
    ints = [rng.randrange(-10**17, 10**17) for _ in range(3000)]
    return fixed + floats + integral + ints


def test_format_value_matches_prometheus_client_on_a_seeded_sweep():
    wrong = [(v, format_value(v), floatToGoString(v)) for v in _values_around_every_boundary()
             if format_value(v) != floatToGoString(v)]
    assert wrong == []


def test_format_value_known_forms():
    assert format_value(999_999) == "999999.0"
    assert format_value(1_000_000) == "1e+06"
    assert format_value(1_200_000) == "1.2e+06"
    assert format_value(2**64 - 1) == "1.8446744073709552e+19"
    assert format_value(0) == "0.0"
    assert format_value(float("nan")) == "NaN"


def test_label_values_and_help_are_escaped():
    full = {**LABELS, "fabric": "f"}
    text = render_chunks([(NAME, {**full, "netdev": 'a\\b"c\nd'}, 3)])[family_of(NAME).name].decode()
    assert text == 'fabric_roce_rx_bytes_total{device="mlx5_0",fabric="f",host="h1",netdev="a\\\\b\\"c\\nd",port="1"} 3.0\n'
    text = render_chunks([(NAME, full, 0)])[family_of(NAME).name].decode()
    assert text.endswith("} 0.0\n")
    spec = family_of(NAME)
    header = family_header(spec).decode()
    assert header.startswith(f"# HELP {spec.name} ") and header.endswith(f"\n# TYPE {spec.name} {spec.exposed_type}\n")
    assert header.count("\n") == 2


def test_render_chunks_groups_sorts_and_escapes():
    full = {**LABELS, "fabric": "f"}
    samples = [(NAME, full, 5), (NAME, {**full, "netdev": 'q"\\\n'}, 2**64 - 1), (NAME, full, 1_000_000)]
    first = render_chunks(samples)
    again = render_chunks(samples)  # the second call takes the cached shapes: same bytes
    assert first == again
    family = family_of(NAME).name
    assert list(first) == [family]
    text = first[family].decode()
    assert text == ('fabric_roce_rx_bytes_total{device="mlx5_0",fabric="f",host="h1",netdev="eth0",port="1"} 5.0\n'
                    'fabric_roce_rx_bytes_total{device="mlx5_0",fabric="f",host="h1",netdev="q\\"\\\\\\n",port="1"} '
                    '1.8446744073709552e+19\n'
                    'fabric_roce_rx_bytes_total{device="mlx5_0",fabric="f",host="h1",netdev="eth0",port="1"} 1e+06\n')
    assert render_chunks([]) == {}


def test_render_chunks_refuses_names_and_label_sets_outside_the_catalog():
    with pytest.raises(UnknownMetricError, match="not in the metric catalog"):
        render_chunks([("fabric_no_such_metric", {}, 1)])
    with pytest.raises(UnknownMetricError, match="labels"):
        render_chunks([(NAME, {"host": "h1", "bogus": "x"}, 1)])
    with pytest.raises(UnknownMetricError):  # a refused shape is not cached as allowed
        render_chunks([(NAME, {"host": "h1", "bogus": "x"}, 1)])
    with pytest.raises(UnknownMetricError):  # the catalog's label set minus "fabric"
        render_chunks([(NAME, LABELS, 1)])


# -- scheduler ---------------------------------------------------------------------------------------

BEHAVIOUR: dict[str, object] = {}


@pytest.fixture
def scripted():
    """A collector whose poll does what BEHAVIOUR[host] says: a number (publish it), PollError, "partial"."""

    class Scripted(Collector):
        name = "test_scripted"
        transports = ("local", "ssh")

        async def poll(self) -> PollResult:
            what = BEHAVIOUR.get(self.host.name, 1)
            if isinstance(what, BaseException):
                raise what
            if what == "sleep":
                await asyncio.sleep(10)
            samples = [Sample(NAME, {**LABELS, "host": self.host.name}, 7), Sample(NAME, {**LABELS, "host": self.host.name, "netdev": "eth1"}, 8)]
            return PollResult(samples, ["one port unreadable"] if what == "partial" else [])

    register(Scripted)
    BEHAVIOUR.clear()
    yield Scripted
    unregister("test_scripted")
    BEHAVIOUR.clear()


def config(hosts=("a", "b"), **extra):
    g = {"name": "g", "fabric": "f", "collector": "test_scripted", "transport": "local", "hosts": list(hosts),
         "interval": "10s", "timeout": "2s"}
    g.update(extra)
    return parse_config({"defaults": {"max_backoff": "60s"}, "targets": [g]})


def test_backoff_delay_values():
    assert backoff_delay(10, 0, 300) == 0 and backoff_delay(10, -1, 300) == 0
    assert backoff_delay(10, 1, 300) == 10  # the gap doubles: 20 s
    assert backoff_delay(10, 2, 300) == 30  # 40 s
    assert backoff_delay(10, 4, 300) == 150  # 160 s
    assert backoff_delay(10, 5, 300) == 290  # capped at 300 s
    assert backoff_delay(10, 1000, 300) == 290
    assert backoff_delay(10, 3, 5) == 0  # a cap below the interval: never slower than the interval


def test_ready_only_when_every_target_was_tried_and_ready_turns_200(scripted):
    async def main():
        sched = Scheduler(None, SnapshotStore())
        assert sched.ready() is False  # no config yet
        cfg = config()
        sched.apply(cfg, start_tasks=False)
        assert sched.ready() is False

        class D:
            scheduler = sched

        client = TestClient(TestServer(build_app(D())))
        await client.start_server()
        try:
            r = await client.get("/ready")
            assert r.status == 503 and "2 target(s) not polled yet" in await r.text()
            await poll(sched, cfg, ("g", "a"))
            assert sched.ready() is False
            r = await client.get("/ready")
            assert r.status == 503 and "1 target(s)" in await r.text()
            BEHAVIOUR["b"] = PollError("down", reason="connect")
            await poll(sched, cfg, ("g", "b"))
            assert sched.ready() is True  # tried counts, not succeeded
            r = await client.get("/ready")
            assert r.status == 200 and await r.text() == "ready\n"
        finally:
            await client.close()

    asyncio.run(main())


def poll(sched, cfg, key):
    from fabric_exporter.collectors import PollContext

    group, host, cls = sched.targets(cfg)[key]
    return sched.poll(key, cls(PollContext(group, host, None)))


def test_backoff_starts_on_failure_grows_and_resets_on_success(scripted):
    async def main():
        store = SnapshotStore()
        sched = Scheduler(None, store)
        cfg = config(hosts=("a",))
        sched.apply(cfg, start_tasks=False)
        key = ("g", "a")
        ok = await poll(sched, cfg, key)
        assert (ok.state, ok.polls, ok.samples, ok.consecutive_failures, ok.backoff) == ("ok", 1, 2, 0, 0.0)
        assert ok.last_success == ok.last_poll_end and ok.last_duration is not None and ok.last_duration >= 0
        assert store.get(key) is not None
        BEHAVIOUR["a"] = PollError("no route", reason="connect")
        s = await poll(sched, cfg, key)
        assert (s.state, s.consecutive_failures, s.backoff, s.errors["connect"]) == ("failed", 1, 10.0, 1)
        assert s.last_error == "no route" and s.last_success < s.last_poll_end
        assert store.get(key) is not None  # kept through failures until stale
        s = await poll(sched, cfg, key)
        assert (s.consecutive_failures, s.backoff, s.errors["connect"], s.polls) == (2, 30.0, 2, 3)
        BEHAVIOUR["a"] = "partial"
        s = await poll(sched, cfg, key)
        assert (s.state, s.consecutive_failures, s.backoff, s.errors["partial"]) == ("partial", 0, 0.0, 1)
        assert s.last_error == "one port unreadable"
        BEHAVIOUR["a"] = 1
        s = await poll(sched, cfg, key)
        assert (s.state, s.last_error, s.polls) == ("ok", "", 5)

    asyncio.run(main())


def test_a_crashing_or_hanging_collector_is_reported_not_raised(scripted):
    async def main():
        sched = Scheduler(None, SnapshotStore())
        cfg = config(hosts=("a", "b"), timeout="300ms", interval="1s")
        sched.apply(cfg, start_tasks=False)
        BEHAVIOUR["a"] = ZeroDivisionError("bug")
        BEHAVIOUR["b"] = "sleep"
        a = await poll(sched, cfg, ("g", "a"))
        b = await poll(sched, cfg, ("g", "b"))
        assert a.state == "failed" and set(a.errors) == {"internal"} and "ZeroDivisionError" in a.last_error
        assert b.state == "failed" and set(b.errors) == {"timeout"} and "0.3s deadline" in b.last_error
        assert b.last_duration < 1.0

    asyncio.run(main())


def test_a_full_slot_queue_times_out_within_the_interval(scripted):
    async def main():
        cfg = parse_config({"limits": {"max_concurrent_polls": 1},
                            "targets": [{"name": "g", "fabric": "f", "collector": "test_scripted", "transport": "local",
                                         "hosts": ["a", "b", "c"], "interval": "400ms", "timeout": "300ms"}]})
        sched = Scheduler(None, SnapshotStore())
        sched.apply(config(hosts=("a", "b", "c")), start_tasks=False)  # default limits first:
        sched.apply(cfg, start_tasks=False)  # new limits take effect on reload
        BEHAVIOUR["a"] = BEHAVIOUR["c"] = "sleep"
        first = asyncio.ensure_future(poll(sched, cfg, ("g", "a")))  # holds the only slot 0-300 ms
        await asyncio.sleep(0.02)
        second = asyncio.ensure_future(poll(sched, cfg, ("g", "c")))  # next in line: 300-600 ms
        await asyncio.sleep(0.02)
        b = await poll(sched, cfg, ("g", "b"))  # waits for a slot up to its 400 ms interval: none
        await first
        await second
        assert b.state == "failed" and set(b.errors) == {"timeout"} and "no poll slot free" in b.last_error
        BEHAVIOUR["a"] = 1
        a = await poll(sched, cfg, ("g", "a"))  # the slot was released
        assert a.state == "ok"

    asyncio.run(main())


def test_targets_shards_and_apply_keeps_unchanged_targets(scripted):
    async def main():
        store = SnapshotStore()
        sched = Scheduler(None, store)
        cfg = config(hosts=("a", "b", "c", "d"))
        assert set(sched.targets(cfg)) == {("g", h) for h in "abcd"}
        shards = [Scheduler(None, SnapshotStore(), shard=parse_shard(f"{i}/2")) for i in range(2)]
        owned = [set(s.targets(cfg)) for s in shards]
        assert owned[0].isdisjoint(owned[1]) and owned[0] | owned[1] == set(sched.targets(cfg))
        sched.apply(cfg)
        tasks = dict(sched._tasks)  # noqa: SLF001 - which tasks were restarted is the point
        assert len(tasks) == 4 and all(not t.done() for t in tasks.values())
        sched.apply(config(hosts=("a", "b", "c", "e")))
        assert sched._tasks[("g", "a")] is tasks[("g", "a")]  # noqa: SLF001 - unchanged: same task
        assert ("g", "d") not in sched.states and ("g", "e") in sched.states
        await asyncio.sleep(0)
        assert tasks[("g", "d")].cancelled() or tasks[("g", "d")].done()
        sched.apply(config(hosts=("a", "b", "c", "e"), interval="20s"))  # a changed group restarts its targets
        assert sched._tasks[("g", "a")] is not tasks[("g", "a")]  # noqa: SLF001
        await sched.stop()
        assert sched._tasks == {}  # noqa: SLF001

    asyncio.run(main())


def test_a_running_task_polls_and_backs_off(scripted):
    """The task loop: first poll within the start jitter, then on the interval plus the backoff."""
    async def main():
        cfg = parse_config({"defaults": {"jitter": 0, "max_backoff": "10s"},
                            "targets": [{"name": "g", "fabric": "f", "collector": "test_scripted", "transport": "local",
                                         "hosts": ["ok", "bad"], "interval": "200ms", "timeout": "100ms"}]})
        BEHAVIOUR["bad"] = PollError("down", reason="connect")
        sched = Scheduler(None, SnapshotStore())
        sched.apply(cfg)
        await asyncio.sleep(1.5)
        good, bad = sched.states[("g", "ok")], sched.states[("g", "bad")]
        polls = (good.polls, bad.polls)
        await sched.stop()
        return polls, bad.backoff

    (good, bad), backoff = asyncio.run(main())
    # ok: every 200 ms -> ~7 polls in 1.5 s; bad: gaps of 0.4 s, 0.8 s, ... -> 3 polls at most.
    assert good >= 4 and 1 <= bad <= 3 and bad < good, (good, bad)
    assert backoff > 0


def test_group_scoped_targets_use_the_group_host_label():
    assert GROUP_HOST == "all"
    assert math.isclose(backoff_delay(0.5, 1, 60), 0.5)


class _UpperRng:
    """uniform(a, b) -> b: the start delay and jitter at their bound, deterministically."""

    def uniform(self, a, b):
        return b


def test_the_first_poll_is_spread_over_at_most_two_seconds(scripted):
    async def main():
        cfg = parse_config({"defaults": {"jitter": 0.5},
                            "targets": [{"name": "g", "fabric": "f", "collector": "test_scripted", "transport": "local",
                                         "hosts": ["a"], "interval": "100s", "timeout": "1s"}]})
        sched = Scheduler(None, SnapshotStore(), rng=_UpperRng())
        sched.apply(cfg)
        state = sched.states[("g", "a")]
        await asyncio.sleep(1.0)
        early = state.polls
        for _ in range(20):  # bounded: 2 s at most (the first poll is due at 2 s, not 4 s)
            if state.polls:
                break
            await asyncio.sleep(0.1)
        polls = state.polls
        await sched.stop()
        return early, polls, state.key

    early, polls, key = asyncio.run(main())
    assert early == 0 and polls == 1  # min(100 s x 0.5, 2 s) = 2 s after the start, not sooner, not later
    assert key == ("g", "a")


def test_a_target_retired_while_polling_returns_a_blank_state(scripted):
    async def main():
        sched = Scheduler(None, SnapshotStore())
        cfg = config(hosts=("a", "b"))
        sched.apply(cfg, start_tasks=False)
        BEHAVIOUR["a"] = "sleep"
        pending = asyncio.ensure_future(poll(sched, cfg, ("g", "a")))
        await asyncio.sleep(0.05)
        sched.apply(config(hosts=("b",)), start_tasks=False)
        return await pending

    state = asyncio.run(main())
    assert state is not None and (state.group, state.host, state.polls, state.state) == ("g", "a", 0, "pending")


def test_poll_failures_are_logged_with_their_target(scripted, caplog):
    import logging

    async def main():
        sched = Scheduler(None, SnapshotStore())
        cfg = config(hosts=("a",))
        sched.apply(cfg, start_tasks=False)
        BEHAVIOUR["a"] = PollError("refused", reason="connect")
        await poll(sched, cfg, ("g", "a"))

    with caplog.at_level(logging.WARNING, logger="fabric_exporter.scheduler"):
        asyncio.run(main())
    # Whatever the message, a failure's log record names its target and reason.
    records = [r for r in caplog.records if getattr(r, "fields", {}).get("reason") == "connect"]
    assert records, [r.getMessage() for r in caplog.records]
    assert {k: records[0].fields.get(k) for k in ("group", "host", "collector")} == {
        "group": "g", "host": "a", "collector": "test_scripted"}


def test_jitter_is_added_to_the_interval(scripted):
    """With the jitter at its upper bound, polls come every interval x (1 + jitter), never sooner."""
    async def main():
        cfg = parse_config({"defaults": {"jitter": 0.5},
                            "targets": [{"name": "g", "fabric": "f", "collector": "test_scripted", "transport": "local",
                                         "hosts": ["a"], "interval": "1s", "timeout": "500ms"}]})
        sched = Scheduler(None, SnapshotStore(), rng=_UpperRng())
        sched.apply(cfg)
        state = sched.states[("g", "a")]
        await asyncio.sleep(1.6)  # first poll at 0.5 s; the next is due at 2.0 s (1.0 s if jitter were subtracted)
        at_1_6 = state.polls
        await sched.stop()
        return at_1_6

    assert asyncio.run(main()) == 1


def test_help_text_is_escaped_like_prometheus_client():
    import dataclasses

    # The catalog allows one line only, so a backslash is what can need escaping.
    spec = dataclasses.replace(family_of(NAME), help='back\\slash "quoted"')
    assert family_header(spec).decode().splitlines()[0] == f'# HELP {spec.name} back\\\\slash "quoted"'
    from prometheus_client import CollectorRegistry, Counter, generate_latest

    registry = CollectorRegistry()
    Counter(spec.name.removesuffix("_total"), spec.help, registry=registry)
    assert generate_latest(registry).decode().splitlines()[0] == family_header(spec).decode().splitlines()[0]
