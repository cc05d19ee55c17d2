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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..errors import AuthError, OutputTooLargeError, PollError
from ..samples import PollResult, Sample
from ..transport.snmp import COUNTER32, DEFAULT_ENGINE, ENGINES, STRING, Varbind
from ..hostnames import NameRule, read_name_rule
from . import lldp
from .base import Collector, ErrorSink
from .options import OptionReader
from .snmp_modules import (
    DEFAULT_MODULES,
    IF_ALIAS,
    IF_MIB_IFENTRY,
    IF_NAME,
    IF_NUMBER,
    MODULES,
    SYS_UPTIME,
    Column,
    Table,
)

IF_OPER_STATUS = IF_MIB_IFENTRY + (8,)
OPER_UP = 1
WRAP32 = 1 << 32
TICKS_WRAP = 1 << 32  # sysUpTime is TimeTicks (hundredths of a second), wraps after ~497 days


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
        # (column oid, index) -> (last raw Counter32 value, accumulated wraps * 2^32)
        self._wraps: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, int]] = {}
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
            self._wraps.clear()
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
        seen_ifindexes = self._ifindexes_in(by_column)
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
        samples: list[Sample] = [
            Sample("fabric_roce_switch_agent_uptime_seconds", {"switch": switch}, uptime / 100.0)]
        for ifindex in sorted(wanted):
            samples.append(Sample("fabric_roce_switch_if_info",
                                  {"switch": switch, "interface": wanted[ifindex], "ifindex": str(ifindex),
                                   "alias": labels.aliases.get(ifindex, "")}, 1.0))
        failed_tables = 0
        for table in self.tables:
            table_results = {c.oid: by_column[c.oid] for c in table.columns}
            failure = next((r for r in table_results.values() if isinstance(r, BaseException)), None)
            if failure is not None:
                failed_tables += 1
                problems.append(f"table {table.name} not published: {failure}")
                continue
            samples.extend(self._table_samples(table, table_results, wanted, switch, problems))  # type: ignore[arg-type]
        failed_tables += self._neighbor_samples(lldp_walks, labels, wanted, switch, samples, problems)
        unknown = seen_ifindexes - labels.names.keys()
        if unknown:
            problems.append(f"rows for ifIndex {', '.join(map(str, sorted(unknown)[:10]))} skipped: "
                            f"no ifName for them")
        if failed_tables == len(self.tables) + len(self.lldp_tables) and errors:
            raise errors[0]
        self.last_varbinds = session.varbinds - before
        samples.append(Sample("fabric_roce_switch_snmp_poll_varbinds", {"switch": switch},
                              float(self.last_varbinds)))
        samples.append(Sample("fabric_roce_switch_snmp_poll_requests", {"switch": switch},
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

    def _ifindexes_in(self, by_column: dict[tuple[int, ...], Any]) -> set[int]:
        seen: set[int] = set()
        for table in self.tables:
            pos = table.index.index("ifindex")
            for col in table.columns:
                vbs = by_column.get(col.oid)
                if isinstance(vbs, list):
                    n = len(col.oid)
                    seen.update(vb.oid[n + pos] for vb in vbs if len(vb.oid) == n + len(table.index))
        return seen

    # -- rows to samples ---------------------------------------------------------------------------

    def _value(self, col: Column, vb: Varbind, index: tuple[int, ...]) -> float:
        value = vb.value
        if vb.kind == COUNTER32:
            key = (col.oid, index)
            prev = self._wraps.get(key)
            offset = 0
            if prev is not None:
                last_raw, offset = prev
                if value < last_raw:
                    if value + WRAP32 - last_raw < WRAP32 // 2:
                        offset += WRAP32  # a wrap: keep counting up
                    else:
                        offset = 0  # a real reset (counters cleared): let it show as one
            self._wraps[key] = (value, offset)
            value += offset
        return value * col.scale if col.scale != 1.0 else float(value)

    def _table_samples(self, table: Table, results: dict[tuple[int, ...], list[Varbind]], wanted: dict[int, str],
                       switch: str, problems: list[str]) -> list[Sample]:
        width = len(table.index)
        pos = {name: i for i, name in enumerate(table.index)}
        rows_by_column: dict[tuple[int, ...], dict[tuple[int, ...], Varbind]] = {}
        bad_index = 0
        for col in table.columns:
            n = len(col.oid)
            rows = {}
            for vb in results[col.oid]:
                index = vb.oid[n:]
                if len(index) != width or not isinstance(vb.value, int):
                    bad_index += 1
                    continue
                rows[index] = vb
            rows_by_column[col.oid] = rows
        if bad_index:
            problems.append(f"table {table.name}: {bad_index} varbinds with an unexpected index or type skipped")
        all_rows = set().union(*(r.keys() for r in rows_by_column.values())) if rows_by_column else set()
        if len(table.columns) > 1:
            short = [(c.object, len(rows_by_column[c.oid])) for c in table.columns
                     if len(rows_by_column[c.oid]) != len(all_rows)]
            if short:
                problems.append(f"table {table.name} incomplete: {len(all_rows)} rows, but "
                                + ", ".join(f"{name} has {n}" for name, n in short))

        samples: list[Sample] = []
        # metric -> labels key -> (sum, parts seen, parts expected)
        sums: dict[tuple[str, tuple[tuple[str, str], ...]], list[float]] = {}
        parts_per_metric: dict[str, int] = {}
        for col in table.columns:
            if col.metric:
                parts_per_metric[col.metric] = parts_per_metric.get(col.metric, 0) + 1
        for col in table.columns:
            for index, vb in rows_by_column[col.oid].items():
                if any(index[pos[k]] != v for k, v in table.where.items()):
                    continue
                ifname = wanted.get(index[pos["ifindex"]])
                if ifname is None:
                    continue
                metric, cast = col.metric, None
                if col.split is not None:
                    component, choices = col.split
                    choice = choices.get(index[pos[component]])
                    if choice is None:
                        continue  # a statistic we do not publish
                    metric, cast = choice
                if table.cast is not None:
                    cast = table.cast[1].get(index[pos[table.cast[0]]])
                    if cast is None:
                        continue
                labels = {"switch": switch, "interface": ifname}
                if "priority" in pos:
                    labels["priority"] = str(index[pos["priority"]])
                if "queue" in pos:
                    labels["queue"] = f"{cast or 'Q'}{index[pos['queue']] - table.queue_base}"
                value = self._value(col, vb, index)
                assert metric is not None
                if parts_per_metric.get(metric, 1) > 1:
                    key = (metric, tuple(labels.items()))
                    acc = sums.setdefault(key, [0.0, 0])
                    acc[0] += value
                    acc[1] += 1
                else:
                    samples.append(Sample(metric, labels, value))
        for (metric, label_items), (total, seen) in sums.items():
            if seen == parts_per_metric[metric]:
                samples.append(Sample(metric, dict(label_items), total))
        return samples


__all__ = ["SnmpSwitchCollector", "SnmpSwitchOptions"]
