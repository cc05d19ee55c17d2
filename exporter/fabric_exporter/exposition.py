"""Prometheus text-format rendering of collector samples.

Each snapshot is rendered once, when its poll lands, into per-family chunks of sample lines; a scrape
only joins cached bytes. The output is byte-identical to prometheus_client's for the same samples
(tests/test_exposition.py checks this), at a fraction of its cost per sample.
"""

from __future__ import annotations

import collections
import math
import operator
import zlib
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from prometheus_client.utils import floatToGoString

from .catalog import MetricSpec, family_of
from .samples import KeptSample


def format_value(value: float) -> str:
    # Fast paths: a finite float prints as its repr unless Go (and prometheus_client) would switch
    # it to exponent form (positive, 7+ integer digits); small integers print like repr(float(v)).
    if type(value) is float:
        if -math.inf < value < math.inf:
            text = repr(value)
            if value <= 0 or text.find(".") <= 6:
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
    lines: collections.defaultdict[str, list[str]] = collections.defaultdict(list)
    shapes = _SHAPES
    rendered: dict[int, tuple[Mapping[str, str], tuple[str, ...], str]] = {}  # id(labels) -> (labels, names, text)
    track = kept_out is not None
    if track and not isinstance(samples, (list, tuple)):
        samples = list(samples)
    kept_get = (kept or _NO_RUNS).get
    kept_type = KeptSample if track else None
    skip = 0  # samples before this index were rendered from a reused run
    run: tuple[list, list, dict] | None = None  # the run of kept samples rendered in this call so far
    for index, sample in enumerate(samples):
        if index < skip:
            continue
        if type(sample) is kept_type:
            hit = kept_get(id(sample))
            if hit is not None and hit[0] is sample:
                objects = hit[1]
                end = index + len(objects)
                if len(objects) == 1 or (end <= len(samples)
                                         and all(map(operator.is_, samples[index + 1:end], objects[1:]))):
                    if run is not None:
                        kept_out[id(run[0][0])] = (run[0][0], *run)
                        run = None
                    for family, line in hit[2]:
                        lines[family].append(line)
                    # their labels dicts (alive: the samples hold them) keep their text for the
                    # samples of this call that share them (a port's counters)
                    rendered.update(hit[3])
                    kept_out[id(sample)] = hit
                    skip = end
                    continue
        name, labels, value = sample
        entry = rendered.get(id(labels))
        if entry is None or entry[0] is not labels:
            entry = rendered[id(labels)] = (labels, *_label_text(labels, extra_label))
        shape = (name, entry[1])
        family = (shapes.get(shape) or _shape(*shape))[0]
        inner = entry[2]
        line = f"{name}{{{inner}}} {format_value(value)}\n" if inner else f"{name} {format_value(value)}\n"
        lines[family].append(line)
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
    return {family: "".join(ls).encode() for family, ls in lines.items()}


def _label_text(labels: Mapping[str, str], extra_label: tuple[str, str] | None) -> tuple[tuple[str, ...], str]:
    """(label names as given, extra first; the rendered ``k="v",...`` in sorted name order)."""
    if extra_label is not None:
        labels = {extra_label[0]: extra_label[1], **labels}
    # Sorted label names, as prometheus_client writes them.
    text = ",".join([f'{k}="{_escape_label_value(labels[k])}"' for k in sorted(labels)])
    return tuple(labels), text
