"""The exporter's own metrics, rendered when a target's state changes (a poll lands, a target is
added), never at scrape time.

Each target keeps its self-metric lines in two variants: one for while its snapshot is fresh and
one for after ``stale_after`` (``fabric_up 0``, ``fabric_samples 0``, ``fabric_target_stale 1``), so
a scrape only picks a variant per target and joins cached bytes. The lines shown are kept also as
raw deflate pieces, each compressed against the line before it (gzipstream.py), so a gzip scrape
joins too and its body is one gzip stream.
The output is byte-identical to prometheus_client's for the same state (tests/unit/serving/test_selfmetrics.py checks it).
"""

from __future__ import annotations

import bisect
import collections
import math
import platform
import time
import zlib
from dataclasses import dataclass

from .. import __version__
from ..catalog import CATALOG
from ..errors import REASONS
from ..looplag import FAMILY as LOOP_LAG_FAMILY, LoopLag
from .exposition import family_header, render_chunks
from .gzipstream import MemberCache, Segment, deflate_piece
from ..transport.snmp_dropped import DROPPED as SNMP_DROPPED

# Per-target families, in the order they are exposed.
TARGET_FAMILIES = (
    "fabric_up", "fabric_poll_duration_seconds", "fabric_last_poll_timestamp_seconds",
    "fabric_last_success_timestamp_seconds", "fabric_polls_total", "fabric_poll_errors_total", "fabric_samples",
    "fabric_poll_interval_seconds", "fabric_poll_backoff_seconds", "fabric_target_stale",
    "fabric_parse_skipped_lines_total",
)
# Families whose value depends on whether the target's snapshot is still fresh.
_FRESHNESS_FAMILIES = ("fabric_up", "fabric_samples", "fabric_target_stale")
_STILL_FAMILIES = ("fabric_snmp_datagrams_dropped_total", "fabric_targets", "fabric_build_info",
                   "fabric_config_last_reload_successful", "fabric_config_last_reload_success_timestamp_seconds")
GLOBAL_FAMILIES = _STILL_FAMILIES + (LOOP_LAG_FAMILY,)


class ReloadStatus:
    def __init__(self) -> None:
        self.successful = False
        self.last_success: float = 0.0

    def record(self, ok: bool) -> None:
        self.successful = ok
        if ok:
            self.last_success = time.time()


@dataclass(frozen=True, slots=True)
class _TargetLines:
    collector: str
    fresh_until: float  # monotonic; the stale variant applies after it
    fresh_plain: tuple[bytes, ...]  # one entry per TARGET_FAMILIES (b"" when the target has no line)
    stale_plain: tuple[bytes, ...]


def _target_samples(state, fresh: bool, families: tuple[str, ...]):
    labels = {"group": state.group, "host": state.host, "collector": state.collector, "fabric": state.fabric}
    values: dict[str, list[tuple[dict, float]]] = {
        "fabric_up": [(labels, 1.0 if fresh and state.state in ("ok", "partial") else 0.0)],
        "fabric_samples": [(labels, state.samples if fresh else 0)],
        "fabric_target_stale": [(labels, 0.0 if fresh or not state.tried else 1.0)],
    }
    if len(families) > len(_FRESHNESS_FAMILIES):
        values.update({
            "fabric_poll_duration_seconds": [] if state.last_duration is None else [(labels, state.last_duration)],
            "fabric_last_poll_timestamp_seconds":
                [] if state.last_duration is None else [(labels, state.last_poll_end)],
            "fabric_last_success_timestamp_seconds":
                [] if state.last_success is None else [(labels, state.last_success)],
            "fabric_polls_total": [(labels, state.polls)],
            # Every reason is published from the start, so rate() sees the first error.
            "fabric_poll_errors_total": [({**labels, "reason": r}, state.errors.get(r, 0)) for r in REASONS],
            "fabric_poll_interval_seconds": [(labels, state.interval)],
            "fabric_poll_backoff_seconds": [(labels, state.backoff)],
            "fabric_parse_skipped_lines_total":
                [({**labels, "source": source}, n) for source, n in sorted(state.skipped_lines.items())],
        })
    return [(family, lab, v) for family in families for lab, v in values[family]]


def _pieces(families: tuple[str, ...], samples: list) -> tuple[list[bytes], list[Segment]]:
    """Each family's HELP/TYPE and lines, as plain pieces and as gzip segments."""
    chunks = render_chunks(samples)
    pieces = [family_header(CATALOG[f]) + chunks.get(f, b"") for f in families]
    return pieces, [Segment(deflate_piece(p), zlib.crc32(p), len(p)) for p in pieces]


