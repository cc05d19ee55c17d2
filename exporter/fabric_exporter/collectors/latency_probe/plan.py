"""Which host pairs the latency probes measure, round by round, and how a round is run within its budget.

Pure planning (no I/O, no clock): ``PairPlan`` turns host groups (racks / ToRs) into a periodic
schedule of rounds, pingmesh style:

* ``full_mesh`` within each group: every ordered pair (a, b), a != b, of the group;
* ``sampled`` across groups: each host probes ``k`` peers outside its group per round, walking a
  fixed seeded shuffle of those peers, so every cross-group pair is probed once per rotation;
* ``explicit`` pairs, probed in every rotation step.

Rotation step ``i`` wants the mesh pairs, the explicit pairs and the i-th slice of every host's
cross-group peers. A step larger than the budget (``max_probes_per_round``) is split into several
rounds. The schedule is the concatenation of all steps' rounds and repeats; every planned pair sits
in each period, so any ``cover_rounds`` consecutive rounds probe every planned pair at least once,
and no round exceeds the budget or holds a pair twice.

``run_round`` runs one round's probes: at most ``max_parallel`` at once and at most ``per_host``
probes involving any one host at once (a host is never server and client of two probes at the same
time with the default 1), probes that cannot start before the deadline are left out (``not_run``).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Probe:
    source: str  # runs the perftest client
    destination: str  # runs the perftest server


@dataclass(frozen=True)
class PlanSpec:
    groups: Mapping[str, Sequence[str]]  # group name -> hosts; a host belongs to exactly one group
    full_mesh: bool = True
    sampled_peers: int = 0  # k cross-group peers per host per round; 0 = no cross-group probes
    explicit: tuple[tuple[str, str], ...] = ()
    max_probes_per_round: int = 1000
    seed: str = ""

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        for group, hosts in self.groups.items():
            for h in hosts:
                if h in seen and seen[h] != group:
                    raise ValueError(f"host {h!r} is in groups {seen[h]!r} and {group!r}")
                seen[h] = group
        if self.max_probes_per_round < 1:
            raise ValueError("max_probes_per_round must be >= 1")
        if self.sampled_peers < 0:
            raise ValueError("sampled_peers must be >= 0")
        for s, d in self.explicit:
            if s == d:
                raise ValueError(f"explicit pair {s}>{d}: a host cannot probe itself")


def _stable_rng(*parts: str) -> random.Random:
    digest = hashlib.sha256("\x00".join(parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class PairPlan:
    def __init__(self, spec: PlanSpec):
        self.spec = spec
        self.group_of: dict[str, str] = {h: g for g, hosts in spec.groups.items() for h in hosts}
        self.mesh_pairs: list[Probe] = []
        if spec.full_mesh:
            for g in sorted(spec.groups):
                hosts = sorted(set(spec.groups[g]))
                n = len(hosts)
                # By offset: in pass k every host sends to the host k places after it, so each host is
                # the destination of one probe per pass and a pass can run in parallel (a plain
                # a-major order sends a whole rack's first probes to the same host, one at a time).
                self.mesh_pairs += [Probe(hosts[i], hosts[(i + k) % n]) for k in range(1, n) for i in range(n)]
        self.explicit_pairs = sorted({Probe(s, d) for s, d in spec.explicit})
        self.cross_steps: list[list[Probe]] = self._cross_steps()
        self.schedule: list[tuple[Probe, ...]] = self._schedule()
        pairs = set(self.mesh_pairs) | set(self.explicit_pairs)
        for step in self.cross_steps:
            pairs.update(step)
        self.pairs: frozenset[Probe] = frozenset(pairs)

    def _cross_steps(self) -> list[list[Probe]]:
        k = self.spec.sampled_peers
        if k == 0 or len(self.spec.groups) < 2:
            return []
        hosts = sorted(self.group_of)
        peers: dict[str, list[str]] = {}
        for h in hosts:
            others = [p for p in hosts if self.group_of[p] != self.group_of[h]]
            _stable_rng(self.spec.seed, h).shuffle(others)  # fixed per host: rotation covers all of them
            peers[h] = others
        steps = max(math.ceil(len(p) / k) for p in peers.values()) if peers else 0
        out = []
        for i in range(steps):
            step = []
            for h in hosts:
                step += [Probe(h, d) for d in peers[h][i * k:(i + 1) * k]]
            out.append(step)
        return out

    def _schedule(self) -> list[tuple[Probe, ...]]:
        budget = self.spec.max_probes_per_round
        base = self.mesh_pairs + [p for p in self.explicit_pairs if p not in set(self.mesh_pairs)]
        steps = self.cross_steps or [[]]
        rounds: list[tuple[Probe, ...]] = []
        for cross in steps:
            wanted = list(dict.fromkeys(base + cross))  # dedupe, keep order
            if not wanted:
                continue
            wanted = _interleave_by_source(wanted)
            for start in range(0, len(wanted), budget):
                rounds.append(tuple(wanted[start:start + budget]))
        return rounds

    @property
    def cover_rounds(self) -> int:
        """Any this many consecutive rounds probe every planned pair at least once."""
        return len(self.schedule)

    def round(self, number: int) -> tuple[Probe, ...]:
        if not self.schedule:
            return ()
        return self.schedule[number % len(self.schedule)]


def _interleave_by_source(probes: list[Probe]) -> list[Probe]:
    """Round-robin over sources, so a budget-sized slice spreads over many hosts instead of a few."""
    by_source: dict[str, list[Probe]] = {}
    for p in probes:
        by_source.setdefault(p.source, []).append(p)
    queues = [by_source[s] for s in sorted(by_source)]
    out: list[Probe] = []
    i = 0
    while queues:
        out += [q[i] for q in queues if i < len(q)]
        i += 1
        queues = [q for q in queues if i < len(q)]
    return out


# ---------------------------------------------------------------------------------------------
# Running a round


@dataclass
class RoundOutcome:
    finished: dict[Probe, object] = field(default_factory=dict)  # probe -> whatever run_probe returned
    not_run: list[Probe] = field(default_factory=list)
    max_parallel_seen: int = 0


async def run_round(probes: Iterable[Probe], run_probe: Callable[[Probe, float], Awaitable[object]], *,
                    per_host: int, max_parallel: int, deadline: float, min_start_window: float,
                    clock: Callable[[], float] | None = None) -> RoundOutcome:
    """Run ``probes`` with ``run_probe(probe, seconds_left)``, never more than ``per_host`` probes
    involving one host and ``max_parallel`` in all at once.

    ``deadline`` is on ``clock`` (default: the loop's monotonic clock). A probe starts only while at
    least ``min_start_window`` seconds are left, and is told how many are left, so it can bound itself;
    the rest are returned as ``not_run``. ``run_probe`` must not raise (it returns its failure).
    """
    loop = asyncio.get_running_loop()
    clock = clock or loop.time
    pending = list(dict.fromkeys(probes))
    busy: dict[str, int] = {}
    running: dict[asyncio.Task, Probe] = {}
    outcome = RoundOutcome()
    try:
        while pending or running:
            left = deadline - clock()
            if left >= min_start_window:
                still = []
                for p in pending:
                    if (len(running) < max_parallel and busy.get(p.source, 0) < per_host
                            and busy.get(p.destination, 0) < per_host):
                        busy[p.source] = busy.get(p.source, 0) + 1
                        busy[p.destination] = busy.get(p.destination, 0) + 1
                        running[asyncio.ensure_future(run_probe(p, left))] = p
                    else:
                        still.append(p)
                pending = still
                outcome.max_parallel_seen = max(outcome.max_parallel_seen, len(running))
            elif pending:
                outcome.not_run += pending
                pending = []
            if not running:
                break
            # Wake when a probe ends, or when the start window closes (to report the rest as not run).
            wait_for = max(0.0, deadline - min_start_window - clock()) if pending else None
            done, _ = await asyncio.wait(running, timeout=wait_for, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                p = running.pop(task)
                busy[p.source] -= 1
                busy[p.destination] -= 1
                outcome.finished[p] = task.result()
        outcome.not_run += pending  # only if nothing could ever start them
    finally:
        for task in running:  # cancelled from outside (poll deadline): do not leave probes behind
            task.cancel()
    return outcome


__all__ = ["Probe", "PlanSpec", "PairPlan", "RoundOutcome", "run_round"]
