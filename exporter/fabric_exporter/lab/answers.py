"""What the lab's SSH server answers: GPU hosts run the roce_nic script, perftest and the burst probe
on their own counter files; SONiC leaves a real sh with a fake ``show`` first on PATH; EOS leaves
answer CLI lines."""

from __future__ import annotations

import asyncio
import os
import shlex
from functools import partial
from typing import TYPE_CHECKING

from . import roce_host
from .ssh_hosts import SimulatedHosts

if TYPE_CHECKING:
    from .run import Lab


def stream(lab: Lab, host: str, argv: list[str]) -> list[str] | None:
    """A GPU host runs the roce_nic burst sampler's probe for real, on its own counter files."""
    if host not in lab.counter_files:
        return None
    from ..collectors.burst import PROBE_SOURCE

    return roce_host.burst_probe_argv(lab.counter_files[host], argv, PROBE_SOURCE)


async def answer(lab: Lab, host: str, argv: list[str]) -> tuple[int, str, str]:
    if host in lab.hosts:
        if "fabric-roce" in argv or argv == ["true"]:
            return roce_host.answer(lab.hosts[host], shlex.join(argv))
        return await lab.perftest.answer(host, argv)
    if host in lab.switches:
        return await switch_cli(lab, host, argv)
    return 127, "", f"sh: 1: {argv[0] if argv else ''}: not found\n"


async def eos_cli(lab: Lab, name: str, line: str) -> tuple[int, str, str]:
    """One line typed at the switch's EOS CLI (its SSH lands there, not in a shell)."""
    from .eos_cli import answer as eos_answer

    return eos_answer(lab.switches[name], line)


def ssh_hosts(lab: Lab) -> SimulatedHosts:
    """The lab's SSH server: GPU hosts and SONiC leaves answer shell commands, EOS leaves CLI lines."""
    return SimulatedHosts(lab.workdir / "ssh", partial(answer, lab), line_answer=partial(eos_cli, lab),
                          cli_hosts=frozenset(lab.switches) if lab.eos else frozenset(), streamer=partial(stream, lab))


async def switch_cli(lab: Lab, name: str, argv: list[str]) -> tuple[int, str, str]:
    """Run the collector's command with a real sh, the fake SONiC ``show`` first on PATH."""
    from .sonic_cli import install_fake_show, write_outputs

    data = lab.workdir / "sonic" / name
    bin_dir = lab.workdir / "sonic" / "bin"
    if not (bin_dir / "show").exists():
        install_fake_show(bin_dir, data)
    write_outputs(lab.switches[name], data)
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
             "FABRIC_FAKE_SONIC_DIR": str(data)})
    out, err = await proc.communicate()
    return proc.returncode, out.decode(), err.decode()
