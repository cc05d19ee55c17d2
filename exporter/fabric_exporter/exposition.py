"""Prometheus text-format rendering of collector samples.

Each snapshot is rendered once, when its poll lands, into per-family chunks of sample lines; a scrape
only joins cached bytes. The output is byte-identical to prometheus_client's for the same samples
(tests/test_exposition.py checks this), at a fraction of its cost per sample.
"""

from __future__ import annotations

import collections
import itertools
import math
from math import copysign
import operator
import zlib
from collections.abc import Iterable, Mapping
from typing import NamedTuple

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
            return f"{text[0]}.{text[1:dot]}{text[dot + 1:]}".rstrip("0.") + _EXPONENT[dot - 1]
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


# Level 1: ~130 MB/s and ~14x on exposition text; level 6 costs 1.6x the CPU for 10% fewer bytes.
GZIP_LEVEL = 1


def gzip_member(data: bytes) -> bytes:
    """One complete gzip member (mtime 0, so equal input gives equal bytes). Members concatenate
    into one valid gzip stream (RFC 1952 2.2; Go's gzip.Reader, which Prometheus uses, reads them
    all), so a scrape can join per-target members compressed when the poll landed."""
    return zlib.compress(data, GZIP_LEVEL, wbits=31) if data else b""


class Rendered(NamedTuple):
    """One piece of exposition text, plain and as a gzip member."""

    plain: bytes
    gz: bytes

    @classmethod
    def of(cls, plain: bytes) -> Rendered:
        return cls(plain, gzip_member(plain))


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


# id(the first sample of a run) -> (that sample, the run's samples, their (family, line) pairs,
# {id(labels): (labels, label names, label text)} of the labels dicts they hold). A run is a stretch
# of consecutive KeptSamples in one call's samples (a port's link/health/info samples, its zero
# error counters): when the next call has the very same objects in a row, their lines are reused
# with one identity check per sample and no formatting, lookups or bookkeeping per sample.
KeptLines = dict[int, tuple[KeptSample, list, list, dict]]
_NO_RUNS: KeptLines = {}


class LineCache:
    """One target's render, kept for its next poll (``render_cached``): the samples (held, so the
    identity of their objects means something next time), where each one's line went (family and
    index in that family's lines), the lines and bytes per family, the ``name{labels} `` prefix of
    the positions whose samples were new (a port's counters, new every poll, under a labels dict
    that is not), where its tail starts (below) and the kept runs for a render that cannot reuse
    positions."""

    __slots__ = ("extra_label", "samples", "families", "index", "prefixes", "lines", "chunks", "tail", "runs")

    def __init__(self, extra_label, samples, families, index, prefixes, lines, chunks, tail, runs):
        self.extra_label: tuple[str, str] | None = extra_label
        self.samples: tuple = samples
        self.families: list[str] = families
        self.index: list[int] = index
        self.prefixes: list[str | None] = prefixes
        self.lines: dict[str, list[str]] = lines
        self.chunks: dict[str, bytes] = chunks
        self.tail: int = tail
        self.runs: KeptLines = runs


# The tail: the last samples (at most this many) whose families have no line before them (an IB
# sweep's durations and totals). Their number may change from poll to poll (a poll that ran
# ibnetdiscover times it too): the tail is rendered whole, the samples before it patched in place.
TAIL_MAX = 64


def _tail_start(families: list[str], index: list[int]) -> int:
    """The first position of the longest tail of at most TAIL_MAX samples with closed families."""
    start = len(families)
    waiting: set[str] = set()  # families seen (walking back) whose first line is further back
    for position in range(len(families) - 1, max(len(families) - TAIL_MAX, 0) - 1, -1):
        if index[position] == 0:
            waiting.discard(families[position])
        else:
            waiting.add(families[position])
        if not waiting:
            start = position
    return start


