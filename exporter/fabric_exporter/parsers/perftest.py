"""perftest latency reports (``ib_write_lat``, ``ib_send_lat``, ``ib_read_lat``) -> records.

Two forms, both written by perftest's ``print_report_lat``:

* text: a header
  `` #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]``
  and one data row per message size, columns separated by a mix of spaces and tabs. The row's
  floats are printed with ``%-7.2f``: a value of 7+ characters has no padding left, and some
  versions then glue two columns together (``2465.901216.65``). Every float has exactly two
  decimals, so columns are split on that, not on whitespace. Warnings (``Conflicting CPU frequency
  values detected ...``, PCIe relaxed-ordering notes) may be interleaved when stderr is merged.
* ``--out_json``: ``{"test_info": {...}, "results": {"MsgSize": 2, "n_iterations": 10000,
  "t_min": ..., "percentile_99": ..., "percentile_99.9": ...}}``; with ``--out_json_file=/dev/stdout``
  it lands in the same stream as the text report, before it. perftest before the fix of
  linux-rdma/perftest#216 wrote that object with unquoted keys (not JSON): it is not read, the text
  report beside it is; alone, it is refused with that reason.

Older perftest (2.x and before) prints only ``t_min t_max t_typical`` (3 latency columns), some
versions ``t_min t_max t_typical t_avg t_stdev`` (5): the header names the columns, and a report
carries what was printed -- the missing statistics are None (``has_percentiles`` False), never
estimated. A row inside the table that does not match is skipped and counted (``skipped=``), and so
is a data row outside it (above the header, past the closing rule): it belongs to no table we read.

Values stay in microseconds as printed; the collector converts. perftest sorts the samples, drops
the two largest, and reads min/median/p99/p99.9/max from the sorted array, so
min <= median <= p99 <= p99.9 <= max and min <= avg <= max always hold: a report that breaks
this was mangled (e.g. columns glued in a way we cannot split) and is refused, never guessed.
Pure functions: text in, records out; bad input raises ParseError only.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from ..errors import ParseError
from .guard import parser_entry
from .skipped import SkippedLine, note

#: what this parser's skipped lines are counted under (collectors' parse_sources: skipped.sources_of)
SOURCES = ("perftest",)

_HEADER_FIELDS = ("#bytes", "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]", "t_avg[usec]",
                  "t_stdev[usec]", "99% percentile[usec]", "99.9% percentile[usec]")
# The latency column sets perftest versions print, after #bytes #iterations (the full set first).
_COLUMN_SETS = (_HEADER_FIELDS[2:], _HEADER_FIELDS[2:7], _HEADER_FIELDS[2:5])
_HEADER_RE = re.compile(r"^\s*#bytes\s+#iterations\s+t_min\[(?P<unit>\w+)\]")
_DURATION_HEADER_RE = re.compile(r"^\s*#bytes\s+#iterations\s+t_avg\[")
_ROW_RE = re.compile(r"^\s*(?P<bytes>\d+)\s+(?P<iters>\d+)\s+(?P<rest>(?:\s*\d+\.\d\d)+)\s*$")
_FLOAT_RE = re.compile(r"\d+\.\d\d")
_TITLE_RE = re.compile(r"^\s+(?P<title>[\w ]*Latency Test)\s*$")
_FIELD_RE = re.compile(r"(?P<key>Device|Link type|Transport type)\s*:\s*(?P<value>\S+)")
_WARNING_RE = re.compile(r"(?i)\b(warning|conflicting cpu frequency|cpu frequency is not max)\b")
# `--out_json` of perftest before linux-rdma/perftest#216: `results: {` with unquoted keys, not JSON.
_UNQUOTED_JSON_RE = re.compile(r"(?m)^\s*results\s*:\s*\{")
_MAX_ITERATIONS = 10**12  # far above anything perftest can hold in memory


@dataclass(frozen=True)
class LatencyReport:
    """One data row of a perftest latency report, in microseconds as perftest prints them."""

    message_bytes: int
    iterations: int
    min_us: float
    max_us: float
    typical_us: float  # the median
    avg_us: float | None  # None: this perftest does not print it (older versions)
    stdev_us: float | None
    p99_us: float | None
    p999_us: float | None
    test: str | None = None  # e.g. "RDMA_Write Latency Test" (text form only)
    device: str | None = None
    link_type: str | None = None  # IB | Ethernet (RoCE)
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check(self)

    @property
    def has_percentiles(self) -> bool:
        return self.p99_us is not None and self.p999_us is not None


def _check(r: LatencyReport) -> None:
    values = (r.min_us, r.max_us, r.typical_us, r.avg_us, r.stdev_us, r.p99_us, r.p999_us)
    if not all(isinstance(v, float) and math.isfinite(v) and v >= 0 for v in values[:3]) or \
            not all(v is None or (isinstance(v, float) and math.isfinite(v) and v >= 0) for v in values[3:]):
        raise ParseError(f"perftest report: latency values must be finite and >= 0, got {values}")
    if (r.p99_us is None) != (r.p999_us is None) or (r.avg_us is None) != (r.stdev_us is None):
        raise ParseError("perftest report: percentiles (or avg/stdev) come in pairs")
    if r.iterations < 5 or r.iterations > _MAX_ITERATIONS:
        raise ParseError(f"perftest report: implausible iteration count {r.iterations}")
    if r.message_bytes < 1:
        raise ParseError(f"perftest report: implausible message size {r.message_bytes}")
    order = [v for v in (r.min_us, r.typical_us, r.p99_us, r.p999_us, r.max_us) if v is not None]
    if order != sorted(order):
        raise ParseError("perftest report: statistics out of order (need t_min <= t_typical <= 99% <= 99.9% "
                         f"<= t_max, got {r.min_us}, {r.typical_us}, {r.p99_us}, {r.p999_us}, {r.max_us})")
    if r.avg_us is not None and not (r.min_us <= r.avg_us <= r.max_us):
        raise ParseError(f"perftest report: t_avg {r.avg_us} outside [t_min, t_max]")


@parser_entry
def parse_text(text: str, skipped: list[SkippedLine] | None = None) -> list[LatencyReport]:
    """Every data row of a text latency report (one per message size; one unless ``-a``)."""
    if not isinstance(text, str):
        raise ParseError("perftest report: expected text")
    lines = text.splitlines()
    test = device = link_type = None
    warnings: list[str] = []
    rows: list[LatencyReport] = []
    in_table = False
    columns: tuple[str, ...] = _COLUMN_SETS[0]
    for lineno, line in enumerate(lines, 1):
        if _DURATION_HEADER_RE.match(line):
            raise ParseError(f"perftest report line {lineno}: duration-mode (-D) report has no percentiles; "
                             "run with -n iterations")
        m = _HEADER_RE.match(line)
        if m:
            if m.group("unit") != "usec":
                raise ParseError(f"perftest report line {lineno}: values in {m.group('unit')}, not usec "
                                 "(do not pass -C/--report-cycles)")
            squeezed = re.sub(r"\s+", " ", line).strip()
            for columns in _COLUMN_SETS:  # longest first; --cpu_util adds a column after them
                if squeezed.startswith(" ".join(_HEADER_FIELDS[:2] + columns)):
                    break
            else:
                raise ParseError(f"perftest report line {lineno}: unexpected latency header {line.strip()!r}")
            in_table = True
            continue
        t = _TITLE_RE.match(line)
        if t:
            test = t.group("title").strip()
            continue
        for f in _FIELD_RE.finditer(line):
            key, value = f.group("key"), f.group("value")
            if key == "Device":
                device = value
            elif key == "Link type":
                link_type = value
        if _WARNING_RE.search(line):
            warnings.append(line.strip())
            continue
        if not in_table:
            if _ROW_RE.match(line):
                note(skipped, "perftest", lineno, line)  # a data row above the header or past the closing rule
            continue
        row = _ROW_RE.match(line)
        if row:
            floats = _FLOAT_RE.findall(row.group("rest"))
            if not len(columns) <= len(floats) <= len(columns) + 1:
                raise ParseError(f"perftest report line {lineno}: expected {len(columns)} latency columns, "
                                 f"got {len(floats)}")
            # A column beyond the header's is CPU utilisation (--cpu_util); ignore it.
            got = dict(zip(columns, (float(v) for v in floats)))
            rows.append(LatencyReport(
                message_bytes=int(row.group("bytes")), iterations=int(row.group("iters")),
                min_us=got["t_min[usec]"], max_us=got["t_max[usec]"], typical_us=got["t_typical[usec]"],
                avg_us=got.get("t_avg[usec]"), stdev_us=got.get("t_stdev[usec]"),
                p99_us=got.get("99% percentile[usec]"), p999_us=got.get("99.9% percentile[usec]"),
                test=test, device=device, link_type=link_type))
        elif line.strip().startswith("---"):
            in_table = False  # the closing rule; anything after is not ours
        elif line.strip():
            note(skipped, "perftest", lineno, line)  # inside the table, not a data row
    if not rows:
        raise ParseError("perftest report: no latency data row (header "
                         + ("found" if any(_HEADER_RE.match(x) for x in lines) else "missing") + ")")
    if warnings:
        rows = [_with_warnings(r, tuple(warnings)) for r in rows]
    return rows


def _with_warnings(r: LatencyReport, warnings: tuple[str, ...]) -> LatencyReport:
    return LatencyReport(r.message_bytes, r.iterations, r.min_us, r.max_us, r.typical_us, r.avg_us, r.stdev_us,
                         r.p99_us, r.p999_us, r.test, r.device, r.link_type, warnings)


_JSON_KEYS = ("MsgSize", "n_iterations", "t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99",
              "percentile_99.9")


def _find_json_object(text: str) -> dict | None:
    """The first JSON object that starts at the beginning of a line and holds ``results``."""
    decoder = json.JSONDecoder()
    for m in re.finditer(r"(?m)^\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and "results" in obj:
            return obj
    return None


@parser_entry
def parse_json(text: str) -> LatencyReport:
    """The ``--out_json`` report (the file's content, or a stream that contains it)."""
    if not isinstance(text, str):
        raise ParseError("perftest JSON: expected text")
    obj = _find_json_object(text)
    if obj is None:
        raise ParseError("perftest JSON: no object with \"results\" found")
    results = obj.get("results")
    if not isinstance(results, dict):
        raise ParseError("perftest JSON: \"results\" is not an object")
    missing = [k for k in _JSON_KEYS if k not in results]
    if missing:
        if set(results) <= {"t_avg", "tps_average", "MsgSize", "n_iterations", "avg_lat", "CPU_util"}:
            raise ParseError("perftest JSON: no percentiles (duration mode or --output=latency)")
        raise ParseError(f"perftest JSON: results lack {', '.join(missing)}")
    ints = {}
    for k in ("MsgSize", "n_iterations"):
        v = results[k]
        if not isinstance(v, int) or isinstance(v, bool):
            raise ParseError(f"perftest JSON: {k} must be an integer, got {v!r}")
        ints[k] = v
    floats = {}
    for k in _JSON_KEYS[2:]:
        v = results[k]
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ParseError(f"perftest JSON: {k} must be a number, got {str(v)[:40]!r}")
        try:
            floats[k] = float(v)
        except OverflowError:  # a 309-digit integer: float() cannot hold it
            raise ParseError(f"perftest JSON: {k} is out of range (too many digits)") from None
    info = obj.get("test_info") if isinstance(obj.get("test_info"), dict) else {}

    def info_str(key: str) -> str | None:
        v = info.get(key)
        return v if isinstance(v, str) else None

    return LatencyReport(
        message_bytes=ints["MsgSize"], iterations=ints["n_iterations"],
        min_us=floats["t_min"], max_us=floats["t_max"], typical_us=floats["t_typical"], avg_us=floats["t_avg"],
        stdev_us=floats["t_stdev"], p99_us=floats["percentile_99"], p999_us=floats["percentile_99.9"],
        test=info_str("test"), device=info_str("Device"), link_type=info_str("Link_type"))


@parser_entry
def parse_report(text: str, message_bytes: int | None = None,
                 skipped: list[SkippedLine] | None = None) -> LatencyReport:
    """The one report a probe produced: the JSON object if the stream holds one, else the text row.

    With ``message_bytes`` the row of that size is chosen (and must exist); otherwise exactly one
    row must be present.
    """
    if isinstance(text, str) and re.search(r"(?m)^\{", text) and _find_json_object(text) is not None:
        reports = [parse_json(text)]
    else:
        try:
            reports = parse_text(text, skipped=skipped)
        except ParseError:
            if isinstance(text, str) and _UNQUOTED_JSON_RE.search(text):
                raise ParseError("perftest --out_json: not valid JSON (unquoted keys, as perftest printed it before "
                                 "linux-rdma/perftest#216 was fixed) and no text report beside it; use report: text "
                                 "or a newer perftest") from None
            raise
    if message_bytes is not None:
        reports = [r for r in reports if r.message_bytes == message_bytes]
        if not reports:
            raise ParseError(f"perftest report: no row for message size {message_bytes}")
    if len(reports) != 1:
        raise ParseError(f"perftest report: expected one data row, got {len(reports)}")
    return reports[0]


__all__ = ["LatencyReport", "parse_text", "parse_json", "parse_report"]


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse_text": ("latency/write_lat_ib.txt",
                   "latency/send_lat_roce_cpu_warning.txt",
                   "latency/write_lat_roce_json_stdout.txt",
                   "latency/write_lat_roce_out_json.json"),
    "parse_json": ("latency/write_lat_ib.txt",
                   "latency/send_lat_roce_cpu_warning.txt",
                   "latency/write_lat_roce_json_stdout.txt",
                   "latency/write_lat_roce_out_json.json"),
    "parse_report": ("latency/write_lat_ib.txt",
                     "latency/send_lat_roce_cpu_warning.txt",
                     "latency/write_lat_roce_json_stdout.txt",
                     "latency/write_lat_roce_out_json.json"),
}
