"""Prometheus text-format rendering of collector samples.

Each snapshot is rendered once, when its poll lands, into per-family chunks of sample lines; a scrape
only joins cached bytes. The output is byte-identical to prometheus_client's for the same samples
(tests/unit/serving/test_exposition.py checks this), at a fraction of its cost per sample.
"""

from __future__ import annotations

import collections
import itertools
import logging
import math
import operator
import os
from array import array
from collections.abc import Iterable, Mapping
from math import copysign

from prometheus_client.utils import floatToGoString

from ..catalog import MetricSpec, family_of
from ..samples import KeptSample, LabelSet


log = logging.getLogger("fabric_exporter.exposition")

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
    """One target's render, kept by its TargetRenderer for the next poll: the samples (held, so the
    identity of their objects means something next time), which family each one's line went to and
    its place among that family's lines, and the bytes per family. Lines are not kept one by one: a
    family a poll changes is split out of its bytes again, and a sample whose value moved under the
    same name and labels object gets its old line up to the value (``_Edit.chunks``): no
    ``name{labels} `` text is held per sample (~100 B each: 79 MiB at 40k IB ports). Never changed
    once built: the next poll's cache is a new one."""

    __slots__ = ("extra_label", "samples", "families", "index", "chunks")

    def __init__(self, extra_label, samples, families, index, chunks):
        self.extra_label: tuple[str, str] | None = extra_label
        self.samples: tuple = samples
        self.families: list[str] = families
        self.index: array = index  # unsigned ints: 4 bytes a sample, not a Python int each
        self.chunks: dict[str, bytes] = chunks


def render_chunks(samples: Iterable[tuple[str, Mapping[str, str], float]],
                  extra_label: tuple[str, str] | None = None) -> dict[str, bytes]:
    """Group sample lines by catalog family; raises UnknownMetricError for a name or label set not in the catalog.

    ``extra_label`` (name, value) is added to every sample (the store's ``fabric``). Collectors share
    one labels dict among a port's samples: its rendered label text is computed once per dict (the
    dicts are alive and unchanged for the call, so identity is a safe key)."""
    lines, _kept = _render_lines(samples, extra_label, None)
    return {family: "".join(ls).encode() for family, ls in lines.items()}


class RenderMismatch(AssertionError):
    """FABRIC_VERIFY_RENDER: the incremental render differs from rendering the poll whole."""


def verify_enabled() -> bool:
    """``FABRIC_VERIFY_RENDER=1``: every incremental render is checked against a whole render (tests, debugging)."""
    return os.environ.get("FABRIC_VERIFY_RENDER", "") not in ("", "0")


class TargetRenderer:
    """The renderer of one target, polled again and again: ``render(samples)`` gives the poll's
    chunks, what ``render_chunks`` gives, and keeps what the next poll is patched on (``lines``).

    The previous poll's samples are matched against this poll's in order: a run of samples that
    keep their places (each the very same object, or one that lands in the same family) is patched
    in place — only the samples that are not the very same object are formatted, and a new object
    with the same value keeps its line — and where the runs break (a port came, went or was
    relabelled, a link went down and its port lost series, a sweep timed one tool more), the old
    samples between are removed from their families' lines and the new ones rendered into theirs.
    A family none of this touched keeps its bytes (an IB fabric's link and health families, poll
    after poll). When most of the poll is new, it is rendered whole. A poll without any KeptSample
    keeps nothing: nothing of it would be the same objects next time, and holding its samples
    would only cost memory. A render that raises leaves the renderer on its last good one.

    ``verify`` (by default: FABRIC_VERIFY_RENDER set when the renderer is made) compares every
    render with a whole render: RenderMismatch (logged first) on any difference."""

    __slots__ = ("extra_label", "verify", "lines")

    def __init__(self, extra_label: tuple[str, str] | None = None, *, verify: bool | None = None) -> None:
        self.extra_label = extra_label  # (name, value) added to every sample: the store's ``fabric``
        self.verify = verify_enabled() if verify is None else verify
        self.lines: LineCache | None = None  # the last render, for the next one (None: nothing kept)

    def render(self, samples: Iterable[tuple[str, Mapping[str, str], float]]) -> dict[str, bytes]:
        samples = tuple(samples)
        extra_label, previous = self.extra_label, self.lines
        if previous is None and KeptSample not in map(type, samples):  # the test runs in C
            chunks, lines = render_chunks(samples, extra_label), None
        else:
            # The cyclic GC stays on, though this makes many containers: a large fabric renders on a
            # worker thread (scheduler.SNAPSHOT_IN_THREAD_SAMPLES) while the loop polls on, and a
            # pause would pile both threads' allocations into one young-generation pass that holds
            # the loop for its whole length.
            lines = _patch(samples, previous) if previous is not None else None
            if lines is None:
                families: list[str] = []
                index = array("I")
                rendered, kept = _render_lines(samples, extra_label, (families, index))
                chunks = {family: "".join(ls).encode() for family, ls in rendered.items()}
                lines = LineCache(extra_label, samples, families, index, chunks) if kept else None
            else:
                chunks = lines.chunks
        if self.verify:
            _verify(samples, extra_label, chunks)
        self.lines = lines
        return chunks


