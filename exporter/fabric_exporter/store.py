"""Snapshot store: one immutable, pre-rendered snapshot per target, swapped whole when a poll lands.

A scrape joins cached bytes grouped by metric family (HELP/TYPE once per family across targets)
and never renders, compresses or does I/O: each snapshot keeps its families as plain text and as
gzip members, so a gzip scrape is a join too. A snapshot past its target's ``stale_after`` is withheld: stale
targets publish only their own status, never frozen old values.
"""

from __future__ import annotations

import collections
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from .catalog import CATALOG
from .exposition import LineCache, Rendered, family_header, gzip_member, render_cached
from .samples import Sample

TargetKey = tuple[str, str]  # (group, host)


@dataclass(frozen=True)
class Snapshot:
    chunks: dict[str, bytes]  # family name -> rendered sample lines
    gz: dict[str, bytes]  # family name -> the same lines as one gzip member
    sample_count: int
    taken_at: float  # wall clock, for the status page
    fresh_until: float  # monotonic deadline (last success + stale_after)
    # its render, for the next poll's snapshot of the target (exposition.render_cached)
    lines: LineCache | None = field(default=None, repr=False, compare=False)


def build_snapshot(fabric: str, samples: Iterable[Sample], stale_after: float,
                   now_mono: float | None = None, previous: Snapshot | None = None) -> Snapshot:
    """Render samples into a snapshot, adding the ``fabric`` label. Raises UnknownMetricError.

    A family whose text equals the ``previous`` snapshot's keeps its gzip member (info and state
    families rarely change between polls), so only changed families are compressed again; a
    sample the collector hands out again (a KeptSample) keeps its rendered line."""
    if not isinstance(samples, (list, tuple)):
        samples = list(samples)
    chunks, line_cache = render_cached(samples, ("fabric", fabric), previous.lines if previous is not None else None)
    old_chunks, old_gz = (previous.chunks, previous.gz) if previous is not None else ({}, {})
    gz = {family: old_gz[family] if old_chunks.get(family) == lines else gzip_member(lines)
          for family, lines in chunks.items()}
    now_mono = time.monotonic() if now_mono is None else now_mono
    return Snapshot(chunks, gz, len(samples), time.time(), now_mono + stale_after, line_cache)


class SnapshotStore:
    def __init__(self) -> None:
        self._snapshots: dict[TargetKey, Snapshot] = {}
        self._family_order = list(CATALOG)
        self._family_users: collections.Counter[str] = collections.Counter()  # family -> snapshots with it
        self._sorted_keys: list[TargetKey] | None = []  # None: rebuild (a target came or went)
        self._headers: dict[str, Rendered] = {}
        # The gzip body between two changes: one piece per family, valid from when it was joined until
        # the first of its snapshots goes stale, dropped by any put/drop. Scrapes between polls (two
        # Prometheus replicas, a 15 s scrape against a 30 s poll) then hand out ~20 pieces, not one
        # per target and family. Only gzip: Prometheus always asks for it, and a joined copy of the
        # plain text would cost its size again (~200 MB at 1.6M samples; the gzip one ~30 MB).
        self._gz_body: tuple[float, float, list[bytes]] | None = None  # (joined at, valid until, parts)

    def put(self, key: TargetKey, snapshot: Snapshot) -> None:
        old = self._snapshots.get(key)
        self._snapshots[key] = snapshot  # one dict assignment: readers see old or new, never half
        self._gz_body = None
        if old is None:
            self._sorted_keys = None
        else:
            self._family_users.subtract(old.chunks.keys())
        self._family_users.update(snapshot.chunks.keys())

    def drop(self, key: TargetKey) -> None:
        old = self._snapshots.pop(key, None)
        if old is not None:
            self._gz_body = None
            self._sorted_keys = None
            self._family_users.subtract(old.chunks.keys())

    def get(self, key: TargetKey) -> Snapshot | None:
        return self._snapshots.get(key)

    def is_fresh(self, key: TargetKey, now_mono: float | None = None) -> bool:
        snap = self._snapshots.get(key)
        return snap is not None and (time.monotonic() if now_mono is None else now_mono) <= snap.fresh_until

    def _header(self, family: str) -> Rendered:
        header = self._headers.get(family)
        if header is None:
            header = self._headers[family] = Rendered.of(family_header(CATALOG[family]))
        return header

    def parts(self, now_mono: float, gzip: bool = False) -> list[bytes]:
        """The exposition of every fresh snapshot as pieces to concatenate: plain text, or gzip
        members that concatenate into one gzip stream. Costs a list of references and, for gzip, a
        join per family (kept until the next put/drop or the first snapshot in it goes stale); no
        rendering or compression."""
        body = self._gz_body
        if gzip and body is not None and body[0] <= now_mono <= body[1]:
            return list(body[2])
        if self._sorted_keys is None:
            self._sorted_keys = sorted(self._snapshots)
        snapshots = self._snapshots
        fresh = [s for s in map(snapshots.__getitem__, self._sorted_keys) if now_mono <= s.fresh_until]
        maps = [s.gz for s in fresh] if gzip else [s.chunks for s in fresh]
        users = self._family_users
        parts: list[bytes] = []
        if len(self._family_order) != len(CATALOG):  # a plugin registered metrics since
            self._family_order = list(CATALOG)
        for family in self._family_order:
            if users[family] <= 0:
                continue
            lines = [piece for m in maps if (piece := m.get(family)) is not None]
            if lines:
                header = self._header(family)
                parts.append(header.gz if gzip else header.plain)
                if gzip:
                    parts.append(b"".join(lines))  # members concatenate into one valid stream
                else:
                    parts.extend(lines)
        if gzip:
            self._gz_body = (now_mono, min((s.fresh_until for s in fresh), default=math.inf), parts)
            return list(parts)
        return parts

    def render(self, now_mono: float | None = None) -> bytes:
        """Plain exposition text of the fresh snapshots (the targets' data, not the self-metrics)."""
        return b"".join(self.parts(time.monotonic() if now_mono is None else now_mono))
