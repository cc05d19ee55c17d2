"""Switch tests: real snmpsim agents on 127.0.0.1 serving data the tests generate and change."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.harness.aio import run  # noqa: F401  (tests import it from here)
from tests.harness.configs import parse_config
from fabric_exporter.lab.snmp import SimulatedSwitch, SnmpSim, V3User
from fabric_exporter.scheduler import Scheduler
from fabric_exporter.store import SnapshotStore
from fabric_exporter.transport.factory import Transports

V3 = V3User("fabric", "auth-secret-1", "priv-secret-1", auth_proto="SHA256", priv_proto="AES256")
# More users, so every auth/priv protocol the config offers for authPriv is tried for real.
V3_MORE = [V3User("fab-sha", "auth-secret-2", "priv-secret-2", auth_proto="SHA", priv_proto="AES128"),
           V3User("fab-sha512", "auth-secret-3", "priv-secret-3", auth_proto="SHA512", priv_proto="AES128"),
           V3User("fab-md5", "auth-secret-4", "priv-secret-4", auth_proto="MD5", priv_proto="DES")]


@pytest.fixture(scope="module")
def switches():
    return {
        "leaf1": SimulatedSwitch("leaf1", "sonic", ports=64, seed=1),
        "arista1": SimulatedSwitch("arista1", "arista", ports=16, seed=2),
        "ieee1": SimulatedSwitch("ieee1", "ieee", ports=8, seed=3),
    }


@pytest.fixture(scope="module")
def snmpsim(switches, tmp_path_factory):
    sim = SnmpSim(list(switches.values()), workdir=tmp_path_factory.mktemp("snmpsim"), v3_user=V3, v3_users=V3_MORE)
    sim.start()
    try:
        yield sim
    finally:
        sim.stop()


def parse_exposition(text: bytes | str) -> dict[tuple[str, frozenset], float]:
    """Sample lines -> {(name, frozenset(labels)): value}; the renderer's own escaping is simple here."""
    import re

    out = {}
    line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
    label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in (text.decode() if isinstance(text, bytes) else text).splitlines():
        if not line or line.startswith("#"):
            continue
        m = line_re.match(line)
        assert m, f"unparsable exposition line {line!r}"
        labels = frozenset(label_re.findall(m.group(2) or ""))
        key = (m.group(1), labels)
        assert key not in out, f"duplicate series {line!r}"
        out[key] = float(m.group(3))
    return out


def make_config(tmp_path: Path, targets: list[dict], credentials: dict | None = None):
    secrets = tmp_path / "secrets"
    secrets.mkdir(exist_ok=True)
    creds = {}
    for name, body in (credentials or {}).items():
        body = dict(body)
        for key in ("community", "auth_password", "priv_password"):
            if key in body:
                f = secrets / f"{name}-{key}"
                f.write_text(body.pop(key) + "\n")
                body[f"{key}_file"] = str(f)
        creds[name] = body
    return parse_config({"credentials": creds, "targets": targets}, base_dir=tmp_path)


class Poller:
    """Keeps one Scheduler (and its collectors' state) across polls, like the daemon does."""

    def __init__(self, config):
        self.transports = Transports()
        self.store = SnapshotStore()
        self.sched = Scheduler(self.transports, self.store)
        self.sched.apply(config, start_tasks=False)
        self.collectors = {}

    async def poll_states(self):
        from fabric_exporter.collectors import PollContext

        for key, (group, host, cls) in self.sched.targets(self.sched.config).items():
            if key not in self.collectors:
                self.collectors[key] = cls(PollContext(group, host, self.transports))
        states = await asyncio.gather(*(self.sched.poll(k, c) for k, c in self.collectors.items()))
        return {s.key: s for s in states}

    async def poll(self):
        states = await self.poll_states()
        return states, parse_exposition(self.store.render())

    async def close(self):
        for c in self.collectors.values():
            await c.close()
        await self.transports.close()


async def poll_once(cfg):
    """One poll of every target in ``cfg`` (states, samples), closing the transports after."""
    p = Poller(cfg)
    try:
        return await p.poll()
    finally:
        await p.close()


def series(samples: dict, name: str, **labels) -> float:
    key = (name, frozenset(labels.items()))
    assert key in samples, f"missing {name}{labels}; have e.g. " + str(
        [k for k in samples if k[0] == name][:3])
    return samples[key]


@pytest.fixture
def hostile_snmp():
    """Start hostile SNMPv2c agents (tests/harness/hostile_snmp.py) on 127.0.0.1, each in its own
    thread, so code under test that runs its own event loop meets them: ``agent = hostile_snmp("silent")``
    (then ``agent.port``, ``agent.requests``, ``agent.set_mode(...)``). Stopped after the test."""
    from tests.harness.hostile_snmp import ThreadedAgent

    started: list[ThreadedAgent] = []

    def start(mode: str = "honest", **kw) -> ThreadedAgent:
        agent = ThreadedAgent(mode, **kw).__enter__()
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.__exit__(None, None, None)


async def polls(cfg, *steps):
    """Poll, then for each step: run it, poll again. Returns every (states, samples)."""
    p = Poller(cfg)
    out = []
    try:
        out.append(await p.poll())
        for step in steps:
            step()
            out.append(await p.poll())
        return out, p
    finally:
        await p.close()
