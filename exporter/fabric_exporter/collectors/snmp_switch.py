"""snmp_switch: RoCE switch counters over SNMP (IF-MIB, PFC and queue MIBs), one poll per switch.

Each poll: one GET (sysUpTime.0, ifNumber.0), then every column of the selected modules walked with
GETBULK, several at once (``max_concurrent_walks``), then rows mapped to catalog samples through
the declarative tables in ``snmp_modules``.

* Interface names (ifName, ifAlias) are walked once and cached; the cache is refreshed when
  sysUpTime goes back (agent restart), ifNumber changes, or a table names an ifIndex it lacks.
* Counter32 columns are extended to 64 bits across polls (a wrap adds 2^32) while the agent stays
  up, so a wrap is never mistaken for a reset. A decrease that cannot be a wrap (the delta would be
  more than half the range) is passed through as the reset it is. An agent restart, seen as
  sysUpTime going back, drops that state.
* A table whose walk fails, or whose columns disagree on their rows, makes the poll partial: the
  problem is reported and the table is never presented as complete. If every table fails the poll
  fails with the first error.
* Modules ``lldp`` (LLDP-MIB) and ``lldp_v2`` (LLDP-V2-MIB) walk the LLDP remote table beside the
  counters: each interface's neighbour (host and port), ``fabric_roce_switch_if_neighbor_info``
  (collectors/lldp.py); the host through the option ``neighbor_name`` (the scheduler's node name).
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from ..errors import AuthError, OutputTooLargeError, PollError
from ..samples import KeptSample, PollResult, Sample
from ..transport.snmp import COUNTER32, DEFAULT_ENGINE, ENGINES, STRING, Varbind
from ..hostnames import NameRule, read_name_rule
from . import lldp
from .base import Collector, ErrorSink
from .options import OptionReader
from .snmp_modules import (
    DEFAULT_MODULES,
    IF_ALIAS,
    IF_NAME,
    IF_NUMBER,
    IF_OPER_STATUS,
    MODULES,
    SYS_UPTIME,
    Column,
    Table,
)

OPER_UP = 1
WRAP32 = 1 << 32
TICKS_WRAP = 1 << 32  # sysUpTime is TimeTicks (hundredths of a second), wraps after ~497 days
#: labels dicts and info samples kept per switch before a cache is started afresh (renames)
MAX_CACHED_LABELS = 1 << 14
_new = tuple.__new__  # a NamedTuple built from a tuple without its Python-level __new__ (per series)
_OID, _KIND, _VALUE = itemgetter(0), itemgetter(1), itemgetter(2)
_INT_ONLY = {int}
_NO_WRAP: tuple[int | None, int] = (None, 0)  # a Counter32 series' wrap state before its first value


def _extend32(series, raw: int) -> int:
    """A Counter32 reading extended past 2**32 (``series.wrap`` = last raw value, offset so far): a
    drop of less than half the range is a wrap and keeps counting up; a larger one is a real reset
    (counters cleared) and shows as one. Both mapping paths (series by series, whole column) use it."""
    last_raw, offset = series.wrap
    if last_raw is not None and raw < last_raw:
        offset = offset + WRAP32 if raw + WRAP32 - last_raw < WRAP32 // 2 else 0
    series.wrap = (raw, offset)
    return raw + offset


@dataclass(frozen=True)
class SnmpSwitchOptions:
    modules: tuple[str, ...] = DEFAULT_MODULES
    max_repetitions: int = 25
    snmp_timeout: float = 2.0
    snmp_retries: int = 2
    max_concurrent_walks: int = 8
    interface_include: re.Pattern | None = None
    interface_exclude: re.Pattern | None = None
    oper_up_only: bool = False
    #: "fast" (SNMPv2c without pysnmp per request) or "pysnmp" (pysnmp for every request)
    snmp_engine: str = DEFAULT_ENGINE
    #: an LLDP neighbour's system name -> the scheduler's node name (neighbor_host); None: as sent
    neighbor_name: NameRule | None = None


@dataclass
class _Labels:
    uptime_ticks: int
    if_number: int | None
    names: dict[int, str]
    aliases: dict[int, str]


def _text(vb: Varbind) -> str:
    if vb.kind == STRING:
        return vb.value.decode("utf-8", errors="replace")
    return str(vb.value)


class SnmpSwitchCollector(Collector):
    name: ClassVar[str] = "snmp_switch"
    transports: ClassVar[tuple[str, ...]] = ("snmp",)

    @classmethod
    def parse_options(cls, raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> SnmpSwitchOptions:
        r = OptionReader(raw, path, err, base_dir)
        opts = SnmpSwitchOptions(
            modules=r.string_list("modules", DEFAULT_MODULES, choices=tuple(MODULES) + tuple(lldp.REM_TABLES)),
            max_repetitions=r.integer("max_repetitions", 25, minimum=1, maximum=200),
            snmp_timeout=r.duration("snmp_timeout", 2.0) or 2.0,
            snmp_retries=r.integer("snmp_retries", 2, minimum=0, maximum=10),
            max_concurrent_walks=r.integer("max_concurrent_walks", 8, minimum=1, maximum=64),
            interface_include=r.regex("interface_include"),
            interface_exclude=r.regex("interface_exclude"),
            oper_up_only=r.boolean("oper_up_only", False),
            snmp_engine=r.string("snmp_engine", DEFAULT_ENGINE, choices=ENGINES) or DEFAULT_ENGINE,
            neighbor_name=read_name_rule(r, "neighbor_name"),
        )
        r.done()
        if not opts.modules:
            err(f"{path}.modules", "needs at least one module")
        return opts

    def __init__(self, ctx: Any):
        super().__init__(ctx)
        self.options: SnmpSwitchOptions = self.options or SnmpSwitchOptions()
        self._session: Any = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._labels: _Labels | None = None
        self._last_uptime: int | None = None
        self._last_poll_monotonic: float | None = None
        #: column oid -> varbind oid -> its series (mapping, labels, Counter32 wrap state, last sample)
        self._series: dict[tuple[int, ...], dict[tuple[int, ...], _Series]] = {}
        #: column oid -> its last poll (_Column); the interface selection of the last poll
        self._columns: dict[tuple[int, ...], _Column] = {}
        self._wanted: dict[int, str] = {}
        self._label_dicts: dict[tuple, dict[str, str]] = {}
        #: one object for equal row indexes, sum keys and columns' row sets (bounded with the series)
        self._shared: dict[Any, Any] = {}
        #: (metric, labels key) -> the last summed sample; ifIndex -> its last fabric_roce_switch_if_info
        self._sums: dict[tuple, KeptSample] = {}
        self._info: dict[int, KeptSample] = {}
        self.tables: list[Table] = [t for m in self.options.modules if m in MODULES for t in MODULES[m].tables]
        self.lldp_tables: list[lldp.RemTable] = [lldp.REM_TABLES[m] for m in self.options.modules
                                                 if m in lldp.REM_TABLES]
        #: rows each column had in the last poll: sizes the next walk's GETBULK pages
        self._rows: dict[tuple[int, ...], int] = {}
        #: varbinds received in the last poll (benchmarks)
        self.last_varbinds = 0

    def _get_session(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session_loop is not loop:
            self._session = self.ctx.snmp()
            self._session_loop = loop
        return self._session

    async def close(self) -> None:
        """Close the session's socket now (a reload retiring this target), not when the GC gets to it."""
        if self._session is not None:
            self._session.close()
            self._session = None

    # -- the poll ----------------------------------------------------------------------------------

    async def poll(self) -> PollResult:
        session = self._get_session()
        before, requests_before = session.varbinds, session.requests
        problems: list[str] = []
        now = time.monotonic()
        scalars = await session.get([SYS_UPTIME, IF_NUMBER])
        uptime_vb = scalars.get(SYS_UPTIME)
        if uptime_vb is None or not isinstance(uptime_vb.value, int):
            raise PollError(f"{session.description}: no sysUpTime.0 (not an SNMP agent we can read?)",
                            reason="partial")
        uptime = uptime_vb.value
        if_number_vb = scalars.get(IF_NUMBER)
        if_number = if_number_vb.value if if_number_vb is not None else None

        if self._restarted(uptime, now):
            self._forget_counters()
            self._labels = None
        self._last_uptime, self._last_poll_monotonic = uptime, now
        if self._labels is not None and self._labels.if_number != if_number:
            self._labels = None

        sem = asyncio.Semaphore(self.options.max_concurrent_walks)

        async def walk(oid: tuple[int, ...]) -> list[Varbind]:
            async with sem:
                result = await session.walk(oid, expected_rows=self._rows.get(oid))
            self._rows[oid] = len(result)
            return result

        columns = [c for t in self.tables for c in t.columns]
        need_oper = self.options.oper_up_only and not any(c.oid == IF_OPER_STATUS for c in columns)
        walks = [walk(c.oid) for c in columns]
        lldp_columns = list(dict.fromkeys(oid for t in self.lldp_tables for oid in t.columns))
        walks += [walk(oid) for oid in lldp_columns]
        if need_oper:
            walks.append(walk(IF_OPER_STATUS))
        # The name walk joins the same gather, so a cancelled poll (deadline) cancels it too.
        labels_loaded = self._labels is None
        if labels_loaded:
            walks.append(self._load_labels(walk, uptime, if_number))
        results = await asyncio.gather(*walks, return_exceptions=True)
        if labels_loaded:
            label_result = results.pop()
            if isinstance(label_result, BaseException):
                raise label_result  # no names, no labels, no samples

        by_column: dict[tuple[int, ...], list[Varbind] | BaseException] = {
            c.oid: r for c, r in zip(columns, results)}
        lldp_walks = dict(zip(lldp_columns, results[len(columns):len(columns) + len(lldp_columns)]))
        oper_walk = results[-1] if need_oper else by_column.get(IF_OPER_STATUS)

        errors = [r for r in results if isinstance(r, BaseException)]
        for e in errors:
            # a wrong password, or a poll past its byte budget: nothing of it is published
            if isinstance(e, (AuthError, OutputTooLargeError)) or not isinstance(e, Exception):
                raise e
            if not isinstance(e, PollError):
                raise e  # a bug, not a switch problem: let the scheduler count it as internal

        # ifIndexes the tables mention but the name cache lacks: refresh once.
        seen_ifindexes: set[int] = set()
        mapped = [self._map_table(table, by_column, seen_ifindexes) for table in self.tables]
        if not labels_loaded and self._labels is not None and not seen_ifindexes <= self._labels.names.keys():
            await self._load_labels(walk, uptime, if_number)
        labels = self._labels
        assert labels is not None

        oper: dict[int, int] | None = None
        if self.options.oper_up_only:
            if isinstance(oper_walk, BaseException) or oper_walk is None:
                raise PollError(f"{session.description}: oper_up_only is set but ifOperStatus could not be "
                                f"read: {oper_walk}", reason="partial")
            oper = {vb.oid[-1]: vb.value for vb in oper_walk if len(vb.oid) == len(IF_OPER_STATUS) + 1}
        wanted = self._wanted_interfaces(labels, oper)

        switch = self.host.name if self.host else ""
        switch_labels = self._label_dicts.get(switch)
        if switch_labels is None:
            switch_labels = self._label_dicts[switch] = {"switch": switch}
        samples: list[Sample] = [Sample("fabric_roce_switch_agent_uptime_seconds", switch_labels, uptime / 100.0)]
        if len(self._info) > MAX_CACHED_LABELS:
            self._info.clear()
        for ifindex in sorted(wanted):
            info = self._info.get(ifindex)
            name, alias = wanted[ifindex], labels.aliases.get(ifindex, "")
            if info is None or info[1]["interface"] != name or info[1]["alias"] != alias or \
                    info[1]["switch"] != switch:
                info = self._info[ifindex] = KeptSample(
                    "fabric_roce_switch_if_info",
                    {"switch": switch, "interface": name, "ifindex": str(ifindex), "alias": alias}, 1.0)
            samples.append(info)
        failed_tables = self._tables_samples(mapped, by_column, wanted, switch, samples, problems)
        failed_tables += self._neighbor_samples(lldp_walks, labels, wanted, switch, samples, problems)
        unknown = seen_ifindexes - labels.names.keys()
        if unknown:
            problems.append(f"rows for ifIndex {', '.join(map(str, sorted(unknown)[:10]))} skipped: "
                            f"no ifName for them")
        if failed_tables == len(self.tables) + len(self.lldp_tables) and errors:
            raise errors[0]
        self.last_varbinds = session.varbinds - before
        samples.append(Sample("fabric_roce_switch_snmp_poll_varbinds", switch_labels, float(self.last_varbinds)))
        samples.append(Sample("fabric_roce_switch_snmp_poll_requests", switch_labels,
                              float(session.requests - requests_before)))
        return PollResult(samples, problems)

    def _neighbor_samples(self, walks: dict[tuple[int, ...], Any], labels: _Labels, wanted: dict[int, str],
                          switch: str, samples: list[Sample], problems: list[str]) -> int:
        """The LLDP neighbour map of every selected LLDP MIB; returns how many MIBs failed. A neighbour
        is kept on the interfaces the filters keep (by name; with oper_up_only, up ones only)."""
        inc, exc = self.options.interface_include, self.options.interface_exclude
        up_names = set(wanted.values()) if self.options.oper_up_only else None

        def keep(name: str) -> bool:
            return ((inc is None or bool(inc.fullmatch(name))) and (exc is None or not exc.fullmatch(name))
                    and (up_names is None or name in up_names))

        failed = 0
        for table in self.lldp_tables:
            failure = next((walks[oid] for oid in table.columns if isinstance(walks[oid], BaseException)), None)
            if failure is not None:
                failed += 1
                problems.append(f"{table.mib} neighbours not published: {failure}")
                continue
            neighbors = lldp.neighbors_from_walks(table, walks, labels.names, problems)
            samples.extend(lldp.neighbor_samples(switch, neighbors, keep, self.options.neighbor_name))
        return failed

    def _restarted(self, uptime: int, now: float) -> bool:
        """sysUpTime went back: a restart, unless it is TimeTicks wrapping after ~497 days."""
        if self._last_uptime is None or uptime >= self._last_uptime:
            return False
        if self._last_poll_monotonic is not None:
            elapsed_ticks = (now - self._last_poll_monotonic) * 100
            wrapped_ticks = uptime + TICKS_WRAP - self._last_uptime
            if self._last_uptime > TICKS_WRAP - 2 * max(elapsed_ticks, 1) and wrapped_ticks <= 2 * elapsed_ticks + 100:
                return False
        return True

    async def _load_labels(self, walk: Any, uptime: int, if_number: int | None) -> None:
        names_vbs, alias_vbs = await asyncio.gather(walk(IF_NAME), walk(IF_ALIAS), return_exceptions=True)
        if isinstance(names_vbs, BaseException):
            raise names_vbs
        names = {vb.oid[-1]: _text(vb) for vb in names_vbs if len(vb.oid) == len(IF_NAME) + 1}
        # ifAlias is optional (some agents do not serve it): names without aliases are still labels.
        aliases = {} if isinstance(alias_vbs, BaseException) else {
            vb.oid[-1]: _text(vb) for vb in alias_vbs if len(vb.oid) == len(IF_ALIAS) + 1}
        self._labels = _Labels(uptime, if_number, names, aliases)

    def _wanted_interfaces(self, labels: _Labels, oper: dict[int, int] | None) -> dict[int, str]:
        inc, exc = self.options.interface_include, self.options.interface_exclude
        wanted = {}
        for ifindex, name in labels.names.items():
            if inc is not None and not inc.fullmatch(name):
                continue
            if exc is not None and exc.fullmatch(name):
                continue
            if oper is not None and oper.get(ifindex) != OPER_UP:
                continue
            wanted[ifindex] = name
        return wanted

    # -- rows to samples ---------------------------------------------------------------------------

    def _series_of(self, table: Table, col: Column, oid: tuple[int, ...], width: int) -> _Series | None:
        """The series ``oid`` is in ``col`` of ``table`` (None: an index of another width), its
        static mapping worked out once: where/split/cast decided, the label values of its index."""
        index = oid[len(col.oid):]
        if len(index) != width:
            return None
        index = self._shared.setdefault(index, index)  # one tuple per row, whatever the column
        pos = table.positions
        metric, cast = col.metric, None
        skip = any(index[pos[k]] != v for k, v in table.where.items())
        if col.split is not None:
            component, choices = col.split
            choice = choices.get(index[pos[component]])
            if choice is None:
                skip = True  # a statistic we do not publish
            else:
                metric, cast = choice
        if table.cast is not None:
            cast = table.cast[1].get(index[pos[table.cast[0]]])
            if cast is None:
                skip = True
        extra: tuple[tuple[str, str], ...] = ()
        if not skip:
            if "priority" in pos:
                extra += (("priority", str(index[pos["priority"]])),)
            if "queue" in pos:
                extra += (("queue", f"{cast or 'Q'}{index[pos['queue']] - table.queue_base}"),)
        assert skip or metric is not None
        return _Series(index, index[pos["ifindex"]], None if skip else metric, extra)

    def _labels_of(self, switch: str, ifname: str, extra: tuple[tuple[str, str], ...]) -> dict[str, str]:
        """One labels dict per series identity, shared by its columns and kept across polls, so the
        renderer formats it once and sees the same dict next poll."""
        key = (ifname, extra)
        labels = self._label_dicts.get(key)
        if labels is None:
            if len(self._label_dicts) > 4 * MAX_CACHED_LABELS:  # interfaces renamed again and again
                self._label_dicts.clear()
            labels = self._label_dicts[key] = {"switch": switch, "interface": ifname, **dict(extra)}
        return labels

    def _sum_key(self, metric: str, ifname: str, extra: tuple[tuple[str, str], ...]) -> tuple:
        """Where a summed metric's series adds in: one tuple, shared by every series summed into it."""
        key = (metric, ifname, extra)
        return self._shared.setdefault(key, key)

    def _shared_set(self, items: frozenset) -> frozenset:
        """One frozenset object for equal ones (the columns of a table share their rows)."""
        return self._shared.setdefault(items, items)

    def _forget_counters(self) -> None:
        """An agent restart: every series' counting starts afresh -- its Counter32 wrap state, its last
        raw value and sample -- while its static mapping (index, metric, labels), which depends on the
        OID alone, is kept: a restart costs one pass over the series, not rebuilding them."""
        for series_of_column in self._series.values():
            for series in series_of_column.values():
                series.wrap, series.raw, series.sample = _NO_WRAP, None, None
        for column in self._columns.values():
            column.values = None

    def _tables_samples(self, mapped: list[tuple[list[_Mapped], list[str]]], by_column: dict[tuple[int, ...], Any],
                        wanted: dict[int, str], switch: str, samples: list[Sample], problems: list[str]) -> int:
        """The samples of every table (``mapped`` by ``_map_table``, in ``self.tables``' order) whose
        walks all succeeded; returns how many tables failed."""
        if wanted != self._wanted:
            self._wanted = wanted  # a new object: the columns' kept samples were made for another selection
        if len(self._sums) > 4 * MAX_CACHED_LABELS:
            self._sums.clear()
        failed_tables = 0
        for table, (columns_of_table, table_problems) in zip(self.tables, mapped):
            failure = next((by_column[c.oid] for c in table.columns if isinstance(by_column[c.oid], BaseException)),
                           None)
            if failure is not None:
                failed_tables += 1
                problems.append(f"table {table.name} not published: {failure}")
                continue
            problems.extend(table_problems)
            samples.extend(self._table_samples(table, columns_of_table, wanted, switch))
        return failed_tables

    def _map_table(self, table: Table, results: dict[tuple[int, ...], Any], seen_ifindexes: set[int]
                   ) -> tuple[list[_Mapped], list[str]]:
        """A table's walked columns, each as its series and varbinds, and the problems of the table's
        shape (bad indexes or types, columns that disagree on their rows). Every row's ifIndex goes
        into ``seen_ifindexes``, also for a table that will not be published (a walk of it failed).

        A column that brings the very OIDs of its last poll (the decoder hands out the same tuples),
        all with integer values, takes its series from then as they are, without a step per varbind."""
        width = len(table.index)
        if len(self._shared) > 8 * MAX_CACHED_LABELS:  # rows that come and go: sharing only, safe to restart
            self._shared.clear()
        columns: list[_Mapped] = []
        bad_index = 0
        for col in table.columns:
            vbs = results.get(col.oid)
            if not isinstance(vbs, list):
                continue
            oids = list(map(_OID, vbs))
            state = self._columns.get(col.oid)
            if state is not None and state.oids == oids and set(map(type, map(_VALUE, vbs))) == _INT_ONLY:
                seen_ifindexes |= state.ifindexes
                columns.append(_Mapped(col, state.series, vbs, state))
                continue
            cache = self._series.get(col.oid)
            if cache is None or len(cache) > 4 * len(vbs) + MAX_CACHED_LABELS:  # rows come and go: bound it
                cache = self._series[col.oid] = {}
            series_list: list[_Series] = []
            kept_vbs: list[Varbind] = []
            bad_before = bad_index
            for vb in vbs:
                oid = vb.oid
                series = cache.get(oid)
                if series is None:
                    series = self._series_of(table, col, oid, width)
                    if series is None:
                        bad_index += 1
                        continue
                    cache[oid] = series
                seen_ifindexes.add(series.ifindex)
                if not isinstance(vb.value, int):
                    bad_index += 1
                    continue
                series_list.append(series)
                kept_vbs.append(vb)
            state = None
            if bad_index == bad_before and vbs:  # every varbind a row: next poll may take it whole
                state = self._columns[col.oid] = _Column(
                    oids, series_list, self._shared_set(frozenset([s.ifindex for s in series_list])),
                    self._shared_set(frozenset([s.index for s in series_list])))
            else:
                self._columns.pop(col.oid, None)
            columns.append(_Mapped(col, series_list, kept_vbs, state))
        problems = []
        if bad_index:
            problems.append(f"table {table.name}: {bad_index} varbinds with an unexpected index or type skipped")
        if len(table.columns) > 1 and len(columns) == len(table.columns):
            # a walk never repeats an OID (snmp_session refuses non-increasing ones): one series a row
            all_rows = set().union(*(m.state.indexes if m.state is not None else {s.index for s in m.series}
                                     for m in columns))
            short = [(m.col.object, len(m.series)) for m in columns if len(m.series) != len(all_rows)]
            if short:
                problems.append(f"table {table.name} incomplete: {len(all_rows)} rows, but "
                                + ", ".join(f"{name} has {n}" for name, n in short))
        return columns, problems

    def _table_samples(self, table: Table, columns: list[_Mapped], wanted: dict[int, str], switch: str
                       ) -> list[Sample]:
        """The samples of a table's mapped rows. A series whose raw value (and kind) did not move
        since the last poll hands out its very sample again (a KeptSample): the store then keeps its
        rendered line instead of formatting it. A column whose values all stayed as they were, under
        the same interface selection, hands out its last samples whole."""
        samples: list[Sample] = []
        summed = table.summed
        # (metric, labels key) -> [sum, parts seen, labels]
        sums: dict[tuple, list] = {}
        for col, series_list, vbs, state in columns:
            values = kinds = None
            if state is not None:
                values, kinds = list(map(_VALUE, vbs)), list(map(_KIND, vbs))
                if state.wanted is self._wanted and values == state.values and kinds == state.kinds:
                    samples += state.samples
                    for (key, labels), value in zip(state.part_keys, state.part_values):
                        acc = sums.get(key)
                        if acc is None:
                            sums[key] = [0.0 + value, 1, labels]
                        else:
                            acc[0] += value
                            acc[1] += 1
                    continue
                if state.whole and state.wanted is self._wanted and state.values is not None and kinds == state.kinds:
                    if COUNTER32 not in kinds:
                        samples += self._moved_column(state, values, col.scale, sums)
                        continue
                    if not state.part_keys and kinds.count(COUNTER32) == len(kinds):
                        samples += self._moved_counter32_column(state, values, col.scale)
                        continue
            col_samples: list[Sample] = []
            append = col_samples.append
            part_keys: list[tuple[tuple, dict[str, str]]] = []
            part_values: list[float] = []
            scale = col.scale
            for series, vb in zip(series_list, vbs):
                metric = series.metric
                if metric is None:
                    continue
                ifname = wanted.get(series.ifindex)
                if ifname is None:
                    continue
                if ifname != series.ifname:
                    series.ifname = ifname
                    series.labels = self._labels_of(switch, ifname, series.extra)
                    series.key = self._sum_key(metric, ifname, series.extra) if metric in summed else None
                    series.sample = None
                raw, kind = vb.value, vb.kind
                sample = series.sample
                if sample is None or raw != series.raw or kind is not series.kind:
                    value = _extend32(series, raw) if kind == COUNTER32 else raw
                    series.raw, series.kind = raw, kind
                    sample = series.sample = _new(KeptSample, (
                        metric, series.labels, value * scale if scale != 1.0 else float(value)))
                if metric in summed:
                    key = series.key
                    part_keys.append((key, series.labels))
                    part_values.append(sample[2])
                    acc = sums.get(key)
                    if acc is None:
                        sums[key] = [0.0 + sample[2], 1, series.labels]
                    else:
                        acc[0] += sample[2]
                        acc[1] += 1
                else:
                    append(sample)
            samples += col_samples
            if state is not None:
                state.values, state.kinds, state.wanted = values, kinds, self._wanted
                state.samples, state.part_keys, state.part_values = col_samples, part_keys, part_values
                # one sample or one part per varbind, in order: the next poll may map it whole
                state.whole = len(col_samples) == len(vbs) or len(part_keys) == len(vbs)
        return self._summed_samples(sums, summed, samples)

    @staticmethod
    def _moved_column(state: _Column, values: list, scale: float, sums: dict[tuple, list]) -> list[Sample]:
        """A column that maps whole (every varbind one published sample or one part of a sum, last
        poll as now, under the same selection and kinds, no Counter32 to extend): its samples from
        the last poll's, one for one -- the very sample where the raw value stayed, a new one with
        the last one's metric and labels where it moved -- without a step through each series.

        The series' own last raw value and sample are left as they were: without Counter32 state a
        sample is a function of its raw value (and labels, which a new selection resets), so a later
        poll mapped series by series still pairs each kept raw value with the right sample."""
        old = state.values
        if state.part_keys:
            part_values = [v * scale for v in values] if scale != 1.0 else list(map(float, values))
            for (key, labels), value in zip(state.part_keys, part_values):
                acc = sums.get(key)
                if acc is None:
                    sums[key] = [0.0 + value, 1, labels]
                else:
                    acc[0] += value
                    acc[1] += 1
            state.values, state.part_values = values, part_values
            return []
        if scale != 1.0:
            col_samples = [s if v == o else _new(KeptSample, (s[0], s[1], v * scale))
                           for s, v, o in zip(state.samples, values, old)]
        else:
            col_samples = [s if v == o else _new(KeptSample, (s[0], s[1], float(v)))
                           for s, v, o in zip(state.samples, values, old)]
        state.values, state.samples = values, col_samples
        return col_samples

    @staticmethod
    def _moved_counter32_column(state: _Column, values: list, scale: float) -> list[Sample]:
        """A column that maps whole (as ``_moved_column``), all Counter32, none of it summed: each
        series extended past 2^32 as series by series, without the checks that whole mapping made
        once (published, same interface, not summed). Its series' wrap state, last raw value and
        sample stay theirs, as when mapped series by series."""
        col_samples: list[Sample] = []
        append = col_samples.append
        for series, raw in zip(state.series, values):
            sample = series.sample
            if sample is None or raw != series.raw or series.kind is not COUNTER32:
                value = _extend32(series, raw)
                series.raw, series.kind = raw, COUNTER32
                sample = series.sample = _new(KeptSample, (
                    series.metric, series.labels, value * scale if scale != 1.0 else float(value)))
            append(sample)
        state.values, state.samples = values, col_samples
        return col_samples

    def _summed_samples(self, sums: dict[tuple, list], summed: dict[str, int], samples: list[Sample]
                        ) -> list[Sample]:
        for key, (total, seen, labels) in sums.items():
            metric = key[0]
            if seen == summed[metric]:
                kept = self._sums.get(key)
                if kept is None or kept[2] != total or kept[1] is not labels:
                    kept = self._sums[key] = _new(KeptSample, (metric, labels, total))
                samples.append(kept)
        return samples


