"""The infiniband collector's options (the ``options:`` block of a target)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ... import bounds
from ...errors import ParseError
from ...hostnames import NameRule, read_name_rule
from ...parsers import ib_nodenamemap
from ..base import ErrorSink
from ..options import OptionReader

TOOLS = ("ibqueryerrors", "ibnetdiscover", "perfquery")
FOCUS_INTERVAL = bounds.Range(0.2, 60.0, "s")
# rdma-core's rdma-ndd sets a CA's NodeDescription to "<hostname> <device>" ("gpu-node-017 mlx5_0")
DEFAULT_HOST_RULE = NameRule(re.compile(r"^(\S+)"))


@dataclass(frozen=True)
class InfinibandOptions:
    tool_paths: tuple[tuple[str, str], ...] = ()
    command_prefix: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    ca: str | None = None
    ca_port: int | None = None
    mad_timeout_ms: int | None = None
    topology_interval: float = 600.0
    forget_missing_after: float = 3600.0
    node_name_map: str | None = None
    ibdiagnet_dir: str | None = None
    reset_latched_counters: bool = False
    max_concurrency: int = 4
    qp1_dropped: bool = False
    read_tick_multiplier: bool = False
    use_discovery_cache: bool = True
    discovery_cache_path: str | None = None
    skip_sl: bool = False
    # The focus set (focus.py): off unless asked for, since it adds MADs every focus_interval.
    focus: bool = False
    focus_top_k: int = 16
    focus_ports: tuple[tuple[str, int], ...] = ()  # (node name or 0x GUID, port)
    focus_interval: float = 1.0
    focus_concurrency: int = 2
    focus_burst_threshold: float = 0.1
    focus_vl_xmit_wait: bool = True
    focus_yield_to_sweep: bool = True
    # a CA node's name (node-name-map name, else NodeDescription) -> its host (fabric_ib_node_host_info)
    host_from_node_name: NameRule = DEFAULT_HOST_RULE
    error_details: bool = False
    error_details_max_ports: int = 32

    def tool(self, name: str) -> str:
        return dict(self.tool_paths).get(name, name)


def parse_options(raw: dict, path: str, err: ErrorSink, base_dir: Path = Path(".")) -> InfinibandOptions:
    r = OptionReader(raw, path, err, base_dir)
    tool_paths = r.mapping("tool_paths") or {}
    for k, v in tool_paths.items():
        if k not in TOOLS:
            err(f"{path}.tool_paths.{k}", f"unknown tool (known: {', '.join(TOOLS)})")
        elif not isinstance(v, str) or not v:
            err(f"{path}.tool_paths.{k}", "expected a path")
    env = r.mapping("env") or {}
    for k, v in env.items():
        if not isinstance(k, str) or not k.replace("_", "a").isalnum() or k[0].isdigit():
            err(f"{path}.env.{k}", "not an environment variable name")
        elif not isinstance(v, str):
            err(f"{path}.env.{k}", "expected a string value")
    node_name_map = r.path("node_name_map")  # checked to exist unless check-config --syntax-only
    ca_port = r.integer("ca_port", 0, minimum=0, maximum=254)
    options = InfinibandOptions(
        tool_paths=tuple(sorted((k, v) for k, v in tool_paths.items() if k in TOOLS and isinstance(v, str))),
        command_prefix=r.string_list("command_prefix"),
        env=tuple(sorted((str(k), str(v)) for k, v in env.items())),
        ca=r.string("ca"),
        ca_port=ca_port or None,
        mad_timeout_ms=r.integer("mad_timeout_ms", 0, minimum=0, maximum=60000) or None,
        topology_interval=r.duration("topology_interval", 600.0) or 600.0,
        forget_missing_after=r.duration("forget_missing_after", 3600.0) or 3600.0,
        node_name_map=node_name_map,
        ibdiagnet_dir=r.string("ibdiagnet_dir"),
        reset_latched_counters=r.boolean("reset_latched_counters", False),
        # ibsim refuses 8 or more concurrent clients; real SMs dislike floods of MADs too.
        max_concurrency=r.integer("max_concurrency", 4, minimum=1, maximum=7),
        qp1_dropped=r.boolean("qp1_dropped", False),
        read_tick_multiplier=r.boolean("read_tick_multiplier", False),
        use_discovery_cache=r.boolean("use_discovery_cache", True),
        discovery_cache_path=r.string("discovery_cache_path"),
        skip_sl=r.boolean("skip_sl", False),
        focus=r.boolean("focus", False),
        focus_top_k=r.integer("focus_top_k", 16, minimum=0, maximum=256),
        focus_ports=_focus_ports(r.string_list("focus_ports"), f"{path}.focus_ports", err),
        # One perfquery costs ~10 ms on ibsim and a MAD round trip or a few on a real fabric (plus
        # ~1 ms over a reused SSH connection): 200 ms leaves room for a round of reads.
        focus_interval=r.duration("focus_interval", 1.0, within=FOCUS_INTERVAL) or 1.0,
        # ibsim refuses 8 clients: the two sweeps plus a per-device batch (max_concurrency) may run
        # while a focus round does.
        focus_concurrency=r.integer("focus_concurrency", 2, minimum=1, maximum=4),
        focus_burst_threshold=r.number("focus_burst_threshold", 0.1, minimum=1e-9, maximum=1.0),
        focus_vl_xmit_wait=r.boolean("focus_vl_xmit_wait", True),
        focus_yield_to_sweep=r.boolean("focus_yield_to_sweep", True),
        host_from_node_name=read_name_rule(r, "host_from_node_name", DEFAULT_HOST_RULE),
        # perfquery -E/-D on the ports whose PortRcvErrors/PortXmitDiscards are non-zero (details.py)
        error_details=r.boolean("error_details", False),
        error_details_max_ports=r.integer("error_details_max_ports", 32, minimum=1, maximum=100000),
    )
    if options.focus and not (options.focus_top_k or options.focus_ports):
        err(f"{path}.focus", "the focus set would be empty: set focus_top_k above 0 or list focus_ports")
    if options.read_tick_multiplier and simulated_fabric(options) and "perfquery" not in dict(options.tool_paths):
        err(f"{path}.read_tick_multiplier", "perfquery -c (PortSamplesControl) makes ibsim's opensm crash "
            "(SIGSEGV when the query reaches the switch the SM runs on): not available on a simulated fabric "
            "(libumad2sim preloaded)")
    if node_name_map and Path(node_name_map).is_file():
        try:
            ib_nodenamemap.parse(Path(node_name_map).read_text())
        except (OSError, ParseError) as e:
            err(f"{path}.node_name_map", f"unreadable node name map: {e}")
    r.done()
    return options


def _focus_ports(entries: tuple[str, ...], path: str, err: ErrorSink) -> tuple[tuple[str, int], ...]:
    """``NODE:PORT`` (NODE a node name or a 0x node GUID) -> (NODE, port)."""
    out = []
    for i, entry in enumerate(entries):
        node, sep, port = entry.rpartition(":")
        if not sep or not node.strip() or not port.isdigit() or not 1 <= int(port) <= 254:
            err(f"{path}[{i}]", f"expected NODE:PORT (a node name or 0x GUID, a port 1-254), got {entry!r}")
            continue
        out.append((node.strip(), int(port)))
    return tuple(out)


def simulated_fabric(options: InfinibandOptions) -> bool:
    """The tools reach ibsim (the lab, the tests), not an HCA: libumad2sim is preloaded into them."""
    return "libumad2sim" in dict(options.env).get("LD_PRELOAD", "")