def _verify(samples: tuple, extra_label: tuple[str, str] | None, chunks: dict[str, bytes]) -> None:
    whole = render_chunks(samples, extra_label)
    if whole != chunks:
        differ = sorted(f for f in whole.keys() | chunks.keys() if whole.get(f) != chunks.get(f))
        message = (f"incremental render differs from a whole render in {len(differ)} families "
                   f"(e.g. {differ[:3]}); {len(samples)} samples, extra label {extra_label}")
        log.error("FABRIC_VERIFY_RENDER: %s", message)
        raise RenderMismatch(message)


def _split(chunk: bytes | None) -> list[bytes]:
    """A family's bytes as its lines, without their newlines. (A line holds no other newline:
    label values escape it.)"""
    if not chunk:
        return []
    lines = chunk.split(b"\n")
    lines.pop()  # the empty item after the last newline
    return lines


# A poll with more new samples than this share of it is rendered whole.
_FRESH_MAX = 0.5


def _patch(samples: tuple, cache: LineCache) -> LineCache | None:
    """The next poll's cache, built from ``cache`` (left unchanged: it stays valid for its own
    samples); None when more than _FRESH_MAX of the samples have no place in it."""
    steps = _align(samples, cache)
    if steps is None:
        return None
    same_layout = len(steps) == 1 and len(steps[0]) == 4 and steps[0][2] == len(cache.samples) == len(samples)
    edit = _Edit(samples, cache, same_layout)
    for step in steps:
        if len(step) == 4:
            edit.keep_run(*step)
        else:
            edit.replace_break(*step[:4])
    return LineCache(cache.extra_label, samples, edit.families, edit.index, edit.chunks())


