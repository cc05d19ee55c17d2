"""The scheduler against real transports: isolation from hung hosts, backoff, staleness, limits."""

import asyncio
import collections
import math
import time
import threading

import pytest
from aiohttp.test_utils import TestClient, TestServer

from fabric_exporter.collectors import Collector, PollContext, register, unregister
from fabric_exporter.errors import PollError
from fabric_exporter.samples import PollResult, Sample
from fabric_exporter.scheduler import (FIRST_POLLS_PER_SECOND, GROUP_HOST, START_SPREAD_MAX_INTERVALS,
                                       START_SPREAD_MIN, Scheduler,
                                       backoff_delay, first_poll_delay, next_poll_due, phase_of)
from fabric_exporter import scheduler as scheduler_module
from fabric_exporter.sharding import parse_shard
from fabric_exporter.serving.store import SnapshotStore
from fabric_exporter.transport.factory import Transports
from fabric_exporter.serving.web import build_app
from tests.harness.configs import parse_config

from tests.harness.ssh_server import SilentTCPServer, ThreadedSSHServer
from tests.harness import plugin_collectors  # noqa: F401  registers test_command


def ssh_config(srv: ThreadedSSHServer, silent_port: int, interval="1s", timeout="600ms") -> dict:
    return {
        "credentials": {"lab": {"type": "ssh", "username": "root", "private_key_file": str(srv.client_key),
                                "known_hosts_file": str(srv.known_hosts), "connect_timeout": "5s"}},
        "targets": [{
            "name": "gpus", "fabric": "lab", "collector": "test_command", "transport": "ssh",
            "credentials": "lab", "interval": interval, "timeout": timeout,
            "hosts": [{"name": "healthy", "address": "127.0.0.1", "port": srv.port},
                      {"name": "hung", "address": "127.0.0.1", "port": silent_port}],
            "options": {"command": ["echo", "eth0 7"]},
        }],
    }


def test_backoff_doubles_the_gap_and_is_capped():
    assert backoff_delay(10, 0, 300) == 0
    assert [backoff_delay(10, n, 300) for n in (1, 2, 3, 4, 5, 6)] == [10, 30, 70, 150, 290, 290]
    assert backoff_delay(10, 50, 5) == 0  # a cap below the interval never shortens the interval


def test_a_hung_host_never_delays_a_healthy_one(tmp_path):
    async def scenario():
        with ThreadedSSHServer(tmp_path / "ssh") as srv, SilentTCPServer() as silent:
            cfg = parse_config(ssh_config(srv, silent.port))
            store = SnapshotStore()
            transports = Transports()
            sched = Scheduler(transports, store)
            sched.apply(cfg)
            await asyncio.sleep(4.6)
            healthy, hung = sched.states[("gpus", "healthy")], sched.states[("gpus", "hung")]
            await sched.stop()
            await transports.close()
            return healthy, hung, store.render().decode()

    healthy, hung, text = asyncio.run(scenario())
    # interval 1s (+-10% jitter) over ~4.5s: 4 or 5 polls, every one a success; the hung host's
    # deadline (0.6s) and its backoff never pushed the healthy host's schedule back.
    assert healthy.polls >= 4 and healthy.errors == {}, (healthy.polls, healthy.errors)
    assert healthy.state == "ok" and healthy.last_duration < 0.6
    assert hung.state == "failed" and set(hung.errors) == {"timeout"}
    assert hung.polls < healthy.polls  # backing off
    assert 'host="healthy"' in text and 'host="hung"' not in text


def test_stale_target_publishes_no_series_but_its_status(tmp_path, local_commands):
    counter = tmp_path / "value"
    counter.write_text("eth0 5\n")

    async def scenario():
        cfg = parse_config({"targets": [{
            "name": "g", "fabric": "lab", "collector": "test_command", "transport": "local",
            "interval": "500ms", "timeout": "400ms", "stale_after": "1s",
            "options": {"command": ["cat", str(counter)]}}]})
        store = SnapshotStore()
        sched = Scheduler(Transports(), store)
        sched.apply(cfg)
        await asyncio.sleep(0.8)
        first = store.render().decode()
        counter.unlink()  # from now on every poll fails
        await asyncio.sleep(0.6)
        still_fresh = store.render().decode()
        await asyncio.sleep(1.2)
        gone = store.render().decode()
        state = sched.states[("g", "localhost")]
        fresh = store.is_fresh(("g", "localhost"))
        await sched.stop()
        return first, still_fresh, gone, state, fresh

    first, still_fresh, gone, state, fresh = asyncio.run(scenario())
    line = 'fabric_roce_rx_bytes_total{device="mlx5_0",fabric="lab",host="localhost",netdev="eth0",port="1"} 5.0'
    assert line in first
    assert line in still_fresh  # one failed poll inside stale_after: last values still stand
    assert "fabric_roce_rx_bytes_total{" not in gone  # past stale_after: withheld, never frozen
    assert state.state == "failed" and state.errors["command_failed"] >= 1 and not fresh


