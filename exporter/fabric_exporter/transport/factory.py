"""The daemon's transports: one SSH pool, one local runner, SNMP sessions on one engine per loop."""

from __future__ import annotations

import asyncio
from typing import Any

from ..config import Host, TargetGroup
from .base import CommandRunner, OutputLimit
from .local import LocalRunner
from .ssh import SSHPool


class Transports:
    def __init__(self, max_output_bytes: int | None = None) -> None:
        self.output_limit = OutputLimit() if max_output_bytes is None else OutputLimit(max_output_bytes)
        self.ssh = SSHPool(self.output_limit)
        self.local = LocalRunner(output_limit=self.output_limit)
        self._snmp_state: Any = None  # owned by transport.snmp (one engine per event loop)

    def runner(self, group: TargetGroup, host: Host) -> CommandRunner:
        if group.transport == "local":
            return self.local
        if group.transport == "ssh":
            return self.ssh.get(host.address, host.port, group.credentials)
        raise ValueError(f"group {group.name}: transport {group.transport} cannot run commands")

    def snmp(self, group: TargetGroup, host: Host) -> Any:
        from . import snmp  # pysnmp is imported only when a group uses it

        return snmp.open_session(self, group, host)

    async def close(self) -> None:
        await self.ssh.close()
        if self._snmp_state is not None:
            from . import snmp

            await snmp.close_state(self._snmp_state)
            self._snmp_state = None
        await asyncio.sleep(0)
