"""Polling through the daemon's own path without its loop, and reading back what it serves.

One copy of each, for every folder (the roce_nic and switch tests each had their own Poller,
exposition parser and series lookups)."""

from __future__ import annotations

import asyncio
import re

from fabric_exporter.config import Config
from fabric_exporter.scheduler import Scheduler
from fabric_exporter.serving.store import SnapshotStore
from fabric_exporter.transport.factory import Transports
from tests.harness.configs import parse_config

Samples = dict[tuple[str, frozenset], float]

_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text: bytes | str) -> Samples:
    """Sample lines -> {(name, frozenset(labels)): value}; an unparsable line or a series twice fails.
    Label values are kept as written (escapes included): the tests' values need no unescaping."""
    out = {}
    for line in (text.decode() if isinstance(text, bytes) else text).splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        assert m, f"unparsable exposition line {line!r}"
        key = (m.group(1), frozenset(_LABEL.findall(m.group(2) or "")))
        assert key not in out, f"duplicate series {line!r}"
        out[key] = float(m.group(3))
    return out


def series(samples: Samples, name: str, **labels) -> float:
    """The value of the one series of ``name`` whose labels are exactly ``labels``."""
    key = (name, frozenset(labels.items()))
    assert key in samples, f"missing {name}{labels}; have e.g. " + str([k for k in samples if k[0] == name][:3])
    return samples[key]


def matching(samples: Samples, name: str, **labels) -> dict[frozenset, float]:
    """The series of ``name`` whose labels include ``labels``: {all labels: value}."""
    want = set(labels.items())
    return {lbls: v for (n, lbls), v in samples.items() if n == name and want <= set(lbls)}


def one(samples: Samples, name: str, **labels) -> float:
    """The value of the one series of ``name`` whose labels include ``labels``."""
    found = matching(samples, name, **labels)
    assert len(found) == 1, f"{name} {labels}: expected one series, found {len(found)}: {found}"
    return next(iter(found.values()))


class Poller:
    """A real Scheduler, SnapshotStore and Transports; each target's collector made on its first poll
    and kept (its state, its SSH connections) across polls, as the daemon keeps them."""

    def __init__(self, config: Config | dict):
        self.config = parse_config(config) if isinstance(config, dict) else config
        self.transports = Transports()
        self.store = SnapshotStore()
        self.sched = Scheduler(self.transports, self.store)
        self.sched.apply(self.config, start_tasks=False)
        self.collectors = {}

    async def poll_states(self):
        """Every target polled once, concurrently: {target key: its state}."""
        from fabric_exporter.collectors import PollContext

        for key, (group, host, cls) in self.sched.targets(self.sched.config).items():
            if key not in self.collectors:
                self.collectors[key] = cls(PollContext(group, host, self.transports))
        states = await asyncio.gather(*(self.sched.poll(k, c) for k, c in self.collectors.items()))
        return {s.key: s for s in states}

    async def poll(self, *, by_host: bool = False):
        """(states by target key, or by host name with ``by_host``; the samples /metrics serves)."""
        states = await self.poll_states()
        if by_host:
            states = {key[1]: s for key, s in states.items()}
        return states, parse_exposition(self.store.render())

    async def poll_once(self, *, by_host: bool = False):
        """One ``poll``, everything closed after."""
        try:
            return await self.poll(by_host=by_host)
        finally:
            await self.close()

    async def close(self):
        for c in self.collectors.values():
            await c.close()
        await self.transports.close()


async def poll_once(config):
    """One poll of every target in ``config`` (states, samples), closing everything after."""
    return await Poller(config).poll_once()


async def polls(config, *steps):
    """Poll, then for each step: run it, poll again. Returns every (states, samples), and the Poller."""
    p = Poller(config)
    out = []
    try:
        out.append(await p.poll())
        for step in steps:
            step()
            out.append(await p.poll())
        return out, p
    finally:
        await p.close()