def test_polls_of_one_target_never_overlap_and_limits_hold(tmp_path, local_commands):
    log = tmp_path / "log"
    script = tmp_path / "probe.sh"
    # Each poll appends start/end marks and sleeps 0.3s; three hosts share a local limit of 1.
    script.write_text(f'echo "start $1 $(date +%s.%N)" >> {log}; sleep 0.3; '
                      f'echo "end $1 $(date +%s.%N)" >> {log}; echo "eth0 1"\n')

    async def scenario():
        cfg = parse_config({
            "limits": {"per_transport": {"local": 1}},
            "targets": [{"name": "g", "fabric": "lab", "collector": "test_command", "transport": "local",
                         "interval": "1s", "timeout": "900ms",
                         "hosts": ["a", "b", "c"], "options": {"command": ["sh", str(script), "{host}"]}}]})
        sched = Scheduler(Transports(), SnapshotStore())
        sched.apply(cfg)
        await asyncio.sleep(2.5)
        await sched.stop()

    asyncio.run(scenario())
    events = [line.split() for line in log.read_text().splitlines()]
    running = 0
    for kind, _host, _ts in sorted(events, key=lambda e: float(e[2])):
        running += 1 if kind == "start" else -1
        assert running <= 1, "the per-transport limit of 1 was exceeded"
    assert sum(1 for e in events if e[0] == "end") >= 3


def test_once_reports_each_failure_reason(tmp_path, local_commands):
    async def scenario():
        cfg = parse_config({"targets": [
            {"name": "ok", "fabric": "lab", "collector": "test_command", "transport": "local"},
            {"name": "garbled", "fabric": "lab", "collector": "test_command", "transport": "local",
             "options": {"command": ["echo", "not a number"]}},
            {"name": "missing", "fabric": "lab", "collector": "test_command", "transport": "local",
             "options": {"command": ["/nonexistent/tool"]}}]})
        sched = Scheduler(Transports(), SnapshotStore())
        sched.apply(cfg, start_tasks=False)
        return {s.group: s for s in await sched.poll_all_once()}

    states = asyncio.run(scenario())
    assert states["ok"].state == "ok"
    assert dict(states["garbled"].errors) == {"parse": 1}
    assert "expected '<netdev> <value>'" in states["garbled"].last_error
    assert dict(states["missing"].errors) == {"command_failed": 1}
    assert "command not found" in states["missing"].last_error


def test_waiting_for_a_slot_does_not_eat_the_poll_deadline(tmp_path, local_commands):
    # Two hosts, one local slot, each poll takes 0.5s of its 0.6s deadline: the second waits for
    # the first and must still get its full deadline.
    async def scenario():
        cfg = parse_config({
            "limits": {"per_transport": {"local": 1}},
            "targets": [{"name": "g", "fabric": "lab", "collector": "test_command", "transport": "local",
                         "interval": "2s", "timeout": "600ms", "hosts": ["a", "b"],
                         "options": {"command": ["sh", "-c", "sleep 0.5; echo eth0 1"]}}]})
        sched = Scheduler(Transports(), SnapshotStore())
        sched.apply(cfg, start_tasks=False)
        return await sched.poll_all_once()

    states = asyncio.run(scenario())
    assert [s.state for s in states] == ["ok", "ok"], [s.last_error for s in states]


