"""An independent client decodes the same values as gnmi_switch, for every leaf of a SAMPLE run.

The lab target advances its switch every second on a timer of its own and stamps each notification
with the state's version (not the time), so a notification pygnmi received and one the collector's
decoder received for the same version must carry the same values. pygnmi runs in a subprocess
(tests/harness/pygnmi_subscribe.py) with its own stubs and decoding; our side subscribes through the
collector's own request builder and decodes with its own functions (SonicState/OcState.apply).

The fast test runs 6 s: every SAMPLE tick carries every leaf, so 5+ common versions already compare
each leaf 5+ times; the issue's 60 s run is ``test_sixty_second_sample_run`` (marked slow).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from fabric_exporter.collectors import PollContext
from fabric_exporter.collectors.gnmi_switch import GnmiSwitchCollector, OcState, SonicState, _key
from fabric_exporter.lab.gnmi_target import GnmiTarget
from fabric_exporter.lab.snmp import SimulatedSwitch
from fabric_exporter.parsers import gnmi as p

from tests.harness import paths
from tests.harness.switch import make_config

SCRIPT = paths.TESTS / "harness" / "pygnmi_subscribe.py"


def _collector(tmp_path, port: int, dialect: str) -> GnmiSwitchCollector:
    cfg = make_config(tmp_path, [{"name": "g", "fabric": "lab", "collector": "gnmi_switch", "transport": "gnmi",
                                  "hosts": [{"name": "leaf1", "address": "127.0.0.1", "port": port}],
                                  "interval": "10s", "timeout": "8s",
                                  "options": {"dialect": dialect, "mode": "stream", "insecure": True,
                                              "sample_interval": "1s"}}])
    group = cfg.targets[0]
    return GnmiSwitchCollector(PollContext(group, group.hosts[0], None))


async def _ours(collector: GnmiSwitchCollector, seconds: float) -> dict:
    """version -> {leaf key: value}, decoded by the collector's own functions."""
    from gnmi_pb import gnmi_pb2_grpc

    groups = collector._groups(collector._paths())
    ((target, paths),) = groups.items()
    call = gnmi_pb2_grpc.gNMIStub(collector._get_channel()).Subscribe()
    await call.write(collector._request(target, paths, "stream"))
    out: dict[int, dict] = {}
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    try:
        while loop.time() < end:
            response = await asyncio.wait_for(call.read(), timeout=5)
            if not response.HasField("update"):
                continue
            state = SonicState() if collector.dialect.name == "sonic" else OcState()
            skipped: list = []
            collector._apply(state, response, skipped)
            assert skipped == []
            leaves = out.setdefault(response.update.timestamp, {})
            if isinstance(state, SonicState):
                for (table, key), (nums, text) in state.entries.items():
                    leaves.update({(table, key, f): v for f, v in nums.items()})
                    leaves.update({(table, key, f): v for f, v in text.items()})
            else:
                leaves.update({k: r.value for k, r in state.leaves.items()})
    finally:
        call.cancel()
        await collector.close()
    return out


def _theirs(lines: list[str], dialect: str) -> dict:
    """version -> {leaf key: value}, from what pygnmi printed (its decoding; keys normalized)."""
    out: dict[int, dict] = {}
    for line in lines:
        response = json.loads(line)
        update = response.get("update")
        if not update:
            continue
        leaves = out.setdefault(int(update["timestamp"]), {})
        prefix = update.get("prefix", "")
        for u in update["update"]:
            if dialect == "sonic":
                table = SonicState().table_of(p.parse_xpath(u["path"]))[0]
                for key, fields in u["val"].items():
                    for f, v in fields.items():
                        leaves[(table, key, f)] = int(v) if v.isdigit() else v
            else:
                leaves[_key(p.parse_xpath(f"{prefix}/{u['path']}" if prefix else u["path"]))] = u["val"]
    return out


def compare(tmp_path, dialect: str, seconds: float) -> tuple[int, int, int]:
    sw = SimulatedSwitch("leaf1", "sonic", ports=8, queues=4, seed=3)
    with GnmiTarget(sw, dialect, advance_every=1.0) as target:
        collector = _collector(tmp_path, target.port, dialect)
        prefix_target = "COUNTERS_DB" if dialect == "sonic" else ""
        xpaths = [gp.xpath + ("@on_change" if gp.on_change else "") for gp in collector._paths()]
        out_path = tmp_path / f"pygnmi-{dialect}.jsonl"
        with open(out_path, "w") as out:  # a file, not a pipe: a full pipe would hold pygnmi back
            proc = subprocess.Popen([sys.executable, str(SCRIPT), str(target.port), prefix_target, str(seconds),
                                     *xpaths], stdout=out, stderr=subprocess.DEVNULL, text=True,
                                    env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        try:
            ours = asyncio.run(_ours(collector, seconds))
            proc.wait(timeout=seconds + 60)
            stdout = out_path.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    theirs = _theirs(stdout.splitlines(), dialect)
    common = sorted(set(ours) & set(theirs))
    compared = mismatched = 0
    for version in common:
        a, b = ours[version], theirs[version]
        if version not in (common[0], common[-1]):  # the first and last may be cut by the run's start/end
            assert set(a) == set(b), (version, sorted(set(a) ^ set(b), key=str)[:5])
        for k in set(a) & set(b):
            compared += 1
            mismatched += a[k] != b[k]
    return len(common), compared, mismatched


@pytest.mark.parametrize("dialect", ["sonic", "cumulus"])
def test_pygnmi_decodes_the_same_values_as_the_collector(tmp_path, dialect):
    versions, compared, mismatched = compare(tmp_path, dialect, 6.0)
    print(f"\n{dialect}: {versions} common versions, {compared} leaf values compared, {mismatched} differ")
    assert versions >= 3 and mismatched == 0
    assert compared >= versions * (8 * 20)  # every leaf of 8 ports, each version


@pytest.mark.slow
@pytest.mark.parametrize("dialect", ["sonic", "cumulus"])
def test_sixty_second_sample_run(tmp_path, dialect):
    versions, compared, mismatched = compare(tmp_path, dialect, 60.0)
    print(f"\n{dialect} 60 s: {versions} common versions, {compared} leaf values compared, {mismatched} differ")
    assert versions >= 50 and mismatched == 0
