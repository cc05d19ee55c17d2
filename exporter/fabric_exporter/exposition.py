"""Prometheus text-format rendering of collector samples.

Each snapshot is rendered once, when its poll lands, into per-family chunks of sample lines; a scrape
only joins cached bytes. The output is byte-identical to prometheus_client's for the same samples
(tests/test_exposition.py checks this), at a fraction of its cost per sample.
"""

from __future__ import annotations

import collections
import itertools
import math
import operator
from array import array
from collections.abc import Iterable, Mapping
from math import copysign

from prometheus_client.utils import floatToGoString

from .catalog import MetricSpec, family_of
from .samples import KeptSample


_EXPONENT = tuple(f"e+{n:02d}" for n in range(400))  # a float's repr has at most 309 integer digits


def format_value(value: float) -> str:
    """A value as prometheus_client (``floatToGoString``) and Go write it, without its per-call
    float(), infinity and NaN checks on the common path: a finite float prints as its repr, or,
    positive with 7+ integer digits (byte counters: most values of a fabric), in Go's exponent
    form; ints print like repr(float(v)) without building the float."""
    if type(value) is float:
        text = repr(value)
        dot = text.find(".")
        if dot > 6 and value > 0:
            if text.endswith(".0"):  # integral: a counter
                digits = text[:dot].rstrip("0")
                return f"{digits[0]}.{digits[1:]}{_EXPONENT[dot - 1]}" if len(digits) > 1 \
                    else digits + _EXPONENT[dot - 1]
            # a shortest repr's fraction ends in a non-zero digit: nothing to strip (Go's rstrip)
            return f"{text[0]}.{text[1:dot]}{text[dot + 1:]}{_EXPONENT[dot - 1]}"
        if dot >= 0 or -math.inf < value < math.inf:  # no dot: "1e+16", or inf/nan (below)
            return text
        return floatToGoString(value)
    if type(value) is int:
        if -10**15 < value < 1_000_000:
            return f"{value}.0"
        if 0 < value < 1 << 53:  # exact in a float, so its shortest form is these digits: d.ddde+NN
            digits = str(value).rstrip("0")
            exponent = len(str(value)) - 1
            mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
            return f"{mantissa}e+{exponent:02d}"
    return floatToGoString(value)


def _escape_label_value(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        value = value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    return value


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def family_header(spec: MetricSpec) -> bytes:
    return f"# HELP {spec.name} {_escape_help(spec.help)}\n# TYPE {spec.name} {spec.exposed_type}\n".encode()


class UnknownMetricError(ValueError):
    pass


# (sample name, label names in the order given) -> (family name, label names sorted). Checking a
# sample against the catalog and sorting its labels is then one dict lookup per sample.
_SHAPES: dict[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...]]] = {}