def test_a_failing_target_is_logged_when_it_changes_not_every_poll(tmp_path, caplog, local_commands):
    values = tmp_path / "values"

    async def scenario():
        cfg = parse_config({"targets": [{"name": "g", "fabric": "lab", "collector": "test_command",
                                         "transport": "local", "options": {"command": ["cat", str(values)]}}]})
        sched = Scheduler(Transports(), SnapshotStore())
        sched.apply(cfg, start_tasks=False)
        key = ("g", "localhost")
        collector = plugin_collectors.CommandValuesCollector(
            PollContext(cfg.targets[0], cfg.targets[0].hosts[0], sched.transports))

        async def polls(n):
            for _ in range(n):
                await sched.poll(key, collector)

        def messages():
            return [(r.levelname, r.getMessage(), r.fields.get("reason")) for r in caplog.records
                    if r.name == "fabric_exporter.scheduler" and r.levelno >= 20]

        await polls(2)  # missing file: fails, with its reason
        await polls(4)
        first = messages()
        values.write_text("eth0 x\n")  # now a parse error: a new reason is worth a line
        await polls(3)
        changed = messages()
        sched.health_reminder_seconds = 0.3
        await asyncio.sleep(0.35)
        await polls(3)  # the first of these is past the reminder interval, the others not
        reminded = messages()
        values.write_text("eth0 1\n")
        await polls(3)
        return first, changed, reminded, messages()

    with caplog.at_level("DEBUG", logger="fabric_exporter.scheduler"):
        first, changed, reminded, final = asyncio.run(scenario())
    assert first == [("WARNING", "target failing", "command_failed")]
    assert changed[1:] == [("WARNING", "target failing", "parse")]
    assert reminded[2:] == [("WARNING", "target failing still", "parse")]
    assert final[3:] == [("INFO", "target recovered", None)]
    recovered = [r for r in caplog.records if r.getMessage() == "target recovered"][0]
    assert recovered.fields["was"] == "parse" and recovered.fields["polls"] == 12
    # every failed poll is still there at debug level, for whoever needs it
    assert sum(r.getMessage() == "poll failed" for r in caplog.records) == 12 - 3

# -- the edges the mutation run (scripts/mutation scheduler) found untested (issue 16): ready(), /ready, backoff, the state a poll leaves 

LABELS = {"host": "h1", "device": "mlx5_0", "port": "1", "netdev": "eth0"}


NAME = "fabric_roce_rx_bytes_total"


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
            skipped = what if isinstance(what, list) else []  # SkippedLines the parsers would have noted
            if what == "uncatalogued":
                samples.append(Sample("fabric_no_such_metric", {"host": self.host.name}, 1))
            return PollResult(samples, ["one port unreadable"] if what == "partial" else [], skipped)

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


def test_phases_are_fixed_per_target_and_spread_evenly():
    """A target's phase is a hash of its key: the same on every start, and 10,000 targets' phases
    fill each tenth of the interval alike."""
    keys = [("gpus", f"gpu-{i:05d}") for i in range(10_000)]
    phases = [phase_of(k) for k in keys]
    assert phases == [phase_of(k) for k in keys] and all(0 <= p < 1 for p in phases)
    tenths = collections.Counter(int(p * 10) for p in phases)
    assert all(900 <= tenths[t] <= 1100 for t in range(10)), tenths


def test_first_polls_are_spread_by_how_many_targets_start():
    """Up to 50 targets all poll within START_SPREAD_MIN of a start (or the interval); 2,051 (a 10k-GPU cluster's
    hosts and switches) over 82 s, at 25 a second; never over more than three intervals."""
    assert FIRST_POLLS_PER_SECOND == 25 and START_SPREAD_MAX_INTERVALS == 3
    assert first_poll_delay(0.999, 30, 50) == pytest.approx(0.999 * START_SPREAD_MIN)
    assert first_poll_delay(0.999, 0.5, 10) == pytest.approx(0.999 * 0.5)  # a short interval: within it
    assert first_poll_delay(0.999, 0.5, 500) == pytest.approx(0.999 * 1.5)  # three intervals at most
    assert first_poll_delay(0.5, 30, 2051) == pytest.approx(0.5 * 2051 / 25)
    assert first_poll_delay(0.999, 30, 100_000) == pytest.approx(0.999 * 90)
    assert first_poll_delay(0.0, 30, 100_000) == 0


def test_the_next_poll_is_on_the_grid_never_drifting():
    anchor, interval = 10.0, 30.0
    assert next_poll_due(anchor, interval, 25.0) == 40.0
    assert next_poll_due(anchor, interval, 40.0) == 40.0  # a grid time itself
    assert next_poll_due(anchor, interval, 40.5) == 70.0
    assert next_poll_due(anchor, interval, 3.0) == 40.0  # never the anchor itself (k >= 1)
    # a poll late by a third of the interval each time comes back to the grid: no random walk
    due = anchor
    for k in range(1, 1000):
        due = next_poll_due(anchor, interval, due + interval / 3 + interval / 2)
        assert due == anchor + k * interval


