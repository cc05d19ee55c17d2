"""transport: local (a DaemonSet pod or host service): the same script as a local subprocess.

The poll runs in a child process inside its own mount namespace, with the lab's tree bind-mounted
on /sys/class and the fake tools first on PATH; the machine's /sys is untouched."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fabric_exporter.lab.roce_host import RoceHost, write_fake_tools

from tests.harness.polling import one, parse_exposition

POLL = r"""
import asyncio, sys
from tests.harness.configs import parse_config
from fabric_exporter.scheduler import Scheduler
from fabric_exporter.serving.store import SnapshotStore
from fabric_exporter.transport.factory import Transports

cfg = parse_config({"targets": [{"name": "node", "fabric": "f1", "collector": "roce_nic", "transport": "local",
                                 "interval": "30s", "timeout": "10s", "hosts": [{"name": "gpu-017", "address": "localhost"}],
                                 "options": {"devices": sys.argv[1:]}}]})
async def main():
    sched = Scheduler(Transports(), SnapshotStore())
    sched.apply(cfg, start_tasks=False)
    (state,) = await sched.poll_all_once()
    print(f"#STATE {state.state} {state.last_error}")
    sys.stdout.write(sched.store.render().decode())
asyncio.run(main())
"""


def poll_in_namespace(tmp_path: Path, model: RoceHost, *devices: str) -> tuple[str, dict]:
    sysfs, data, bin_dir = tmp_path / "sys", tmp_path / "data", tmp_path / "bin"
    model.write_sysfs(sysfs)
    model.write_tool_outputs(data)
    write_fake_tools(bin_dir, data)
    inner = (f"mount --bind {shlex.quote(str(sysfs))} /sys/class && "
             f"PATH={shlex.quote(str(bin_dir))}:$PATH exec {shlex.quote(sys.executable)} -c {shlex.quote(POLL)} "
             + " ".join(shlex.quote(d) for d in devices))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", inner], capture_output=True,
                       text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    first, _, rest = r.stdout.partition("\n")
    assert first.startswith("#STATE "), r.stdout[:200]
    return first[len("#STATE "):], parse_exposition(rest)


def test_local_transport_reads_the_same_counters(tmp_path):
    model = RoceHost.build("gpu-017", "mlx5", nics=2)
    model.advance(7)
    state, samples = poll_in_namespace(tmp_path, model)
    assert state.startswith("ok"), state
    for p in model.ports:
        lbl = {"host": "gpu-017", "device": p.device, "netdev": p.netdev, "port": "1"}
        assert one(samples, "fabric_roce_nic_cnp_sent_total", **lbl) == p.hw_counters["np_cnp_sent"]
        assert one(samples, "fabric_roce_pfc_tx_pause_frames_total", priority="3", **lbl) == p.ethtool["tx_prio3_pause"]
        assert one(samples, "fabric_roce_nic_pfc_tx_pause_seconds_total", priority="3", **lbl) == pytest.approx(
            p.ethtool["tx_prio3_pause_duration"] / 1e6)


def test_local_transport_missing_device_is_partial(tmp_path):
    model = RoceHost.build("gpu-017", "mlx5", nics=1)
    state, samples = poll_in_namespace(tmp_path, model, "mlx5_0", "mlx5_3")
    assert state == "partial RDMA devices not found on host: mlx5_3"
    assert one(samples, "fabric_roce_nic_port_active", device="mlx5_0") == 1
