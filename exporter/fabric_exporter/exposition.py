"""Prometheus text-format rendering of collector samples.

Each snapshot is rendered once, when its poll lands, into per-family chunks of sample lines; a scrape
only joins cached bytes. The output is byte-identical to prometheus_client's for the same samples
(tests/test_exposition.py checks this), at a fraction of its cost per sample.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from prometheus_client.utils import floatToGoString

from .catalog import MetricSpec, family_of


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


class UnknownMetric(ValueError):
    pass


# (sample name, label names in the order given) -> (family name, label names sorted). Checking a
# sample against the catalog and sorting its labels is then one dict lookup per sample.
_SHAPES: dict[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...]]] = {}


def _shape(name: str, label_names: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    spec = family_of(name)
    if spec is None:
        raise UnknownMetric(f"{name} is not in the metric catalog")
    if not spec.allows_labels(name, label_names):
        raise UnknownMetric(f"{name}: labels {label_names} not in the catalog's label sets {spec.label_sets}")
    shape = _SHAPES[(name, label_names)] = (spec.name, tuple(sorted(label_names)))
    return shape


def render_chunks(samples: Iterable[tuple[str, Mapping[str, str], float]],
                  extra_label: tuple[str, str] | None = None) -> dict[str, bytes]:
    """Group sample lines by catalog family; raises UnknownMetric for a name or label set not in the catalog.

    ``extra_label`` (name, value) is added to every sample (the store's ``fabric``). Collectors share
    one labels dict among a port's samples: its rendered label text is computed once per dict (the
    dicts are alive and unchanged for the call, so identity is a safe key)."""
    lines: dict[str, list[str]] = {}
    shapes = _SHAPES
    rendered: dict[int, tuple[Mapping[str, str], tuple[str, ...], str]] = {}  # id(labels) -> (labels, names, text)
    for name, labels, value in samples:
        entry = rendered.get(id(labels))
        if entry is None or entry[0] is not labels:
            entry = rendered[id(labels)] = (labels, *_label_text(labels, extra_label))
        key = (name, entry[1])
        family = (shapes.get(key) or _shape(*key))[0]
        inner = entry[2]
        line = f"{name}{{{inner}}} {format_value(value)}\n" if inner else f"{name} {format_value(value)}\n"
        bucket = lines.get(family)
        if bucket is None:
            bucket = lines[family] = []
        bucket.append(line)
    return {family: "".join(ls).encode() for family, ls in lines.items()}


def _label_text(labels: Mapping[str, str], extra_label: tuple[str, str] | None) -> tuple[tuple[str, ...], str]:
    """(label names as given, extra first; the rendered ``k="v",...`` in sorted name order)."""
    if extra_label is not None:
        labels = {extra_label[0]: extra_label[1], **labels}
    # Sorted label names, as prometheus_client writes them.
    text = ",".join([f'{k}="{_escape_label_value(labels[k])}"' for k in sorted(labels)])
    return tuple(labels), text
