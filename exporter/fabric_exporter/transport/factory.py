"""The daemon's transports: one SSH pool, one local runner, SNMP sessions on one engine per loop."""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import TYPE_CHECKING, Any

from ..config.model import Host, TargetGroup
from .base import DEFAULT_SNMP_POLL_BYTES, CommandRunner, OutputLimit, ReadBudget
from .local import LocalRunner
from .snmp_session import DEFAULT_PORT

if TYPE_CHECKING:
    from .ssh import SSHPool

log = logging.getLogger("fabric_exporter.transport")

#: SNMP targets behind one agent address and port from which a config load warns: they share that
#: agent's bound of requests in flight (snmp_fast.MAX_IN_FLIGHT_PER_AGENT), as several switches
#: behind one proxy would; a switch polled by two or three groups is normal
SHARED_AGENT_WARN_TARGETS = 16


def shared_snmp_agents(config) -> dict[tuple[str, int], int]:
    """The SNMP agents (address, port) that SHARED_AGENT_WARN_TARGETS targets or more poll."""
    targets = collections.Counter((h.address, h.port or DEFAULT_PORT) for g in config.targets if g.transport == "snmp"
                                  for h in g.hosts)
    return {agent: n for agent, n in sorted(targets.items()) if n >= SHARED_AGENT_WARN_TARGETS}


class Transports:
    def __init__(self, max_output_bytes: int | None = None) -> None:
        self.output_limit = OutputLimit() if max_output_bytes is None else OutputLimit(max_output_bytes)
        self._ssh: SSHPool | None = None
        self.local = LocalRunner(output_limit=self.output_limit)
        #: limits.max_snmp_poll_bytes: what each poll's ReadBudget starts with
        self.snmp_poll_bytes = DEFAULT_SNMP_POLL_BYTES
        self._snmp_state: Any = None  # owned by transport.snmp (one engine per event loop)

    @property
    def ssh(self) -> SSHPool:
        """The SSH pool, made on first use: asyncssh is imported only when a group uses SSH."""
        if self._ssh is None:
            from .ssh import SSHPool

            self._ssh = SSHPool(self.output_limit)
        return self._ssh

    @ssh.setter
    def ssh(self, pool: SSHPool) -> None:
        self._ssh = pool

    def apply_limits(self, limits) -> None:
        """Take a (re)loaded config's ``limits``: the objects runners share are updated in place."""
        self.output_limit.max_bytes = limits.max_output_bytes
        self.snmp_poll_bytes = limits.max_snmp_poll_bytes

    def prepare(self, config) -> None:
        """Import what ``config``'s groups will use (asyncssh) before the first poll, so the import's
        CPU is spent at start-up or reload, not inside a poll's deadline; warn of SNMP agents that
        many targets share (``shared_snmp_agents``)."""
        if any(g.transport == "ssh" for g in config.targets):
            self.ssh  # noqa: B018  (makes the pool)
        shared = shared_snmp_agents(config)
        if shared:
            from .snmp_fast import MAX_IN_FLIGHT_PER_AGENT

            for (address, port), n in shared.items():
                log.warning("SNMP targets share one agent address and port, and with it its bound of requests "
                            "in flight: their polls queue behind each other", extra={"fields": {
                                "agent": f"{address}:{port}", "targets": n, "in_flight": MAX_IN_FLIGHT_PER_AGENT}})

    def runner(self, group: TargetGroup, host: Host) -> CommandRunner:
        if group.transport == "local":
            return self.local
        if group.transport == "ssh":
            return self.ssh.get(host.address, host.port, group.credentials)
        raise ValueError(f"group {group.name}: transport {group.transport} cannot run commands")

    def snmp(self, group: TargetGroup, host: Host, budget: ReadBudget | None = None) -> Any:
        from . import snmp  # pysnmp is imported only when a group uses it

        return snmp.open_session(self, group, host, budget)

    async def release_unused(self, config) -> int:
        """After a reload: close what ``config`` no longer uses -- the SSH connections (session, socket,
        keepalive timer) of hosts that are gone or whose credential or its options changed, and the
        SNMP in-flight bounds of agents no group polls. Returns the number of SSH connections closed."""
        wanted_agents = {(h.address, h.port) for g in config.targets if g.transport == "snmp" for h in g.hosts}
        if self._snmp_state is not None:
            from . import snmp

            snmp.forget_agents(self._snmp_state, wanted_agents)
        if self._ssh is None:
            return 0
        from .ssh import SSHEndpoint

        wanted = {SSHEndpoint.of(h.address, h.port, g.credentials)
                  for g in config.targets if g.transport == "ssh" for h in g.hosts}
        gone = self._ssh.retain(wanted)
        await asyncio.gather(*(c.close() for c in gone), return_exceptions=True)
        return len(gone)

    async def close(self) -> None:
        if self._ssh is not None:
            await self._ssh.close()
        if self._snmp_state is not None:
            from . import snmp

            await snmp.close_state(self._snmp_state)
            self._snmp_state = None
        await asyncio.sleep(0)
