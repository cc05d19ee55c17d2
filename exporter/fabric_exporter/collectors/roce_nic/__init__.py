"""RoCE NIC counters of a GPU host, over SSH (or locally for a DaemonSet pod / host service).

One poll is ONE remote command, whatever the number of NICs: a small POSIX ``sh`` script
(``script.REMOTE_SCRIPT``) discovers the RDMA devices, ports and netdevs in sysfs (or with ``rdma
link show``), dumps every port's ``hw_counters`` with one ``grep``, runs ``ethtool -S`` per netdev
and frames it all with ``@@`` section lines ending in ``@@end`` (see parsers/rdma.py). The collector
parses the dump with pure parsers and maps vendor counter names (mlx5, bnxt_en/bnxt_re, ice/irdma)
onto the catalog's vendor-neutral names: the raw names are rows of the catalog (catalog/roce_nic.py,
catalog/roce.py), run by the one mapping engine (fabric_exporter/mapping.py).

Modules: script (the remote script and the host-side awk filter), mapping (the catalog rows run on a NIC's
counters), options (the options block), ports (a parsed dump -> ports -> samples, pure), docs (the
per-vendor tables of docs/collectors/roce_nic.md, imported by the tests only), collector (the entry point). ``python -m
fabric_exporter.collectors.roce_nic`` prints the remote script (to install it as a forced command).
"""

from __future__ import annotations

from .collector import SSH_COMMANDS, RoceNicCollector
from .mapping import ETHTOOL_MAPPER, HW_MAPPER, CounterMapper, driver_family
from .options import RoceNicOptions
from .ports import PortData, _result_and_ports, result_from_dump
from .script import FILTER_AWK, REMOTE_SCRIPT

__all__ = ["ETHTOOL_MAPPER", "FILTER_AWK", "HW_MAPPER", "REMOTE_SCRIPT", "SSH_COMMANDS",
           "CounterMapper", "PortData", "RoceNicCollector", "RoceNicOptions", "_result_and_ports",
           "driver_family", "result_from_dump"]
