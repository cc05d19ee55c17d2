"""The roce_nic collector: one remote command per poll, parsed off the loop; the burst sampler beside it."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from ...commands import Command, Files, Script, Shape, Value
from ...errors import CommandError, ParseError
from ...parsers import ethtool as ethtool_parser
from ...parsers import rdma as rdma_parser
from ...parsers.rdma import parse_host_dump
from ...parsers.skipped import sources_of
from ...samples import PollResult
from ..base import Collector, ErrorSink, parse_off_loop
from . import options as _options
from . import script
from .mapping import ETHTOOL_MAPPER, HW_MAPPER, driver_family
from .options import RoceNicOptions
from .ports import PortData, PortLabels, _result_and_ports, result_from_dump


def _burst_probe() -> str:
    from ..burst import PROBE_SOURCE  # imported only when needed, as the sampler itself is

    return PROBE_SOURCE


_READ_FLAGS = ("-j", "--json", "-p", "--pretty", "-d", "--details")
# What roce_nic runs over SSH (the SSH guard's allow-list is generated from this): its one script
# (``command()``) and the burst sampler's probe, each pinned by its digest; and, one at a time, the
# reads the script makes (ethtool -S, rdma statistic/link show, cat of sysfs counters), all read-only.
SSH_COMMANDS = (
    Script("sh", "fabric-roce", lambda: script.REMOTE_SCRIPT),
    Script("python3", "fabric-burst", _burst_probe),
    *(Shape("ethtool", (stat, Value("name")), leading_flags=("--json",)) for stat in ("-S", "--statistics")),
    *(Shape("rdma", (*words, *rest), leading_flags=_READ_FLAGS)
      for words in (("statistic", "show"), ("stat", "show")) for rest in ((), ("link", Value("device_port")))),
    *(Shape("rdma", ("link", "show", *rest), leading_flags=_READ_FLAGS) for rest in ((), (Value("device_port"),))),
    *(Shape("cat", (*dashes, Value("rdma_counter_file"))) for dashes in ((), ("--",))),
    Files("rdma_counter_file", ("/sys/class/infiniband/*/ports/*/hw_counters/*",
                                "/sys/class/infiniband/*/ports/*/counters/*")),
)


class RoceNicCollector(Collector):
    name: ClassVar[str] = "roce_nic"
    transports: ClassVar[tuple[str, ...]] = ("ssh", "local")
    parse_sources: ClassVar[tuple[str, ...]] = sources_of(ethtool_parser, rdma_parser)
    ssh_commands: ClassVar[tuple[Command, ...]] = SSH_COMMANDS

    @classmethod
    def parse_options(cls, raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> RoceNicOptions:
        return _options.parse_options(raw, path, err, base_dir=base_dir)

    def __init__(self, ctx):
        super().__init__(ctx)
        if self.options is None:
            self.options = RoceNicOptions()
        # the host's port label sets, kept across polls (its label: the options' host rule, fixed)
        self._labels = PortLabels(self.options.host_label(self.host.name if self.host else "localhost"))
        self._burst = None  # BurstAccumulator, from the first poll with burst: on
        self._burst_runner = None  # burst.LocalRunner | StreamRunner

    def command(self) -> list[str]:
        o = self.options
        return ["sh", "-c", script.REMOTE_SCRIPT, "fabric-roce", o.hw_counters_from, "1" if o.ethtool else "0",
                "all" if o.expose_unmapped else "mapped", *o.devices]

    async def poll(self) -> PollResult:
        runner = self.ctx.runner()
        result = await runner.run(self.command(), timeout=self.ctx.remaining())
        if not result.stdout.startswith("@@fabric-roce"):
            if result.exit_status != 0:
                raise CommandError(f"roce_nic script failed: {result.describe_failure()}")
            raise ParseError(f"roce_nic script printed no @@fabric-roce header: {result.stdout[:80]!r}")
        labels = self._labels
        host = labels.host
        if self.options.burst is None:
            return await parse_off_loop(
                lambda text: result_from_dump(parse_host_dump(text), host, self.options, labels), result.stdout)
        polled, ports = await parse_off_loop(
            lambda text: _result_and_ports(parse_host_dump(text), host, self.options, labels), result.stdout)
        await self._burst_poll(ports, host, polled)
        return polled

    async def _burst_poll(self, ports: list[PortData], host: str, polled: PollResult) -> None:
        """Keep the burst sampler running on this poll's ports and add what it saw since the last poll."""
        from .. import burst

        o = self.options.burst
        if self._burst is None:
            self._burst = burst.BurstAccumulator()
        columns = burst.plan_columns(ports, host, o, HW_MAPPER, ETHTOOL_MAPPER, driver_family)
        runner = self._burst_runner
        if runner is not None and runner.done() and runner.error:
            polled.problems.append(runner.error)
        if runner is None or runner.done() or runner.columns != columns:
            if runner is not None:
                await runner.close()
            self._burst_runner = None
            if columns:
                if self.group.transport == "local":
                    runner = burst.LocalRunner(columns, o, self._burst)
                else:
                    runner = burst.StreamRunner(columns, o, self._burst, self.ctx.runner(),
                                                self.group.credentials.connect_timeout)
                try:
                    runner.start()
                    self._burst_runner = runner
                except OSError as e:
                    polled.problems.append(f"burst sampler: cannot start: {e.strerror or e}")
            else:
                polled.problems.append("burst sampler: no port has a counter for the configured signals")
        elif runner.missing:
            polled.problems.append("burst sampler: cannot read " + "; ".join(sorted(runner.missing.values())[:5]))
        target = {"group": self.group.name, "host": host, "collector": self.name}
        polled.samples.extend(self._burst.samples(self._burst.take_peaks(), target))

    async def close(self) -> None:
        if self._burst_runner is not None:
            await self._burst_runner.close()
            self._burst_runner = None

