"""The focus set over SSH, through the SSH guard: a real sshd on 127.0.0.1 whose forced command is
deploy/ssh/fabric-exporter-ssh-guard, and whose PATH finds wrappers running the real tools on the
ibsim fabric. The focus reads (perfquery -x / -l with a port list / --vlxmitcounters) must pass the
guard and give the same windows as the local transport."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from fabric_exporter.collectors.base import PollContext
from fabric_exporter.collectors.infiniband import InfinibandCollector
from fabric_exporter.transport.factory import Transports
from tests.deploy.test_ssh_guard import force_guard
from tests.harness.scripts import write_sh as _exe
from tests.harness.sshd import SSHD

from tests.harness.infiniband import group_for, needs_ibsim
from tests.e2e.infiniband.test_focus_ibsim import _port, _read_wait

pytestmark = [needs_ibsim, pytest.mark.skipif(shutil.which("sshd") is None and not shutil.os.path.exists("/usr/sbin/sshd"),
                                              reason="openssh-server not installed")]


def test_focus_reads_pass_the_guard_and_see_the_step(fabric, tmp_path_factory):
    bin_dir = tmp_path_factory.mktemp("focus-bin")
    env = fabric.env()
    _exe(bin_dir / "perfquery", f'exec env LD_PRELOAD={env["LD_PRELOAD"]} IBSIM_SOCKNAME={env["IBSIM_SOCKNAME"]} '
                                f'{shutil.which("perfquery")} "$@"')
    for tool in ("ibqueryerrors", "ibnetdiscover"):
        _exe(bin_dir / tool, f'exec env LD_PRELOAD={env["LD_PRELOAD"]} IBSIM_SOCKNAME={env["IBSIM_SOCKNAME"]} '
                             f'{shutil.which(tool)} "$@"')
    sshd = SSHD(tmp_path_factory.mktemp("focus-sshd"), path_dirs=[bin_dir])
    force_guard(sshd)
    step = 200_000_000

    async def scenario():
        group = group_for({"focus": True, "focus_top_k": 0, "focus_ports": ["spine-01:1", "spine-01:2"],
                           "focus_interval": "300ms", "focus_burst_threshold": 0.001},
                          transport="ssh", host=f"127.0.0.1:{sshd.port}", credentials=sshd.credential())
        transports = Transports()
        col = InfinibandCollector(PollContext(group, group.hosts[0], transports))
        try:
            first = await col.poll()
            assert first.problems == []
            await asyncio.sleep(1.5)
            before = await _read_wait(fabric, "spine-01", 2)
            await asyncio.to_thread(fabric.set_counter, "spine-01", 2, "PortXmitWait", before + step)
            await asyncio.sleep(1.5)
            return await col.poll()
        finally:
            await col.close()
            await transports.close()

    with sshd:
        result = asyncio.run(scenario())
    s = result.samples
    assert result.problems == []
    for port, windows_with_wait in (("1", 0), ("2", 1)):
        count = _port(s, "fabric_ib_port_focus_xmit_wait_ratio_count", "spine-01", port)[0].value
        low = next(x.value for x in _port(s, "fabric_ib_port_focus_xmit_wait_ratio_bucket", "spine-01", port)
                   if x.labels["le"] == "1e-05")
        assert count >= 4 and count - low == windows_with_wait, (port, count, low)
        assert len(_port(s, "fabric_ib_port_vl_transmit_wait_total", "spine-01", port)) == 16
    assert _port(s, "fabric_ib_port_bursts_total", "spine-01", "2")[0].value == 1
    reads = {x.labels["result"]: x.value for x in s if x.name == "fabric_ib_focus_reads_total"}
    # the first -x read finds no PortXmitWait on ibsim (2 ports); everything after is ok
    assert reads["failed"] == 2 and reads["ok"] > 10, reads
