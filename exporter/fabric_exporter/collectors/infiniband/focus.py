"""The focus set: a few ports read every ``focus_interval`` between two sweeps, so a stall burst
shorter than the sweep interval shows (issue 23, item 3; UFM's answer too: a small set of ports at a
high rate, never the whole fabric).

Each sweep picks the ``focus_top_k`` ports with the highest stall ratio since the previous sweep
(PortXmitWait delta x (Tick+1) over the link rate and the time between the sweeps, the recording
rule's formula) plus the configured ``focus_ports``. A background task (``FocusTask``) then reads
them every ``focus_interval``: one ``perfquery -x`` per node (``-l`` with a port list when the node
has several focus ports), at most ``focus_concurrency`` at once. A device whose extended counters
lack PortXmitWait (ibsim, devices without the additional extended counters of CapMask bit 14) is
read with plain ``perfquery`` from then on: a 32-bit PortXmitWait, which latches at all-ones, so a
latched read gives no window (counted, never a made-up ratio). ``perfquery --vlxmitcounters`` reads
the per-VL wait counters where the port answers (one port per process: perfquery queries only the
first port of a list in that mode).

A window is the time between two reads of one port (each read timed at the middle of its
process). Per port the task keeps: the highest window ratio since the last sweep (published by the
sweep as a gauge, then restarted: two Prometheus replicas scraping between sweeps see the same
value), a histogram of window ratios and a count of bursts (runs of windows at or above
``focus_burst_threshold``), both since the port joined the set. The sweep's poll publishes them:
this module never touches the snapshot store.

``select_focus``, ``window_ratio``, ``PortWindows`` and ``focus_samples`` are pure (no I/O, no clock).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from dataclasses import dataclass, field

from ...catalog import infiniband as ib_catalog
from ...catalog.infiniband import FOCUS_RATIO_BUCKETS, XMIT_WAIT
from ...errors import ParseError, PollError
from ...parsers import ib_perfquery
from ...parsers.ib_common import SPEEDS, WIDTH_LANES
from ...parsers.skipped import MAX_KEPT, SkippedLine
from ...samples import Sample, histogram_samples, le_labels
from .join import PortKey, SweptPort
from .state import FabricState, link_up

log = logging.getLogger("fabric_exporter.infiniband.focus")

_ALL_ONES_32 = (1 << 32) - 1
# The per-VL wait counter as the catalog declares it: raw name prefix (PortVLXmitWait<vl>) and width.
_VL_RAW = next(raw for spec in ib_catalog.METRICS for raw in spec.raw if raw.source == ib_catalog.VL_XMIT_WAIT)
_XMIT_WAIT = XMIT_WAIT.name  # the stall counter the focus set reads
_VL_LATCHED = (1 << _VL_RAW.width) - 1
_LE = le_labels(FOCUS_RATIO_BUCKETS)
READ_RESULTS = ("ok", "failed", "latched")


@dataclass
class FocusPort:
    """One port of the focus set, with what the task needs to read it and turn ticks into a ratio."""

    key: PortKey
    lid: int
    rate: float  # effective link rate, bytes/s
    wait_factor: int  # Tick+1 where the node's PortSamplesControl.Tick is known, else 1
    reason: str  # "top" | "configured"


@dataclass
class PortWindows:
    """A focus port's windows: the last read, the peak since the sweep, the histogram, the bursts."""

    last: tuple[int, float] | None = None  # (PortXmitWait, read time)
    peak: float | None = None  # highest window ratio since the last sweep
    buckets: list[int] = field(default_factory=lambda: [0] * len(FOCUS_RATIO_BUCKETS))  # cumulative
    count: int = 0
    total: float = 0.0
    bursts: int = 0
    in_burst: bool = False
    vl: dict[int, int] = field(default_factory=dict)  # VL -> PortVLXmitWait (latest unlatched read)

    def read(self, value: int, at: float, port: FocusPort, threshold: float) -> float | None:
        """Take one read; the window it closes, as a ratio (None: no window)."""
        last, self.last = self.last, (value, at)
        if last is None:
            return None
        ratio = window_ratio(last[0], last[1], value, at, port.rate, port.wait_factor)
        if ratio is not None:
            self.add(ratio, threshold)
        return ratio

    def add(self, ratio: float, threshold: float) -> None:
        self.peak = ratio if self.peak is None else max(self.peak, ratio)
        for i, bound in enumerate(FOCUS_RATIO_BUCKETS):
            if ratio <= bound:
                self.buckets[i] += 1
        self.count += 1
        self.total += ratio
        if ratio >= threshold:
            if not self.in_burst:
                self.bursts += 1
            self.in_burst = True
        else:
            self.in_burst = False


