"""What a poll produces: plain samples, before the exporter adds the `fabric` label and renders them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class Sample(NamedTuple):
    """One series value. ``labels`` are in the catalog's order, without ``fabric`` (the store adds it).

    Samples of one port may share one labels dict (the renderer then formats it once); a dict
    handed to a Sample is never changed afterwards."""

    name: str
    labels: dict[str, str]
    value: float


class KeptSample(Sample):
    """A Sample its collector keeps and hands out again, unchanged, poll after poll (e.g. a port's
    link and info series while the link is the same). A target whose polls hold KeptSamples gets
    its render kept for the next poll (exposition.render_cached): a sample that comes back as the
    same object at the same place keeps its line, so it is formatted once, not every poll. Never
    build one per poll: it is for objects the collector holds on to."""

    __slots__ = ()


@dataclass
class PollResult:
    """A poll's samples, plus problems that made the data partial (published, but counted and shown)."""

    samples: list[Sample] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Lines parsers skipped under the skip-and-count rule (parsers/skipped.py): counted, not problems.
    skipped: list = field(default_factory=list)
