"""What a poll produces: plain samples, before the exporter adds the `fabric` label and renders them."""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from prometheus_client.utils import floatToGoString


class LabelSet(Mapping):
    """An immutable set of labels (name -> value, in the order given), interned: building one
    equal to a label set alive somewhere gives that very object. A collector that builds a port's
    labels again (its memo rebuilt after a rediscovery) then hands the renderer the same object,
    which keeps the port's lines; and nothing can change a labels object the renderer keyed a
    line on (no item assignment: a TypeError). Reads like a dict (``labels[k]``, ``**labels``,
    equality with a dict)."""

    __slots__ = ("_items", "_values", "__weakref__")
    _interned: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def __new__(cls, labels: Mapping[str, str]) -> LabelSet:
        items = tuple(labels.items())
        same = cls._interned.get(items)
        if same is not None:
            return same
        self = object.__new__(cls)
        object.__setattr__(self, "_items", items)
        object.__setattr__(self, "_values", dict(items))  # lookups; never handed out
        cls._interned[items] = self
        return self

    def __setattr__(self, name, value):
        raise AttributeError("a LabelSet cannot be changed")

    def __getitem__(self, name: str) -> str:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other) -> bool:
        if other is self:
            return True
        if isinstance(other, LabelSet):
            return self._values == other._values
        return self._values == other if isinstance(other, Mapping) else NotImplemented

    def __repr__(self) -> str:
        return f"LabelSet({self._values!r})"

    def as_dict(self) -> dict[str, str]:
        """A plain dict of these labels (a copy: changing it changes nothing here), made in C, for
        code that reads every label (the renderer) without a Python call per name."""
        return self._values.copy()

    def merged(self, extra: Mapping[str, str]) -> LabelSet:
        """These labels followed by ``extra``'s (which win on a shared name): ``LabelSet({**self, **extra})``
        without going through the Mapping protocol one name at a time."""
        return LabelSet({**self._values, **extra})

    def __reduce__(self):
        return (LabelSet, (self._values,))


class Sample(NamedTuple):
    """One series value. ``labels`` are in the catalog's order, without ``fabric`` (the store adds it).

    Samples of one port may share one labels object (the renderer then formats it once); a dict
    handed to a Sample is never changed afterwards (a LabelSet cannot be)."""

    name: str
    labels: Mapping[str, str]
    value: float


def le_labels(bounds: Iterable[float]) -> tuple[str, ...]:
    """Histogram bucket bounds as their ``le`` label values, spelled as prometheus_client and Go spell
    them (``0.5``, ``1.0``, ``1e-05``); computed once per histogram, not per sample."""
    return tuple(floatToGoString(b) for b in bounds)


def histogram_samples(family: str, labels: Mapping[str, str], le: Sequence[str], cumulative: Iterable[float],
                      count: float, total: float) -> list[Sample]:
    """One histogram's samples in prometheus_client's order: a ``_bucket`` per bound (``le`` from
    ``le_labels``) with its cumulative count, the ``+Inf`` bucket holding ``count``, then ``_count``
    and ``_sum``. ``cumulative`` is zipped with ``le``: an extra, uncounted last bucket is ignored."""
    bucket = family + "_bucket"
    out = [Sample(bucket, {**labels, "le": bound}, n) for bound, n in zip(le, cumulative)]
    out.append(Sample(bucket, {**labels, "le": "+Inf"}, count))
    out.append(Sample(family + "_count", labels, count))
    out.append(Sample(family + "_sum", labels, total))
    return out


class KeptSample(Sample):
    """A Sample its collector keeps and hands out again, unchanged, poll after poll (e.g. a port's
    link and info series while the link is the same). A target whose polls hold KeptSamples gets
    its render kept for the next poll (serving.exposition.TargetRenderer): a sample that comes back
    as the same object at the same place keeps its line, so it is formatted once, not every poll.
    Never build one per poll: it is for objects the collector holds on to."""

    __slots__ = ()


@dataclass
class PollResult:
    """A poll's samples, plus problems that made the data partial (published, but counted and shown)."""

    samples: list[Sample] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Lines parsers skipped under the skip-and-count rule (parsers/skipped.py): counted, not problems.
    skipped: list = field(default_factory=list)
