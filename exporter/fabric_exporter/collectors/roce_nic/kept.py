"""What a host's collector keeps from poll to poll, so a poll pays only for what moved (issue 27).

- Each port's labels dicts live as long as the port does (same host label, device, port, netdev,
  driver), and each mapped counter's last sample with them: a counter whose raw value did not move
  hands out its very sample again, a ``KeptSample``, and the store keeps its rendered line
  (exposition.render_cached) instead of formatting it. A moved counter gets a new KeptSample under
  the same labels dict (its line is then formatted from the kept ``name{labels}`` prefix).
- A section of the dump (one port's ``hw_counters``, one netdev's ``ethtool -S``) whose text is the
  same as last poll's is not parsed again: its parse (and the lines it skipped) is reused.

Both are pure memos of pure functions: the published samples are exactly those of
``ports.result_from_dump`` (tests/roce_nic/test_kept_samples.py renders both over many polls of
random moves). One object per collector (one host); polls of a host never overlap.
"""

from __future__ import annotations

import threading
from operator import itemgetter

from ...samples import KeptSample, Sample
from .mapping import CounterMapper

_new = tuple.__new__


class _SourceMemo:
    """One source's (hw_counters or ethtool) mapped samples of one port."""

    __slots__ = ("names", "family", "steps", "values_of", "values", "samples", "unknown")

    def __init__(self, names: tuple[str, ...], family: str | None, mapper: CounterMapper,
                 labels_for) -> None:
        plan, unknown = mapper.plan(names, family)
        self.names, self.family, self.unknown = names, family, unknown
        # (metric, labels dict, scale) per step; the raw names read in one C call
        self.steps = tuple((metric, labels_for(extra), scale) for _name, metric, extra, scale in plan)
        raw = [name for name, _m, _e, _s in plan]
        self.values_of = itemgetter(*raw) if len(raw) > 1 else (lambda t, n=raw[0]: (t[n],)) if raw \
            else (lambda t: ())
        self.values: tuple | None = None
        self.samples: list[Sample] = []

    def samples_for(self, table: dict[str, int]) -> list[Sample]:
        values = self.values_of(table)
        old = self.values
        if values == old:
            return self.samples
        if old is None:
            samples = [_new(KeptSample, (metric, labels, value if scale == 1.0 else value * scale))
                       for value, (metric, labels, scale) in zip(values, self.steps)]
        else:
            samples = [sample if value == was else
                       _new(KeptSample, (metric, labels, value if scale == 1.0 else value * scale))
                       for sample, value, was, (metric, labels, scale) in zip(self.samples, values, old, self.steps)]
        self.values, self.samples = values, samples
        return samples


class _PortMemo:
    __slots__ = ("base", "labels_of", "info", "active", "sources")

    def __init__(self, base: dict[str, str], driver: str | None) -> None:
        self.base = base
        self.labels_of: dict[tuple, dict[str, str]] = {}
        self.info = _new(KeptSample, ("fabric_roce_nic_port_info", {**base, "driver": driver}, 1)) if driver else None
        self.active: dict[bool, KeptSample] = {}
        self.sources: dict[str, _SourceMemo] = {}

    def labels_for(self, extra: tuple[tuple[str, str], ...]) -> dict[str, str]:
        if not extra:
            return self.base
        labels = self.labels_of.get(extra)
        if labels is None:
            labels = self.labels_of[extra] = {**self.base, **dict(extra)}
        return labels

    def active_sample(self, active: bool) -> KeptSample:
        sample = self.active.get(active)
        if sample is None:
            sample = self.active[active] = _new(KeptSample, ("fabric_roce_nic_port_active", self.base,
                                                             1 if active else 0))
        return sample

    def mapped(self, source: str, mapper: CounterMapper, table: dict[str, int], family: str | None
               ) -> tuple[list[Sample], tuple[str, ...]]:
        """The mapped samples of one source's table, and the names no row reads."""
        names = tuple(table)
        memo = self.sources.get(source)
        if memo is None or memo.names != names or memo.family != family:
            memo = self.sources[source] = _SourceMemo(names, family, mapper, self.labels_for)
        return memo.samples_for(table), memo.unknown


class KeptPorts:
    """The ports of one host, kept from its last poll (ports not seen in a poll are forgotten)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._ports: dict[tuple, _PortMemo] = {}
        self._seen: dict[tuple, _PortMemo] = {}
        # section key -> (its text, its parse, the lines that parse skipped)
        self._parsed: dict[tuple, tuple[str, object, list]] = {}
        self._parsed_now: dict[tuple, tuple[str, object, list]] = {}

    def start(self) -> None:
        self._seen = {}
        self._parsed_now = {}

    def finish(self) -> None:
        """End of a poll that published: keep only what it used (bounded by the host's ports)."""
        self._ports, self._seen = self._seen, {}
        self._parsed, self._parsed_now = self._parsed_now, {}

    def port(self, host: str, device: str, port: int, netdev: str | None, driver: str | None) -> _PortMemo:
        key = (host, device, port, netdev, driver)
        memo = self._seen.get(key) or self._ports.get(key)
        if memo is None:
            memo = _PortMemo({"host": host, "device": device, "port": str(port), "netdev": netdev or ""}, driver)
        self._seen[key] = memo
        return memo

    def parse(self, key: tuple, parse, text: str, skipped: list | None):
        """``parse(text, skipped=skipped)``, or last poll's result when ``text`` is the same."""
        last = self._parsed.get(key)
        if last is not None and last[0] == text:
            if skipped is not None:
                skipped.extend(last[2])
            self._parsed_now[key] = last
            return last[1]
        mine: list = []
        result = parse(text, skipped=mine)
        if skipped is not None:
            skipped.extend(mine)
        self._parsed_now[key] = (text, result, mine)
        return result
