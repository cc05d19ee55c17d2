"""Snapshot store: one immutable, pre-rendered snapshot per target, swapped whole when a poll lands.

A scrape joins cached bytes grouped by metric family (HELP/TYPE once per family across targets)
and never renders or does I/O. A snapshot past its target's ``stale_after`` is withheld: stale
targets publish only their own status, never frozen old values.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from .catalog import CATALOG
from .exposition import family_header, render_chunks
from .samples import Sample

TargetKey = tuple[str, str]  # (group, host)


@dataclass(frozen=True)
class Snapshot:
    chunks: dict[str, bytes]  # family name -> rendered sample lines
    sample_count: int
    taken_at: float  # wall clock, for the status page
    fresh_until: float  # monotonic deadline (last success + stale_after)


def build_snapshot(fabric: str, samples: Iterable[Sample], stale_after: float,
                   now_mono: float | None = None) -> Snapshot:
    """Render samples into a snapshot, adding the ``fabric`` label. Raises UnknownMetric."""
    count = 0

    def labelled():
        nonlocal count
        for s in samples:
            count += 1
            yield s.name, {"fabric": fabric, **s.labels}, s.value

    chunks = render_chunks(labelled())
    now_mono = time.monotonic() if now_mono is None else now_mono
    return Snapshot(chunks, count, time.time(), now_mono + stale_after)


class SnapshotStore:
    def __init__(self) -> None:
        self._snapshots: dict[TargetKey, Snapshot] = {}
        self._family_order = list(CATALOG)

    def put(self, key: TargetKey, snapshot: Snapshot) -> None:
        self._snapshots[key] = snapshot  # one dict assignment: readers see old or new, never half

    def drop(self, key: TargetKey) -> None:
        self._snapshots.pop(key, None)

    def get(self, key: TargetKey) -> Snapshot | None:
        return self._snapshots.get(key)

    def is_fresh(self, key: TargetKey, now_mono: float | None = None) -> bool:
        snap = self._snapshots.get(key)
        return snap is not None and (time.monotonic() if now_mono is None else now_mono) <= snap.fresh_until

    def render(self, now_mono: float | None = None) -> bytes:
        now_mono = time.monotonic() if now_mono is None else now_mono
        fresh = [self._snapshots[k] for k in sorted(self._snapshots) if now_mono <= self._snapshots[k].fresh_until]
        parts: list[bytes] = []
        if len(self._family_order) != len(CATALOG):  # a plugin registered metrics since
            self._family_order = list(CATALOG)
        for family in self._family_order:
            lines = [s.chunks[family] for s in fresh if family in s.chunks]
            if lines:
                parts.append(family_header(CATALOG[family]))
                parts.extend(lines)
        return b"".join(parts)