def window_ratio(before: int, t_before: float, after: int, t_after: float, rate: float,
                 wait_factor: int) -> float | None:
    """Stall ratio of one window: ticks x (Tick+1) over the bytes the link could have sent.
    None when there is no honest answer: no time passed, the counter went back (a reset), or the
    link has no rate (down)."""
    seconds = t_after - t_before
    if seconds <= 0 or after < before or rate <= 0:
        return None
    return min(1.0, (after - before) * wait_factor / (rate * seconds))


def port_rate(p: SweptPort) -> float:
    """Effective link rate in bytes/s (0 when down), as fabric_ib_port_rate_bytes_per_second."""
    link = p.entry.link
    if not link_up(link) or not link.speed or link.speed not in SPEEDS:
        return 0.0
    return WIDTH_LANES.get(link.width, 0) * SPEEDS[link.speed][1] * 1e9 / 8


def sweep_waits(ports: dict[PortKey, SweptPort]) -> dict[PortKey, int]:
    """PortXmitWait per port from the error sweep, where known and not latched at 32 bits."""
    out = {}
    for key, p in ports.items():
        if p.errors is None:
            continue
        value = p.errors.get(_XMIT_WAIT, 0)
        if value == _ALL_ONES_32 and _XMIT_WAIT not in p.errors_extended:
            continue  # latched: no rate until it is reset
        out[key] = value
    return out


def select_focus(ports: dict[PortKey, SweptPort], waits: dict[PortKey, int], previous: dict[PortKey, int],
                 seconds: float | None, state: FabricState, top_k: int,
                 configured: tuple[tuple[str, int], ...]) -> dict[PortKey, FocusPort]:
    """The focus set for the coming sweep interval: the ``top_k`` ports with the highest stall ratio
    between the previous sweep and this one (ratio above 0 only), then the configured ports."""
    chosen: dict[PortKey, FocusPort] = {}

    def focus_port(key: PortKey, reason: str) -> FocusPort | None:
        p = ports.get(key)
        if p is None or p.entry.link is None or not p.entry.link.lid or port_rate(p) <= 0:
            return None  # down or not addressable: nothing to read
        return FocusPort(key, p.entry.link.lid, port_rate(p), state.ticks.get(key[0], 0) + 1, reason)

    if top_k and seconds is not None and seconds > 0:
        ranked = []
        for key, value in waits.items():
            before = previous.get(key)
            fp = focus_port(key, "top") if before is not None and value > before else None
            if fp is not None:
                ratio = window_ratio(before, 0.0, value, seconds, fp.rate, fp.wait_factor)
                if ratio:
                    ranked.append((-ratio, key, fp))
        ranked.sort()
        for _ratio, key, fp in ranked[:top_k]:
            chosen[key] = fp
    if configured:
        by_name: dict[str, list[int]] = {}
        for guid in {g for g, _port in ports}:
            by_name.setdefault(state.node_name(guid), []).append(guid)
        for node, port in configured:
            guids = [int(node, 16)] if node.lower().startswith("0x") and _is_hex(node[2:]) else by_name.get(node, [])
            for guid in guids:
                if (guid, port) not in chosen:
                    fp = focus_port((guid, port), "configured")
                    if fp is not None:
                        chosen[(guid, port)] = fp
    return chosen


def _is_hex(text: str) -> bool:
    return bool(text) and all(c in "0123456789abcdefABCDEF" for c in text)


def read_args(basic: bool, lid: int, ports: list[int]) -> list[str]:
    """perfquery's arguments for one node's focus ports: -x unless the node lacks the extended
    PortXmitWait, -l with a port list when there are several."""
    return ([] if basic else ["-x"]) + (["-l"] if len(ports) > 1 else []) + [str(lid), ",".join(map(str, ports))]


def vl_read_args(lid: int, port: int) -> list[str]:
    """One port's PortVLXmitWaitCounters (perfquery reads only the first port of a list in this mode)."""
    return ["--vlxmitcounters", str(lid), str(port)]


def vl_xmit_wait(block: ib_perfquery.PerfBlock) -> dict[int, int]:
    """VL -> PortVLXmitWait<vl> of a PortVLXmitWaitCounters block."""
    out = {}
    prefix = _VL_RAW.name
    for name, value in block.values.items():
        vl = name[len(prefix):]
        # VLs are 0-15: a longer or non-ASCII suffix is no VL (int() refuses a 5,000-digit one and "²")
        if name.startswith(prefix) and len(vl) <= 2 and vl.isascii() and vl.isdigit() and int(vl) <= 15:
            out[int(vl)] = value
    return out