def test_many_targets_polls_spread_over_the_interval_and_keep_it(scripted):
    """300 targets at a 1 s interval, jitter 0 (first polls over three intervals): after the first
    round every tenth of the interval holds some of the polls and none holds a third of them, and
    each target's polls keep their place. Before, all 300 began within 0.1 s and stayed bunched
    (a +-10 % random walk)."""
    starts: dict[str, list[float]] = collections.defaultdict(list)

    async def main():
        hosts = [f"h{i:03d}" for i in range(300)]
        cfg = parse_config({"defaults": {"jitter": 0},
                            "targets": [{"name": "g", "fabric": "f", "collector": "test_scripted", "transport": "local",
                                         "hosts": hosts, "interval": "1s", "timeout": "500ms"}],
                            "limits": {"max_concurrent_polls": 1000, "per_transport": {"local": 1000}}})
        sched = Scheduler(None, SnapshotStore())
        poll = sched.poll

        async def timed(key, collector):
            starts[key[1]].append(time.monotonic())
            return await poll(key, collector)

        sched.poll = timed
        t0 = time.monotonic()
        sched.apply(cfg)
        await asyncio.sleep(5.6)
        await sched.stop()
        return t0

    t0 = asyncio.run(main())
    later = [t - t0 for times in starts.values() for t in times[1:]]
    assert len(later) >= 300  # every target polled again after its first poll
    tenths = collections.Counter(int((t % 1.0) * 10) for t in later)
    assert len(tenths) == 10 and max(tenths.values()) < len(later) / 3, tenths
    for host, times in starts.items():  # each target at its own phase: one poll a second
        gaps = [b - a for a, b in zip(times[1:], times[2:])]
        assert all(0.7 < g < 1.3 for g in gaps), (host, gaps)


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
    assert (records[0].levelname, records[0].getMessage()) == ("WARNING", "target failing")  # what operators grep for
    assert records[0].fields["error"] == "refused"  # the structured log's field, as for partial data
    assert {k: records[0].fields.get(k) for k in ("group", "host", "collector")} == {
        "group": "g", "host": "a", "collector": "test_scripted"}


def test_jitter_moves_each_poll_off_the_grid_without_accumulating(scripted):
    """With the jitter at its upper bound (0.5) every poll comes a quarter interval after its grid
    time: polls stay one interval apart (the offsets do not add up), never sooner."""
    starts: list[float] = []

    async def main():
        cfg = parse_config({"defaults": {"jitter": 0.5},
                            "targets": [{"name": "g", "fabric": "f", "collector": "test_scripted", "transport": "local",
                                         "hosts": ["a"], "interval": "400ms", "timeout": "200ms"}]})
        sched = Scheduler(None, SnapshotStore(), rng=_UpperRng())
        poll = sched.poll

        async def timed(key, collector):
            starts.append(time.monotonic())
            return await poll(key, collector)

        sched.poll = timed
        t0 = time.monotonic()
        sched.apply(cfg)
        await asyncio.sleep(2.3)
        await sched.stop()
        return t0

    t0 = asyncio.run(main())
    anchor = t0 + phase_of(("g", "a")) * 0.4
    assert len(starts) >= 4
    for k, t in enumerate(starts[1:4], start=1):  # grid time + 0.5 x 0.4 s / 2; 0.1 s of slack for a slow loop
        late = t - (anchor + k * 0.4 + 0.1)
        assert -0.02 < late < 0.1, (k, late)


def test_a_poll_cancelled_in_flight_ends_cancelled_and_leaves_no_trace(scripted):
    """A reload or shutdown cancels polls in flight: the cancellation reaches the caller (so the
    task ends and closes its collector), and the poll is neither counted nor stored -- not a
    failure, not a sample -- and the slot it held is free again."""
    async def main():
        store = SnapshotStore()
        sched = Scheduler(None, store)
        cfg = parse_config({"limits": {"max_concurrent_polls": 1},
                            "targets": [{"name": "g", "fabric": "f", "collector": "test_scripted", "transport": "local",
                                         "hosts": ["a"], "interval": "10s", "timeout": "5s"}]})
        sched.apply(cfg, start_tasks=False)
        BEHAVIOUR["a"] = "sleep"
        in_flight = asyncio.ensure_future(poll(sched, cfg, ("g", "a")))
        await asyncio.sleep(0.05)
        in_flight.cancel()
        with pytest.raises(asyncio.CancelledError):
            await in_flight
        s = sched.states[("g", "a")]
        assert (s.polls, s.state, dict(s.errors), s.consecutive_failures, s.last_error) == (0, "pending", {}, 0, "")
        assert store.get(("g", "a")) is None
        BEHAVIOUR["a"] = 1
        s = await asyncio.wait_for(poll(sched, cfg, ("g", "a")), 2)  # the only slot was released
        assert (s.state, s.polls, s.samples) == ("ok", 1, 2)

    asyncio.run(main())


