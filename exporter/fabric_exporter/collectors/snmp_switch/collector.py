"""snmp_switch's collector: one poll per switch -- the scalars, every selected column walked, the
interface names kept, restarts detected -- and the rows handed to the RowMapper."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, NamedTuple

from ...errors import AuthError, OutputTooLargeError, PollError
from ...samples import KeptSample, LabelSet, PollResult, Sample
from ...transport.snmp import STRING, Varbind
from .. import lldp
from ..base import Collector, ErrorSink
from ..snmp_modules import IF_ALIAS, IF_NAME, IF_NUMBER, IF_OPER_STATUS, MODULES, SYS_UPTIME, Table
from .options import SnmpSwitchOptions, read_options
from .rows import MAX_CACHED_LABELS, RowMapper

OPER_UP = 1
TICKS_WRAP = 1 << 32  # sysUpTime is TimeTicks (hundredths of a second), wraps after ~497 days


@dataclass
class _Labels:
    uptime_ticks: int
    if_number: int | None
    names: dict[int, str]
    aliases: dict[int, str]


class _Walked(NamedTuple):
    """One poll's walks: each table column's varbinds (or its failure), the LLDP columns', the
    ifOperStatus walk when oper_up_only needs it, the failures, and whether the names were loaded."""

    by_column: dict[tuple[int, ...], Any]
    lldp: dict[tuple[int, ...], Any]
    oper: Any
    errors: list[BaseException]
    labels_loaded: bool


def _text(vb: Varbind) -> str:
    if vb.kind == STRING:
        return vb.value.decode("utf-8", errors="replace")
    return str(vb.value)


class SnmpSwitchCollector(Collector):
    name: ClassVar[str] = "snmp_switch"
    transports: ClassVar[tuple[str, ...]] = ("snmp",)

    @classmethod
    def parse_options(cls, raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> SnmpSwitchOptions:
        return read_options(raw, path, err, base_dir=base_dir)

    def __init__(self, ctx: Any):
        super().__init__(ctx)
        self.options: SnmpSwitchOptions = self.options or SnmpSwitchOptions()
        self._session: Any = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._labels: _Labels | None = None
        self._last_uptime: int | None = None
        self._last_poll_monotonic: float | None = None
        #: ifIndex -> its last fabric_roce_switch_if_info
        self._info: dict[int, KeptSample] = {}
        self.tables: list[Table] = [t for m in self.options.modules if m in MODULES for t in MODULES[m].tables]
        self.rows = RowMapper(self.tables)
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
        uptime, if_number = await self._read_scalars(session)
        walk = self._walker(session)
        walked = await self._walk_columns(walk, uptime, if_number)

        # ifIndexes the tables mention but the name cache lacks: refresh once.
        seen_ifindexes: set[int] = set()
        mapped = [self.rows.map_table(table, walked.by_column, seen_ifindexes) for table in self.tables]
        if not walked.labels_loaded and self._labels is not None and \
                not seen_ifindexes <= self._labels.names.keys():
            await self._load_labels(walk, uptime, if_number)
        labels = self._labels
        assert labels is not None
        wanted = self._wanted_interfaces(labels, self._oper_status(session, walked.oper))

        switch = self.host.name if self.host else ""
        switch_labels = self.rows.switch_labels(switch)
        samples: list[Sample] = [Sample("fabric_roce_switch_agent_uptime_seconds", switch_labels, uptime / 100.0)]
        samples += self._info_samples(switch, wanted, labels)
        failed_tables = self.rows.tables_samples(mapped, walked.by_column, wanted, switch, samples, problems)
        failed_tables += self._neighbor_samples(walked.lldp, labels, wanted, switch, samples, problems)
        unknown = seen_ifindexes - labels.names.keys()
        if unknown:
            problems.append(f"rows for ifIndex {', '.join(map(str, sorted(unknown)[:10]))} skipped: "
                            f"no ifName for them")
        if failed_tables == len(self.tables) + len(self.lldp_tables) and walked.errors:
            raise walked.errors[0]
        self.last_varbinds = session.varbinds - before
        samples.append(Sample("fabric_roce_switch_snmp_poll_varbinds", switch_labels, float(self.last_varbinds)))
        samples.append(Sample("fabric_roce_switch_snmp_poll_requests", switch_labels,
                              float(session.requests - requests_before)))
        return PollResult(samples, problems)

    async def _read_scalars(self, session: Any) -> tuple[int, int | None]:
        """sysUpTime.0 and ifNumber.0; an agent restart (uptime back) drops the counters' state and
        the name cache, a changed ifNumber the name cache."""
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
            self.rows.forget_counters()
            self._labels = None
        self._last_uptime, self._last_poll_monotonic = uptime, now
        if self._labels is not None and self._labels.if_number != if_number:
            self._labels = None
        return uptime, if_number

    def _walker(self, session: Any) -> Callable[[tuple[int, ...]], Awaitable[list[Varbind]]]:
        """A walk of one column, at most ``max_concurrent_walks`` at once, its GETBULK pages sized by
        the rows the column had last poll."""
        sem = asyncio.Semaphore(self.options.max_concurrent_walks)

        async def walk(oid: tuple[int, ...]) -> list[Varbind]:
            async with sem:
                result = await session.walk(oid, expected_rows=self._rows.get(oid))
            self._rows[oid] = len(result)
            return result
        return walk

    async def _walk_columns(self, walk: Any, uptime: int, if_number: int | None) -> _Walked:
        """Every column of the selected tables and LLDP MIBs (and ifOperStatus when oper_up_only
        needs it), and the interface names when the cache is empty, in one gather: a cancelled poll
        (deadline) cancels them all. A column's failure is its result; a failure that must fail the
        whole poll (auth, the byte budget, a bug) is raised."""
        columns = [c for t in self.tables for c in t.columns]
        need_oper = self.options.oper_up_only and not any(c.oid == IF_OPER_STATUS for c in columns)
        walks = [walk(c.oid) for c in columns]
        lldp_columns = list(dict.fromkeys(oid for t in self.lldp_tables for oid in t.columns))
        walks += [walk(oid) for oid in lldp_columns]
        if need_oper:
            walks.append(walk(IF_OPER_STATUS))
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
        errors = [r for r in results if isinstance(r, BaseException)]
        for e in errors:
            # a wrong password, or a poll past its byte budget: nothing of it is published
            if isinstance(e, (AuthError, OutputTooLargeError)) or not isinstance(e, Exception):
                raise e
            if not isinstance(e, PollError):
                raise e  # a bug, not a switch problem: let the scheduler count it as internal
        return _Walked(by_column, dict(zip(lldp_columns, results[len(columns):len(columns) + len(lldp_columns)])),
                       results[-1] if need_oper else by_column.get(IF_OPER_STATUS), errors, labels_loaded)

    def _oper_status(self, session: Any, oper_walk: Any) -> dict[int, int] | None:
        """ifIndex -> ifOperStatus when oper_up_only is set (its walk must have worked), else None."""
        if not self.options.oper_up_only:
            return None
        if isinstance(oper_walk, BaseException) or oper_walk is None:
            raise PollError(f"{session.description}: oper_up_only is set but ifOperStatus could not be "
                            f"read: {oper_walk}", reason="partial")
        return {vb.oid[-1]: vb.value for vb in oper_walk if len(vb.oid) == len(IF_OPER_STATUS) + 1}

    def _info_samples(self, switch: str, wanted: dict[int, str], labels: _Labels) -> list[Sample]:
        """fabric_roce_switch_if_info per selected interface, kept while its name and alias stay."""
        if len(self._info) > MAX_CACHED_LABELS:
            self._info.clear()
        out: list[Sample] = []
        for ifindex in sorted(wanted):
            info = self._info.get(ifindex)
            name, alias = wanted[ifindex], labels.aliases.get(ifindex, "")
            if info is None or info[1]["interface"] != name or info[1]["alias"] != alias or \
                    info[1]["switch"] != switch:
                info = self._info[ifindex] = KeptSample(
                    "fabric_roce_switch_if_info",
                    LabelSet({"switch": switch, "interface": name, "ifindex": str(ifindex), "alias": alias}), 1.0)
            out.append(info)
        return out

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
