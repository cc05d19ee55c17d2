"""The infiniband collector: one poll = the sweeps (tools.py), joined (join.py), recorded in the
fabric state (state.py), mapped to samples (mapping.py), plus the optional perfquery reads and
ibdiagnet files (ibdiagnet.py). The package docstring explains the sweeps."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any, ClassVar

from ...commands import Command
from ...errors import PollError
from ...parsers import ib_diagnet, ib_netdiscover, ib_perfquery, ib_queryerrors
from ...parsers.skipped import sources_of
from ...samples import PollResult, Sample
from ..base import Collector, ErrorSink, off_loop, parse_off_loop
from . import ibdiagnet
from . import tools as ib_tools
from . import options as ib_options
from .counters import latched_ports
from .focus import FocusState, FocusTask, focus_info_samples, focus_samples, select_focus, sweep_waits
from .details import detail_samples, read_error_details
from .ibdiagnet import read_ibdiagnet
from .join import PortKey, SweptPort, join_sweeps
from .mapping import samples_from_sweep
from .options import InfinibandOptions
from .state import FabricState
from .tools import IbPoll, IbTools, discovery_cache_path

log = logging.getLogger("fabric_exporter.infiniband")


class InfinibandCollector(Collector):
    name: ClassVar[str] = "infiniband"
    transports: ClassVar[tuple[str, ...]] = ("local", "ssh")
    parse_sources: ClassVar[tuple[str, ...]] = sources_of(ib_netdiscover, ib_queryerrors, ib_perfquery, ib_diagnet)
    ssh_commands: ClassVar[tuple[Command, ...]] = ib_tools.SSH_COMMANDS + ibdiagnet.SSH_COMMANDS

    @classmethod
    def parse_options(cls, raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> InfinibandOptions:
        return ib_options.parse_options(raw, path, err, base_dir)

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
        self.state = FabricState(self.options.forget_missing_after)
        self.tools = IbTools(self.options, lambda: self.ctx.runner())
        self.focus = FocusState()
        self._focus_task: asyncio.Task | None = None

    def discovery_cache_path(self) -> str | None:
        return discovery_cache_path(self.options, f"{self.group.name}-{self.host.name if self.host else 'all'}")

    # -- poll -------------------------------------------------------------------------------------

    async def poll(self) -> PollResult:
        poll = IbPoll.start(self.ctx)
        self.state.load_name_map(self.options.node_name_map, poll.problems)
        self.focus.sweep_started()  # the focus reads wait while the sweep's tools run (focus_yield_to_sweep)
        try:
            return await self._poll(poll)
        finally:
            self.focus.sweep_done()

    async def _poll(self, poll: IbPoll) -> PollResult:
        counters, errors_run, cached_nodes = await self._sweeps(poll)
        errors = await parse_off_loop(ib_queryerrors.parse, errors_run.stdout, skipped=poll.skipped,
                                      memo=self.state.error_lines)
        # On a worker thread, as the mapping below: at 40k ports each held the loop ~0.1-0.5 s
        # (bench_cluster), and every scrape and SNMP answer with it. Only this poll touches the
        # fabric state meanwhile (the focus task reads the focus state, updated on the loop).
        # The cyclic GC stays on: paused, it let every thread's allocations of those seconds pile
        # into one young-generation pass that held the loop 0.4-0.9 s (bench_cluster, 10k GPUs).
        joined = await off_loop(self._join, counters, errors, errors_run.stderr, poll, cached_nodes)
        ports = joined.ports
        await self._optional_reads(ports, poll)
        latched = latched_ports(ports)  # only the ports with a latched counter (few, most polls none)
        if self.options.reset_latched_counters and latched:
            await self.tools.reset_latched(ports, latched, poll)
        details = (await read_error_details(self.tools, ports, self.options.error_details_max_ports, poll)
                   if self.options.error_details else {})
        samples = await off_loop(self._samples, ports, latched, poll)
        if self.options.focus:
            samples += self._focus(ports, poll)
        samples += detail_samples(details, self.state)
        # the sweeps' records (~10k objects), freed now by their reference counts, not after the
        # ibdiagnet reads
        del counters, errors, joined, ports, latched
        if self.options.ibdiagnet_dir:
            samples += await read_ibdiagnet(self.tools, self.options.ibdiagnet_dir, self.state, poll)
        return PollResult(samples, poll.problems, poll.skipped)

    async def _sweeps(self, poll: IbPoll):
        """Run both sweeps side by side (and a discovery when due): the parsed counter sweep, the
        error sweep's run, and the nodes of the discovery cache the error sweep loaded (None: live)."""
        state, tools = self.state, self.tools
        refresh = state.needs_discovery(poll.now, self.options.topology_interval)
        cache = self.discovery_cache_path()
        cached_nodes: frozenset[int] | None = None
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
                # That discovery runs beside the counter sweep (which does not read the cache), the
                # error sweep after it: a rediscovery poll then takes about as long as a plain one.
                counters_task = start(tools.counter_sweep(poll))
                if refresh or state.cache_nodes is None:
                    disc = await tools.discover(poll, cache)
                    state.apply_topology(await parse_off_loop(ib_netdiscover.parse, disc.stdout,
                                                              skipped=poll.skipped))
                    state.cache_nodes = frozenset(state.topology.nodes)
                cached_nodes = state.cache_nodes
                errors_task = start(tools.error_sweep(poll, cache))
                topo_task = None
            else:
                # No writable cache on the tool host: two live sweeps side by side, topology on its
                # own interval (and at once when a sweep shows something it does not know).
                counters_task = start(tools.counter_sweep(poll))
                errors_task = start(tools.error_sweep(poll, None))
                topo_task = start(self._refresh_topology(poll)) if refresh else None
            counters_run = await counters_task
            counters = await parse_off_loop(ib_queryerrors.parse, counters_run.stdout, skipped=poll.skipped,
                                            memo=state.counter_lines)
            errors_run = await errors_task
            if topo_task is not None:
                await topo_task
        finally:
            pending = [t for t in tasks if not t.done()]
            for t in pending:
                t.cancel()  # the runner kills the tool (local: its process group; SSH: the channel)
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            for t in tasks:  # a sweep that failed while another's failure was being raised: seen, not logged
                if t.done() and not t.cancelled():
                    t.exception()
        return counters, errors_run, cached_nodes

    async def _refresh_topology(self, poll: IbPoll) -> None:
        try:
            run = await self.tools.discover(poll)
            topology = await parse_off_loop(ib_netdiscover.parse, run.stdout, skipped=poll.skipped)
        except PollError as e:
            if self.state.topology is None:
                raise
            poll.problems.append(f"topology refresh failed, using the previous one: {e}")
            return
        self.state.apply_topology(topology)

    async def _optional_reads(self, ports: dict[PortKey, SweptPort], poll: IbPoll) -> None:
        if self.options.qp1_dropped:
            await self.tools.read_qp1_dropped(ports, self.state, poll)
        if self.options.read_tick_multiplier and (self.state.ticks_at is None
                                                   or poll.now - self.state.ticks_at >= self.options.topology_interval):
            self.state.ticks_at = poll.now
            await self.tools.read_ticks(self.state, poll)

    def _join(self, counters, errors, errors_stderr: str, poll: IbPoll, cached_nodes: frozenset[int] | None):
        """Join the two sweeps by port, and note what they show of the fabric."""
        joined = join_sweeps(counters, errors, errors_stderr, self.state.owners, poll.problems, cached_nodes)
        self.state.sweep_names = joined.sweep_names
        if self.state.sweep_shows_change(counters):
            self.state.topology_stale = True
        return joined

    def _samples(self, ports: dict[PortKey, SweptPort], latched: dict[PortKey, list[str]],
                 poll: IbPoll) -> list[Sample]:
        """Record the sweep in the fabric state, then map it (pure) to samples."""
        now = time.monotonic()  # after the sweeps: when the ports were last seen
        self.state.record_sweep(ports, now)
        self.state.forget_gone(ports, now)
        return samples_from_sweep(ports, latched, self.state, poll.durations, now, poll.problems,
                                  self.options.host_from_node_name)

    def _focus(self, ports: dict[PortKey, SweptPort], poll: IbPoll) -> list[Sample]:
        """Publish the focus windows since the previous sweep, pick the next focus set from this
        sweep (published as fabric_ib_port_focus_info), and make sure the focus task runs (focus.py)."""
        focus, o, now = self.focus, self.options, poll.now
        out = focus_samples(focus, self.state.port_static)
        poll.skipped += focus.skipped
        focus.skipped = []
        waits = sweep_waits(ports)
        seconds = now - focus.sweep_at if focus.sweep_at is not None else None
        focus.apply(select_focus(ports, waits, focus.sweep_waits, seconds, self.state, o.focus_top_k, o.focus_ports))
        focus.sweep_waits, focus.sweep_at = waits, now
        out += focus_info_samples(focus, self.state.port_static)
        task = self._focus_task
        loop = asyncio.get_running_loop()
        if task is None or task.done() or task.get_loop() is not loop:
            self._focus_task = loop.create_task(FocusTask(self.tools, focus).run(),
                                                name=f"ib-focus:{self.group.name}")
        return out

    async def close(self) -> None:
        """Stop the focus task; remove the discovery cache this collector wrote (best effort)."""
        task, self._focus_task = self._focus_task, None
        if task is not None and not task.done() and task.get_loop() is asyncio.get_running_loop():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        cache = self.discovery_cache_path()
        if cache is None or self.state.topology is None:
            return
        try:
            await self.tools.run_plain(["rm", "-f", "--", cache], timeout=2.0)
        except PollError as e:
            log.info("could not remove the discovery cache %s: %s", cache, e)