def render_chunks(samples: Iterable[tuple[str, Mapping[str, str], float]],
                  extra_label: tuple[str, str] | None = None, kept: KeptLines | None = None,
                  kept_out: KeptLines | None = None) -> dict[str, bytes]:
    """Group sample lines by catalog family; raises UnknownMetricError for a name or label set not in the catalog.

    ``extra_label`` (name, value) is added to every sample (the store's ``fabric``). Collectors share
    one labels dict among a port's samples: its rendered label text is computed once per dict (the
    dicts are alive and unchanged for the call, so identity is a safe key). With ``kept_out``, every
    run of consecutive ``KeptSample``s rendered goes into ``kept_out`` (the entry holds the objects,
    so their ids cannot be reused by others while it lives); a run found in ``kept`` (the previous
    call's ``kept_out``, same ``extra_label``) as the very same objects in the same order reuses its
    lines. A run that differs in any object is rendered afresh from that point."""
    lines = _render_lines(samples, extra_label, kept, kept_out, None)
    return {family: "".join(ls).encode() for family, ls in lines.items()}


def render_cached(samples: Iterable[tuple[str, Mapping[str, str], float]], extra_label: tuple[str, str] | None,
                  previous: LineCache | None) -> tuple[dict[str, bytes], LineCache | None]:
    """``render_chunks`` for a target polled again and again: (chunks, the cache for its next poll).

    When this poll has as many samples as the ``previous`` one and every sample that is not the very
    same object lands in the same family, only those samples are formatted: their lines replace
    the old ones at the same places, and a family none of them touched keeps its bytes (an IB
    fabric's link and health families, poll after poll). Otherwise the samples are rendered whole,
    reusing kept runs. A poll without any KeptSample gets no cache: nothing of it would be the same
    objects next time, and holding its samples would only cost memory."""
    samples = tuple(samples)
    if previous is not None and previous.extra_label != extra_label:
        previous = None
    if previous is not None and len(samples) >= previous.tail:
        patched = _patch(samples, previous)
        if patched is not None:
            return patched.chunks, patched
    runs: KeptLines = {}
    families: list[str] = []
    index: list[int] = []
    prefixes: list[str | None] = []
    lines = _render_lines(samples, extra_label, previous.runs if previous is not None else None, runs,
                          (families, index, prefixes))
    chunks = {family: "".join(ls).encode() for family, ls in lines.items()}
    if not runs:
        return chunks, None
    return chunks, LineCache(extra_label, samples, families, index, prefixes, dict(lines), chunks,
                             _tail_start(families, index), runs)


def _patch(samples: tuple, cache: LineCache) -> LineCache | None:
    """Render only the samples before the tail that are not the same objects as at their place last
    time, and the tail; None when one of them belongs to another family than the line it would
    replace, or a tail sample to a family with lines before the tail (a new layout)."""
    old, tail = cache.samples, cache.tail
    families, index, old_lines = cache.families, cache.index, cache.lines
    prefixes = cache.prefixes[:tail]  # a copy: the previous cache stays valid for its own samples
    new_lines: dict[str, list[str]] = {}
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
        family_lines = new_lines.get(family)
        if family_lines is None:
            family_lines = new_lines[family] = old_lines[family].copy()
        family_lines[index[i]] = f"{prefix}{format_value(value)}\n"
    lines = {**old_lines, **new_lines}
    chunks = {**cache.chunks, **{family: "".join(ls).encode() for family, ls in new_lines.items()}}
    new_families, new_index = families, index
    if tail < len(samples) or tail < len(old):
        old_tail = set(families[tail:])
        for family in old_tail:
            del lines[family], chunks[family]
        tail_lines: dict[str, list[str]] = {}
        tail_families, tail_index = [], []
        for name, labels, value in samples[tail:]:
            entry = entries.get(id(labels))
            if entry is None:
                entry = entries[id(labels)] = (labels, *_label_text(labels, extra_label))
            shape = (name, entry[1])
            family = (_SHAPES.get(shape) or _shape(*shape))[0]
            if family in lines:  # it has lines before the tail
                return None
            prefix = f"{name}{{{entry[2]}}} " if entry[2] else f"{name} "
            family_lines = tail_lines.setdefault(family, [])
            tail_families.append(family)
            tail_index.append(len(family_lines))
            prefixes.append(prefix)
            family_lines.append(f"{prefix}{format_value(value)}\n")
        lines.update(tail_lines)
        chunks.update({family: "".join(ls).encode() for family, ls in tail_lines.items()})
        new_families, new_index = families[:tail] + tail_families, index[:tail] + tail_index
    return LineCache(extra_label, samples, new_families, new_index, prefixes, lines, chunks, tail, cache.runs)