class _Edit:
    """What a poll changes in the previous render (``_patch``), gathered step by step in the order
    of _align's steps: the new layout (each sample's family and its line's place there), the old
    lines that go and the new ones that come per family (breaks), and the lines changed in place
    (runs: a new value on the old line, or a new line); ``chunks()`` then applies them to the
    previous render's bytes."""

    __slots__ = ("samples", "cache", "entries", "families", "index", "delta", "removed", "added",
                 "revalued_at", "replaced_at", "replaced", "next_of")

    def __init__(self, samples: tuple, cache: LineCache, same_layout: bool) -> None:
        self.samples, self.cache = samples, cache
        self.entries: dict[int, tuple] = {}  # id(labels) -> (labels, names, text)
        if same_layout:  # every sample in its old place: the old layout
            self.families, self.index = cache.families, cache.index
        else:
            self.families, self.index = [], array("I")
        self.delta: dict[str, int] = {}  # family -> its lines added minus removed so far (walking in order)
        self.removed: dict[str, list[int]] = {}  # family -> the ranks of its old lines that go
        self.added: dict[str, list[tuple[int, bytes]]] = {}  # family -> (rank, line) of new lines
        # the samples changed in place, by new position: those whose old line takes their new value,
        # and those with a new line (arrays and a list, not a tuple each: no GC-tracked object per
        # sample, ~200k of them per poll on a large fabric)
        self.revalued_at = array("I")
        self.replaced_at = array("I")
        self.replaced: list[bytes] = []
        self.next_of: dict[str, tuple[int, int | None]] = {}  # family -> (searched from, its next old line there)

    def keep_run(self, i: int, j: int, length: int, patched: tuple[array, array]) -> None:
        """New samples [i, i + length) in the places of old ones [j, j + length); of the
        ``patched`` positions, the first array's samples (the old one's name and labels object,
        another value) get their value on their old line, the second's a new line."""
        samples, cache, entries = self.samples, self.cache, self.entries
        if self.families is not cache.families:  # a new layout: the run's part of the old one
            run_families = cache.families[j:j + length]
            run_index = cache.index[j:j + length]
            moved = {f: d for f, d in self.delta.items() if d}
            if moved:  # its lines' places, shifted by what came and went before it
                contains = moved.__contains__
                for p in itertools.compress(range(length), map(contains, run_families)):
                    run_index[p] += moved[run_families[p]]
            self.families += run_families
            self.index += run_index
        revalued, rewritten = patched
        self.revalued_at += revalued
        extra_label = cache.extra_label
        replace_at, replace = self.replaced_at.append, self.replaced.append
        for k in rewritten:
            name, labels, value = samples[k]
            entry = entries.get(id(labels))
            if entry is None:
                entry = entries[id(labels)] = (labels, *_label_text(labels, extra_label))
            line = f"{name}{{{entry[2]}}} {format_value(value)}" if entry[2] else f"{name} {format_value(value)}"
            replace_at(k)
            replace(line.encode())

    def replace_break(self, i0: int, i1: int, j0: int, j1: int) -> None:
        """Old samples [j0, j1) go, new samples [i0, i1) come in their place: each new line's rank
        in its family is that of the family's next old line after the break (or the family's
        end), shifted by the lines this poll added and removed there before it."""
        cache, entries, delta = self.cache, self.entries, self.delta
        families, index = cache.families, cache.index
        removed, added, next_of = self.removed, self.added, self.next_of
        for jj in range(j0, j1):
            family = families[jj]
            removed.setdefault(family, []).append(index[jj])
            delta[family] = delta.get(family, 0) - 1
        extra_label, shapes = cache.extra_label, _SHAPES
        new_families, new_index = self.families, self.index
        for sample in self.samples[i0:i1]:
            name, labels, value = sample
            entry = entries.get(id(labels))
            if entry is None:
                entry = entries[id(labels)] = (labels, *_label_text(labels, extra_label))
            shape = (name, entry[1])
            family = (shapes.get(shape) or _shape(*shape))[0]
            searched = next_of.get(family)
            if searched is None or searched[0] > j1 or (searched[1] is not None and searched[1] < j1):
                try:
                    at = families.index(family, j1)
                except ValueError:
                    at = None
                searched = next_of[family] = (j1, at)
            before = index[searched[1]] if searched[1] is not None else _count_lines(cache.chunks.get(family))
            rank = before + delta.get(family, 0)
            delta[family] = delta.get(family, 0) + 1
            line = f"{name}{{{entry[2]}}} {format_value(value)}" if entry[2] else f"{name} {format_value(value)}"
            added.setdefault(family, []).append((rank, line.encode()))
            new_families.append(family)
            new_index.append(rank)

    def chunks(self) -> dict[str, bytes]:
        """The previous render's chunks with the edits applied: a family with lines gone or come is
        spliced, then the lines changed in place are set; a family untouched keeps its very bytes."""
        chunks = dict(self.cache.chunks)
        removed, added = self.removed, self.added
        changed = {family: _splice(_split(chunks.get(family)), removed.get(family), added.get(family))
                   for family in removed.keys() | added.keys()}
        samples, families, index = self.samples, self.families, self.index
        for k in self.revalued_at:
            family = families[k]
            lines = changed.get(family)
            if lines is None:
                lines = changed[family] = _split(chunks[family])
            rank = index[k]
            line = lines[rank]
            # the old line is ``name{labels} value``: a value holds no space (a label value may)
            lines[rank] = line[:line.rindex(b" ") + 1] + format_value(samples[k][2]).encode()
        for k, line in zip(self.replaced_at, self.replaced):
            family = families[k]
            lines = changed.get(family)
            if lines is None:
                lines = changed[family] = _split(chunks[family])
            lines[index[k]] = line
        for family, lines in changed.items():
            if lines:
                chunks[family] = b"\n".join(lines) + b"\n"
            else:
                del chunks[family]
        return chunks


