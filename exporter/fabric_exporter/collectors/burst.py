"""The host burst sampler of the roce_nic collector (option ``burst:``): what a 30 s rate hides.

Every ``window`` (>= 10 ms: the kernel caches RDMA hw_counters for 10 ms) the sampler reads the
lossless priority's PFC pause time, pause frames, ECN-marked packets, CNPs sent and discards of
each port and turns each window's delta into a value: a fraction of the window (pause time) or a
rate per second (counted signals). The collector's poll publishes, per port and signal:

- ``fabric_roce_nic_burst_peak_ratio``: the highest windowed value among the windows that ended
  since the previous poll (the "last scrape interval" is the collector's poll interval). It is
  not reset when read, so two Prometheus replicas scraping the same exporter see the same value;
- ``fabric_roce_nic_burst_window_ratio``: a histogram of every window's value (aggregatable);
- ``fabric_roce_nic_bursts_total`` / ``fabric_roce_nic_burst_seconds_total``: bursts (maximal runs
  of windows at or above the signal's threshold), counted when they start, and their durations,
  added window by window.

Where the counters are read: ``burst_probe.py`` (the same code locally, in-process, and over SSH
as one long-lived ``python3`` channel streaming compact deltas). Counts are conserved: the probe
never drops a delta (a late tick makes a longer window), and a counter that goes down counts from
zero, so the windows' deltas sum to the counter's change between two polls, across resets.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from ..bounds import Range
from ..catalog import CATALOG
from ..catalog.roce_nic_burst import BURST_BUCKETS
from ..errors import ConnectError, ParseError, PollError
from ..parsers import burst_stream
from ..samples import Sample, histogram_samples, le_labels
from . import burst_probe
from .options import OptionReader

log = logging.getLogger("fabric_exporter.burst")

#: the window's bounds: 10 ms is the kernel's hw_counters lifespan (RDMA_HW_STATS_DEFAULT_LIFESPAN);
#: a window of 10 s is no longer a burst view
WINDOW = Range(0.01, 10.0, "s")

#: one bucket set for fractions (<= 1) and rates (packets per second): the catalog's histogram has one
BUCKETS = BURST_BUCKETS
_BUCKET_LE = le_labels(BUCKETS)

#: tick lateness buckets (seconds) of fabric_burst_sampler_tick_lateness_seconds
LATENESS_BUCKETS = CATALOG["fabric_burst_sampler_tick_lateness_seconds"].buckets
_LATENESS_LE = le_labels(LATENESS_BUCKETS)

PROBE_SOURCE = Path(burst_probe.__file__).read_text()


@dataclass(frozen=True)
class Signal:
    """A sampled signal: which catalog metrics (in preference order, with or without the priority
    label) name its raw counter, and its default burst threshold (a fraction or a rate per second)."""

    name: str
    metrics: tuple[tuple[str, bool], ...]  # (metric, per priority)
    fraction: bool
    threshold: float


SIGNALS = {s.name: s for s in (
    Signal("pfc_rx_pause_time", (("fabric_roce_nic_pfc_rx_pause_seconds_total", True),), True, 0.5),
    Signal("pfc_tx_pause_time", (("fabric_roce_nic_pfc_tx_pause_seconds_total", True),), True, 0.5),
    Signal("pfc_rx_pause", (("fabric_roce_pfc_rx_pause_frames_total", True),), False, 1000.0),
    Signal("pfc_tx_pause", (("fabric_roce_pfc_tx_pause_frames_total", True),), False, 1000.0),
    Signal("ecn_marked", (("fabric_roce_ecn_marked_packets_total", False),), False, 10000.0),
    Signal("cnp_sent", (("fabric_roce_nic_cnp_sent_total", False),), False, 1000.0),
    Signal("rx_discards", (("fabric_roce_nic_priority_rx_discards_total", True),
                           ("fabric_roce_rx_discards_total", False)), False, 1.0),
)}
DEFAULT_SIGNALS = ("pfc_rx_pause_time", "pfc_tx_pause_time", "pfc_rx_pause", "ecn_marked", "cnp_sent",
                   "rx_discards")


@dataclass(frozen=True)
class BurstOptions:
    window: float = 0.1
    signals: tuple[str, ...] = DEFAULT_SIGNALS
    priority: int = 3  # the lossless priority
    thresholds: tuple[tuple[str, float], ...] = ()  # signal -> threshold, overriding the defaults
    sysfs_root: str = "/sys"  # local transport: where the host's sysfs is (a pod: e.g. /host/sys)
    ethtool_stats_dir: str | None = None  # lab/tests: ethtool -S text files instead of the ioctl

    def threshold(self, signal: str) -> float:
        return dict(self.thresholds).get(signal, SIGNALS[signal].threshold)


def parse_burst_options(raw: dict, path: str, err, base_dir: Path) -> BurstOptions:
    r = OptionReader(raw, path, err, base_dir)
    window = r.duration("window", 0.1, within=WINDOW)
    signals = r.string_list("signals", DEFAULT_SIGNALS, choices=tuple(SIGNALS))
    priority = r.integer("priority", 3, minimum=0, maximum=7)
    raw_thresholds = r.mapping("thresholds") or {}
    t = OptionReader(raw_thresholds, f"{path}.thresholds", err, base_dir)
    values = {s: t.number(s, SIGNALS[s].threshold, minimum=1e-9) for s in SIGNALS}
    thresholds = tuple((s, values[s]) for s in SIGNALS if s in raw_thresholds)
    t.done()
    sysfs_root = r.string("sysfs_root", "/sys") or "/sys"
    ethtool_dir = r.path("ethtool_stats_dir", must_exist=False, directory=True)
    r.done()
    if not signals:
        err(f"{path}.signals", "name at least one signal")
    return BurstOptions(window or 0.1, tuple(dict.fromkeys(signals)) or DEFAULT_SIGNALS, priority, thresholds,
                        sysfs_root, ethtool_dir)


# ---------------------------------------------------------------------------------------------
# Which raw counter feeds each (port, signal)


@dataclass(frozen=True)
class Column:
    """One counter the probe reads: ``probe`` is its probe column (hw/DEV/PORT/NAME, eth/NETDEV/NAME)."""

    probe: str
    labels: tuple[tuple[str, str], ...]  # host, device, port, netdev, signal
    scale: float  # raw unit -> the signal's unit (microseconds -> seconds for pause time)
    threshold: float
    fraction: bool = False  # a time counter: its windowed value is a fraction of the window, at most 1


def plan_columns(ports, host: str, options: BurstOptions, hw_mapper, eth_mapper, family_of) -> list[Column]:
    """The columns for ``ports`` (roce_nic PortData of a poll): per port and signal, the raw counter
    the regular poll maps onto the signal's metric for the lossless priority (the same mapping
    table, so the sampler reads exactly what the 30 s series count)."""
    priority = (("priority", str(options.priority)),)
    columns = []
    for p in ports:
        family = family_of(p.driver, p.device)
        found: dict[tuple[str, tuple], tuple[str, str, float]] = {}
        for source, table, mapper in (("hw", p.hw_counters, hw_mapper),
                                      ("eth", p.ethtool.counters if p.ethtool else None, eth_mapper)):
            if not table:
                continue
            steps, _ = mapper.plan(tuple(table), family)
            for name, metric, extra, scale in steps:
                found[(metric, tuple(extra))] = (source, name, scale)
        for signal in options.signals:
            for metric, per_priority in SIGNALS[signal].metrics:
                hit = found.get((metric, priority if per_priority else ()))
                if hit is None:
                    continue
                source, name, scale = hit
                probe = f"hw/{p.device}/{p.port}/{name}" if source == "hw" else f"eth/{p.netdev}/{name}"
                if source == "eth" and not p.netdev:
                    continue
                labels = (("host", host), ("device", p.device), ("port", str(p.port)), ("netdev", p.netdev or ""),
                          ("signal", signal))
                columns.append(Column(probe, labels, scale, options.threshold(signal), SIGNALS[signal].fraction))
                break
    return columns


# ---------------------------------------------------------------------------------------------
# Windows -> peaks, histograms, bursts (pure: no I/O, the caller passes the clock)


class _Series:
    __slots__ = ("column", "peak", "nonzero", "buckets", "sum", "bursts", "burst_seconds", "total", "in_burst",
                 "burst_start", "burst_peak")

    def __init__(self, column: Column):
        self.column = column
        self.peak = 0.0  # since the last take()
        self.nonzero = 0  # windows with a non-zero delta
        self.buckets = [0] * len(BUCKETS)  # non-zero windows per bucket (not cumulative)
        self.sum = 0.0
        self.bursts = 0
        self.burst_seconds = 0.0
        self.total = 0  # raw deltas summed (conservation)
        self.in_burst = False
        self.burst_start = 0.0
        self.burst_peak = 0.0


@dataclass
class Burst:
    """One burst as the sampler saw it (kept for tests and benches; bounded)."""

    signal_labels: tuple[tuple[str, str], ...]
    start: float  # monotonic: start of its first window
    end: float  # monotonic: end of its last window
    peak: float


class BurstAccumulator:
    """Everything the sampler publishes, fed one window at a time."""

    def __init__(self, columns: list[Column] = ()):
        self.series: dict[str, _Series] = {}
        self.index: list[_Series] = []
        self.windows = 0  # windows in total (zero-delta windows are windows - nonzero per series)
        self.windows_since_take = 0
        self.ticks = 0
        self.missed = 0
        self.lateness_buckets = [0] * len(LATENESS_BUCKETS)
        self.lateness_sum = 0.0
        self.lateness_count = 0
        self.events: collections.deque[Burst] = collections.deque(maxlen=10_000)
        self._burning: dict[int, _Series] = {}  # index -> series in a burst
        self.set_columns(list(columns))

    def set_columns(self, columns: list[Column]) -> None:
        """The probe's columns, in its order; series of columns seen before keep their counts."""
        for s in self._burning.values():
            self._end_burst(s, time.monotonic())
        self._burning = {}
        self.index = []
        for c in columns:
            s = self.series.get(c.probe)
            if s is None or s.column != c:  # new, or the same counter under new labels: start afresh
                s = self.series[c.probe] = _Series(c)
            self.index.append(s)

    def window(self, elapsed: float, deltas: dict[int, int], now: float, missed: int = 0,
               lateness: float = 0.0) -> None:
        """One window of ``elapsed`` seconds ending at ``now`` (monotonic) with raw ``deltas`` per column."""
        self.ticks += 1
        self.missed += missed
        lateness = max(0.0, lateness)
        self.lateness_sum += lateness
        self.lateness_count += 1
        for k, le in enumerate(LATENESS_BUCKETS):
            if lateness <= le:
                self.lateness_buckets[k] += 1
                break
        if elapsed <= 0:
            return
        self.windows += 1
        self.windows_since_take += 1
        index = self.index
        start = now - elapsed
        for i, delta in deltas.items():
            if i >= len(index):
                continue
            s = index[i]
            s.total += delta
            value = delta * s.column.scale / elapsed
            if s.column.fraction and value > 1.0:
                # a time counter the NIC updates every few ms (or a lagging reader clock) can put a
                # moment of one window's pause into the next: a window is at most 100 % paused
                value = 1.0
            s.nonzero += 1
            s.sum += value
            for k, le in enumerate(BUCKETS):
                if value <= le:
                    s.buckets[k] += 1
                    break
            if value > s.peak:
                s.peak = value
            if value >= s.column.threshold:
                if not s.in_burst:
                    s.in_burst = True
                    s.bursts += 1
                    s.burst_start = start
                    s.burst_peak = 0.0
                    self._burning[i] = s
                s.burst_seconds += elapsed
                if value > s.burst_peak:
                    s.burst_peak = value
            elif s.in_burst:
                self._end_burst(self._burning.pop(i), start)
        for i in [i for i in self._burning if i not in deltas]:
            self._end_burst(self._burning.pop(i), start)

    def _end_burst(self, s: _Series, end: float) -> None:
        s.in_burst = False
        self.events.append(Burst(s.column.labels, s.burst_start, end, s.burst_peak))

    def take_peaks(self) -> dict[str, float] | None:
        """Each series' peak over the windows since the last call (None if no window ended since),
        and start the next interval."""
        if self.windows_since_take == 0:
            return None
        peaks = {key: s.peak for key, s in self.series.items()}
        for s in self.series.values():
            s.peak = 0.0
        self.windows_since_take = 0
        return peaks

    def totals(self) -> dict[str, int]:
        return {key: s.total for key, s in self.series.items()}

    def samples(self, peaks: dict[str, float] | None, target: dict[str, str]) -> list[Sample]:
        out: list[Sample] = []
        for key, s in self.series.items():
            labels = dict(s.column.labels)
            if peaks is not None and key in peaks:
                out.append(Sample("fabric_roce_nic_burst_peak_ratio", labels, peaks[key]))
            zero = self.windows - s.nonzero  # windows at 0: in every bucket, though not in s.buckets
            out += histogram_samples("fabric_roce_nic_burst_window_ratio", labels, _BUCKET_LE,
                                     (zero + n for n in itertools.accumulate(s.buckets)), self.windows, s.sum)
            out.append(Sample("fabric_roce_nic_bursts_total", labels, s.bursts))
            out.append(Sample("fabric_roce_nic_burst_seconds_total", labels, s.burst_seconds))
        t = dict(target)
        out.append(Sample("fabric_burst_sampler_ticks_total", t, self.ticks))
        out.append(Sample("fabric_burst_sampler_missed_ticks_total", t, self.missed))
        out += histogram_samples("fabric_burst_sampler_tick_lateness_seconds", t, _LATENESS_LE,
                                 itertools.accumulate(self.lateness_buckets), self.lateness_count, self.lateness_sum)
        return out


