"""The shape of one catalog entry. Kept apart so domain modules import only this."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Literal

MetricType = Literal["counter", "gauge", "histogram", "info"]


#: captures a raw name may hold -> (label, regex): ``{p}`` a priority 0-7, ``{q}`` a queue number,
#: ``{w}`` a queue number of a SONiC watermark column (UC/MC/ALL, up to 4 digits), ``{g}`` a priority group
CAPTURES: dict[str, tuple[str, str]] = {"p": ("priority", "[0-7]"), "q": ("queue", "[0-9]{1,2}"),
                                        "w": ("queue", "[0-9]{1,4}"), "g": ("pg", "[0-9]{1,3}")}


@dataclass(frozen=True)
class RawCounter:
    """One raw source of a metric, declared once (here, in the catalog): collectors build their
    lookup tables from these rows (``fabric_exporter.mapping``), and docs, HELP and the per-vendor
    tables are generated from them.

    name       the raw name as the source prints it (``PortXmitData``, ``rx_prio{p}_pause``); it may
               hold captures (see CAPTURES) that become labels.
    source     which input prints it, in the collector's own vocabulary (``ibqueryerrors --counters``,
               ``ethtool``, ``hw_counters``, an SNMP MIB table); one metric may have a raw name per source.
    width      bits of a fixed-width field that latches at all-ones; None when it does not latch.
    scale      multiplier from the raw unit to the metric's base unit (4: 4-byte words -> bytes).
    reset_bit  the bit that resets this counter, where the device has one (PortCounters CounterSelect).
    vendor     whose driver, OS or MIB prints this name (docs group the per-vendor tables by it).
    families   driver families where the name means what the metric says; None: every family.
    oid        the SNMP column's numeric OID, for SNMP sources.
    labels     labels every value of this name carries, as (name, value) pairs (gNMI: region="headroom").
    shown      what HELP and the docs put before the name, when the module declaring the row says
               (a CLI dialect and its command, gNMI and the schema); else derived (driver, MIB).
    """

    name: str
    source: str
    width: int | None = None
    scale: float = 1
    reset_bit: int | None = None
    vendor: str = ""
    families: frozenset[str] | None = None
    oid: tuple[int, ...] | None = None
    labels: tuple[tuple[str, str], ...] = ()
    shown: str = ""

    @property
    def is_pattern(self) -> bool:
        return "{" in self.name

    def regex(self) -> str:
        """The name as a regular expression with one named group per capture."""
        text = re.escape(self.name)
        for key, (label, rx) in CAPTURES.items():
            text = text.replace(re.escape("{" + key + "}"), f"(?P<{label}>{rx})")
        return text


NIC_SOURCES = ("ethtool", "hw_counters")
MICROSECONDS = 1e-6


GNMI_SOURCE = "gnmi "  # how a gNMI row's source starts (catalog/gnmi_paths.py)


def _shown_under(row: RawCounter) -> str:
    """What HELP puts before a row's name: the NIC driver, the MIB, gNMI and the schema, the CLI
    dialect and command; nothing for the InfiniBand tools' names (they are the IBA field names)."""
    if row.shown:
        return row.shown
    if row.oid is not None:
        return row.source.split()[0]
    if row.source in NIC_SOURCES:
        return row.vendor
    return ""


def raw_text(raw: tuple[RawCounter, ...], summed: bool = True) -> str:
    """The raw-name part of a HELP text, from the rows, in declaration order grouped by where they are
    shown: ``mlx5 a, bnxt_en b / c, IF-MIB x + y, SONiC 'show queue counters' Drop/pkts``. Names of one
    driver or command are alternatives (``/``); columns of one MIB are summed (``+``) when ``summed``
    (a counter), else listed (``,``). Rows in microseconds add ``; microseconds / 1e6``."""
    groups: dict[tuple[str, str], list[RawCounter]] = {}
    for row in raw:  # gNMI rows by container: one container's fields of one metric add up
        key = row.source if row.source.startswith(GNMI_SOURCE) else ""
        groups.setdefault((_shown_under(row), key), []).append(row)
    parts = []
    for (shown, container), rows in groups.items():
        if rows[0].oid is not None:
            joint = " + " if summed else ", "
        elif container and summed and len({(r.labels, r.families) for r in rows}) == 1:
            joint = " + "
        else:
            joint = " / "
        names = joint.join(r.name for r in rows)
        parts.append(f"{shown} {names}" if shown else names)
    text = ", ".join(parts)
    if any(row.scale == MICROSECONDS for row in raw):
        text += "; microseconds / 1e6"
    return text


