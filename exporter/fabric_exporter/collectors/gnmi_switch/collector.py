"""gnmi_switch's entry point: the collector the scheduler polls. Poll mode reads one Subscribe ONCE
per poll; stream mode reads the stream's latest values (``stream``). Either way the values become
the catalog's samples (``emit``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from ...errors import TargetConfigError
from ...parsers import gnmi as p
from ...parsers.skipped import sources_of
from ...samples import PollResult, Sample
from ..base import Collector, ErrorSink
from .decode import OcShapes, OcState, SonicState, elems_of
from .dialects import DIALECTS, SONIC_NAME_MAPS, GnmiPath
from .emit import OcEmit, sonic_samples
from .options import MIN_SAMPLE_INTERVAL, GnmiSwitchOptions, parse_options
from .session import GnmiSession
from .stream import GnmiStream


class GnmiSwitchCollector(Collector):
    name: ClassVar[str] = "gnmi_switch"
    transports: ClassVar[tuple[str, ...]] = ("gnmi",)
    parse_sources: ClassVar[tuple[str, ...]] = sources_of(p)

    @classmethod
    def sources_for(cls, options: GnmiSwitchOptions) -> tuple[str, ...]:
        return (DIALECTS[options.dialect].source,)

    @classmethod
    def parse_options(cls, raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> GnmiSwitchOptions:
        return parse_options(raw, path, err, base_dir)

    def __init__(self, ctx: Any):
        super().__init__(ctx)
        self.options: GnmiSwitchOptions = self.options or GnmiSwitchOptions()
        self.dialect = DIALECTS[self.options.dialect]
        self.switch = self.host.name if self.host else ""
        self.sample_interval = max(MIN_SAMPLE_INTERVAL, self.options.sample_interval or self.group.interval)
        self.session = GnmiSession(self.options, self.host, self.sample_interval, lambda: self.ctx.remaining())
        self._maps_loaded = False
        self._oc_emit = OcEmit(self.dialect, self.switch, self._wanted)
        self._oc_shapes = OcShapes(self._oc_emit.compile)
        self._state: SonicState | OcState | None = None  # the latest values (poll's, or the stream's)
        self.stream = GnmiStream(self)
        # the stream's state, its (updates, resubscribes) and the samples the last poll made of them
        self._last_stream_poll: tuple[Any, tuple[int, int], tuple[Sample, ...]] | None = None

    # the stream's health, as its self-metrics show it
    @property
    def updates(self) -> int:
        return self.stream.updates

    @property
    def resubscribes(self) -> int:
        return self.stream.resubscribes

    # -- connection ------------------------------------------------------------------------------------

    def _wanted(self, port: str) -> bool:
        inc, exc = self.options.interface_include, self.options.interface_exclude
        return (inc is None or bool(inc.fullmatch(port))) and (exc is None or not exc.fullmatch(port))

    @property
    def where(self) -> str:
        return self.session.where

    def _get_channel(self) -> Any:
        return self.session.channel()

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        return self.session.metadata()

    def _request(self, target: str, paths: list[GnmiPath], mode: str) -> Any:
        return self.session.request(target, paths, mode)

    def _groups(self, paths: list[GnmiPath]) -> dict[str, list[GnmiPath]]:
        by_target: dict[str, list[GnmiPath]] = {}
        for gp in paths:
            by_target.setdefault(gp.target, []).append(gp)
        return by_target

    def _new_state(self) -> SonicState | OcState:
        if self.dialect.name == "sonic":
            s = SonicState()
            old = self._state
            if isinstance(old, SonicState):  # name maps outlive the values
                s.alias_to_name, s.queue_oid, s.queue_type = old.alias_to_name, old.queue_oid, old.queue_type
                s.labels = old.labels
            return s
        return OcState(self._oc_shapes)

    def _apply(self, state: SonicState | OcState, response: Any, skipped: list) -> None:
        n = response.update
        if isinstance(state, OcState):
            state.apply_notification(n.prefix, n.update, skipped)
            if n.delete:
                prefix = elems_of(n.prefix)
                for d in n.delete:
                    state.delete(prefix, d)
            return
        prefix = elems_of(n.prefix) if n.HasField("prefix") else ()
        for u in n.update:
            state.apply(prefix, u, skipped)

    async def _once(self, state: SonicState | OcState, target: str, paths: list[GnmiPath], skipped: list,
                    timeout: float | None = None) -> None:
        await self.session.once(target, paths, lambda response: self._apply(state, response, skipped), timeout)

    # -- poll ----------------------------------------------------------------------------------------------

    def _paths(self) -> list[GnmiPath]:
        return [self.dialect.paths[t] for t in self.options.tables]

    async def _load_maps(self, state: SonicState, skipped: list, timeout: float | None = None) -> None:
        for target, paths in self._groups(list(SONIC_NAME_MAPS)).items():
            try:
                await self._once(state, target, paths, skipped, timeout)
            except TargetConfigError:
                pass  # a map this release does not serve: ports by their keys, queues as Q<n>
        self._maps_loaded = True

    def _samples(self, state: SonicState | OcState) -> list[Sample]:
        if isinstance(state, SonicState):
            return sonic_samples(state, self.switch, self._wanted)
        return self._oc_emit.samples(state)

    async def poll(self) -> PollResult:
        if self.options.mode == "stream":
            return await self._poll_stream()
        skipped: list = []
        state = self._new_state()
        if isinstance(state, SonicState) and not self._maps_loaded:
            await self._load_maps(state, skipped)
        for target, paths in self._groups(self._paths()).items():
            await self._once(state, target, paths, skipped)
        if isinstance(state, SonicState) and state.unknown_keys:
            self._maps_loaded = False  # a key we could not read: read the maps again next poll
        self._state = state
        return PollResult(self._samples(state), [], skipped)

    # -- stream ----------------------------------------------------------------------------------------------

    async def _poll_stream(self) -> PollResult:
        # Notifications only update the state the stream keeps; a poll publishes it, so a target
        # gets at most one snapshot per poll whatever it sends. A poll that finds nothing new since
        # the last (ON_CHANGE paths that stayed quiet, a poll interval below the sample interval)
        # hands out the very same samples: the store then renders and compresses nothing again.
        state, skipped = await self.stream.latest(self.ctx.remaining())
        stream, last = self.stream, self._last_stream_poll
        if last is not None and last[0] is state and last[1] == (stream.updates, stream.resubscribes):
            return PollResult(list(last[2]), [], skipped)
        samples = self._samples(state)
        labels = {"switch": self.switch}
        samples.append(Sample("fabric_roce_switch_gnmi_stream_updates", labels, float(stream.updates)))
        samples.append(Sample("fabric_roce_switch_gnmi_resubscribes_total", labels, float(stream.resubscribes)))
        self._last_stream_poll = (state, (stream.updates, stream.resubscribes), tuple(samples))
        return PollResult(samples, [], skipped)

    def _sampled(self) -> bool:
        """Does the stream carry a SAMPLE path? Only then is silence a stall (ON_CHANGE paths may
        rightly say nothing for hours)."""
        return any(not gp.on_change for gp in self._paths())

    async def close(self) -> None:
        await self.stream.close()
        await self.session.close()
