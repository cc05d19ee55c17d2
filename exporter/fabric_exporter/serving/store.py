"""Snapshot store: one immutable, pre-rendered snapshot per target, swapped whole when a poll lands.

A scrape joins cached bytes grouped by metric family (HELP/TYPE once per family across targets)
and never renders or does I/O. For gzip, each snapshot keeps its families also as raw deflate
pieces compressed against the text that precedes them in the body (gzipstream.py): the previous
fresh target's text of the same family, or the family's HELP/TYPE. ``put`` compresses the new
snapshot's pieces and the next target's (its predecessor changed), so a gzip scrape is a join too,
and the body is one gzip stream barely larger than compressing the whole text at once. A snapshot
past its target's ``stale_after`` is withheld: stale targets publish only their own status, never
frozen old values.
"""

from __future__ import annotations

import bisect
import math
import operator
import threading
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..catalog import CATALOG
from .exposition import TargetRenderer, family_header
from .gzipstream import MemberCache, Segment, deflate_piece
from ..samples import Sample

TargetKey = tuple[str, str]  # (group, host)
_PRECEDING, _PIECE = operator.itemgetter(0), operator.itemgetter(1)  # of a Snapshot.deflated entry


@dataclass(frozen=True)
class Snapshot:
    chunks: dict[str, bytes]  # family name -> rendered sample lines
    # family name -> (the text it was compressed after, those lines as raw deflate): filled by the store
    deflated: dict[str, tuple[bytes, bytes]]
    sample_count: int
    taken_at: float  # wall clock, for the status page
    fresh_until: float  # monotonic deadline (last success + stale_after)
    # the target's renderer, handed on to its next poll's snapshot (holds what that poll is patched on)
    renderer: TargetRenderer = field(repr=False, compare=False)


def build_snapshot(fabric: str, samples: Iterable[Sample], stale_after: float,
                   now_mono: float | None = None, previous: Snapshot | None = None) -> Snapshot:
    """Render samples into a snapshot, adding the ``fabric`` label. Raises UnknownMetricError.

    A family whose text equals the ``previous`` snapshot's keeps that very bytes object and its
    deflate piece (info and state families rarely change between polls): the store compresses
    again only what changed, and the next target's piece, compressed after this text, stays valid.
    A sample the collector hands out again (a KeptSample) keeps its rendered line: the ``previous``
    snapshot's renderer renders this poll and goes on to the new snapshot (a new one for a new
    ``fabric``)."""
    if not isinstance(samples, (list, tuple)):
        samples = list(samples)
    extra_label = ("fabric", fabric)
    renderer = previous.renderer if previous is not None else None
    if renderer is None or renderer.extra_label != extra_label:
        renderer = TargetRenderer(extra_label)
    chunks = renderer.render(samples)
    deflated: dict[str, tuple[bytes, bytes]] = {}
    if previous is not None:
        chunks = dict(chunks)
        for family, text in chunks.items():
            old = previous.chunks.get(family)
            if old is not None and (old is text or old == text):
                chunks[family] = old
                if family in previous.deflated:
                    deflated[family] = previous.deflated[family]
    now_mono = time.monotonic() if now_mono is None else now_mono
    return Snapshot(chunks, deflated, len(samples), time.time(), now_mono + stale_after, renderer)


