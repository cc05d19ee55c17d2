"""The scheduler against real transports: isolation from hung hosts, backoff, staleness, limits."""

import asyncio
import time
from pathlib import Path

from fabric_exporter.collectors import PollContext
from tests.harness.configs import parse_config
from fabric_exporter.scheduler import Scheduler, backoff_delay
from fabric_exporter.store import SnapshotStore
from fabric_exporter.transport.factory import Transports

from ..harness.ssh_server import SilentTCPServer, ThreadedSSHServer
from . import plugin_collectors  # noqa: F401  registers test_command


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
