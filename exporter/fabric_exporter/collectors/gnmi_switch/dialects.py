"""gnmi_switch's dialect table: the paths each switch OS serves and the catalog series its fields
and leaves become. Which field or leaf feeds which metric is the catalog's (RawCounter rows of the
``catalog.gnmi_paths`` containers); here those rows are compiled, once at import, into the lookup
tables the decoding reads (``ContainerTable``)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from ...catalog import gnmi_paths as gp
from ...catalog.spec import CAPTURES, RawCounter
from ...mapping import RawTable
from ...parsers import gnmi as p

# openconfig-interfaces oper-status enum == IF-MIB ifOperStatus codes
OPER_STATUS = {"UP": 1, "DOWN": 2, "TESTING": 3, "UNKNOWN": 4, "DORMANT": 5, "NOT_PRESENT": 6, "LOWER_LAYER_DOWN": 7}
PFCWD_STATUS = {"operational": 0.0, "stormed": 1.0}
# metrics whose raw value is text, an enumeration read through its map (every other value is a number)
TEXT_ENUMS: dict[str, dict[str, float]] = {"fabric_roce_switch_if_oper_status": OPER_STATUS,
                                           "fabric_roce_switch_pfcwd_storm_active": PFCWD_STATUS}
QUEUE_CAST = {"SAI_QUEUE_TYPE_UNICAST": "UC", "SAI_QUEUE_TYPE_MULTICAST": "MC", "SAI_QUEUE_TYPE_ALL": "ALL"}

# how a value is published (ContainerTable.by_name): as it is (times a scale), through an enumeration,
# or as one part of a sum
DIRECT, ENUM, SUM = 0, 1, 2
Labels = tuple[tuple[str, str], ...]  # extra labels, sorted (name, value) pairs


@dataclass(frozen=True)
class ContainerTable:
    """One container's rows for one dialect, compiled into flat tuples for the decoding's loops.

    extras   the extra labels of each group of values (a priority, a region; () for none): a value's
             ``group`` indexes it.
    direct   (field, metric, group) of values published as they are; ``scaled`` (field, metric,
             scale, group) those times a scale.
    sums     (metric, fields, group): several rows of one metric and labels are summed, and the sum
             published only when every part is there (a partial sum would be a made-up value).
    enums    (field, metric, enumeration, group): text values read through their enumeration.
    by_name  field or leaf -> (how, metric, extra labels, scale or enumeration, group).
    """
    extras: tuple[Labels, ...]
    direct: tuple[tuple[str, str, int], ...]
    scaled: tuple[tuple[str, str, float, int], ...]
    sums: tuple[tuple[str, tuple[str, ...], int], ...]
    enums: tuple[tuple[str, str, dict[str, float], int], ...]
    by_name: dict[str, tuple[int, str, Labels, object, int]]

    def sums_of(self, group: int) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return tuple((metric, parts) for metric, parts, g in self.sums if g == group)


def _instances(name: str) -> list[str]:
    """A row's name with its captures filled in: every value below 100 a capture can take (``{p}``: 0-7)."""
    keys = [k for k in CAPTURES if "{" + k + "}" in name]
    choices = [[str(i) for i in range(100) if re.fullmatch(CAPTURES[k][1], str(i))] for k in keys]
    out = []
    for values in itertools.product(*choices):
        text = name
        for k, v in zip(keys, values):
            text = text.replace("{" + k + "}", v)
        out.append(text)
    return out