class SnapshotStore:
    def __init__(self) -> None:
        #: held by whoever changes what /metrics shows (this store, the self-metrics: the scheduler)
        #: and by the web thread while it takes a scrape's pieces (Daemon.exposition_parts), so a
        #: scrape needs no turn of the daemon's loop and never sees half a change
        self.lock = threading.RLock()
        self._snapshots: dict[TargetKey, Snapshot] = {}
        self._family_order = list(CATALOG)
        self._columns: dict[str, list[TargetKey]] = {}  # family -> sorted keys of the snapshots with it
        self._headers: dict[str, tuple[bytes, bytes]] = {}  # family -> HELP/TYPE text, as a deflate piece
        # family -> (joined at, valid until, its gzip column: HELP/TYPE and the fresh targets' pieces,
        # None when none is fresh), valid from when it was joined until the first of its snapshots
        # goes stale, dropped when a snapshot's text in it changes. Scrapes between polls (two Prometheus
        # replicas, a 15 s scrape against a 30 s poll) then hand out a piece per family. Only gzip:
        # Prometheus always asks for it, and a joined copy of the plain text would cost its size again
        # (~200 MB at 1.6M samples; the gzip one ~14 MB).
        self._segments: dict[str, tuple[float, float, Segment | None]] = {}
        self._member = MemberCache()

    def put(self, key: TargetKey, snapshot: Snapshot) -> None:
        now = time.monotonic()
        old = self._snapshots.get(key)
        self._snapshots[key] = snapshot  # one dict assignment: readers see old or new, never half
        if old is not None:
            for family in old.chunks.keys() - snapshot.chunks.keys():
                self._leave(family, key, now)
        for family, text in snapshot.chunks.items():
            column = self._columns.setdefault(family, [])
            at = bisect.bisect_left(column, key)
            if at == len(column) or column[at] != key:
                column.insert(at, key)
            if not self._segment_holds(family, old, snapshot, text):
                self._segments.pop(family, None)
            self._deflate(family, snapshot, self._preceding(family, column, at, now))
            self._deflate_next(family, column, at + 1, now)

    def _segment_holds(self, family: str, old: Snapshot | None, new: Snapshot, text: bytes) -> bool:
        """Is the family's joined gzip column still the body after ``old`` was replaced by ``new``?
        Yes when the text is the very same object (build_snapshot keeps an unchanged family's bytes)
        and the target is in the column for all of the column's validity, as the old one was: a
        poll that moved only counters then leaves the info and state columns joined."""
        cached = self._segments.get(family)
        return (cached is not None and old is not None and old.chunks.get(family) is text
                and cached[0] <= old.fresh_until and cached[1] <= new.fresh_until)

    def drop(self, key: TargetKey) -> None:
        old = self._snapshots.pop(key, None)
        if old is not None:
            now = time.monotonic()
            for family in old.chunks:
                self._leave(family, key, now)

    def _leave(self, family: str, key: TargetKey, now: float) -> None:
        column = self._columns[family]
        at = bisect.bisect_left(column, key)
        del column[at]
        self._segments.pop(family, None)
        self._deflate_next(family, column, at, now)

    def _preceding(self, family: str, column: list[TargetKey], at: int, now: float) -> bytes:
        """The text a piece at ``column[at]`` follows in the body: the nearest fresh snapshot's before it."""
        snapshots = self._snapshots
        for i in range(at - 1, -1, -1):
            before = snapshots[column[i]]
            if now <= before.fresh_until:
                return before.chunks[family]
        return self._header(family)[0]

    def _deflate_next(self, family: str, column: list[TargetKey], at: int, now: float) -> None:
        """Compress the first fresh piece from ``column[at]`` on after what now precedes it."""
        snapshots = self._snapshots
        for i in range(at, len(column)):
            after = snapshots[column[i]]
            if now <= after.fresh_until:
                self._deflate(family, after, self._preceding(family, column, i, now))
                return

    @staticmethod
    def _deflate(family: str, snapshot: Snapshot, preceding: bytes) -> tuple[bytes, bytes]:
        entry = snapshot.deflated.get(family)
        if entry is None or entry[0] is not preceding:
            entry = snapshot.deflated[family] = (preceding, deflate_piece(snapshot.chunks[family], preceding))
        return entry

    def get(self, key: TargetKey) -> Snapshot | None:
        return self._snapshots.get(key)

    def is_fresh(self, key: TargetKey, now_mono: float | None = None) -> bool:
        snap = self._snapshots.get(key)
        return snap is not None and (time.monotonic() if now_mono is None else now_mono) <= snap.fresh_until

    def _header(self, family: str) -> tuple[bytes, bytes]:
        header = self._headers.get(family)
        if header is None:
            text = family_header(CATALOG[family])
            header = self._headers[family] = (text, deflate_piece(text))
        return header

    def _fresh(self, family: str, now_mono: float) -> list[Snapshot]:
        return [s for s in map(self._snapshots.__getitem__, self._columns.get(family, ())) if now_mono <= s.fresh_until]

    def parts(self, now_mono: float, gzip: bool = False) -> list[bytes]:
        """The exposition of every fresh snapshot as pieces to concatenate: plain text, or one gzip
        member. Costs a list of references and, for gzip, a join and a CRC per family (kept until a
        snapshot in it changes or goes stale); compressing again only a piece whose predecessor
        changed since its put (a target before it went stale), none when nothing did."""
        if len(self._family_order) != len(CATALOG):  # a plugin registered metrics since
            self._family_order = list(CATALOG)
        if gzip:
            return self._member.member([segment for family in self._family_order if family in self._columns
                           if (segment := self._segment(family, now_mono)) is not None])
        parts: list[bytes] = []
        for family in self._family_order:
            if family in self._columns and (fresh := self._fresh(family, now_mono)):
                parts.append(self._header(family)[0])
                parts.extend([s.chunks[family] for s in fresh])
        return parts

    def _segment(self, family: str, now_mono: float) -> Segment | None:
        cached = self._segments.get(family)
        if cached is not None and cached[0] <= now_mono <= cached[1]:
            return cached[2]
        fresh = self._fresh(family, now_mono)
        segment = None
        if fresh:
            header_text, header = self._header(family)
            texts = [s.chunks[family] for s in fresh]
            entries = [s.deflated.get(family) for s in fresh]
            # each piece compressed after the text now before it (checked in C); if not, again now
            if None in entries or not all(map(operator.is_, map(_PRECEDING, entries), [header_text, *texts[:-1]])):
                entries = [self._deflate(family, s, preceding)
                           for s, preceding in zip(fresh, [header_text, *texts[:-1]])]
            crc = zlib.crc32(header_text)
            for text in texts:
                crc = zlib.crc32(text, crc)
            segment = Segment(b"".join([header, *map(_PIECE, entries)]), crc, len(header_text) + sum(map(len, texts)))
        self._segments[family] = (now_mono, min((s.fresh_until for s in fresh), default=math.inf), segment)
        return segment

    def render(self, now_mono: float | None = None) -> bytes:
        """Plain exposition text of the fresh snapshots (the targets' data, not the self-metrics)."""
        return b"".join(self.parts(time.monotonic() if now_mono is None else now_mono))