def test_a_target_not_yet_polled_reports_nothing_yet(scripted):
    sched = Scheduler(None, SnapshotStore())
    sched.apply(config(hosts=("a",)), start_tasks=False)
    s = sched.states[("g", "a")]
    assert (s.state, s.polls, s.samples, s.consecutive_failures, s.backoff, s.last_success, s.last_error) == (
        "pending", 0, 0, 0, 0.0, None, "")


def test_skipped_lines_are_counted_every_poll_and_each_distinct_one_logged_once(scripted, caplog):
    import logging
    import uuid

    from fabric_exporter.parsers.skipped import SkippedLine

    odd, other = f"odd line {uuid.uuid4()}", f"other line {uuid.uuid4()}"  # unseen by earlier tests' polls
    BEHAVIOUR["a"] = [SkippedLine("ethtool", 3, odd), SkippedLine("ethtool", 9, odd), SkippedLine("ethtool", 4, other)]

    async def main():
        sched = Scheduler(None, SnapshotStore())
        cfg = config(hosts=("a",))
        sched.apply(cfg, start_tasks=False)
        await poll(sched, cfg, ("g", "a"))
        state = await poll(sched, cfg, ("g", "a"))
        return state

    with caplog.at_level(logging.DEBUG, logger="fabric_exporter.scheduler"):
        state = asyncio.run(main())
    assert state.state == "ok" and state.skipped_lines["ethtool"] == 6
    logged = [r.fields["line"] for r in caplog.records if getattr(r, "fields", {}).get("line") in (odd, other)]
    assert sorted(logged) == sorted([odd, other])


def test_apply_prepares_the_transports_and_hands_them_the_limits(scripted):
    """Before any poll: what the config's transports need is loaded (not inside a poll's deadline),
    and limits such as max_output_bytes reach the transports on every (re)load."""

    class Recording:
        def __init__(self):
            self.calls = []

        def prepare(self, cfg):
            self.calls.append(("prepare", cfg))

        def apply_limits(self, limits):
            self.calls.append(("apply_limits", limits))

    transports = Recording()
    sched = Scheduler(transports, SnapshotStore())
    assert sched.config is None
    first, second = config(hosts=("a",)), config(hosts=("a", "b"))
    sched.apply(first, start_tasks=False)
    sched.apply(second, start_tasks=False)
    assert sched.config is second  # the config in force, for whoever reloads next
    assert transports.calls == [("prepare", first), ("apply_limits", first.limits),
                                ("prepare", second), ("apply_limits", second.limits)]


def test_a_metric_outside_the_catalog_fails_the_poll_as_a_collector_bug(scripted):
    """Nothing half-published: the poll fails with reason internal, the last good data stays."""
    async def main():
        store = SnapshotStore()
        sched = Scheduler(None, store)
        cfg = config(hosts=("a",))
        sched.apply(cfg, start_tasks=False)
        await poll(sched, cfg, ("g", "a"))
        good = store.get(("g", "a"))
        BEHAVIOUR["a"] = "uncatalogued"
        state = await poll(sched, cfg, ("g", "a"))
        return state, good, store.get(("g", "a"))

    state, good, kept = asyncio.run(main())
    assert (state.state, dict(state.errors), state.consecutive_failures) == ("failed", {"internal": 1}, 1)
    assert state.last_error.startswith("collector bug:") and "fabric_no_such_metric" in state.last_error
    assert kept is good


def test_partial_data_is_logged_once_and_its_recovery_names_it(scripted, caplog):
    import logging

    async def main():
        sched = Scheduler(None, SnapshotStore())
        cfg = config(hosts=("a",))
        sched.apply(cfg, start_tasks=False)
        BEHAVIOUR["a"] = "partial"
        await poll(sched, cfg, ("g", "a"))
        await poll(sched, cfg, ("g", "a"))
        BEHAVIOUR["a"] = 1
        await poll(sched, cfg, ("g", "a"))

    with caplog.at_level(logging.INFO, logger="fabric_exporter.scheduler"):
        asyncio.run(main())
    mine = [r for r in caplog.records if getattr(r, "fields", {}).get("host") == "a"]
    assert [(r.levelname, r.getMessage()) for r in mine] == [("WARNING", "partial data"), ("INFO", "target recovered")]
    assert mine[0].fields["error"] == "one port unreadable"
    assert (mine[1].fields["was"], mine[1].fields["polls"]) == ("partial", 2)