@dataclass
class FocusState:
    """What the focus task and the sweeps share (one event loop: no locks)."""

    ports: dict[PortKey, FocusPort] = field(default_factory=dict)
    windows: dict[PortKey, PortWindows] = field(default_factory=dict)
    basic_nodes: set[int] = field(default_factory=set)  # nodes whose -x lacks PortXmitWait
    vl_unsupported: set[PortKey] = field(default_factory=set)
    reads: collections.Counter = field(default_factory=collections.Counter)
    late_rounds: int = 0
    skipped: list[SkippedLine] = field(default_factory=list)  # handed to the next poll
    sweep_waits: dict[PortKey, int] = field(default_factory=dict)  # the previous sweep's PortXmitWait
    sweep_at: float | None = None
    vl_due: bool = True  # read the per-VL counters in the next round (once per sweep: they are published then)
    # Set while no sweep runs; the task's reads wait for it (focus_yield_to_sweep). Made by the task,
    # in its own loop.
    sweep_idle: asyncio.Event | None = None
    sweeping: bool = False

    def sweep_started(self) -> None:
        self.sweeping = True
        if self.sweep_idle is not None:
            self.sweep_idle.clear()

    def sweep_done(self) -> None:
        self.sweeping = False
        if self.sweep_idle is not None:
            self.sweep_idle.set()

    def apply(self, chosen: dict[PortKey, FocusPort]) -> None:
        """Switch to a new focus set: a port that stays keeps its windows, one that leaves forgets them."""
        self.ports = chosen
        for key in [k for k in self.windows if k not in chosen]:
            del self.windows[key]
        for key in chosen:
            self.windows.setdefault(key, PortWindows())
        self.vl_unsupported &= chosen.keys()
        self.vl_due = True


def focus_samples(focus: FocusState, port_static: dict) -> list[Sample]:
    """The windows of the focus set read since the previous sweep; restarts each port's peak (the
    windows from now on make the next sweep's). ``port_static``: the sweep's per-port memo
    (mapping.PortMemo), which holds the port's labels."""
    out: list[Sample] = []
    for key in sorted(focus.ports):
        memo = port_static.get(key)
        if memo is None:
            continue  # not in this sweep: no labels, no series
        labels, w = memo.labels, focus.windows[key]
        if w.peak is not None:
            out.append(Sample("fabric_ib_port_focus_xmit_wait_peak_ratio", labels, w.peak))
            w.peak = None
        out += histogram_samples("fabric_ib_port_focus_xmit_wait_ratio", labels, _LE, map(float, w.buckets),
                                 float(w.count), w.total)
        out.append(Sample("fabric_ib_port_bursts_total", labels, float(w.bursts)))
        for vl, value in sorted(w.vl.items()):
            out.append(Sample("fabric_ib_port_vl_transmit_wait_total", {**labels, "vl": str(vl)}, float(value)))
    for result in READ_RESULTS:
        out.append(Sample("fabric_ib_focus_reads_total", {"result": result}, float(focus.reads[result])))
    out.append(Sample("fabric_ib_focus_rounds_late_total", {}, float(focus.late_rounds)))
    return out


def focus_info_samples(focus: FocusState, port_static: dict) -> list[Sample]:
    """Which ports the focus task reads from now on, and why."""
    return [Sample("fabric_ib_port_focus_info", {**port_static[key].labels, "reason": fp.reason}, 1.0)
            for key, fp in sorted(focus.ports.items()) if key in port_static]