class _Mapped(NamedTuple):
    """A walked column of a table this poll: its series and their varbinds, one for one, and the
    column's state kept for the next poll (None: a varbind of it was no row)."""

    col: Column
    series: list[_Series]
    vbs: list[Varbind]
    state: _Column | None


@dataclass(eq=False, slots=True)
class _Column:
    """A column's last poll: its OIDs and their series, and the samples it made from which raw
    values and kinds under which interface selection (``wanted``: the collector's, by identity)."""

    oids: list[tuple[int, ...]]
    series: list[_Series]
    ifindexes: frozenset[int]
    indexes: frozenset[tuple[int, ...]]
    values: list | None = None
    kinds: list | None = None
    wanted: dict[int, str] | None = None
    samples: list[Sample] = field(default_factory=list)
    #: (sum key, labels) and value of each part the column added to summed metrics, one for one
    part_keys: list[tuple[tuple, dict[str, str]]] = field(default_factory=list)
    part_values: list[float] = field(default_factory=list)
    #: every varbind made one sample (``samples``) or one part of a sum, in order
    whole: bool = False


@dataclass(eq=False, slots=True)
class _Series:
    """One row of one column across polls: its index and static mapping (metric None: a row the
    table's where/split/cast leaves out), the labels it was last published under, the Counter32
    wrap state ((last raw, 2^32 wraps added) while the agent stays up), its last raw value and sample."""

    index: tuple[int, ...]
    ifindex: int
    metric: str | None
    extra: tuple[tuple[str, str], ...]
    ifname: str | None = None
    labels: dict[str, str] | None = None
    wrap: tuple[int | None, int] = _NO_WRAP
    raw: Any = None
    kind: str | None = None
    sample: Sample | None = None
    key: tuple | None = None  # (metric, interface, extra labels): where a summed metric adds it


__all__ = ["SnmpSwitchCollector", "SnmpSwitchOptions"]
