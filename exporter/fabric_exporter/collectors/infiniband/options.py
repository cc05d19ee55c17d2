"""The infiniband collector's options (the ``options:`` block of a target)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...errors import ParseError
from ...parsers import ib_nodenamemap
from ..base import ErrorSink
from ..options import OptionReader

TOOLS = ("ibqueryerrors", "ibnetdiscover", "perfquery")


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
        # perfquery -E/-D on the ports whose PortRcvErrors/PortXmitDiscards are non-zero (details.py)
        error_details=r.boolean("error_details", False),
        error_details_max_ports=r.integer("error_details_max_ports", 32, minimum=1, maximum=100000),
    )
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


def simulated_fabric(options: InfinibandOptions) -> bool:
    """The tools reach ibsim (the lab, the tests), not an HCA: libumad2sim is preloaded into them."""
    return "libumad2sim" in dict(options.env).get("LD_PRELOAD", "")
