"""Prometheus HTTP API answers -> typed series, checked for shape before anything uses them (pure).

Every answer comes from outside: a wrong shape (a list where an object is due, no ``data``, a string
``result``, a value ``"abc"``, a label that is not a string) is a ``PayloadError`` naming where and
what, never a KeyError/TypeError deep in the report. Non-finite sample values (NaN, ±Inf: a quantile
of no data, a ratio over zero) are valid answers but no figure can use them: they are left out (gaps)
and counted, so the report can say how many.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class PayloadError(ValueError):
    """An answer whose shape is not what Prometheus's API documents."""


class ErrorAnswer(PayloadError):
    """A well-formed answer with ``status: error`` (Prometheus's own words in the message)."""


@dataclass(frozen=True)
class Series:
    labels: dict
    samples: list[tuple[float, float]]


@dataclass
class Parsed:
    series: list[Series]
    non_finite: int = 0  # samples left out because their value was NaN or ±Inf


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def _expect(value, kind: type, where: str):
    if not isinstance(value, kind) or isinstance(value, bool):
        wanted = "an object" if kind is dict else "a list" if kind is list else "a string"
        raise PayloadError(f"{where} is {_kind(value)}, expected {wanted}")
    return value


def data_of(payload) -> dict:
    """The ``data`` object of a successful answer (an error answer raises with Prometheus's words)."""
    _expect(payload, dict, "the answer")
    status = payload.get("status")
    if status != "success":
        if status == "error":
            detail = " ".join(str(payload.get(k, ""))[:500] for k in ("errorType", "error")).strip()
            raise ErrorAnswer(detail or "no detail")
        raise PayloadError(f"status is {str(status)[:100]!r}, expected 'success' or 'error'")
    if "data" not in payload:
        raise PayloadError("the answer has no 'data'")
    return _expect(payload["data"], dict, "data")


def _number(text, where: str) -> float:
    """A sample value or timestamp: Prometheus writes values as strings, timestamps as numbers."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise PayloadError(f"{where} is {_kind(text)}, expected a number")
    try:
        return float(text)
    except (ValueError, OverflowError):
        raise PayloadError(f"{where} {str(text)[:40]!r} is not a number") from None


def _labels(metric, where: str) -> dict:
    _expect(metric, dict, where)
    for k, v in metric.items():
        _expect(v, str, f"{where}[{k[:60]!r}]")
    return metric


def _sample(pair, where: str) -> tuple[float, float]:
    if not isinstance(pair, list) or len(pair) != 2:
        raise PayloadError(f"{where} is {_kind(pair)}{' of ' + str(len(pair)) if isinstance(pair, list) else ''}, "
                           "expected a [timestamp, value] pair")
    t = _number(pair[0], f"{where} timestamp")
    if not math.isfinite(t):
        raise PayloadError(f"{where} timestamp {pair[0]!r} is not finite")
    return t, _number(pair[1], f"{where} value")


def instant(data: dict) -> Parsed:
    """``/api/v1/query``: a vector (one sample per series) or a scalar. A series whose value is not
    finite is left out whole (a total cannot use it)."""
    kind = data.get("resultType")
    result = data.get("result")
    if kind == "scalar":
        t, v = _sample(result, "data.result")
        return Parsed([Series({}, [(t, v)])]) if math.isfinite(v) else Parsed([], 1)
    if kind != "vector":
        raise PayloadError(f"data.resultType is {str(kind)[:40]!r}, expected 'vector' or 'scalar' for an instant query")
    out = Parsed([])
    for i, r in enumerate(_expect(result, list, "data.result")):
        where = f"data.result[{i}]"
        _expect(r, dict, where)
        labels = _labels(r.get("metric"), f"{where}.metric")
        t, v = _sample(r.get("value"), f"{where}.value")
        if math.isfinite(v):
            out.series.append(Series(labels, [(t, v)]))
        else:
            out.non_finite += 1
    return out


def range_(data: dict) -> Parsed:
    """``/api/v1/query_range``: a matrix; non-finite samples become gaps."""
    kind = data.get("resultType")
    if kind != "matrix":
        raise PayloadError(f"data.resultType is {str(kind)[:40]!r}, expected 'matrix' for a range query")
    out = Parsed([])
    for i, r in enumerate(_expect(data.get("result"), list, "data.result")):
        where = f"data.result[{i}]"
        _expect(r, dict, where)
        labels = _labels(r.get("metric"), f"{where}.metric")
        samples = []
        for j, pair in enumerate(_expect(r.get("values"), list, f"{where}.values")):
            t, v = _sample(pair, f"{where}.values[{j}]")
            if math.isfinite(v):
                samples.append((t, v))
            else:
                out.non_finite += 1
        out.series.append(Series(labels, samples))
    return out


def rule_groups(data: dict) -> list[dict]:
    """``/api/v1/rules``: the groups, each with a string name and a finite, positive interval."""
    groups = _expect(data.get("groups", []), list, "data.groups")
    for i, g in enumerate(groups):
        _expect(g, dict, f"data.groups[{i}]")
        _expect(g.get("name"), str, f"data.groups[{i}].name")
        if "interval" in g:
            interval = _number(g["interval"], f"data.groups[{i}].interval")
            if not (math.isfinite(interval) and interval > 0):
                raise PayloadError(f"data.groups[{i}].interval {g['interval']!r} is not a positive number of seconds")
    return groups