class SelfMetrics:
    """Per-target self-metric lines, updated by the scheduler; ``parts()`` serves them.

    Lines are kept per family as lists in target order (one slot per target), so a scrape extends
    its output by whole lists instead of visiting every target's every family. Beside each line,
    its deflate piece: compressed after the nearest line above it in the column (or the family's
    HELP/TYPE), again when that line changes."""

    def __init__(self, reload_status: ReloadStatus, loop_lag: LoopLag | None = None):
        self.reload = reload_status
        self.loop_lag = loop_lag  # the daemon's (None in a one-shot poll: no loop to watch)
        self._targets: dict[tuple[str, str], _TargetLines] = {}
        # family index -> HELP/TYPE (text, deflate piece)
        self._headers = [(text, deflate_piece(text)) for text in (family_header(CATALOG[f]) for f in TARGET_FAMILIES)]
        self._global_key: tuple | None = None
        self._global: tuple[list[bytes], list[Segment]] = ([], [])
        self._lag_key: tuple | None = ()  # never a LoopLag state, nor None (no LoopLag)
        self._lag: tuple[list[bytes], list[Segment]] = ([], [])
        # slot layout: rebuilt (None) when a target comes or goes
        self._slots: dict[tuple[str, str], int] | None = {}
        self._plain: list[list[bytes]] = [[] for _ in TARGET_FAMILIES]  # family index -> line per slot
        self._gz: list[list[bytes]] = [[] for _ in TARGET_FAMILIES]  # the line's deflate piece per slot
        # family index -> the slots with a line, sorted: the line above or below a slot is found by
        # bisection, not a walk over the empty slots of a sparse column (10k targets at start-up)
        self._filled: list[list[int]] = [[] for _ in TARGET_FAMILIES]
        self._keys: list[tuple[str, str]] = []  # slot -> target
        self._shown_fresh: list[bool] = []  # which variant each slot holds
        self._fresh_until: list[float] = []
        # family index -> its column joined (plain text, gzip segment), None once a slot changed: a
        # scrape of 10k targets then hands out ~17 pieces per variant, not one per target and family
        self._joined: list[list] = [[None, None] for _ in TARGET_FAMILIES]
        self._member = MemberCache()
        # the earliest deadline of a slot shown fresh: before it, no slot can need its stale variant
        self._next_crossing = -math.inf
        self._last_scrape = -math.inf  # a scrape at an earlier time (tests) walks the slots again
        # targets per collector (fabric_targets), recounted only when a target comes, goes or moves
        self._by_collector: tuple[tuple[str, int], ...] | None = None

    def target_changed(self, state, fresh_until: float | None) -> None:
        """Render ``state`` (a scheduler TargetState); ``fresh_until`` is its snapshot's deadline, if any."""
        fresh = render_chunks(_target_samples(state, True, TARGET_FAMILIES))
        stale = {**fresh, **render_chunks(_target_samples(state, False, _FRESHNESS_FAMILIES))}
        lines = _TargetLines(
            state.collector, -math.inf if fresh_until is None else fresh_until,
            tuple(fresh.get(f, b"") for f in TARGET_FAMILIES), tuple(stale.get(f, b"") for f in TARGET_FAMILIES))
        previous = self._targets.get(state.key)
        if previous is None or previous.collector != lines.collector:
            self._by_collector = None
        self._targets[state.key] = lines
        self._next_crossing = min(self._next_crossing, lines.fresh_until)
        slot = None if self._slots is None else self._slots.get(state.key)
        if slot is None:
            self._slots = None
        else:
            self._fill(slot, lines, fresh=True)
            self._fresh_until[slot] = lines.fresh_until

    def target_removed(self, key: tuple[str, str]) -> None:
        if self._targets.pop(key, None) is not None:
            self._slots = None
            self._by_collector = None

    def _fill(self, slot: int, lines: _TargetLines, fresh: bool, deflate: bool = True) -> None:
        """Show a variant of the target's lines in ``slot``; with ``deflate``, compress each changed
        line and the next line below it (its predecessor changed)."""
        plain = lines.fresh_plain if fresh else lines.stale_plain
        for i, text in enumerate(plain):
            column = self._plain[i]
            if column[slot] == text:
                continue
            column[slot] = text
            self._joined[i] = [None, None]
            filled = self._filled[i]
            at = bisect.bisect_left(filled, slot)
            listed = at < len(filled) and filled[at] == slot
            if text and not listed:
                filled.insert(at, slot)
            elif not text and listed:
                del filled[at]
            if deflate:
                gz = self._gz[i]
                preceding = column[filled[at - 1]] if at else self._headers[i][0]
                gz[slot] = deflate_piece(text, preceding)
                below = at + 1 if text else at  # the next line's place in ``filled``
                if below < len(filled):
                    gz[filled[below]] = deflate_piece(column[filled[below]], text or preceding)
        self._shown_fresh[slot] = fresh

    def _layout(self) -> None:
        keys = self._keys = sorted(self._targets)
        self._slots = {k: i for i, k in enumerate(keys)}
        self._plain = [[b""] * len(keys) for _ in TARGET_FAMILIES]
        self._gz = [[b""] * len(keys) for _ in TARGET_FAMILIES]
        self._filled = [[] for _ in TARGET_FAMILIES]
        self._shown_fresh = [True] * len(keys)
        self._fresh_until = [self._targets[k].fresh_until for k in keys]
        self._joined = [[None, None] for _ in TARGET_FAMILIES]
        self._next_crossing = -math.inf
        for slot, k in enumerate(keys):
            self._fill(slot, self._targets[k], fresh=True, deflate=False)
        for i, column in enumerate(self._plain):  # each line once, after the one above it
            preceding = self._headers[i][0]
            gz = self._gz[i]
            for slot in self._filled[i]:
                gz[slot] = deflate_piece(column[slot], preceding)
                preceding = column[slot]

    def _global_parts(self, gzip: bool) -> list:
        if self._by_collector is None:
            self._by_collector = tuple(sorted(collections.Counter(t.collector for t in self._targets.values()).items()))
        key = (self._by_collector, self.reload.successful, self.reload.last_success, tuple(SNMP_DROPPED.items()))
        if key != self._global_key:
            samples = [("fabric_targets", {"collector": name}, n) for name, n in key[0]]
            samples += [("fabric_build_info", {"version": __version__, "python_version": platform.python_version()}, 1.0),
                        ("fabric_config_last_reload_successful", {}, 1.0 if self.reload.successful else 0.0),
                        ("fabric_config_last_reload_success_timestamp_seconds", {}, self.reload.last_success)]
            # every reason from the start (at 0), so rate() sees the first drop
            samples += [("fabric_snmp_datagrams_dropped_total", {"reason": r}, n) for r, n in key[3]]
            self._global = _pieces(_STILL_FAMILIES, samples)
            self._global_key = key
        # The lag histogram changes ten times a second: rendered apart, so the others stay cached.
        lag_key = self.loop_lag.state() if self.loop_lag else None
        if lag_key != self._lag_key:
            self._lag = _pieces((LOOP_LAG_FAMILY,), self.loop_lag.samples() if self.loop_lag else [])
            self._lag_key = lag_key
        return self._global[1 if gzip else 0] + self._lag[1 if gzip else 0]

    def parts(self, now_mono: float, gzip: bool = False) -> list[bytes]:
        """The self-metrics as pieces to concatenate (plain text, or one gzip member)."""
        if self._slots is None:
            self._layout()
        # Each slot shows the variant that holds at ``now_mono``: switch the few that crossed over
        # (none can have, before the earliest deadline of a slot shown fresh).
        if now_mono > self._next_crossing or now_mono < self._last_scrape:
            next_crossing = math.inf
            for slot, (until, shown) in enumerate(zip(self._fresh_until, self._shown_fresh)):
                if (now_mono <= until) != shown:
                    self._fill(slot, self._targets[self._keys[slot]], fresh=not shown)
                if now_mono <= until:
                    next_crossing = min(next_crossing, until)
            self._next_crossing = next_crossing
        self._last_scrape = now_mono
        if gzip:
            segments = []
            for (text, header), column, gz, joined in zip(self._headers, self._plain, self._gz, self._joined):
                if joined[1] is None:
                    lines = b"".join(column)
                    joined[1] = Segment(header + b"".join(gz), zlib.crc32(lines, zlib.crc32(text)), len(text) + len(lines))
                segments.append(joined[1])
            return self._member.member(segments + self._global_parts(True))
        parts: list[bytes] = []
        for (text, _header), column, joined in zip(self._headers, self._plain, self._joined):
            parts.append(text)
            if joined[0] is None:
                joined[0] = b"".join(column)
            parts.append(joined[0])
        parts.extend(self._global_parts(False))
        return parts

    def render(self, now_mono: float | None = None) -> bytes:
        return b"".join(self.parts(time.monotonic() if now_mono is None else now_mono))
