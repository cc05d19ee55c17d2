"""snmp_switch's rows to samples: the walked columns of each table mapped to catalog samples, with
each series' static mapping (metric, labels) worked out once and kept across polls, and samples
handed out again (KeptSample) where a raw value did not move."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from ...samples import KeptSample, LabelSet, Sample
from ...transport.snmp import COUNTER32, Varbind
from ..snmp_modules import Column, Table
from .series import NO_WRAP, ColumnState, Mapped, Series, add_parts, extend32, moved_column, moved_counter32_column

#: labels dicts and info samples kept per switch before a cache is started afresh (renames)
MAX_CACHED_LABELS = 1 << 14
_new = tuple.__new__  # a NamedTuple built from a tuple without its Python-level __new__ (per series)
_OID, _KIND, _VALUE = itemgetter(0), itemgetter(1), itemgetter(2)
_INT_ONLY = {int}


class RowMapper:
    """One switch's tables' rows to samples, and the state that lets the next poll reuse this one's
    work: series by column and OID, each column's last poll, shared index tuples and row sets,
    labels dicts, summed samples."""

    def __init__(self, tables: list[Table]) -> None:
        self.tables = tables
        #: column oid -> varbind oid -> its series (mapping, labels, Counter32 wrap state, last sample)
        self._series: dict[tuple[int, ...], dict[tuple[int, ...], Series]] = {}
        #: column oid -> its last poll (ColumnState); the interface selection of the last poll
        self._columns: dict[tuple[int, ...], ColumnState] = {}
        self._wanted: dict[int, str] = {}
        self._label_dicts: dict[tuple, LabelSet] = {}
        #: one object for equal row indexes, sum keys and columns' row sets (bounded with the series)
        self._shared: dict[Any, Any] = {}
        #: (metric, labels key) -> the last summed sample
        self._sums: dict[tuple, KeptSample] = {}

    def switch_labels(self, switch: str) -> LabelSet:
        """The switch-level series' labels, one object per switch name, kept across polls."""
        labels = self._label_dicts.get(switch)
        if labels is None:
            labels = self._label_dicts[switch] = LabelSet({"switch": switch})
        return labels

    def _series_of(self, table: Table, col: Column, oid: tuple[int, ...], width: int) -> Series | None:
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
        return Series(index, index[pos["ifindex"]], None if skip else metric, extra)

    def _labels_of(self, switch: str, ifname: str, extra: tuple[tuple[str, str], ...]) -> LabelSet:
        """One label set per series identity, shared by its columns and kept across polls, so the
        renderer formats it once and sees the same object next poll."""
        key = (ifname, extra)
        labels = self._label_dicts.get(key)
        if labels is None:
            if len(self._label_dicts) > 4 * MAX_CACHED_LABELS:  # interfaces renamed again and again
                self._label_dicts.clear()
            labels = self._label_dicts[key] = LabelSet({"switch": switch, "interface": ifname, **dict(extra)})
        return labels

    def _sum_key(self, metric: str, ifname: str, extra: tuple[tuple[str, str], ...]) -> tuple:
        """Where a summed metric's series adds in: one tuple, shared by every series summed into it."""
        key = (metric, ifname, extra)
        return self._shared.setdefault(key, key)

    def _shared_set(self, items: frozenset) -> frozenset:
        """One frozenset object for equal ones (the columns of a table share their rows)."""
        return self._shared.setdefault(items, items)

    def forget_counters(self) -> None:
        """An agent restart: every series' counting starts afresh -- its Counter32 wrap state, its last
        raw value and sample -- while its static mapping (index, metric, labels), which depends on the
        OID alone, is kept: a restart costs one pass over the series, not rebuilding them."""
        for series_of_column in self._series.values():
            for series in series_of_column.values():
                series.wrap, series.raw, series.sample = NO_WRAP, None, None
        for column in self._columns.values():
            column.values = None

    def tables_samples(self, mapped: list[tuple[list[Mapped], list[str]]], by_column: dict[tuple[int, ...], Any],
                        wanted: dict[int, str], switch: str, samples: list[Sample], problems: list[str]) -> int:
        """The samples of every table (``mapped`` by ``map_table``, in ``self.tables``' order) whose
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

    def map_table(self, table: Table, results: dict[tuple[int, ...], Any], seen_ifindexes: set[int]
                   ) -> tuple[list[Mapped], list[str]]:
        """A table's walked columns, each as its series and varbinds, and the problems of the table's
        shape (bad indexes or types, columns that disagree on their rows). Every row's ifIndex goes
        into ``seen_ifindexes``, also for a table that will not be published (a walk of it failed).

        A column that brings the very OIDs of its last poll (the decoder hands out the same tuples),
        all with integer values, takes its series from then as they are, without a step per varbind."""
        width = len(table.index)
        if len(self._shared) > 8 * MAX_CACHED_LABELS:  # rows that come and go: sharing only, safe to restart
            self._shared.clear()
        columns: list[Mapped] = []
        bad_index = 0
        for col in table.columns:
            vbs = results.get(col.oid)
            if not isinstance(vbs, list):
                continue
            oids = list(map(_OID, vbs))
            state = self._columns.get(col.oid)
            if state is not None and state.oids == oids and set(map(type, map(_VALUE, vbs))) == _INT_ONLY:
                seen_ifindexes |= state.ifindexes
                columns.append(Mapped(col, state.series, vbs, state))
                continue
            cache = self._series.get(col.oid)
            if cache is None or len(cache) > 4 * len(vbs) + MAX_CACHED_LABELS:  # rows come and go: bound it
                cache = self._series[col.oid] = {}
            series_list: list[Series] = []
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
                state = self._columns[col.oid] = ColumnState(
                    oids, series_list, self._shared_set(frozenset([s.ifindex for s in series_list])),
                    self._shared_set(frozenset([s.index for s in series_list])))
            else:
                self._columns.pop(col.oid, None)
            columns.append(Mapped(col, series_list, kept_vbs, state))
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

    def _table_samples(self, table: Table, columns: list[Mapped], wanted: dict[int, str], switch: str
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
                    add_parts(sums, state.part_keys, state.part_values)
                    continue
                if state.whole and state.wanted is self._wanted and state.values is not None and kinds == state.kinds:
                    if COUNTER32 not in kinds:
                        samples += moved_column(state, values, col.scale, sums)
                        continue
                    if not state.part_keys and kinds.count(COUNTER32) == len(kinds):
                        samples += moved_counter32_column(state, values, col.scale)
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
                    value = extend32(series, raw) if kind == COUNTER32 else raw
                    series.raw, series.kind = raw, kind
                    sample = series.sample = _new(KeptSample, (
                        metric, series.labels, value * scale if scale != 1.0 else float(value)))
                if metric in summed:
                    part_keys.append((series.key, series.labels))
                    part_values.append(sample[2])
                else:
                    append(sample)
            add_parts(sums, part_keys, part_values)
            samples += col_samples
            if state is not None:
                state.values, state.kinds, state.wanted = values, kinds, self._wanted
                state.samples, state.part_keys, state.part_values = col_samples, part_keys, part_values
                # one sample or one part per varbind, in order: the next poll may map it whole
                state.whole = len(col_samples) == len(vbs) or len(part_keys) == len(vbs)
        return self._summed_samples(sums, summed, samples)

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

