"""A config reload closes what the new config no longer uses, against a real OpenSSH server.

Issue 25: ``SSHPool.retain()`` had no caller, so every host removed by a reload, and every host whose
credential was rotated, kept its authenticated session (and an sshd process on the host) for ever,
alive on keepalives: 100 reloads with a churning host set and a rotated key grew 6 -> 124
established sessions. Here 20 reloads, each moving the host set along 8 addresses and rotating the
key, must leave at most one session per host of the last config, and one poll task per target.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import yaml

from fabric_exporter.collectors import Collector, register, unregister
from fabric_exporter.daemon import Daemon
from fabric_exporter.samples import PollResult
from tests.harness.sshd import SSHD

ADDRESSES = [f"127.0.0.{i}" for i in range(1, 9)]
HOSTS_PER_CONFIG = 3


class SshTrue(Collector):
    """Runs ``true`` on its host over the daemon's SSH pool: a poll that needs a live session."""

    name = "test_ssh_true"
    transports = ("ssh",)

    async def poll(self) -> PollResult:
        result = await self.ctx.runner().run(["true"], timeout=self.ctx.remaining())
        return PollResult([], [] if result.exit_status == 0 else ["true failed"])


@pytest.fixture
def ssh_true():
    register(SshTrue)
    yield SshTrue
    unregister(SshTrue.name)


def established_to(port: int) -> int:
    """TCP connections in state ESTABLISHED whose remote end is 127.0.0.x:``port`` (our client side)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote, state = fields[2], fields[3]
        if state == "01" and int(remote.split(":")[1], 16) == port:
            count += 1
    return count


def write_config(path: Path, sshd: SSHD, known_hosts: Path, key: Path, round_: int) -> int:
    """Round ``round_``'s config: HOSTS_PER_CONFIG hosts on a window of addresses that moves one
    address per round, the credential's key alternating between two authorized keys."""
    first = round_ % (len(ADDRESSES) - HOSTS_PER_CONFIG + 1)
    hosts = [{"name": f"h{first + i}", "address": ADDRESSES[first + i], "port": sshd.port}
             for i in range(HOSTS_PER_CONFIG)]
    doc = {"credentials": {"fabric": {**sshd.credential(private_key_file=str(key)),
                                      "known_hosts_file": str(known_hosts), "keepalive_interval": "5s"}},
           "targets": [{"name": "gpu", "fabric": "lab", "collector": SshTrue.name, "transport": "ssh",
                        "credentials": "fabric", "interval": "1s", "timeout": "900ms", "hosts": hosts}]}
    path.write_text(yaml.safe_dump(doc))
    return len(hosts)


def test_reloads_with_churning_hosts_and_a_rotated_key_close_what_they_leave(tmp_path, ssh_true):
    extra = [f"ListenAddress {a}" for a in ADDRESSES[1:]]
    with SSHD(tmp_path, extra_config=extra) as sshd:
        host_key = " ".join(Path(f"{sshd.host_key}.pub").read_text().split()[:2])
        known_hosts = tmp_path / "known_hosts"
        known_hosts.write_text("".join(f"[{a}]:{sshd.port} {host_key}\n" for a in ADDRESSES))
        with open(sshd.authorized_keys, "a") as f:  # the rotated-to key is authorized too
            f.write(Path(f"{sshd.other_client_key}.pub").read_text())
        keys = [sshd.client_key, sshd.other_client_key]
        config = tmp_path / "fabric.yaml"

        async def go():
            write_config(config, sshd, known_hosts, keys[0], 0)
            daemon = Daemon(str(config))
            peak = 0
            try:
                for round_ in range(20):
                    hosts = write_config(config, sshd, known_hosts, keys[round_ % 2], round_)
                    assert await daemon.reload(why="test")
                    await _polled_ok(daemon, hosts)
                    peak = max(peak, established_to(sshd.port))
                await asyncio.sleep(0.3)  # closing handshakes finish
                tasks = [t for t in asyncio.all_tasks() if t.get_name().startswith("poll:")]
                return established_to(sshd.port), peak, len(tasks), len(os.listdir("/proc/self/fd"))
            finally:
                await daemon.scheduler.stop()
                await daemon.transports.close()

        fds_before = len(os.listdir("/proc/self/fd"))
        sessions, peak, tasks, fds_after = asyncio.run(go())
    # one connection per host of the last config (before: every host and key of all 20 rounds)
    assert sessions <= HOSTS_PER_CONFIG, f"{sessions} SSH sessions left open after 20 reloads"
    assert peak <= 2 * HOSTS_PER_CONFIG  # the old config's until the reload closes them
    assert tasks == HOSTS_PER_CONFIG
    assert fds_after - fds_before <= HOSTS_PER_CONFIG + 8, (fds_before, fds_after)


async def _polled_ok(daemon: Daemon, hosts: int, timeout: float = 10.0) -> None:
    """Until every target of the running config has polled successfully at least once."""
    async with asyncio.timeout(timeout):
        while True:
            states = list(daemon.scheduler.states.values())
            if len(states) == hosts and all(s.state == "ok" for s in states):
                return
            await asyncio.sleep(0.05)


def test_reloads_moving_snmp_targets_keep_sockets_and_agent_state_bounded(tmp_path):
    """The same for SNMP: 12 reloads moving 2 snmp_switch targets along 6 agents (hostile_snmp's
    honest switch): the retired collectors' UDP sockets are closed with them, and the per-agent
    in-flight bounds and page sizes of agents no longer polled are dropped."""
    from tests.harness.hostile_snmp import start_agent

    community = tmp_path / "community"
    community.write_text("public\n")
    config = tmp_path / "fabric.yaml"

    def write(round_: int, ports: list[int]) -> None:
        hosts = [{"name": f"sw{(round_ + i) % len(ports)}", "address": "127.0.0.1", "port": ports[(round_ + i) % len(ports)]}
                 for i in range(2)]
        config.write_text(yaml.safe_dump({
            "credentials": {"c": {"type": "snmp", "version": "2c", "community_file": str(community)}},
            "targets": [{"name": "sw", "fabric": "lab", "collector": "snmp_switch", "transport": "snmp",
                         "credentials": "c", "interval": "1s", "timeout": "900ms", "hosts": hosts,
                         "options": {"modules": ["if_mib"], "snmp_timeout": "300ms", "snmp_retries": 0}}]}))

    async def go():
        agents = [await start_agent("honest") for _ in range(6)]
        ports = [a.port for a in agents]
        write(0, ports)
        daemon = Daemon(str(config))
        fds = []
        try:
            for round_ in range(12):
                write(round_, ports)
                assert await daemon.reload(why="test")
                async with asyncio.timeout(10):
                    while not (len(daemon.scheduler.states) == 2
                               and all(s.tried for s in daemon.scheduler.states.values())):
                        await asyncio.sleep(0.05)
                fds.append(len(os.listdir("/proc/self/fd")))
            state = daemon.transports._snmp_state
            return fds, len(state.agent_limits), len(state.agent_pages)
        finally:
            await daemon.scheduler.stop()
            await daemon.transports.close()
            for a in agents:
                a.transport.close()

    fds, agent_limits, agent_pages = asyncio.run(go())
    assert agent_limits <= 2 and agent_pages <= 2  # before: one per agent ever polled
    assert max(fds[4:]) - min(fds[4:]) <= 2, fds  # flat once every agent was polled once