# ---------------------------------------------------------------------------------------------
# Runners: the tick loop locally, the stream over SSH


class _Runner:
    """What the collector sees of a sampler: its columns, the columns it cannot read (``missing``), why
    it stopped (``error``), and its task."""

    def __init__(self, columns: list[Column], options: BurstOptions, acc: BurstAccumulator):
        self.columns = columns
        self.options = options
        self.acc = acc
        self.missing: dict[int, str] = {}
        self.error: str | None = None
        self.task: asyncio.Task | None = None

    def done(self) -> bool:
        return self.task is None or self.task.done()

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            try:
                await self.task
            except (asyncio.CancelledError, Exception):
                pass


class LocalRunner(_Runner):
    """Ticks in the exporter's own event loop at absolute deadlines, reading through ``burst_probe.Probe``."""

    def start(self) -> None:
        probe = burst_probe.Probe([c.probe for c in self.columns], sysfs=self.options.sysfs_root,
                                  ethtool_dir=self.options.ethtool_stats_dir)
        self.missing = dict(probe.missing)
        self.acc.set_columns(self.columns)
        self.task = asyncio.get_running_loop().create_task(self._run(probe), name="burst-sampler")

    async def _run(self, probe) -> None:
        loop = asyncio.get_running_loop()
        window = self.options.window
        next_tick = loop.time() + window
        try:
            while True:
                delay = next_tick - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                late = loop.time() - next_tick
                skipped = int(late // window) if late > 0 else 0
                next_tick += (1 + skipped) * window
                elapsed, deltas = probe.sample()
                self.acc.window(elapsed, deltas, time.monotonic(), skipped, late)
        except OSError as e:  # a device went away: restarted by the next poll
            self.error = f"burst sampler: {e.strerror or e}"
        except ValueError as e:  # a counter file that does not hold a number
            self.error = f"burst sampler: unreadable counter: {str(e)[:100]}"
        except Exception as e:  # never let the sampler's task die silently
            self.error = f"burst sampler: {type(e).__name__}: {e}"
            log.exception("burst sampler crashed")
        finally:
            probe.close()

#: the longest line the remote probe may send (a window with every column non-zero is ~30 B/column)
MAX_LINE = 1 << 20


class StreamRunner(_Runner):
    """One long-lived SSH channel running ``burst_probe`` remotely; each line it streams is a window."""

    def __init__(self, columns: list[Column], options: BurstOptions, acc: BurstAccumulator, connection,
                 connect_timeout: float):
        super().__init__(columns, options, acc)
        self.connection = connection
        self.connect_timeout = connect_timeout
        self._stream = None

    def argv(self) -> list[str]:
        return command(self.columns, self.options)

    def start(self) -> None:
        self.acc.set_columns(self.columns)
        self.task = asyncio.get_running_loop().create_task(self._run(), name="burst-stream")

    async def _run(self) -> None:
        try:
            self._stream = await self.connection.open_stream(self.argv(), timeout=self.connect_timeout)
            buf = b""
            last_seq = 0
            header = False
            window = origin = 0.0
            while True:
                chunk = await self._stream.read(1 << 16)
                if not chunk:
                    raise ConnectError(f"burst stream ended{self._stream.describe_end()}")
                buf += chunk
                if len(buf) > MAX_LINE and b"\n" not in buf:
                    raise PollError(f"burst stream: a line longer than {MAX_LINE} bytes", reason="parse")
                *lines, buf = buf.split(b"\n")
                for raw in lines:
                    line = raw.decode(errors="replace")
                    if not header:
                        window, origin = check_header(line, len(self.columns))
                        header = True
                        continue
                    kind = line[:2]
                    if kind == "w ":
                        seq, elapsed, late, deltas = burst_stream.parse_window(line, len(self.columns))
                        missed = max(0, seq - last_seq - 1) if last_seq else 0
                        last_seq = seq
                        # events are timed on the host's clock (when the window was read there), not
                        # when its line arrived here; nothing published depends on it
                        self.acc.window(elapsed, deltas, origin + seq * window + late, missed, late)
                    elif kind == "m ":
                        i, _, reason = line[2:].partition(" ")
                        if i.isdigit():
                            self.missing[int(i)] = reason
                    elif line.startswith("@@error"):
                        raise PollError(f"burst probe: {line[8:][:200]}", reason="command_failed")
                    else:
                        raise PollError(f"burst stream: unexpected line {line[:80]!r}", reason="parse")
        except (PollError, ParseError) as e:
            self.error = f"burst sampler: {e}"
        except asyncio.CancelledError:
            raise
        except Exception as e:  # never let the sampler's task die silently
            self.error = f"burst sampler: {type(e).__name__}: {e}"
        finally:
            if self._stream is not None:
                self._stream.close()


def command(columns: list[Column], options: BurstOptions) -> list[str]:
    """The remote command: ``python3 -c <probe source> fabric-burst WINDOW_MS COLUMN...``."""
    lab = ["--ethtool-dir", options.ethtool_stats_dir] if options.ethtool_stats_dir else []
    return ["python3", "-c", PROBE_SOURCE, "fabric-burst", str(round(options.window * 1000)), *lab,
            *[c.probe for c in columns]]


def check_header(line: str, ncolumns: int) -> tuple[float, float]:
    """The stream's first line must name as many columns as the command asked for; returns the
    window and the host clock's origin (seconds)."""
    window_us, columns, origin_us = burst_stream.parse_header(line)
    if columns != ncolumns:
        raise ParseError(f"burst stream: {columns} columns, expected {ncolumns}")
    return window_us / 1e6, origin_us / 1e6


__all__ = ["BUCKETS", "Burst", "BurstAccumulator", "BurstOptions", "Column", "LocalRunner", "SIGNALS",
           "StreamRunner", "command", "parse_burst_options", "plan_columns"]