def compile_container(container: gp.GnmiContainer, dialect: str) -> ContainerTable:
    """The rows of ``container`` that hold for ``dialect``, as the mapping engine matches them."""
    table = RawTable.for_source(container.source)
    slots: dict[tuple[str, Labels], list[tuple[str, RawCounter]]] = {}
    for pattern in table.names():
        for name in _instances(pattern):
            for _order, metric, row, captures in table.matches(name):
                if row.families is None or dialect in row.families:
                    slots.setdefault((metric, tuple(sorted(captures + row.labels))), []).append((name, row))
    extras: dict[Labels, int] = {}
    direct, scaled, sums, enums = [], [], [], []
    by_name: dict[str, tuple[int, str, Labels, object, int]] = {}
    for (metric, extra), named in slots.items():
        group = extras.setdefault(extra, len(extras))
        scales = {row.scale for _n, row in named}
        if len(scales) != 1:
            raise ValueError(f"catalog: {container.source}: the parts of {metric} have different scales")
        scale = scales.pop()
        if metric in TEXT_ENUMS:
            (name, _row), = named
            enums.append((name, metric, TEXT_ENUMS[metric], group))
            by_name[name] = (ENUM, metric, extra, TEXT_ENUMS[metric], group)
        elif len(named) > 1:
            if scale != 1:
                raise ValueError(f"catalog: {container.source}: a summed metric {metric} with a scale")
            sums.append((metric, tuple(n for n, _r in named), group))
            by_name.update((n, (SUM, metric, extra, 1.0, group)) for n, _r in named)
        else:
            (name, _row), = named
            if scale == 1:
                direct.append((name, metric, group))
            else:
                scaled.append((name, metric, scale, group))
            by_name[name] = (DIRECT, metric, extra, scale, group)
    return ContainerTable(tuple(extras), tuple(direct), tuple(scaled), tuple(sums), tuple(enums), by_name)


# -- the dialect table ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class GnmiPath:
    """One subscribed path: ``xpath`` below ``target`` (the prefix's target, SONiC's DB name)."""
    target: str
    xpath: str
    on_change: bool = False  # ON_CHANGE in stream mode (oper status), else SAMPLE


@dataclass(frozen=True)
class Dialect:
    name: str
    paths: dict[str, GnmiPath]  # the ``tables`` option's words -> path
    default_mode: str
    source: str  # what its decoding reports skipped values under
    # SONiC: table word -> its container's table; OpenConfig: record kind (interface, queue ...) -> table
    tables: dict[str, ContainerTable]


def leaf_of(container: gp.GnmiContainer, metric: str) -> str:
    """The one leaf of ``container`` that feeds ``metric`` (a path subscribed to that leaf alone)."""
    names = {row.name for m, row in RawTable.for_source(container.source).rows if m == metric}
    if len(names) != 1:
        raise ValueError(f"catalog: {container.source}: {len(names)} rows of {metric}, expected one")
    return names.pop()


SONIC_CONTAINERS = (gp.SONIC_PORTS, gp.SONIC_QUEUES, gp.SONIC_PFCWD, gp.SONIC_PG_WATERMARKS)
OC_CONTAINERS = (gp.OC_INTERFACE, gp.OC_QUEUE, gp.OC_PRIORITY, gp.OC_PG)

SONIC_PATHS = {c.word: GnmiPath(c.target, c.xpath) for c in SONIC_CONTAINERS}
# read once (and again when a key is unknown): port aliases and queue types
SONIC_NAME_MAPS = (GnmiPath("CONFIG_DB", "PORT"), GnmiPath("COUNTERS_DB", "COUNTERS_QUEUE_NAME_MAP"),
                   GnmiPath("COUNTERS_DB", "COUNTERS_QUEUE_TYPE_MAP"))
OC_PATHS = {
    "interfaces": GnmiPath("", gp.OC_INTERFACE.xpath + "/counters"),
    "oper_status": GnmiPath("", gp.OC_INTERFACE.xpath + "/" + leaf_of(gp.OC_INTERFACE, "fabric_roce_switch_if_oper_status"),
                            on_change=True),
    "queues": GnmiPath("", gp.OC_QUEUE.xpath),
}
CUMULUS_PATHS = {
    **OC_PATHS,
    "priorities": GnmiPath("", gp.OC_PRIORITY.xpath),
    "pg_watermarks": GnmiPath("", gp.OC_PG.xpath + "/" + leaf_of(gp.OC_PG, "fabric_roce_switch_pg_watermark_bytes")),
}


def _tables(containers: tuple[gp.GnmiContainer, ...], dialect: str) -> dict[str, ContainerTable]:
    return {c.word: compile_container(c, dialect) for c in containers}


DIALECTS: dict[str, Dialect] = {
    "sonic": Dialect("sonic", SONIC_PATHS, "poll", p.SOURCE_SONIC, _tables(SONIC_CONTAINERS, "sonic")),
    "openconfig": Dialect("openconfig", OC_PATHS, "stream", p.SOURCE_OPENCONFIG, _tables(OC_CONTAINERS, "openconfig")),
    "cumulus": Dialect("cumulus", CUMULUS_PATHS, "stream", p.SOURCE_OPENCONFIG, _tables(OC_CONTAINERS, "cumulus")),
}
