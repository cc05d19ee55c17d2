"""The latency_probe options block: what to run (perftest tool, size, device), where (the pair plan)
and how hard (concurrency, timeouts)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..options import OptionReader

TOOLS = ("ib_write_lat", "ib_send_lat", "ib_read_lat")
MIN_ITERATIONS = 10000  # below this perftest's p99.9 is (nearly) its max


@dataclass(frozen=True)
class LatencyProbeOptions:
    tool: str = "ib_write_lat"
    message_bytes: int = 2
    iterations: int = MIN_ITERATIONS
    device: str | None = None  # -d
    ib_port: int | None = None  # -i
    gid_index: int | None = None  # -x (RoCE)
    traffic_class: int | None = None  # --tclass (RoCE GRH)
    service_level: int | None = None  # -S (IB)
    extra_args: tuple[str, ...] = ()
    command_prefix: tuple[str, ...] = ()  # e.g. (nice, -n, 10); "{host}" becomes the host's name
    report: str = "text"  # text | json (--out_json to stdout)
    port_range: tuple[int, int] = (19000, 19999)
    probe_timeout: float = 10.0
    server_start_wait: float = 0.2
    client_retries: int = 3
    host_groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    host_group_pattern: str | None = None  # regex; its first group (or (?P<group>)) names the group
    full_mesh: bool = True
    sampled_peers: int = 0
    pairs: tuple[tuple[str, str], ...] = ()
    max_probes_per_round: int = 500
    max_concurrent_probes: int = 32
    max_probes_per_host: int = 1
    per_pair_series_max_pairs: int = 1000
    keep_results_for: float | None = None
    seed: str | None = None


def parse_options(raw: dict, path: str, err, *, base_dir: Path = Path(".")) -> LatencyProbeOptions:
    r = OptionReader(raw, path, err, base_dir)
    d = LatencyProbeOptions()
    tool = r.string("tool", d.tool, choices=TOOLS)
    message_bytes = r.integer("message_bytes", d.message_bytes, minimum=1, maximum=1 << 30)
    iterations = r.integer("iterations", d.iterations, minimum=MIN_ITERATIONS, maximum=10**8)
    device = r.string("device")
    ib_port = _opt_int(r, "ib_port", 1, 255)
    gid_index = _opt_int(r, "gid_index", 0, 1023)
    traffic_class = _opt_int(r, "traffic_class", 0, 255)
    service_level = _opt_int(r, "service_level", 0, 15)
    extra_args = r.string_list("extra_args")
    for i, a in enumerate(extra_args):
        if a in ("-p", "--port", "-n", "--iters", "-s", "--size", "-a", "--all", "-D", "--duration", "-C",
                 "--report-cycles", "-H", "-U") or a.startswith(("--port=", "--iters=", "--size=")):
            err(f"{path}.extra_args[{i}]", f"{a} is set by the collector (or breaks the report); "
                                           "use the dedicated option")
    prefix = r.string_list("command_prefix")
    report = r.string("report", d.report, choices=("text", "json"))
    port_range = d.port_range
    pr = r.value("port_range")
    if "port_range" in r.raw:
        if (isinstance(pr, list) and len(pr) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                          for x in pr) and 1024 <= pr[0] <= pr[1] <= 65535):
            port_range = (pr[0], pr[1])
        else:
            err(f"{path}.port_range", f"expected [low, high] ports within 1024-65535, got {pr!r}")
    probe_timeout = r.duration("probe_timeout", d.probe_timeout)
    server_start_wait = r.duration("server_start_wait", d.server_start_wait)
    client_retries = r.integer("client_retries", d.client_retries, minimum=0, maximum=20)

    host_groups: list[tuple[str, tuple[str, ...]]] = []
    raw_groups = r.mapping("host_groups")
    owner: dict[str, str] = {}
    for g, hosts in (raw_groups or {}).items():
        gpath = f"{path}.host_groups.{g}"
        if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) and h for h in hosts):
            err(gpath, "expected a non-empty list of host names")
            continue
        for j, h in enumerate(hosts):
            if h in owner:
                err(f"{gpath}[{j}]", f"host {h!r} is already in group {owner[h]!r}")
            owner[h] = str(g)
        host_groups.append((str(g), tuple(hosts)))
    pattern = r.regex("host_group_pattern")
    if pattern is not None and pattern.groups < 1:
        err(f"{path}.host_group_pattern", "needs a capturing group that names the host's group")
    if raw_groups and pattern is not None:
        err(path, "give host_groups or host_group_pattern, not both")

    plan = r.mapping("plan") or {}
    p = OptionReader(plan, f"{path}.plan", err, base_dir)
    full_mesh = p.boolean("full_mesh", d.full_mesh)
    sampled_peers = p.integer("sampled_peers", d.sampled_peers, minimum=0, maximum=1000)
    pairs: list[tuple[str, str]] = []
    raw_pairs = p.value("pairs")
    if "pairs" in plan:
        if not isinstance(raw_pairs, list):
            err(f"{path}.plan.pairs", "expected a list of [source, destination]")
        else:
            for j, pair in enumerate(raw_pairs):
                if (not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(x, str) and x for x in pair)
                        or pair[0] == pair[1]):
                    err(f"{path}.plan.pairs[{j}]", f"expected [source, destination] of two hosts, got {pair!r}")
                else:
                    pairs.append((pair[0], pair[1]))
    p.done()
    if not full_mesh and not sampled_peers and not pairs:
        err(f"{path}.plan", "plans nothing: enable full_mesh, sampled_peers or pairs")

    budget = r.mapping("budget") or {}
    b = OptionReader(budget, f"{path}.budget", err, base_dir)
    max_round = b.integer("max_probes_per_round", d.max_probes_per_round, minimum=1, maximum=10**6)
    max_conc = b.integer("max_concurrent_probes", d.max_concurrent_probes, minimum=1, maximum=10000)
    max_host = b.integer("max_probes_per_host", d.max_probes_per_host, minimum=1, maximum=8)
    b.done()
    per_pair_max = r.integer("per_pair_series_max_pairs", d.per_pair_series_max_pairs, minimum=0)
    keep = r.duration("keep_results_for", None)
    seed = r.string("seed")
    r.done()
    if port_range[1] - port_range[0] + 1 < max_conc:
        err(f"{path}.port_range", f"holds {port_range[1] - port_range[0] + 1} ports, fewer than "
                                  f"budget.max_concurrent_probes ({max_conc})")
    if probe_timeout is not None and server_start_wait is not None and server_start_wait >= probe_timeout:
        err(f"{path}.server_start_wait", "must be shorter than probe_timeout")
    return LatencyProbeOptions(
        tool=tool, message_bytes=message_bytes, iterations=iterations, device=device, ib_port=ib_port,
        gid_index=gid_index, traffic_class=traffic_class, service_level=service_level,
        extra_args=tuple(extra_args), command_prefix=tuple(prefix), report=report, port_range=port_range,
        probe_timeout=probe_timeout or d.probe_timeout, server_start_wait=server_start_wait or 0.0,
        client_retries=client_retries, host_groups=tuple(host_groups),
        host_group_pattern=pattern.pattern if pattern is not None else None, full_mesh=full_mesh,
        sampled_peers=sampled_peers, pairs=tuple(pairs), max_probes_per_round=max_round,
        max_concurrent_probes=max_conc, max_probes_per_host=max_host, per_pair_series_max_pairs=per_pair_max,
        keep_results_for=keep, seed=seed)


def _opt_int(r: OptionReader, key: str, minimum: int, maximum: int) -> int | None:
    """An optional integer: None when absent (perftest's own default then applies)."""
    return r.integer(key, None, minimum=minimum, maximum=maximum)  # type: ignore[arg-type]