def _render_lines(samples: Iterable[tuple[str, Mapping[str, str], float]], extra_label: tuple[str, str] | None,
                  kept: KeptLines | None, kept_out: KeptLines | None,
                  positions: tuple[list, list, list] | None) -> dict[str, list[str]]:
    """The lines of every family (render_chunks); with ``positions`` (three empty lists), also each
    sample's family, its line's index in that family, and the prefix of each sample not kept."""
    lines: collections.defaultdict[str, list[str]] = collections.defaultdict(list)
    shapes = _SHAPES
    rendered: dict[int, tuple[Mapping[str, str], tuple[str, ...], str]] = {}  # id(labels) -> (labels, names, text)
    track = kept_out is not None
    if track and not isinstance(samples, (list, tuple)):
        samples = list(samples)
    kept_get = (kept or _NO_RUNS).get
    kept_type = KeptSample if track else None
    if positions is not None:
        add_family, add_index, add_prefix = (p.append for p in positions)
    run: tuple[list, list, dict] | None = None  # the run of kept samples rendered in this call so far
    items = enumerate(samples)
    for index, sample in items:
        if type(sample) is kept_type:
            hit = kept_get(id(sample))
            if hit is not None and hit[0] is sample:
                objects = hit[1]
                n = len(objects)
                if n == 1 or (index + n <= len(samples)
                              and all(map(operator.is_, samples[index + 1:index + n], objects[1:]))):
                    if run is not None:
                        kept_out[id(run[0][0])] = (run[0][0], *run)
                        run = None
                    if positions is None:
                        for family, line in hit[2]:
                            lines[family].append(line)
                    else:
                        for family, line in hit[2]:
                            family_lines = lines[family]
                            add_family(family)
                            add_index(len(family_lines))
                            add_prefix(None)
                            family_lines.append(line)
                    # their labels dicts (alive: the samples hold them) keep their text for the
                    # samples of this call that share them (a port's counters)
                    rendered.update(hit[3])
                    kept_out[id(sample)] = hit
                    if n > 1:
                        next(itertools.islice(items, n - 1, n - 1), None)  # past the run, in C
                    continue
        name, labels, value = sample
        entry = rendered.get(id(labels))
        if entry is None or entry[0] is not labels:
            entry = rendered[id(labels)] = (labels, *_label_text(labels, extra_label))
        shape = (name, entry[1])
        family = (shapes.get(shape) or _shape(*shape))[0]
        inner = entry[2]
        family_lines = lines[family]
        if positions is None:
            line = f"{name}{{{inner}}} {format_value(value)}\n" if inner else f"{name} {format_value(value)}\n"
        else:
            prefix = f"{name}{{{inner}}} " if inner else f"{name} "
            line = f"{prefix}{format_value(value)}\n"
            add_family(family)
            add_index(len(family_lines))
            add_prefix(prefix if type(sample) is not kept_type else None)
        family_lines.append(line)
        if type(sample) is kept_type:
            if run is None:
                run = ([], [], {})
            run[0].append(sample)
            run[1].append((family, line))
            run[2][id(labels)] = entry
        elif run is not None:
            kept_out[id(run[0][0])] = (run[0][0], *run)
            run = None
    if run is not None:
        kept_out[id(run[0][0])] = (run[0][0], *run)
    return lines


def _label_text(labels: Mapping[str, str], extra_label: tuple[str, str] | None) -> tuple[tuple[str, ...], str]:
    """(label names as given, extra first; the rendered ``k="v",...`` in sorted name order)."""
    if extra_label is not None:
        labels = {extra_label[0]: extra_label[1], **labels}
    # Sorted label names, as prometheus_client writes them.
    text = ",".join([f'{k}="{_escape_label_value(labels[k])}"' for k in sorted(labels)])
    return tuple(labels), text