def _splice(lines: list[bytes], gone: list[int] | None, new: list[tuple[int, bytes]] | None) -> list[bytes]:
    """A family's lines without those at the ranks ``gone`` (ascending: in the order of the old
    samples), then with each ``new`` (rank, line) at its rank among the result (ascending)."""
    if gone:
        kept: list[bytes] = []
        start = 0
        for rank in gone:
            kept += lines[start:rank]
            start = rank + 1
        kept += lines[start:]
        lines = kept
    if new:
        merged: list[bytes] = []
        rest = iter(lines)
        for rank, line in new:
            merged += itertools.islice(rest, rank - len(merged))
            merged.append(line)
        merged += rest
        lines = merged
    return lines


def _count_lines(chunk: bytes | None) -> int:
    return chunk.count(b"\n") if chunk else 0


def _align(samples: tuple, cache: LineCache) -> list[tuple] | None:
    """Match this poll's samples to the previous poll's, in order: aligned runs (new start, old
    start, length, (new positions of the samples whose old line takes their new value, new
    positions of those to format whole))
    and breaks (new start, new end, old start, old end, True: the old samples go, the new ones come).
    A sample of a run is the very same object as its old one, or one that lands in the same
    family (formatted again unless its name, labels dict and value are the old one's) — but not a
    kept one under a labels dict the other side has a little further on (ports came or went); a
    break ends at the first new sample that an old one a little further on (_SEARCH) matches:
    the very same object, or the same name under the very same labels dict (a port seen last
    poll). None when more than _FRESH_MAX of the samples are new."""
    old, families = cache.samples, cache.families
    extra_label = cache.extra_label
    n, m = len(samples), len(old)
    shapes = _SHAPES
    entries: dict[int, tuple] = {}  # id(labels) -> (labels, names, text)
    steps: list[tuple] = []
    finder: _Finder | None = None  # built at the first sign of a shift
    fresh, fresh_max = 0, int(n * _FRESH_MAX)
    i = j = 0
    while i < n and j < m:
        offset = j - i
        revalued_at = array("I")  # the new positions of samples of the old one's series, another value
        rewritten_at = array("I")  # and of those with another name or labels object (the same family)
        stop = None
        new_it, old_it = iter(samples), iter(old)
        new_it.__setstate__(i)  # tuple iterators placed at i and j without walking there
        old_it.__setstate__(j)
        for k in itertools.compress(itertools.count(i), map(operator.is_not, new_it, old_it)):
            kj = k + offset
            name, labels, value = samples[k]
            was = old[kj]
            if labels is was[1] and name == was[0]:
                if value == was[2] and (value or copysign(1.0, value) == copysign(1.0, was[2])):
                    continue  # a new object, the same line (a counter that did not move): keep it
                revalued_at.append(k)
                continue
            if labels is not was[1] and type(samples[k]) is KeptSample:
                # a kept series under another labels dict: if either dict comes a little later on
                # the other side, ports came or went here (a shift, not a port relabelled in place)
                if finder is None:
                    finder = _Finder(samples, old)
                if finder.in_old(labels, kj + 1) is not None or finder.in_new(was[1], k + 1) is not None:
                    stop = k
                    break
            entry = entries.get(id(labels))
            if entry is None:
                entry = entries[id(labels)] = (labels, *_label_text(labels, extra_label))
            shape = (name, entry[1])
            if (shapes.get(shape) or _shape(*shape))[0] != families[kj]:
                stop = k
                break
            rewritten_at.append(k)
        length = (stop if stop is not None else i + min(n - i, m - j)) - i
        if length:
            steps.append((i, j, length, (revalued_at, rewritten_at)))
        i, j = i + length, j + length
        if stop is None:
            break
        # a break at (i, j): find where the old samples resume
        if finder is None:
            finder = _Finder(samples, old)
        c, resume = i, m
        while c < n:
            sample = samples[c]
            labels = sample[1]
            at = finder.in_old(labels, j)
            if at is not None:
                was = old[at]
                if sample is was or (sample[0] == was[0] and labels is was[1]):
                    resume = at
                    break
            c += 1
            while c < n and samples[c][1] is labels:
                c += 1
            if fresh + c - i > fresh_max:
                return None
        fresh += c - i
        steps.append((i, c, j, resume, True))
        i, j = c, resume
    if i < n or j < m:
        fresh += n - i
        if fresh > fresh_max:
            return None
        steps.append((i, n, j, m, True))
    return steps