@pytest.mark.parametrize("threshold, off_loop", [(2, True), (4, False)])
def test_a_large_poll_is_rendered_off_the_event_loop_a_small_one_on_it(scripted, monkeypatch, threshold, off_loop):
    """A large fabric's render (~0.3 s per million samples) would hold every scrape and SNMP answer:
    from SNAPSHOT_IN_THREAD_SAMPLES samples up it runs on a worker thread. Its snapshot is the same,
    a metric outside the catalog still fails the poll as a collector bug."""
    built_on: list[int] = []
    real_build = scheduler_module.build_snapshot

    def recording_build(*args, **kwargs):
        built_on.append(threading.get_ident())
        return real_build(*args, **kwargs)

    monkeypatch.setattr(scheduler_module, "build_snapshot", recording_build)
    monkeypatch.setattr(scheduler_module, "SNAPSHOT_IN_THREAD_SAMPLES", threshold)  # polls of 2 and 3 samples

    async def main():
        store = SnapshotStore()
        sched = Scheduler(None, store)
        cfg = config(hosts=("a",))
        sched.apply(cfg, start_tasks=False)
        ok = (await poll(sched, cfg, ("g", "a"))).state
        text = store.render(0)
        BEHAVIOUR["a"] = "uncatalogued"
        bad = await poll(sched, cfg, ("g", "a"))
        return ok, bad.state, bad.last_error, text

    ok, bad, error, text = asyncio.run(main())
    assert len(built_on) == 2 and (threading.get_ident() not in built_on) == off_loop
    assert (ok, bad) == ("ok", "failed") and error.startswith("collector bug:")
    assert b'fabric="f"' in text and text.count(b"\n") >= 2


def _note_calls_outside(lock, obj, methods: tuple[str, ...], calls: list[str]) -> None:
    """Wrap ``obj``'s ``methods`` so each call made without holding ``lock`` is noted in ``calls``."""
    for name in methods:
        method = getattr(obj, name)

        def checked(*args, _method=method, _name=name, **kwargs):
            if not lock._is_owned():
                calls.append(_name)
            return _method(*args, **kwargs)

        setattr(obj, name, checked)


def test_what_a_scrape_shows_changes_only_under_the_store_lock(scripted):
    """/metrics is taken on the web thread under the store's lock, without a turn of the daemon's
    loop (Daemon.exposition_parts): a landing poll's snapshot and its self-metrics, a new target's
    and a retired one's, must all change under that lock, or a scrape could see half a change."""
    from fabric_exporter.serving.selfmetrics import ReloadStatus, SelfMetrics

    unlocked: list[str] = []
    store = SnapshotStore()
    self_metrics = SelfMetrics(ReloadStatus())
    _note_calls_outside(store.lock, store, ("put", "drop"), unlocked)
    _note_calls_outside(store.lock, self_metrics, ("target_changed", "target_removed"), unlocked)

    async def main():
        sched = Scheduler(None, store, self_metrics=self_metrics)
        cfg = config(hosts=("a", "b"))
        sched.apply(cfg, start_tasks=False)
        await poll(sched, cfg, ("g", "a"))
        BEHAVIOUR["b"] = PollError("down", reason="connect")
        await poll(sched, cfg, ("g", "b"))
        sched.apply(config(hosts=("a",)), start_tasks=False)  # b retired
        return sched.self_metrics.render(0)

    text = asyncio.run(main())
    assert unlocked == []
    assert b'host="a"' in text and b'host="b"' not in text


def test_a_scrape_waits_for_a_change_in_progress():
    from fabric_exporter.daemon import Daemon

    daemon = Daemon("unused.yaml")
    got: list = []
    with daemon.store.lock:  # as the scheduler holds it while a poll lands
        reader = threading.Thread(target=lambda: got.append(daemon.exposition_parts(True)))
        reader.start()
        reader.join(0.3)
        assert reader.is_alive() and got == []
    reader.join(10)
    assert not reader.is_alive() and got and got[0]
