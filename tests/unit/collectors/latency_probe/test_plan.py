"""Pair planner and round runner: property tests."""

import asyncio
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabric_exporter.collectors.latency_probe.plan import PairPlan, PlanSpec, Probe, run_round


@st.composite
def layouts(draw):
    sizes = draw(st.lists(st.integers(1, 7), min_size=1, max_size=6))
    groups, n = {}, 0
    for gi, size in enumerate(sizes):
        groups[f"rack-{gi}"] = [f"h{n + i:03d}" for i in range(size)]
        n += size
    return groups


@settings(max_examples=150, deadline=None)
@given(groups=layouts(), k=st.integers(0, 5), budget=st.integers(1, 60), seed=st.text(max_size=5))
def test_schedule_covers_every_pair_within_the_promised_rounds(groups, k, budget, seed):
    plan = PairPlan(PlanSpec(groups, full_mesh=True, sampled_peers=k, max_probes_per_round=budget, seed=seed))
    group_of = {h: g for g, hs in groups.items() for h in hs}
    hosts = sorted(group_of)
    mesh = {Probe(a, b) for a in hosts for b in hosts if a != b and group_of[a] == group_of[b]}
    cross = {Probe(a, b) for a in hosts for b in hosts if group_of[a] != group_of[b]} if k else set()
    assert plan.pairs == mesh | cross
    for r in range(plan.cover_rounds):
        probes = plan.round(r)
        assert len(probes) <= budget, "budget exceeded"
        assert len(set(probes)) == len(probes), "a pair twice in one round"
    # any window of cover_rounds consecutive rounds (starting anywhere) covers every planned pair
    start = random.Random(seed).randrange(0, 3 * max(1, plan.cover_rounds))
    seen = set()
    for r in range(start, start + plan.cover_rounds):
        seen.update(plan.round(r))
    assert seen == plan.pairs


@settings(max_examples=100, deadline=None)
@given(groups=layouts(), k=st.integers(1, 4))
def test_sampled_rotation_needs_ceil_peers_over_k_rounds_with_a_large_budget(groups, k):
    plan = PairPlan(PlanSpec(groups, full_mesh=True, sampled_peers=k, max_probes_per_round=10**6))
    total = sum(len(h) for h in groups.values())
    most_peers = max(total - len(h) for h in groups.values())
    expected = -(-most_peers // k) if len(groups) > 1 else 1
    if not plan.pairs:
        assert plan.cover_rounds == 0
        return
    assert plan.cover_rounds == max(1, expected)
    # each host probes at most k cross-group peers per round, and the whole mesh every round
    group_of = {h: g for g, hs in groups.items() for h in hs}
    for r in range(plan.cover_rounds):
        per_source = {}
        for p in plan.round(r):
            if group_of[p.source] != group_of[p.destination]:
                per_source[p.source] = per_source.get(p.source, 0) + 1
        assert all(n <= k for n in per_source.values())
        assert set(plan.mesh_pairs) <= set(plan.round(r))


def test_explicit_pairs_and_validation():
    plan = PairPlan(PlanSpec({"a": ["x", "y"], "b": ["z"]}, full_mesh=False, explicit=(("x", "z"), ("z", "y"))))
    assert plan.pairs == {Probe("x", "z"), Probe("z", "y")}
    assert plan.cover_rounds == 1
    with pytest.raises(ValueError, match="itself"):
        PlanSpec({"a": ["x"]}, explicit=(("x", "x"),))
    with pytest.raises(ValueError, match="groups"):
        PlanSpec({"a": ["x"], "b": ["x"]})


@settings(max_examples=60, deadline=None)
@given(groups=layouts(), per_host=st.integers(1, 3), max_parallel=st.integers(1, 12),
       durations=st.lists(st.floats(0, 0.004), min_size=1, max_size=20), seed=st.integers(0, 100))
def test_run_round_never_exceeds_host_or_total_concurrency(groups, per_host, max_parallel, durations, seed):
    plan = PairPlan(PlanSpec(groups, full_mesh=True, sampled_peers=2, max_probes_per_round=40))
    probes = list(plan.round(seed))
    active: dict[str, int] = {}
    peak = {"total": 0, "host": 0}
    ran = []

    async def probe(p: Probe, left: float):
        for h in (p.source, p.destination):
            active[h] = active.get(h, 0) + 1
        peak["total"] = max(peak["total"], sum(active.values()) // 2)
        peak["host"] = max(peak["host"], max(active.values()))
        await asyncio.sleep(durations[len(ran) % len(durations)])
        ran.append(p)
        for h in (p.source, p.destination):
            active[h] -= 1
        return "ok"

    async def main():
        loop = asyncio.get_running_loop()
        return await run_round(probes, probe, per_host=per_host, max_parallel=max_parallel,
                               deadline=loop.time() + 30, min_start_window=0.01)

    out = asyncio.run(main())
    assert peak["host"] <= per_host and peak["total"] <= max_parallel
    assert sorted(ran) == sorted(probes) and set(out.finished) == set(probes) and not out.not_run


def test_run_round_leaves_out_what_cannot_start_before_the_deadline():
    probes = [Probe("a", "b"), Probe("b", "a"), Probe("a", "c")]  # all share host a: one at a time

    async def probe(p, left):
        assert left <= 0.3
        await asyncio.sleep(0.2)
        return "ok"

    async def main():
        loop = asyncio.get_running_loop()
        return await run_round(probes, probe, per_host=1, max_parallel=8, deadline=loop.time() + 0.3,
                               min_start_window=0.15)

    out = asyncio.run(main())
    assert list(out.finished) == [Probe("a", "b")]
    assert out.not_run == [Probe("b", "a"), Probe("a", "c")]
