"""--shard splits targets across replicas: complete, disjoint, stable, minimal movement."""

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabric_exporter.sharding import Shard, owner, parse_shard

from tests.harness.daemon import package_env

KEYS = [f"group-{g}/gpu-{h:04d}" for g in range(4) for h in range(500)]


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8, 13])
def test_partition_is_complete_and_disjoint(count):
    shards = [Shard(i, count) for i in range(count)]
    owned = [[k for k in KEYS if s.owns(k)] for s in shards]
    assert sum(len(o) for o in owned) == len(KEYS)
    assert set().union(*map(set, owned)) == set(KEYS)
    # balanced within a loose bound
    assert max(len(o) for o in owned) < 1.3 * len(KEYS) / count + 20


@pytest.mark.parametrize("count", [1, 2, 4, 7, 10])
def test_growing_by_one_moves_only_keys_to_the_new_shard(count):
    moved = [k for k in KEYS if owner(k, count) != owner(k, count + 1)]
    assert all(owner(k, count + 1) == count for k in moved)  # only to the new shard
    assert len(moved) < 1.3 * len(KEYS) / (count + 1) + 20  # about 1/(N+1) of them


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=50, unique=True), st.integers(1, 9))
def test_every_key_has_exactly_one_owner(keys, count):
    for k in keys:
        assert sum(Shard(i, count).owns(k) for i in range(count)) == 1


def test_assignment_is_stable_across_processes():
    code = "from fabric_exporter.sharding import owner; print([owner(f'g/h{i}', 5) for i in range(50)])"
    a = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=package_env(), timeout=30)
    b = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=package_env(PYTHONHASHSEED="123"), timeout=30)
    assert a.stdout == b.stdout and a.stdout.strip() == str([owner(f"g/h{i}", 5) for i in range(50)])


def test_parse_shard():
    assert parse_shard("2/5") == Shard(2, 5)
    assert parse_shard("fabric-exporter-3/4") == Shard(3, 4)
    for bad in ("5/5", "x", "1/0", "-1/3"):
        with pytest.raises(ValueError):
            parse_shard(bad)


def test_replicas_split_a_config_between_them():
    import asyncio

    from tests.harness.configs import parse_config
    from fabric_exporter.scheduler import Scheduler
    from fabric_exporter.serving.store import SnapshotStore
    from fabric_exporter.transport.factory import Transports

    from tests.harness import plugin_collectors  # noqa: F401

    cfg = parse_config({"targets": [{"name": "g", "fabric": "f", "collector": "test_command", "transport": "local",
                                     "hosts": [f"h{i}" for i in range(30)]}]})

    async def keys(shard):
        sched = Scheduler(Transports(), SnapshotStore(), shard=shard)
        sched.apply(cfg, start_tasks=False)
        return set(sched.states)

    per_replica = [asyncio.run(keys(Shard(i, 3))) for i in range(3)]
    assert set().union(*per_replica) == asyncio.run(keys(None))
    assert sum(map(len, per_replica)) == 30