def _shape(name: str, label_names: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    spec = family_of(name)
    if spec is None:
        raise UnknownMetricError(f"{name} is not in the metric catalog")
    if not spec.allows_labels(name, label_names):
        raise UnknownMetricError(f"{name}: labels {label_names} not in the catalog's label sets {spec.label_sets}")
    shape = _SHAPES[(name, label_names)] = (spec.name, tuple(sorted(label_names)))
    return shape


class LineCache:
    """One target's render, kept for its next poll (``render_cached``): the samples (held, so the
    identity of their objects means something next time), which family each one's line went to and
    its place among that family's lines, the ``name{labels} `` prefix of each sample that was not a
    KeptSample (a port's counters: new objects every poll, under a labels dict that is not), the
    bytes per family, and where the tail starts (below). Lines are not kept one by one: a family a
    poll changes is split out of its bytes again."""

    __slots__ = ("extra_label", "samples", "families", "index", "prefixes", "chunks", "tail")

    def __init__(self, extra_label, samples, families, index, prefixes, chunks, tail):
        self.extra_label: tuple[str, str] | None = extra_label
        self.samples: tuple = samples
        self.families: list[str] = families
        self.index: array = index  # unsigned ints: 4 bytes a sample, not a Python int each
        self.prefixes: list[str | None] = prefixes
        self.chunks: dict[str, bytes] = chunks
        self.tail: int = tail


# The tail: the last samples (at most this many, and at most a quarter of the poll) whose families
# have no line before them (an IB sweep's durations and totals). Their number may change from poll
# to poll (a poll that ran ibnetdiscover times it too): the tail is rendered whole, the samples
# before it patched in place.
TAIL_MAX = 64


def _tail_start(families: list[str], index: array) -> int:
    """The first position of the longest tail of closed families within the tail's bounds."""
    start = len(families)
    waiting: set[str] = set()  # families seen (walking back) whose first line is further back
    for position in range(len(families) - 1, len(families) - min(TAIL_MAX, len(families) // 4) - 1, -1):
        if index[position] == 0:
            waiting.discard(families[position])
        else:
            waiting.add(families[position])
        if not waiting:
            start = position
    return start


def render_chunks(samples: Iterable[tuple[str, Mapping[str, str], float]],
                  extra_label: tuple[str, str] | None = None) -> dict[str, bytes]:
    """Group sample lines by catalog family; raises UnknownMetricError for a name or label set not in the catalog.

    ``extra_label`` (name, value) is added to every sample (the store's ``fabric``). Collectors share
    one labels dict among a port's samples: its rendered label text is computed once per dict (the
    dicts are alive and unchanged for the call, so identity is a safe key)."""
    lines, _kept = _render_lines(samples, extra_label, None)
    return {family: "".join(ls).encode() for family, ls in lines.items()}


def render_cached(samples: Iterable[tuple[str, Mapping[str, str], float]], extra_label: tuple[str, str] | None,
                  previous: LineCache | None) -> tuple[dict[str, bytes], LineCache | None]:
    """``render_chunks`` for a target polled again and again: (chunks, the cache for its next poll).

    When the samples before the ``previous`` poll's tail keep their layout (every one that is not the
    very same object lands in the same family), only those are formatted, at their old places, and
    a family none of them touched keeps its bytes (an IB fabric's link and health families, poll
    after poll); a new object with the same value keeps its line. The tail is rendered whole. Any
    other change renders the poll whole (reusing kept lines there measured no faster than formatting
    them, and cost memory). A poll without any KeptSample gets no cache: nothing of it would be the
    same objects next time, and holding its samples would only cost memory."""
    samples = tuple(samples)
    if previous is not None and previous.extra_label != extra_label:
        previous = None
    if previous is None and KeptSample not in map(type, samples):  # the test runs in C
        return render_chunks(samples, extra_label), None
    if previous is not None and len(samples) >= previous.tail:
        patched = _patch(samples, previous)
        if patched is not None:
            return patched.chunks, patched
    families: list[str] = []
    index = array("I")
    prefixes: list[str | None] = []
    lines, kept = _render_lines(samples, extra_label, (families, index, prefixes))
    chunks = {family: "".join(ls).encode() for family, ls in lines.items()}
    if not kept:
        return chunks, None
    return chunks, LineCache(extra_label, samples, families, index, prefixes, chunks, _tail_start(families, index))


def _split(chunk: bytes) -> list[bytes]:
    """A family's bytes as its lines, without their newlines, and an empty last item, so that
    ``b"\\n".join`` gives the bytes back. (A line holds no other newline: label values escape it.)"""
    return chunk.split(b"\n")


def _patch(samples: tuple, cache: LineCache) -> LineCache | None:
    """Render only the samples before the tail that are not the same objects as at their place last
    time, and the tail; None when one of them belongs to another family than the line it would
    replace, or a tail sample to a family with lines before the tail (a new layout)."""
    old, tail = cache.samples, cache.tail
    families, index = cache.families, cache.index
    prefixes = cache.prefixes[:tail]  # a copy: the previous cache stays valid for its own samples
    changed: dict[str, list[bytes]] = {}  # family -> its lines, being patched
    entries: dict[int, tuple[Mapping[str, str], tuple[str, ...], str]] = {}  # id(labels) -> (labels, names, text)
    extra_label = cache.extra_label
    for i in itertools.compress(itertools.count(), map(operator.is_not, itertools.islice(samples, tail), old)):
        name, labels, value = samples[i]
        prefix = prefixes[i]
        was = old[i]
        if prefix is not None and labels is was[1] and name == was[0]:
            if value == was[2] and (value or copysign(1.0, value) == copysign(1.0, was[2])):
                continue  # a new object, the same line (a counter that did not move): keep it
        else:
            entry = entries.get(id(labels))
            if entry is None:
                entry = entries[id(labels)] = (labels, *_label_text(labels, extra_label))
            shape = (name, entry[1])
            if (_SHAPES.get(shape) or _shape(*shape))[0] != families[i]:
                return None
            prefix = prefixes[i] = f"{name}{{{entry[2]}}} " if entry[2] else f"{name} "
        family = families[i]
        family_lines = changed.get(family)
        if family_lines is None:
            family_lines = changed[family] = _split(cache.chunks[family])
        family_lines[index[i]] = f"{prefix}{format_value(value)}".encode()
    chunks = {**cache.chunks, **{family: b"\n".join(ls) for family, ls in changed.items()}}
    new_families, new_index = families, index
    if tail < len(samples) or tail < len(old):
        for family in set(families[tail:]):
            del chunks[family]
        tail_families: list[str] = []
        tail_index = array("I")
        tail_lines, _kept = _render_lines(samples[tail:], extra_label, (tail_families, tail_index, prefixes))
        if not chunks.keys().isdisjoint(tail_lines):  # a tail sample of a family with lines before the tail
            return None
        chunks.update({family: "".join(ls).encode() for family, ls in tail_lines.items()})
        new_families, new_index = families[:tail] + tail_families, index[:tail] + tail_index
    return LineCache(extra_label, samples, new_families, new_index, prefixes, chunks, tail)


def _render_lines(samples: Iterable[tuple[str, Mapping[str, str], float]], extra_label: tuple[str, str] | None,
                  positions: tuple[list, array, list] | None) -> tuple[dict[str, list[str]], bool]:
    """The lines of every family, and whether any sample was a KeptSample. With ``positions``
    (families, index, prefixes: empty), each sample's family, its line's place in that family and
    its prefix (None for a KeptSample) are appended."""
    lines: collections.defaultdict[str, list[str]] = collections.defaultdict(list)
    shapes = _SHAPES
    rendered: dict[int, tuple[Mapping[str, str], tuple[str, ...], str]] = {}  # id(labels) -> (labels, names, text)
    kept = False
    if positions is not None:
        add_family, add_index, add_prefix = (p.append for p in positions)
    for sample in samples:
        name, labels, value = sample
        entry = rendered.get(id(labels))
        if entry is None or entry[0] is not labels:
            entry = rendered[id(labels)] = (labels, *_label_text(labels, extra_label))
        shape = (name, entry[1])
        family = (shapes.get(shape) or _shape(*shape))[0]
        inner = entry[2]
        target = lines[family]
        if positions is None:
            line = f"{name}{{{inner}}} {format_value(value)}\n" if inner else f"{name} {format_value(value)}\n"
        else:
            prefix = f"{name}{{{inner}}} " if inner else f"{name} "
            line = f"{prefix}{format_value(value)}\n"
            add_family(family)
            add_index(len(target))
            if type(sample) is KeptSample:
                kept = True
                add_prefix(None)
            else:
                add_prefix(prefix)
        target.append(line)
    return lines, kept


def _label_text(labels: Mapping[str, str], extra_label: tuple[str, str] | None) -> tuple[tuple[str, ...], str]:
    """(label names as given, extra first; the rendered ``k="v",...`` in sorted name order)."""
    if extra_label is not None:
        labels = {extra_label[0]: extra_label[1], **labels}
    # Sorted label names, as prometheus_client writes them.
    text = ",".join([f'{k}="{_escape_label_value(labels[k])}"' for k in sorted(labels)])
    return tuple(labels), text
