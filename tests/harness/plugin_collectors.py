"""A test collector loaded through FABRIC_EXPORTER_PLUGINS: runs a command on the target and
publishes each ``<netdev> <value>`` line of its output as fabric_roce_rx_bytes_total.

It exercises the real scheduler, store, transports and HTTP without depending on a real collector.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabric_exporter.collectors import Collector, register
from fabric_exporter.collectors.options import OptionReader
from fabric_exporter.errors import CommandError, ParseError
from fabric_exporter.samples import PollResult, Sample


@dataclass(frozen=True)
class Options:
    command: tuple[str, ...]


@register
class CommandValuesCollector(Collector):
    name = "test_command"
    transports = ("ssh", "local")

    @classmethod
    def parse_options(cls, raw, path, err, *, base_dir=None):
        r = OptionReader(raw, path, err)
        command = r.string_list("command", ("echo", "eth0 1"))
        r.done()
        return Options(command=command)

    async def poll(self) -> PollResult:
        # {host} in an argument is replaced by the target's name, so one script can serve many hosts.
        argv = [a.replace("{host}", self.host.name) for a in self.options.command]
        result = await self.ctx.runner().run(argv, timeout=self.group.timeout)
        if result.exit_status != 0:
            raise CommandError(result.describe_failure())
        samples = []
        for line in result.stdout.splitlines():
            parts = line.split()
            if len(parts) != 2 or not parts[1].isdigit():
                raise ParseError(f"expected '<netdev> <value>', got {line!r}")
            samples.append(Sample("fabric_roce_rx_bytes_total",
                                  {"host": self.host.name, "device": "mlx5_0", "port": "1", "netdev": parts[0]},
                                  int(parts[1])))
        return PollResult(samples)
