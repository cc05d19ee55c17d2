"""The collector's per-poll reuse (the parser's memo of last sweep's port lines, the per-port and
per-node sample memos, the reuse of an idle port's counter samples) against the same collector with
every memo emptied before each poll: the same tool outputs must give the same samples, in the same
order, through steady polls, a counter that moved, a node renamed in the node name map, a link
taken down (the layout changes, the fabric is rediscovered) and brought back.

The tool runs are recorded from a live ibsim fabric while the first collector polls, then replayed
in the same order to the second one (ibsim is not deterministic between two sweeps)."""

from __future__ import annotations

import os

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import ib_queryerrors

from tests.harness.infiniband import CollectorHarness, group_for, needs_ibsim

pytestmark = needs_ibsim


class _Recorder:
    def __init__(self, runner_factory):
        self._runner = runner_factory
        self.runs: list[tuple[list[str], object]] = []

    async def run(self, argv, *, timeout, stdin=None):
        result = await self._runner().run(argv, timeout=timeout, stdin=stdin)
        self.runs.append((list(argv), result))
        return result


class _Replayer:
    """The recorded runs of each command line, in the order they were made (the two sweeps run side
    by side, so the order between command lines is not fixed); one more than recorded fails."""

    def __init__(self, runs, runner_factory):
        self._runs: dict[tuple[str, ...], list] = {}
        for argv, result in runs:
            self._runs.setdefault(_without_cache(argv), []).append(result)
        self._runner = runner_factory

    async def run(self, argv, *, timeout, stdin=None):
        if "rm" in argv:  # close() removing the discovery cache
            return await self._runner().run(argv, timeout=timeout, stdin=stdin)
        return self._runs[_without_cache(argv)].pop(0)

    def left(self) -> int:
        return sum(len(v) for v in self._runs.values())


def _without_cache(argv) -> tuple[str, ...]:
    # the discovery cache's path names the process and the collector: the same file for both runs
    return tuple(a for a in argv if "ibnetdiscover-cache" not in a)


def _forget_memos(collector) -> None:
    state = collector.state
    state.port_static = {}
    state.node_static = {}
    state.counter_lines = ib_queryerrors.PortLineMemo()
    state.error_lines = ib_queryerrors.PortLineMemo()


def _samples(result):
    # the poll's own timings and the wall clock of its discovery are not the fabric's data
    return [(s.name, s.labels, s.value) for s in result.samples
            if s.name not in ("fabric_ib_sweep_duration_seconds", "fabric_ib_topology_last_refresh_timestamp_seconds")]


def test_reused_samples_equal_samples_built_from_scratch(fabric, tmp_path):
    name_map = tmp_path / "node-name-map"
    name_map.write_text('0x0002c90300a10000 "leaf-one"\n')
    options = {"env": fabric.env(), "node_name_map": str(name_map)}
    fast = CollectorHarness(group_for(options))
    recorder = _Recorder(fast.collector.tools._runner)
    fast.collector.tools._runner = lambda: recorder
    polls = []
    unlinked = False

    def poll(what):
        result = fast.poll()
        polls.append((what, result))
        return result

    try:
        for _ in range(3):
            poll("steady")
        fabric.set_counter("leaf-02", 4, "SymbolErrorCounter", 3)
        fabric.set_counter("gpu-001", 1, "PortXmitData", 5_000_000, extended=True)
        moved = poll("a counter moved")
        poll("steady after the move")
        name_map.write_text('0x0002c90300a10000 "leaf-one"\n0x0002c90300a10100 "leaf-two"\n')
        os.utime(name_map, (name_map.stat().st_atime, name_map.stat().st_mtime + 10))
        renamed = poll("a node renamed in the node name map")
        fabric.unlink("leaf-01", 3)
        unlinked = True
        down = poll("link down: layout changed")
        poll("rediscovered")
        fabric.relink("leaf-01", 3)
        unlinked = False
        poll("link back")
        poll("rediscovered again")
        poll("steady at the end")
    finally:
        if unlinked:
            fabric.relink("leaf-01", 3)
        fabric.set_counter("leaf-02", 4, "SymbolErrorCounter", 0)
    # The steps did what they say (else the comparison below proves less than it claims).
    assert any(n == "fabric_ib_symbol_error_total" and lab["node_name"] == "leaf-02" and lab["port"] == "4"
               and v == 3.0 for n, lab, v in _samples(moved))
    assert any(n == "fabric_ib_port_link_down_unexpected" and lab["node_name"] == "leaf-one" and lab["port"] == "3"
               and v == 1.0 for n, lab, v in _samples(down))
    assert any(lab.get("peer_node_name") == "leaf-two" for _n, lab, _v in _samples(renamed))
    kinds = [" ".join(a for a in argv if not a.startswith("/")) for argv, _r in recorder.runs]
    assert sum("ibnetdiscover" in k for k in kinds) >= 3  # the first poll, and a rediscovery after each change
    # The fast collector did reuse: the parser found most port lines of a steady poll in its memo.
    assert len(fast.collector.state.counter_lines.previous) > 50

    name_map.write_text('0x0002c90300a10000 "leaf-one"\n')  # as at the start: the replay reads it again
    os.utime(name_map, (name_map.stat().st_atime, name_map.stat().st_mtime + 10))
    slow = CollectorHarness(group_for(options))
    replayer = _Replayer(recorder.runs, slow.collector.tools._runner)
    slow.collector.tools._runner = lambda: replayer
    for what, want in polls:
        if what.startswith("a node renamed"):
            name_map.write_text('0x0002c90300a10000 "leaf-one"\n0x0002c90300a10100 "leaf-two"\n')
            os.utime(name_map, (name_map.stat().st_atime, name_map.stat().st_mtime + 20))
        _forget_memos(slow.collector)
        got = slow.poll()
        assert got.problems == want.problems, what
        assert _samples(got) == _samples(want), what
    assert replayer.left() == 0  # the replayed collector ran exactly the tools the live one ran


def test_the_memo_reads_a_repeated_line_as_the_parser_does():
    """A sweep parsed with the memo of the one before (lines repeated, one changed, one gone, one
    new) reads exactly as without it; the repeated lines hand out the same counters dict."""
    head = 'Data Counters for 0x2c90300a10100 "leaf-02"\n'
    line = "   GUID 0x2c90300a10100 port {p}: [PortXmitData == {v} (3.938KB)] [PortRcvData == 8 (3.938KB)]\n"
    tail = "\n## Summary: 1 nodes checked, 0 bad nodes found\n"
    first = head + "".join(line.format(p=p, v=p) for p in (1, 2, 3)) + tail
    second = head + "".join(line.format(p=p, v=v) for p, v in ((1, 1), (2, 99), (4, 4))) + tail
    memo = ib_queryerrors.PortLineMemo()
    a = ib_queryerrors.parse(first, memo=memo)
    b = ib_queryerrors.parse(second, memo=memo)
    plain = ib_queryerrors.parse(second)
    assert b == plain
    assert b.nodes[0].ports[0].counters is a.nodes[0].ports[0].counters  # repeated: reused
    assert b.nodes[0].ports[1].counters == {"PortXmitData": 99, "PortRcvData": 8}
    assert len(memo.previous) == 3 and all(text in second for text in memo.previous)
    # A parse that fails keeps the memo of the last complete sweep.
    with pytest.raises(ParseError):
        ib_queryerrors.parse(head + line.format(p=9, v=9), memo=memo)  # no summary: incomplete
    assert len(memo.previous) == 3
    assert ib_queryerrors.parse(second, memo=memo) == plain