# How far (in samples) a break looks ahead for a labels dict of the other side: a port is ~35
# samples, so some 60 ports; past that, a shift costs formatting, never a wrong line.
_SEARCH = 1 << 11


class _Finder:
    """Where a labels dict is used next on either side, searched in C in a window of _SEARCH
    samples: the ids of the samples' labels dicts, in arrays made for the blocks of _SEARCH
    samples a search touches (8 bytes a sample, no object each; a break costs its neighbourhood,
    not the whole poll). Every labels dict is held by the samples while this is used, so ids are
    unique. A search that found nothing is not repeated for the same dict (a port relabelled in
    place: a dozen kept samples under it)."""

    __slots__ = ("sides",)

    def __init__(self, samples: tuple, old: tuple) -> None:
        # per side: (its samples, id arrays by block number, id -> where last found (-1: nowhere))
        self.sides = ((samples, {}, {}), (old, {}, {}))

    def in_old(self, labels, start: int) -> int | None:
        return self._find(self.sides[1], id(labels), start)

    def in_new(self, labels, start: int) -> int | None:
        return self._find(self.sides[0], id(labels), start)

    @staticmethod
    def _find(side: tuple, key: int, start: int) -> int | None:
        samples, blocks, found = side
        at = found.get(key)
        if at is not None and (at < 0 or at >= start):
            return at if at >= 0 else None
        at = -1
        for block in (start // _SEARCH, start // _SEARCH + 1):
            ids = blocks.get(block)
            if ids is None:
                ids = blocks[block] = array("Q", map(id, map(_LABELS, samples[block * _SEARCH:(block + 1) * _SEARCH])))
            base = block * _SEARCH
            try:
                at = base + ids.index(key, max(start - base, 0), start + _SEARCH - base)
                break
            except ValueError:
                pass
        found[key] = at
        return at if at >= 0 else None


_LABELS = operator.itemgetter(1)


def _render_lines(samples: Iterable[tuple[str, Mapping[str, str], float]], extra_label: tuple[str, str] | None,
                  positions: tuple[list, array] | None) -> tuple[dict[str, list[str]], bool]:
    """The lines of every family, and whether any sample was a KeptSample. With ``positions``
    (families, index: empty), each sample's family and its line's place in that family are appended."""
    lines: collections.defaultdict[str, list[str]] = collections.defaultdict(list)
    shapes = _SHAPES
    rendered: dict[int, tuple[Mapping[str, str], tuple[str, ...], str]] = {}  # id(labels) -> (labels, names, text)
    kept = False
    if positions is not None:
        add_family, add_index = (p.append for p in positions)
    for sample in samples:
        name, labels, value = sample
        entry = rendered.get(id(labels))
        if entry is None or entry[0] is not labels:
            entry = rendered[id(labels)] = (labels, *_label_text(labels, extra_label))
        shape = (name, entry[1])
        family = (shapes.get(shape) or _shape(*shape))[0]
        inner = entry[2]
        target = lines[family]
        if positions is not None:
            add_family(family)
            add_index(len(target))
            if type(sample) is KeptSample:
                kept = True
        target.append(f"{name}{{{inner}}} {format_value(value)}\n" if inner else f"{name} {format_value(value)}\n")
    return lines, kept


def _label_text(labels: Mapping[str, str], extra_label: tuple[str, str] | None) -> tuple[tuple[str, ...], str]:
    """(label names as given, extra first; the rendered ``k="v",...`` in sorted name order)."""
    if type(labels) is LabelSet:
        labels = labels.as_dict()  # reads below as fast as a dict's
    if extra_label is not None:
        labels = {extra_label[0]: extra_label[1], **labels}
    # Sorted label names, as prometheus_client writes them.
    text = ",".join([f'{k}="{_escape_label_value(labels[k])}"' for k in sorted(labels)])
    return tuple(labels), text
