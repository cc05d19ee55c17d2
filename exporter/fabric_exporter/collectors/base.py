"""What every collector is: named, told which transports it supports, given a target, polled.

A collector knows which commands to run (or OIDs to walk), calls pure parsers and maps records to
catalog samples. It does no HTTP and no scheduling.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..config import Host, TargetGroup
from ..samples import PollResult
from ..transport.base import CommandRunner

ErrorSink = Callable[[str, str], None]


@dataclass
class PollContext:
    """What a collector instance may use: its group, its host (None for group-scoped collectors)
    and the daemon's transports, reached through ``runner()`` and ``snmp()``."""

    group: TargetGroup
    host: Host | None
    transports: Any  # transport.factory.Transports (typed loosely to keep imports light)

    def runner(self, host: Host | None = None) -> CommandRunner:
        """Where commands for ``host`` (default: this target's host) run: SSH or local, per the group."""
        return self.transports.runner(self.group, host or self.host)

    def snmp(self, host: Host | None = None) -> Any:
        return self.transports.snmp(self.group, host or self.host)


class Collector(abc.ABC):
    #: name used in the config's ``collector:`` key
    name: ClassVar[str]
    #: transports this collector can use
    transports: ClassVar[tuple[str, ...]]
    #: "host": one poll task per host; "group": one task per group (e.g. pairwise latency probes)
    scope: ClassVar[str] = "host"
    #: sources this collector's parsers report skipped lines under (fabric_parse_skipped_lines_total),
    #: published at 0 from the first scrape so rate() sees the first skipped line
    parse_sources: ClassVar[tuple[str, ...]] = ()

    def __init__(self, ctx: PollContext):
        self.ctx = ctx
        self.group = ctx.group
        self.host = ctx.host
        self.options = ctx.group.options

    @classmethod
    def parse_options(cls, raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> Any:
        """Validate ``options:``; report problems with ``err(key_path, message)``. Default: none allowed."""
        for key in raw:
            err(f"{path}.{key}", f"unknown option for collector {cls.name}")
        return None

    @classmethod
    def check_targets(cls, groups: list[tuple[int, TargetGroup]], err: ErrorSink) -> None:
        """Checks across all groups of this collector, as (index in targets, group). Default: none."""

    @abc.abstractmethod
    async def poll(self) -> PollResult:
        """One poll. Raise PollError (or a subclass) on failure; never return made-up values."""

    async def close(self) -> None:
        """Release per-target state (transports are closed by the daemon)."""
