"""The roce_nic options block."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...hostnames import NameRule, read_name_rule
from ..base import ErrorSink
from ..options import OptionReader

if TYPE_CHECKING:  # the burst sampler is imported only when a config turns it on
    from ..burst import BurstOptions

_DEVICE_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


@dataclass(frozen=True)
class RoceNicOptions:
    devices: tuple[str, ...] = ()  # empty: every RDMA device the host has
    hw_counters_from: str = "sysfs"  # sysfs | rdma (iproute2 ``rdma statistic show``)
    ethtool: bool = True
    expose_unmapped: bool = False
    include_infiniband_ports: bool = False
    # the configured host name -> the scheduler's node name (the ``host`` label); None: as configured
    node_name: NameRule | None = None

    def host_label(self, configured: str) -> str:
        """The ``host`` label of a host configured as ``configured``: its scheduler node name when
        ``node_name`` is set and matches, else the name as configured."""
        if self.node_name is None:
            return configured
        return self.node_name.apply(configured) or configured

    burst: BurstOptions | None = None  # the sub-second sampler (collectors/burst.py), off by default



def parse_options(raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> RoceNicOptions:
    r = OptionReader(raw, path, err, base_dir)
    devices = r.string_list("devices")
    for i, dev in enumerate(devices):
        if not _DEVICE_NAME.fullmatch(dev):
            err(f"{path}.devices[{i}]", f"not an RDMA device name: {dev!r} (e.g. mlx5_0)")
    from ..burst import parse_burst_options

    raw_burst = r.mapping("burst")
    burst = parse_burst_options(raw_burst or {}, f"{path}.burst", err, base_dir)  # read even when absent: the schema
    options = RoceNicOptions(
        devices=devices,
        hw_counters_from=r.string("hw_counters_from", "sysfs", choices=("sysfs", "rdma")) or "sysfs",
        ethtool=r.boolean("ethtool", True),
        expose_unmapped=r.boolean("expose_unmapped", False),
        include_infiniband_ports=r.boolean("include_infiniband_ports", False),
        node_name=read_name_rule(r, "node_name"),
        burst=burst if raw_burst is not None else None,
    )
    r.done()
    return options
