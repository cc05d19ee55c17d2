"""InfiniBand fabric collector: the whole fabric from one management/SM node, with the stock tools.

A poll never starts a process per port. A steady-state poll runs two fabric-wide sweeps side by side:

* ``ibqueryerrors --counters --report-port``, live (it discovers the fabric itself): data/packet
  counters (64-bit where the device has them) and link info (state, physical state, width, speed,
  peer, "Could be" = what both ends support) for every port, down ports included. Live because a
  sweep that loads a discovery cache prints the cached links: a link taken down would not show;
* ``ibqueryerrors --load-cache <file> --threshold-file /dev/null``: every non-zero error counter and
  PortXmitWait. An empty threshold file makes the threshold 0, so a port the sweep checked and did
  not list has all its error counters at exactly 0. Exit status 1 means "errors found", not a failure.

``ibnetdiscover --cache <file>`` rewrites that cache every ``topology_interval`` and on the poll after
the live sweep differs from the topology (a node or link appeared or went, a LID moved).

Without the cache (``use_discovery_cache: false``) both sweeps discover live and ``ibnetdiscover``
runs on the same interval and triggers.

Every port seen (in a discovery or a sweep) is remembered: one the sweep no longer returns is
reported missing (its counters withheld, the poll partial) instead of vanishing as if healthy, and a
port seen linked that is now down is flagged.

A crashed tool (killed by a signal, ibsim's occasional segfault) or empty output is retried once,
then fails the poll; it is never read as "no errors". Counters are never reset unless
``reset_latched_counters`` is set, and then only the latched ones, with ``perfquery -R``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import re
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..catalog import infiniband as ib_catalog
from ..catalog.spec import MetricSpec, RawCounter
from ..errors import CommandFailed, ParseError, PollError, PollTimeout
from ..parsers import ib_diagnet, ib_netdiscover, ib_nodenamemap, ib_perfquery, ib_queryerrors
from ..parsers.ib_common import SPEEDS, WIDTH_LANES, guid_str
from ..samples import PollResult, Sample
from ..transport.base import CommandResult
from .base import Collector, ErrorSink, parse_off_loop
from .options import OptionReader

log = logging.getLogger("fabric_exporter.infiniband")

TOOLS = ("ibqueryerrors", "ibnetdiscover", "perfquery")

# Raw counter name (as the tools print it) -> (metric, width in bits of its PortCounters field), built
# from the catalog's RawCounter entries: the pairing is declared there only.


def _raw_counters(source: str) -> dict[str, tuple[MetricSpec, RawCounter]]:
    return {raw.name: (spec, raw) for spec in ib_catalog.METRICS for raw in spec.raw if raw.source == source}


DATA_COUNTERS = {name: (spec.name, raw.width) for name, (spec, raw) in _raw_counters(ib_catalog.COUNTER_SWEEP).items()}
# Error counters (IBA 1.3 PortCounters widths; they latch at all-ones) and PortXmitWait.
ERROR_COUNTERS = {name: (spec.name, raw.width) for name, (spec, raw) in _raw_counters(ib_catalog.ERROR_SWEEP).items()}
QP1_DROPPED = next((spec.name, raw.width) for spec, raw in _raw_counters(ib_catalog.PERFQUERY).values())
# PortCounters CounterSelect bits (perfquery -R reset mask); PortXmitWait is bit 16 (CounterSelect2).
RESET_BITS = {raw.name: raw.reset_bit for spec in ib_catalog.METRICS for raw in spec.raw if raw.reset_bit is not None}
# Per-sample lookups, prepared once: raw name -> (metric, multiplier); error counters in catalog order.
_DATA_METRICS = {name: (spec.name, raw.scale) for name, (spec, raw) in _raw_counters(ib_catalog.COUNTER_SWEEP).items()}
_ERROR_METRICS = tuple((raw, metric) for raw, (metric, _w) in ERROR_COUNTERS.items())
SPEED_NAMES = {key: gen for key, (gen, _rate) in SPEEDS.items()}


def _data_counters_64bit(entry: ib_queryerrors.PortCounters) -> bool:
    """--counters prints 8 fields from PortCountersExtended (IETF counters), else 4 fields: 32-bit
    PortCounters, or the 64-bit "NOIETF" extended set, told apart only by a value above 32 bits.
    (A 64-bit counter sitting exactly at 2^32-1 is then taken as latched: unlikely and harmless.)"""
    counters = entry.counters
    if "PortUnicastXmitPkts" in counters:
        return True
    return any(v > 0xFFFFFFFF for v in counters.values())


@contextlib.contextmanager
def _gc_paused():
    """Pause the cyclic GC around a synchronous burst of allocations (parsing ~1 MB, building ~60k
    samples; nothing here makes reference cycles). Measured: half of the exporter's CPU per poll was
    collector passes over the daemon's heap. No await inside, so no other task runs meanwhile."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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

    def tool(self, name: str) -> str:
        return dict(self.tool_paths).get(name, name)


@dataclass
class _ExpectedPort:
    peer_guid: int | None  # the peer of the port's last up link
    peer_port: int | None
    last_up: float | None  # monotonic: when the port was last seen linked (topology or sweep)
    last_seen: float  # monotonic: when the port was last returned by a sweep or topology


@dataclass
class _NodeFacts:
    guid: int
    type: str
    description: str
    ports_count: int
    system_guid: int | None
    last_seen: float


@dataclass
class _Port:
    """One swept port, assembled from both sweeps."""

    node_guid: int
    port: int
    entry: ib_queryerrors.PortCounters
    errors: dict[str, int] | None = None  # None: error counters unknown for this port
    errors_extended: set[str] = field(default_factory=set)
    qp1_dropped: int | None = None