class FocusTask:
    """Reads the focus set every ``focus_interval`` until cancelled (the collector's close())."""

    def __init__(self, tools, focus: FocusState):
        self.tools = tools  # tools.IbTools
        self.focus = focus
        self.options = tools.options

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        interval = self.options.focus_interval
        self.focus.sweep_idle = idle = asyncio.Event()  # this task's loop's
        if not self.focus.sweeping:
            idle.set()
        tick = loop.time()
        while True:
            try:
                await self.round()
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug here must not end the focus reads for good
                log.exception("focus round crashed")
            tick += interval
            now = loop.time()
            if now > tick:
                # The round overran its interval: count it and start again from now (no burst of
                # catch-up rounds).
                self.focus.late_rounds += 1
                tick = now
            await asyncio.sleep(tick - now)

    async def round(self) -> None:
        focus = self.focus
        by_node: dict[int, list[FocusPort]] = {}
        for fp in focus.ports.values():
            by_node.setdefault(fp.key[0], []).append(fp)
        sem = asyncio.Semaphore(self.options.focus_concurrency)
        jobs = [self._read_node(guid, sorted(fps, key=lambda f: f.key[1]), sem) for guid, fps in by_node.items()]
        if self.options.focus_vl_xmit_wait and focus.vl_due:
            # Counters, published only at the sweep: one read per sweep interval is all they need.
            focus.vl_due = False
            jobs += [self._read_vl(fp, sem) for fp in focus.ports.values() if fp.key not in focus.vl_unsupported]
        if jobs:
            await asyncio.gather(*jobs)

    async def _run(self, argv: list[str], sem: asyncio.Semaphore) -> tuple[bool, str, float]:
        """(succeeded, stdout, the middle of the run in loop time). perfquery prints its
        ``iberror`` on stdout, so a failed run's stdout says why."""
        loop = asyncio.get_running_loop()
        async with sem:
            idle = self.focus.sweep_idle
            if self.options.focus_yield_to_sweep and idle is not None:
                # Checked holding the slot, right before the process starts: the sweep keeps its
                # speed, and the window across it is that much longer.
                await idle.wait()
            started = loop.time()
            try:
                result = await self.tools.runner().run(argv, timeout=max(1.0, self.options.focus_interval))
            except PollError as e:
                log.debug("focus read failed: %s", e)
                return False, "", started
            middle = (started + loop.time()) / 2
        ok = result.exit_status == 0 and bool(result.stdout.strip())
        if not ok:
            log.debug("focus read failed: %s", result.describe_failure())
        return ok, result.stdout, middle

    def _parse(self, text: str) -> list[ib_perfquery.PerfBlock] | None:
        skipped: list[SkippedLine] = []
        try:
            blocks = ib_perfquery.parse(text, skipped=skipped)
        except ParseError as e:
            log.debug("focus read unparsable: %s", e)
            return None
        finally:
            room = MAX_KEPT - len(self.focus.skipped)
            if room > 0:
                self.focus.skipped += skipped[:room]
        return blocks

    async def _read_node(self, guid: int, fps: list[FocusPort], sem: asyncio.Semaphore) -> None:
        focus, opts = self.focus, self.options
        basic = guid in focus.basic_nodes
        ok, text, at = await self._run(self.tools.argv("perfquery", *read_args(basic, fps[0].lid,
                                                                                [fp.key[1] for fp in fps])), sem)
        blocks = self._parse(text) if ok else None
        if blocks is None:
            focus.reads["failed"] += len(fps)
            return
        kind = "counters" if basic else "extended"
        found = {b.port: b for b in blocks if b.kind == kind}
        for fp in fps:
            w = focus.windows.get(fp.key)
            if w is None or focus.ports.get(fp.key) is not fp:
                continue  # the sweep changed the set while this read ran
            block = found.get(fp.key[1])
            value = block.values.get(_XMIT_WAIT) if block is not None else None
            if value is None:
                if block is not None and not basic:
                    # This device's extended counters lack PortXmitWait: read PortCounters from now on.
                    focus.basic_nodes.add(guid)
                focus.reads["failed"] += 1
                continue
            if basic and value == _ALL_ONES_32:
                focus.reads["latched"] += 1
                w.last = None  # the window after a reset starts from a fresh read
                continue
            focus.reads["ok"] += 1
            w.read(value, at, fp, opts.focus_burst_threshold)

    async def _read_vl(self, fp: FocusPort, sem: asyncio.Semaphore) -> None:
        focus = self.focus
        ok, text, _at = await self._run(self.tools.argv("perfquery", *vl_read_args(fp.lid, fp.key[1])), sem)
        if not ok and "cannot query PortVLXmitWaitCounters" in text:
            focus.vl_unsupported.add(fp.key)  # the port does not have it: do not ask again
            return
        blocks = self._parse(text) if ok else None
        w = focus.windows.get(fp.key)
        if w is None:
            return
        vl_blocks = [b for b in blocks or () if b.kind == "vl_xmit_wait" and b.port == fp.key[1]]
        if not vl_blocks:
            focus.reads["failed"] += 1
            return
        focus.reads["ok"] += 1
        for vl, value in vl_xmit_wait(vl_blocks[0]).items():
            if value == _VL_LATCHED:
                w.vl.pop(vl, None)  # latched: withheld until reset
            else:
                w.vl[vl] = value


__all__ = ["FocusPort", "FocusState", "FocusTask", "PortWindows", "focus_info_samples", "focus_samples", "port_rate",
           "read_args", "select_focus", "sweep_waits", "vl_read_args", "vl_xmit_wait", "window_ratio"]