PREFIX = "fabric_"


@dataclass(frozen=True)
class MetricSpec:
    """One metric family the exporter may emit.

    name       full family name as exposed (counters end in ``_total``, info metrics in ``_info``;
               histograms are named without ``_bucket``/``_sum``/``_count``).
    type       counter | gauge | histogram | info (info is exposed as a gauge of value 1).
    unit       base unit: bytes, seconds, packets, frames, ticks, ratio, bytes_per_second, '' ...
    help       one line; names the original counter, field or OID the value comes from: ``{raw}`` in it
               is replaced by the names of ``raw`` (``raw_text``), so no raw name is typed twice.
    label_sets every allowed set of label names, in exposition order (one per emitting source).
    sources    which collectors emit it (``exporter`` for the daemon's own metrics).
    origin     the raw names (tool fields, OIDs) this metric is built from, for docs; when empty,
               the names of ``raw``.
    raw        the raw counters a collector reads this metric from (see RawCounter).
    """

    name: str
    type: MetricType
    unit: str
    help: str
    label_sets: tuple[tuple[str, ...], ...]
    sources: tuple[str, ...]
    origin: tuple[str, ...] = field(default_factory=tuple)
    buckets: tuple[float, ...] = field(default_factory=tuple)  # histograms only
    raw: tuple[RawCounter, ...] = field(default_factory=tuple)
    # the help as written, before ``{raw}`` is filled in (set here; tests check no raw name is typed in it)
    help_written: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "help_written", self.help)
        if "{raw}" in self.help and self.raw:
            object.__setattr__(self, "help", self.help.replace("{raw}", raw_text(self.raw, self.type == "counter")))
        if self.raw and not self.origin:
            object.__setattr__(self, "origin", tuple(dict.fromkeys(r.name for r in self.raw)))
        problems = []
        if not self.name.startswith(PREFIX):
            problems.append(f"must start with {PREFIX!r}")
        if self.type == "counter" and not self.name.endswith("_total"):
            problems.append("counters end in _total")
        if self.type != "counter" and self.name.endswith("_total"):
            problems.append("only counters end in _total")
        if self.type == "info" and not self.name.endswith("_info"):
            problems.append("info metrics end in _info")
        if self.type == "histogram" and not self.buckets:
            problems.append("histograms need buckets")
        if not self.label_sets:
            problems.append("needs at least one label set (may be empty: ())")
        if not self.help or "\n" in self.help:
            problems.append("help must be one non-empty line")
        if problems:
            raise ValueError(f"catalog entry {self.name}: " + "; ".join(problems))

    def with_rows(self, rows: tuple[RawCounter, ...], collector: str) -> MetricSpec:
        """This metric with more raw rows (read by ``collector``, added to its sources): HELP's ``{raw}``
        and an origin taken from the rows are made again from all of them."""
        derived = tuple(dict.fromkeys(r.name for r in self.raw))
        return dataclasses.replace(
            self, help=self.help_written, raw=self.raw + rows,
            origin=() if self.origin == derived else self.origin,
            sources=self.sources if collector in self.sources else self.sources + (collector,))

    def check_complete(self) -> None:
        """Raise ValueError when HELP still names ``{raw}``: no rows were declared for it, here or
        attached from a dialect (catalog/__init__.py calls this on every metric it registers)."""
        if "{raw}" in self.help:
            raise ValueError(f"catalog entry {self.name}: help names {{raw}} but the metric has no raw rows")

    @property
    def exposed_type(self) -> str:
        """The TYPE line value in the text format."""
        return "gauge" if self.type == "info" else self.type

    def series_names(self) -> tuple[str, ...]:
        """Sample names a collector may emit for this family."""
        if self.type == "histogram":
            return (f"{self.name}_bucket", f"{self.name}_sum", f"{self.name}_count")
        return (self.name,)

    def allows_labels(self, sample_name: str, label_names: tuple[str, ...]) -> bool:
        """True if the label names (in any order) are one of the declared sets (+ ``le`` on buckets)."""
        names = set(label_names)
        if self.type == "histogram" and sample_name.endswith("_bucket"):
            if "le" not in names:
                return False
            names.discard("le")
        return any(names == set(ls) for ls in self.label_sets)