class InfinibandCollector(Collector):
    name: ClassVar[str] = "infiniband"
    transports: ClassVar[tuple[str, ...]] = ("local", "ssh")
    parse_sources: ClassVar[tuple[str, ...]] = ("ibnetdiscover", "ibqueryerrors", "perfquery", "ibdiagnet2.db_csv",
                                                "ibdiagnet2.pm")

    @classmethod
    def parse_options(cls, raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> InfinibandOptions:
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
        )
        if node_name_map and Path(node_name_map).is_file():
            try:
                ib_nodenamemap.parse(Path(node_name_map).read_text())
            except (OSError, ParseError) as e:
                err(f"{path}.node_name_map", f"unreadable node name map: {e}")
        r.done()
        return options

    @classmethod
    def check_targets(cls, groups: list[tuple[int, Any]], err: ErrorSink) -> None:
        # Port series carry no poller label: two sweeps of one fabric would publish every port twice.
        swept_by: dict[str, str] = {}
        for index, group in groups:
            for host in group.hosts:
                where = f"targets[{index}] ({group.name}, host {host.name})"
                if group.fabric in swept_by:
                    err(f"targets[{index}]", f"fabric {group.fabric!r} is already swept by {swept_by[group.fabric]}: "
                                             "every port would be published twice; sweep each fabric from one "
                                             "node, or give each its own fabric label")
                else:
                    swept_by[group.fabric] = where

    def __init__(self, ctx):
        super().__init__(ctx)
        if self.options is None:
            self.options = InfinibandOptions()
        self._topology: ib_netdiscover.Topology | None = None
        self._owners: dict[int, tuple[int, int]] = {}  # port GUID -> (node GUID, port) of self._topology
        self._topology_at: float | None = None  # monotonic
        self._topology_wall: float | None = None
        self._topology_stale = False
        self._topology_changes = 0
        self._cache_nodes: frozenset[int] | None = None  # node GUIDs in the discovery cache file
        # port -> [signature, labels, link/health/info samples, up, all-zero error samples or None]:
        # reused while the signature holds
        self._port_static: dict[tuple[int, int], tuple] = {}
        self._expected_ports: dict[tuple[int, int], _ExpectedPort] = {}
        self._nodes: dict[int, _NodeFacts] = {}
        self._ticks: dict[int, int] = {}
        self._ticks_at: float | None = None
        self._name_map: dict[int, str] = {}
        self._name_map_mtime: float | None = None
        self._sweep_names: dict[int, str] = {}
        self._skipped: list = []

    # -- running tools ------------------------------------------------------------------------

    def _argv(self, tool: str, *args: str) -> list[str]:
        o = self.options
        if tool == "ibqueryerrors" and o.skip_sl:
            # No SA PathRecord query for SLs: the sweep keeps working while the SM is down (SL 0).
            args = ("--skip-sl", *args)
        argv = list(o.command_prefix)
        if o.env:
            # An argv prefix rather than the runner's environment: the same on local and SSH.
            argv += ["env", *(f"{k}={v}" for k, v in o.env)]
        argv.append(o.tool(tool))
        if o.ca:
            argv += ["-C", o.ca]
        if o.ca_port:
            argv += ["-P", str(o.ca_port)]
        if o.mad_timeout_ms:
            argv += ["-t", str(o.mad_timeout_ms)]
        return argv + list(args)

    async def _run(self, argv: list[str], deadline: float, ok_status: tuple[int, ...],
                   durations: dict[str, float], label: str, retry: bool = True) -> CommandResult:
        """Run a tool; a crash or empty output is retried once (time permitting), then raised."""
        loop = asyncio.get_running_loop()
        attempts = 2 if retry else 1
        for attempt in range(attempts):
            remaining = deadline - loop.time()
            if remaining <= 0.05:
                raise PollTimeout(f"{label}: no time left in the poll deadline")
            started = loop.time()
            result = await self.ctx.runner().run(argv, timeout=remaining)
            durations[label] = durations.get(label, 0.0) + loop.time() - started
            crashed = result.exit_status < 0 or result.exit_status >= 128
            if result.exit_status in ok_status and result.stdout.strip():
                return result
            if crashed or not result.stdout.strip():
                if attempt + 1 < attempts:
                    log.info("%s crashed or printed nothing (%s); retrying once", label, result.describe_failure())
                    continue
                what = "crashed" if crashed else "printed nothing"
                raise CommandFailed(f"{label} {what}: {result.describe_failure()}")
            raise CommandFailed(f"{label} failed: {result.describe_failure()}")
        raise AssertionError("unreachable")

    # -- poll -------------------------------------------------------------------------------------

    async def poll(self) -> PollResult:
        deadline = self.ctx.deadline()
        problems: list[str] = []
        durations: dict[str, float] = {}
        self._skipped: list = []  # lines the parsers skipped this poll (skip-and-count rule)
        self._load_name_map(problems)

        now = time.monotonic()
        refresh = (self._topology is None or self._topology_stale
                   or now - (self._topology_at or 0) >= self.options.topology_interval)
        cache = self._cache_path()
        cached_nodes: frozenset[int] | None = None  # nodes of the cache the error sweep loads
        tasks: list[asyncio.Task] = []

        def start(coro) -> asyncio.Task:
            task = asyncio.ensure_future(coro)
            tasks.append(task)
            return task

        try:
            if cache is not None:
                # The counter sweep runs live: it discovers the fabric itself, so its link info
                # (state, width, speed, peer) is today's and a link that went down shows in this
                # poll. Loaded from a cache, a sweep prints the cached links instead (verified on
                # ibsim: after Unlink a switch-switch link still read Active). The error sweep only
                # needs the node/LID list, so it loads a cache that a live ibnetdiscover rewrites
                # on topology_interval and at once when the live sweep shows a change.
                if refresh or self._cache_nodes is None:
                    disc = await self._run(self._argv("ibnetdiscover", "--cache", cache), deadline, (0,), durations,
                                           "ibnetdiscover")
                    with _gc_paused():
                        self._apply_topology(await parse_off_loop(ib_netdiscover.parse, disc.stdout,
                                                                  skipped=self._skipped))
                    self._cache_nodes = frozenset(self._topology.nodes)
                cached_nodes = self._cache_nodes
                counters_task = start(self._run(self._argv("ibqueryerrors", "--counters", "--report-port"),
                                                deadline, (0,), durations, "ibqueryerrors_counters"))
                errors_task = start(self._run(self._argv("ibqueryerrors", "--load-cache", cache, "--threshold-file",
                                                         "/dev/null"), deadline, (0, 1), durations,
                                              "ibqueryerrors_errors"))
                topo_task = None
            else:
                # No writable cache on the tool host: two live sweeps side by side, topology on its
                # own interval (and at once when a sweep shows something it does not know).
                counters_task = start(self._run(self._argv("ibqueryerrors", "--counters", "--report-port"), deadline,
                                                (0,), durations, "ibqueryerrors_counters"))
                errors_task = start(self._run(self._argv("ibqueryerrors", "--threshold-file", "/dev/null"), deadline,
                                              (0, 1), durations, "ibqueryerrors_errors"))
                topo_task = start(self._refresh_topology(deadline, durations, problems)) if refresh else None
            counters_run = await counters_task
            with _gc_paused():
                counters = await parse_off_loop(ib_queryerrors.parse, counters_run.stdout, skipped=self._skipped)
            errors_run = await errors_task
            if topo_task is not None:
                await topo_task
        finally:
            pending = [t for t in tasks if not t.done()]
            for t in pending:
                t.cancel()  # the runner kills the tool (local: its process group; SSH: the channel)
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
        with _gc_paused():
            errors = await parse_off_loop(ib_queryerrors.parse, errors_run.stdout, skipped=self._skipped)
            ports = self._assemble(counters, errors, errors_run.stderr, problems, cached_nodes)
            if self._sweep_shows_change(counters):
                self._topology_stale = True
        if self.options.qp1_dropped:
            await self._read_qp1_dropped(ports, deadline, durations, problems)
        if self.options.read_tick_multiplier and (self._ticks_at is None
                                                   or now - self._ticks_at >= self.options.topology_interval):
            self._ticks_at = now
            await self._read_ticks(deadline, durations)
        latched = {key: self._latched(p) for key, p in ports.items()}
        if self.options.reset_latched_counters and any(latched.values()):
            await self._reset_latched(ports, latched, deadline, durations, problems)
        with _gc_paused():
            samples = self._samples(ports, latched, problems, durations)
        if self.options.ibdiagnet_dir:
            samples += await self._ibdiagnet(deadline, durations, problems, self._skipped)
        return PollResult(samples, problems, self._skipped)

    # -- topology -----------------------------------------------------------------------------

    async def _refresh_topology(self, deadline: float, durations: dict[str, float], problems: list[str]) -> None:
        try:
            run = await self._run(self._argv("ibnetdiscover"), deadline, (0,), durations, "ibnetdiscover")
            topology = await parse_off_loop(ib_netdiscover.parse, run.stdout, skipped=self._skipped)
        except PollError as e:
            if self._topology is None:
                raise
            problems.append(f"topology refresh failed, using the previous one: {e}")
            return
        self._apply_topology(topology)

    def _apply_topology(self, topology: ib_netdiscover.Topology) -> None:
        """A fresh discovery: node facts, and every linked port becomes (again) expected up."""
        now = time.monotonic()
        if self._topology is not None and topology.links() != self._topology.links():
            self._topology_changes += 1
        self._topology = topology
        self._owners = topology.port_guid_owner()  # built once per discovery, read by every sweep
        self._port_static = {}  # port GUIDs and node types may have changed
        self._topology_at = now
        self._topology_wall = time.time()
        self._topology_stale = False
        for node in topology.nodes.values():
            self._nodes[node.guid] = _NodeFacts(node.guid, node.type, node.description, node.ports_count,
                                                node.system_guid, now)
            for p in node.ports.values():
                self._expected_ports[(node.guid, p.port)] = _ExpectedPort(p.peer_guid, p.peer_port, now, now)

    def _cache_path(self) -> str | None:
        o = self.options
        if not o.use_discovery_cache:
            return None
        if o.discovery_cache_path:
            return o.discovery_cache_path
        # Unique per exporter process: two exporters (an HA pair) polling one SM node must not
        # load each other's discovery. close() removes it.
        who = f"{socket.gethostname()}-{os.getpid()}-{self.group.name}-{self.host.name if self.host else 'all'}"
        return f"/tmp/fabric-exporter-ib-{re.sub(r'[^A-Za-z0-9_.-]', '_', who)}.ibnetdiscover-cache"

    def _sweep_shows_change(self, counters: ib_queryerrors.QueryErrorsReport) -> bool:
        """True when the live sweep differs from the topology: a node it does not know or no longer
        finds, an up link it does not know, a link it has that is down now, or a LID that moved
        (the error sweep addresses the cache's LIDs)."""
        topo = self._topology
        if topo is None:
            return True
        owners = self._owners
        tnodes = topo.nodes
        seen = 0
        for node in counters.nodes:
            tnode = tnodes.get(node.guid)
            if tnode is None:
                return True
            seen += 1
            tports = tnode.ports
            for pc in node.ports:
                link = pc.link
                if pc.port is None or link is None:
                    continue
                tport = tports.get(pc.port)
                if link.peer_port_guid is None:  # not linked now
                    if tport is not None:
                        return True
                    continue
                peer = owners.get(link.peer_port_guid)
                if tport is None or peer is None or (tport.peer_guid, tport.peer_port) != (peer[0], link.peer_port):
                    return True
                lid = tport.lid if tnode.type != "switch" else tnode.lid
                if lid is not None and link.lid != lid:
                    return True
        return seen != len(tnodes)

    def _load_name_map(self, problems: list[str]) -> None:
        path = self.options.node_name_map
        if not path:
            return
        try:
            mtime = Path(path).stat().st_mtime
            if mtime != self._name_map_mtime:
                self._name_map = ib_nodenamemap.parse(Path(path).read_text())
                self._name_map_mtime = mtime
        except (OSError, ParseError) as e:
            problems.append(f"node name map {path}: {e} (using {'the previous map' if self._name_map else 'descriptions'})")

    # -- combining the sweeps -----------------------------------------------------------------

    def _assemble(self, counters: ib_queryerrors.QueryErrorsReport, errors: ib_queryerrors.QueryErrorsReport,
                  errors_stderr: str, problems: list[str],
                  cached_nodes: frozenset[int] | None = None) -> dict[tuple[int, int], _Port]:
        """Join the two sweeps. ``cached_nodes``: the nodes of the discovery cache the error sweep
        loaded (None: it discovered live, like the counter sweep)."""
        ports: dict[tuple[int, int], _Port] = {}
        names: dict[str, set[int]] = {}
        self._sweep_names = {}
        for node in counters.nodes:
            if node.kind != "data" or node.guid is None:
                raise ParseError("counter sweep printed an errors block")
            names.setdefault(node.name, set()).add(node.guid)
            self._sweep_names[node.guid] = node.name
            for pc in node.ports:
                if pc.port is None:
                    continue
                ports[(node.guid, pc.port)] = _Port(node.guid, pc.port, pc)

        owners = self._owners
        # A port the error sweep did not list has all error counters at 0, but only if that sweep
        # checked its node: same node count as the counter sweep, and no failed query on it.
        if cached_nodes is None:
            complete = errors.summary.nodes_checked == counters.summary.nodes_checked
            if not complete:
                problems.append(f"error sweep checked {errors.summary.nodes_checked} nodes, counter sweep "
                                f"{counters.summary.nodes_checked}: error counters withheld for ports it did not list")
        else:
            # The error sweep checked the cache's nodes (an unreachable one as failed queries); a
            # node the live counter sweep found that the cache lacks was not checked at all.
            complete = errors.summary.nodes_checked == len(cached_nodes)
            if not complete:
                problems.append(f"error sweep checked {errors.summary.nodes_checked} nodes of the "
                                f"{len(cached_nodes)} in the discovery cache: error counters withheld for ports "
                                "it did not list")
            new_nodes = {guid for guid, _port in ports if guid not in cached_nodes}
            if new_nodes:
                problems.append(f"{len(new_nodes)} node(s) not yet in the discovery cache: their error counters "
                                "are withheld until the next discovery")
        failed_nodes: set[int] = set()
        failures = ib_queryerrors.failed_queries(errors_stderr)
        for name, _lid, _port in failures:
            failed_nodes |= names.get(name, set())
        # A failure on a node the counter sweep did not return concerns no published port; a failure
        # count the warnings do not account for could concern any node.
        if len(failures) < errors.summary.pma_failures:
            complete = False
            problems.append(f"error sweep: {errors.summary.pma_failures} PMA queries failed, "
                            f"{errors.summary.pma_failures - len(failures)} without naming the node: "
                            "error counters withheld for ports it did not list")
        elif failed_nodes:
            problems.append(f"error sweep: PMA queries failed on {len(failed_nodes)} node(s): "
                            "their error counters are withheld")
        if complete:
            for key, p in ports.items():
                if p.node_guid not in failed_nodes and (cached_nodes is None or p.node_guid in cached_nodes):
                    p.errors = {}
        unattributed = 0
        for node in errors.nodes:
            if node.kind != "errors":
                raise ParseError("error sweep printed a data counters block")
            for pc in node.ports:
                if pc.port is None:
                    continue  # "port ALL": the switch aggregate, not a port
                guid = node.guid
                if guid is None:  # CAs print no GUID in errors mode: map the port GUID
                    owner = owners.get(pc.port_guid)
                    if owner is None:
                        candidates = names.get(node.name, set())
                        guid = next(iter(candidates)) if len(candidates) == 1 else None
                    else:
                        guid = owner[0]
                p = ports.get((guid, pc.port)) if guid is not None else None
                if p is None:
                    unattributed += 1
                    continue
                p.errors = {k: v for k, v in pc.counters.items() if k in ERROR_COUNTERS}
                # error mode: only the 64-bit path prints the "(12.000)" rendering
                p.errors_extended = pc.suffixed & set(ERROR_COUNTERS)
        if unattributed:
            problems.append(f"error sweep listed {unattributed} port(s) the counter sweep did not return")
        return ports

    def _latched(self, p: _Port) -> list[str]:
        """Counters of the port read from fixed-width PortCounters fields sitting at all-ones."""
        out = []
        if not _data_counters_64bit(p.entry):
            for name, value in p.entry.counters.items():
                if name in DATA_COUNTERS and value == (1 << 32) - 1:
                    out.append(name)
        for name, value in (p.errors or {}).items():
            width = ERROR_COUNTERS[name][1]
            if name not in p.errors_extended and value == (1 << width) - 1:
                out.append(name)
        if p.qp1_dropped == (1 << QP1_DROPPED[1]) - 1:
            out.append("QP1Dropped")
        return out

    # -- optional per-device queries (bounded concurrency, one process per node, never per port) --

    async def _batch(self, argvs: list[tuple[object, list[str]]], deadline: float, durations: dict[str, float],
                     label: str) -> dict[object, CommandResult | PollError]:
        sem = asyncio.Semaphore(self.options.max_concurrency)
        out: dict[object, CommandResult | PollError] = {}

        async def one(key, argv):
            async with sem:
                loop = asyncio.get_running_loop()
                remaining = deadline - loop.time()
                if remaining <= 0.05:
                    out[key] = PollTimeout(f"{label}: no time left")
                    return
                try:
                    out[key] = await self.ctx.runner().run(argv, timeout=remaining)
                except PollError as e:
                    out[key] = e

        started = asyncio.get_running_loop().time()
        await asyncio.gather(*(one(k, a) for k, a in argvs))
        durations[label] = durations.get(label, 0.0) + asyncio.get_running_loop().time() - started
        return out

    async def _read_qp1_dropped(self, ports: dict[tuple[int, int], _Port], deadline: float,
                                durations: dict[str, float], problems: list[str]) -> None:
        """QP1Dropped is in PortCounters but no sweep prints it: one perfquery per node (-l: all ports)."""
        by_node: dict[int, list[_Port]] = {}
        for p in ports.values():
            if p.entry.link is not None and p.entry.link.lid:
                by_node.setdefault(p.node_guid, []).append(p)
        jobs = []
        for guid, plist in by_node.items():
            ntype = self._nodes.get(guid).type if guid in self._nodes else None
            if ntype == "switch":
                jobs.append((guid, self._argv("perfquery", "-l", str(plist[0].entry.link.lid), "255")))
            else:
                for p in plist:
                    jobs.append(((guid, p.port), self._argv("perfquery", str(p.entry.link.lid), str(p.port))))
        results = await self._batch(jobs, deadline, durations, "perfquery_qp1")
        failed = 0
        for key, res in results.items():
            try:
                if isinstance(res, PollError) or res.exit_status != 0:
                    raise ParseError("perfquery failed")
                blocks = ib_perfquery.parse(res.stdout, skipped=self._skipped)
            except ParseError:
                failed += 1
                continue
            guid = key if isinstance(key, int) else key[0]
            for b in blocks:
                p = ports.get((guid, b.port))
                # basic PortCounters; perfquery -x prints it in the extended block too (real captures)
                if p is not None and b.kind in ("counters", "extended") and "QP1Dropped" in b.values:
                    p.qp1_dropped = b.values["QP1Dropped"]
        if failed:
            problems.append(f"QP1Dropped: perfquery failed on {failed} of {len(jobs)} node(s)/port(s)")

    async def _read_ticks(self, deadline: float, durations: dict[str, float]) -> None:
        """PortSamplesControl.Tick per switch, where the device answers (perfquery -c)."""
        jobs = []
        topo = self._topology
        if topo is None:
            return
        for node in topo.nodes.values():
            if node.type == "switch" and node.lid:
                port = min(node.ports) if node.ports else 1
                jobs.append((node.guid, self._argv("perfquery", "-c", str(node.lid), str(port))))
        results = await self._batch(jobs, deadline, durations, "perfquery_tick")
        for guid, res in results.items():
            try:
                if isinstance(res, PollError) or res.exit_status != 0:
                    raise ParseError("no PortSamplesControl")
                blocks = ib_perfquery.parse(res.stdout, skipped=self._skipped)
                tick = next(b.values["Tick"] for b in blocks if "Tick" in b.values)
                self._ticks[guid] = tick
            except (ParseError, StopIteration):
                self._ticks.pop(guid, None)  # not readable on this device: publish nothing

    async def _reset_latched(self, ports: dict[tuple[int, int], _Port], latched: dict[tuple[int, int], list[str]],
                             deadline: float, durations: dict[str, float], problems: list[str]) -> None:
        jobs = []
        for key, names in latched.items():
            p = ports[key]
            mask = 0
            for n in names:
                if n in RESET_BITS:
                    mask |= 1 << RESET_BITS[n]
            if mask and p.entry.link is not None and p.entry.link.lid:
                jobs.append((key, self._argv("perfquery", "-R", str(p.entry.link.lid), str(p.port), hex(mask))))
        results = await self._batch(jobs, deadline, durations, "perfquery_reset")
        failed = [k for k, r in results.items() if isinstance(r, PollError) or r.exit_status != 0]
        log.warning("reset latched counters on %d port(s)", len(jobs) - len(failed))
        if failed:
            problems.append(f"reset of latched counters failed on {len(failed)} port(s)")

    # -- samples --------------------------------------------------------------------------------

    def _name(self, guid: int | None, fallback: str) -> str:
        if guid is not None and guid in self._name_map:
            return self._name_map[guid]
        return fallback

    def _samples(self, ports: dict[tuple[int, int], _Port], latched: dict[tuple[int, int], list[str]],
                 problems: list[str], durations: dict[str, float]) -> list[Sample]:
        now = time.monotonic()
        topo = self._topology
        owners = self._owners
        out: list[Sample] = []
        add = out.append
        descriptions: dict[int, str] = {}
        seen_nodes: set[int] = set()
        for (guid, _port), p in ports.items():
            seen_nodes.add(guid)
        state_counts = {"up": 0, "down": 0, "missing": 0}

        static_cache = self._port_static
        data_metrics = _DATA_METRICS
        error_metrics = _ERROR_METRICS
        new = tuple.__new__  # Sample(...) without the NamedTuple's Python-level __new__: ~60k per poll
        for key in sorted(ports):
            p = ports[key]
            link = p.entry.link
            # The sweep prints the NodeDescription (no name map is passed to the tools).
            node_desc = self._sweep_names.get(p.node_guid) or (
                self._nodes[p.node_guid].description if p.node_guid in self._nodes else "")
            descriptions[p.node_guid] = node_desc
            node_name = self._name(p.node_guid, node_desc)
            peer_guid = peer_type = None
            peer_name = peer_port = ""
            was_linked = self._was_linked(key, now)
            if link is not None and link.peer_port_guid is not None:
                owner = owners.get(link.peer_port_guid)
                if owner is None and link.peer_port_guid in self._nodes:
                    owner = (link.peer_port_guid, 0)
                if owner is not None:
                    peer_guid = owner[0]
                    peer_type = self._nodes[peer_guid].type if peer_guid in self._nodes else None
                peer_name = self._name(peer_guid, link.peer_name or "")
                peer_port = str(link.peer_port)
            elif was_linked:
                # Down now: keep the peer the link had, so the series keep their identity and a
                # dashboard can still say which link is down.
                exp = self._expected_ports[key]
                peer_guid = exp.peer_guid
                facts = self._nodes.get(peer_guid) if peer_guid is not None else None
                peer_type = facts.type if facts else None
                peer_name = self._name(peer_guid, self._sweep_names.get(peer_guid) or (facts.description if facts else ""))
                peer_port = str(exp.peer_port) if exp.peer_port is not None else ""
            extended = _data_counters_64bit(p.entry)
            is_latched = bool(latched.get(key))
            # The link/health gauges and the info series change only with the link: reuse last
            # poll's samples (and labels dict) while everything they are made of is the same.
            signature = (node_name, peer_guid, peer_type, peer_name, peer_port, was_linked, is_latched, extended,
                         None if link is None else (link.lid, link.state, link.phys_state, link.width, link.speed,
                                                    link.peer_port_guid, link.peer_port, link.could_be_width,
                                                    link.could_be_speed))
            cached = static_cache.get(key)
            if cached is None or cached[0] != signature:
                labels, static, up = self._port_static_samples(p, link, node_name, peer_guid, peer_type, peer_name,
                                                               peer_port, was_linked, is_latched, extended)
                cached = static_cache[key] = [signature, labels, static, up, None]
            _sig, labels, static, up, zero_errors = cached

            # counters
            for raw, value in p.entry.counters.items():
                spec = data_metrics.get(raw)
                if spec is not None:
                    add(new(Sample, (spec[0], labels, float(value * spec[1]))))
            errors = p.errors
            if errors:
                get = errors.get
                for raw, metric in error_metrics:
                    add(new(Sample, (metric, labels, float(get(raw, 0)))))
            elif errors is not None:  # every error counter 0 (most ports, most polls): reuse those samples
                if zero_errors is None:
                    zero_errors = cached[4] = [new(Sample, (metric, labels, 0.0)) for _raw, metric in error_metrics]
                out += zero_errors
            if p.qp1_dropped is not None:
                add(Sample(QP1_DROPPED[0], labels, float(p.qp1_dropped)))
            out += static
            state_counts["up" if up else "down"] += 1

            # Remember every port swept (linked or not): absent from a later sweep, it is "missing".
            expected = self._expected_ports.get(key)
            if up and peer_guid is not None:
                if expected is None:
                    self._expected_ports[key] = _ExpectedPort(peer_guid, link.peer_port, now, now)
                else:  # updated in place: no new object per port per poll
                    expected.peer_guid, expected.peer_port, expected.last_up, expected.last_seen = (
                        peer_guid, link.peer_port, now, now)
            elif expected is not None:
                expected.last_seen = now
            else:
                self._expected_ports[key] = _ExpectedPort(None, None, None, now)
            if p.node_guid in self._nodes:
                self._nodes[p.node_guid].last_seen = now
        # forget ports no sweep returns any more (their samples would otherwise be kept forever)
        if len(static_cache) > len(ports):
            for key in static_cache.keys() - ports.keys():
                del static_cache[key]

        # Ports the topology (or an earlier sweep) had up that this sweep did not return.
        missing_nodes: set[int] = set()
        missing = 0
        for key in sorted(self._expected_ports.keys() - ports.keys()):
            exp = self._expected_ports[key]
            if now - exp.last_seen > self.options.forget_missing_after:
                del self._expected_ports[key]
                continue
            guid, port = key
            missing += 1
            missing_nodes.add(guid)
            facts = self._nodes.get(guid)
            node_name = self._name(guid, facts.description if facts else "")
            peer_facts = self._nodes.get(exp.peer_guid) if exp.peer_guid is not None else None
            labels = {"node_guid": guid_str(guid), "node_name": node_name, "port": str(port),
                      "peer_node_name": self._name(exp.peer_guid, peer_facts.description if peer_facts else ""),
                      "peer_port": str(exp.peer_port) if exp.peer_port is not None else ""}
            add(Sample("fabric_ib_port_sweep_missing", labels, 1.0))
            state_counts["missing"] += 1
        if missing:
            examples = ", ".join(sorted(self._name(g, self._nodes[g].description if g in self._nodes else guid_str(g))
                                        for g in missing_nodes)[:5])
            problems.append(f"{missing} port(s) on {len(missing_nodes)} node(s) missing from the sweep "
                            f"(e.g. {examples}): their series are withheld")

        # nodes
        for guid, facts in sorted(self._nodes.items()):
            if guid not in seen_nodes and now - facts.last_seen > self.options.forget_missing_after:
                del self._nodes[guid]
                continue
            desc = descriptions.get(guid, facts.description)
            add(Sample("fabric_ib_node_info", {
                "node_guid": guid_str(guid), "node_name": self._name(guid, desc), "node_type": facts.type,
                "node_description": desc, "ports": str(facts.ports_count),
                "system_guid": guid_str(facts.system_guid) if facts.system_guid is not None else "",
            }, 1.0))
            if guid in self._ticks:
                add(Sample("fabric_ib_node_xmit_wait_tick_multiplier",
                           {"node_guid": guid_str(guid), "node_name": self._name(guid, desc)},
                           float(self._ticks[guid])))

        # sweep-level
        for tool, seconds in sorted(durations.items()):
            add(Sample("fabric_ib_sweep_duration_seconds", {"tool": tool}, seconds))
        if topo is not None:
            for ntype in ("switch", "ca", "router"):
                add(Sample("fabric_ib_topology_nodes", {"node_type": ntype},
                           float(sum(1 for n in topo.nodes.values() if n.type == ntype))))
        for state, n in state_counts.items():
            add(Sample("fabric_ib_topology_ports", {"state": state}, float(n)))
        if self._topology_wall is not None:
            add(Sample("fabric_ib_topology_last_refresh_timestamp_seconds", {}, self._topology_wall))
        add(Sample("fabric_ib_topology_changes_total", {}, float(self._topology_changes)))
        return out

    def _port_static_samples(self, p: _Port, link, node_name: str, peer_guid: int | None, peer_type: str | None,
                             peer_name: str, peer_port: str, was_linked: bool, is_latched: bool,
                             extended: bool) -> tuple[dict[str, str], list[Sample], bool]:
        """A port's labels, link/health gauges and info series (everything but its counters)."""
        labels = {"node_guid": guid_str(p.node_guid), "node_name": node_name, "port": str(p.port),
                  "peer_node_name": peer_name, "peer_port": peer_port}
        out: list[Sample] = []
        add = out.append
        up = link is not None and link.width is not None and link.state_id >= 2
        width = WIDTH_LANES.get(link.width, 0) if up else 0
        lane_rate = SPEEDS[link.speed][1] * 1e9 / 8 if up and link.speed else 0.0
        sup_width = WIDTH_LANES.get(link.could_be_width or link.width, 0) if up else 0
        sup_rate = (SPEEDS[link.could_be_speed or link.speed][1] * 1e9 / 8) if up and link.speed else 0.0
        if link is not None:
            add(Sample("fabric_ib_port_state_id", labels, float(link.state_id)))
            add(Sample("fabric_ib_port_physical_state_id", labels, float(link.phys_state_id)))
        add(Sample("fabric_ib_port_active_width_lanes", labels, float(width)))
        add(Sample("fabric_ib_port_active_lane_rate_bytes_per_second", labels, lane_rate))
        add(Sample("fabric_ib_port_rate_bytes_per_second", labels, width * lane_rate))
        if up and link.peer_port_guid is not None:
            add(Sample("fabric_ib_port_supported_width_lanes", labels, float(sup_width)))
            add(Sample("fabric_ib_port_supported_lane_rate_bytes_per_second", labels, sup_rate))
            degraded = link.could_be_width is not None or link.could_be_speed is not None
        else:
            degraded = False
        add(Sample("fabric_ib_port_degraded", labels, 1.0 if degraded else 0.0))
        # Down, but linked in the topology or a sweep within forget_missing_after: unexpected.
        add(Sample("fabric_ib_port_link_down_unexpected", labels, 1.0 if (not up) and was_linked else 0.0))
        add(Sample("fabric_ib_port_latched", labels, 1.0 if is_latched else 0.0))
        add(Sample("fabric_ib_port_extended_counters", labels, 1.0 if extended else 0.0))
        add(Sample("fabric_ib_port_sweep_missing", labels, 0.0))
        add(Sample("fabric_ib_port_info", {
            **labels, "lid": str(link.lid) if link is not None else "",
            "port_guid": self._port_guid(p.node_guid, p.port),
            "peer_node_guid": guid_str(peer_guid) if peer_guid is not None else "",
            "peer_node_type": peer_type or "",
            "active_width": link.width if up and link.width else "",
            "active_speed": SPEED_NAMES.get(link.speed, "") if up and link.speed else "",
            "supported_width": (link.could_be_width or link.width or "") if up and peer_guid is not None else "",
            "supported_speed": SPEED_NAMES.get(link.could_be_speed or link.speed or "", "")
            if up and link.peer_port_guid is not None else "",
        }, 1.0))
        return labels, out, up

    def _was_linked(self, key: tuple[int, int], now: float) -> bool:
        exp = self._expected_ports.get(key)
        return exp is not None and exp.last_up is not None and now - exp.last_up <= self.options.forget_missing_after

    def _port_guid(self, node_guid: int, port: int) -> str:
        """A switch's ports share the node GUID; a CA port's GUID is known only from the topology."""
        facts = self._nodes.get(node_guid)
        if facts is not None and facts.type == "switch":
            return guid_str(node_guid)
        topo = self._topology
        if topo is not None and node_guid in topo.nodes and port in topo.nodes[node_guid].ports:
            return guid_str(topo.nodes[node_guid].ports[port].port_guid)
        return ""

    async def close(self) -> None:
        """Remove the discovery cache this collector wrote (best effort)."""
        cache = self._cache_path()
        if cache is None or self._topology is None:
            return
        try:
            await self.ctx.runner().run(list(self.options.command_prefix) + ["rm", "-f", "--", cache], timeout=2.0)
        except PollError as e:
            log.info("could not remove the discovery cache %s: %s", cache, e)

    # -- ibdiagnet files --------------------------------------------------------------------------

    async def _ibdiagnet(self, deadline: float, durations: dict[str, float], problems: list[str],
                         skipped: list | None = None) -> list[Sample]:
        """Newest ibdiagnet2.db_csv / ibdiagnet2.pm under ibdiagnet_dir (depth 2), read with find + cat."""
        loop = asyncio.get_running_loop()
        d = self.options.ibdiagnet_dir
        prefix = list(self.options.command_prefix)
        argv = prefix + ["find", d, "-maxdepth", "2", "(", "-name", "ibdiagnet2.db_csv", "-o", "-name",
                         "ibdiagnet2.pm", ")", "-type", "f", "-printf", "%T@ %p\\n"]
        started = loop.time()
        try:
            found = await self.ctx.runner().run(argv, timeout=max(0.1, deadline - loop.time()))
        except PollError as e:
            problems.append(f"ibdiagnet files: {e}")
            return []
        # Age on the exporter's clock: hosts are NTP-synced, ibdiagnet runs are minutes to hours
        # apart, and one command less (the SSH guard allows only find and cat here).
        now_wall = time.time()
        if found.exit_status != 0 and not found.stdout.strip():
            problems.append(f"ibdiagnet files: {found.describe_failure()}")
            return []
        newest: dict[str, tuple[float, str]] = {}
        for line in found.stdout.splitlines():
            mtime_s, _, path = line.partition(" ")
            try:
                mtime = float(mtime_s)
            except ValueError:
                continue
            base = path.rsplit("/", 1)[-1]
            if base not in newest or mtime > newest[base][0]:
                newest[base] = (mtime, path)
        if not newest:
            problems.append(f"ibdiagnet files: no ibdiagnet2.db_csv or ibdiagnet2.pm under {d}")
            return []
        out: list[Sample] = []
        pm_published = False
        for base, (mtime, path) in sorted(newest.items()):  # db_csv sorts before pm
            if base == "ibdiagnet2.pm" and pm_published:
                continue  # PM_INFO in the db_csv already holds these counters: the .pm is not read
            try:
                res = await self.ctx.runner().run(prefix + ["cat", "--", path], timeout=max(0.1, deadline - loop.time()))
                if res.exit_status != 0:
                    raise CommandFailed(res.describe_failure())
                samples, had_pm = self._ibdiagnet_samples(base, res.stdout, skip_pm=pm_published,
                                                          skipped=skipped)
                pm_published = pm_published or had_pm
                out += samples
            except PollError as e:
                problems.append(f"ibdiagnet file {path}: {e}")
                continue
            out.append(Sample("fabric_ib_ibdiagnet_file_age_seconds", {"file": base}, max(0.0, now_wall - mtime)))
        durations["ibdiagnet_files"] = loop.time() - started
        return out

    def _ibdiagnet_samples(self, base: str, text: str, skip_pm: bool,
                           skipped: list | None = None) -> tuple[list[Sample], bool]:
        out: list[Sample] = []

        def node_labels(guid: int) -> dict[str, str]:
            facts = self._nodes.get(guid)
            return {"node_guid": guid_str(guid), "node_name": self._name(guid, facts.description if facts else "")}

        if base == "ibdiagnet2.pm":
            pms = ib_diagnet.parse_pm(text, skipped=skipped)
        else:
            sections = ib_diagnet.parse_db_csv(text, skipped=skipped)
            pms = ib_diagnet.pm_info(sections)
            for cable in ib_diagnet.cable_info(sections):
                labels = {**node_labels(cable.node_guid), "port": str(cable.port)}
                if cable.temperature is not None:
                    out.append(Sample("fabric_ib_ibdiagnet_cable_temperature_celsius", labels, cable.temperature))
                out.append(Sample("fabric_ib_ibdiagnet_cable_info", {
                    **labels, "vendor": cable.vendor, "part_number": cable.part_number,
                    "serial_number": cable.serial_number, "length": cable.length}, 1.0))
            for guid, temp in sorted(ib_diagnet.node_temperatures(sections).items()):
                out.append(Sample("fabric_ib_ibdiagnet_node_temperature_celsius", node_labels(guid), temp))
        # The .pm and PM_INFO carry the same counters: publish PM_INFO when both exist.
        if skip_pm:
            return out, False
        for pm in pms:
            labels = {**node_labels(pm.node_guid), "port": str(pm.port)}
            for name, value in sorted(pm.counters.items()):
                out.append(Sample("fabric_ib_ibdiagnet_pm_counter", {**labels, "counter": name}, float(value)))
            out.append(Sample("fabric_ib_ibdiagnet_port_latched", labels, 1.0 if pm.latched else 0.0))
        return out, bool(pms)


__all__ = ["InfinibandCollector", "InfinibandOptions"]
