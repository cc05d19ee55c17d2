"""The focus set's pure parts (collectors/infiniband/focus.py): the window ratio, the peak /
histogram / burst bookkeeping, the top-K and configured selection from two joined sweeps of real
ibqueryerrors captures, the per-VL block, the options."""

from __future__ import annotations

import math

import pytest

from fabric_exporter.collectors.infiniband import focus as f
from fabric_exporter.collectors.infiniband.join import join_sweeps
from fabric_exporter.collectors.infiniband.mapping import PortMemo
from fabric_exporter.collectors.infiniband.state import FabricState
from fabric_exporter.config import ConfigError
from fabric_exporter.parsers import ib_netdiscover, ib_perfquery, ib_queryerrors

from tests.harness import paths
from tests.harness.infiniband import group_for

FIX = paths.FIXTURES / "infiniband"
PORT = f.FocusPort((1, 1), 5, 100.0, 1, "top")


def test_window_ratio_is_ticks_times_tick_multiplier_over_the_bytes_the_link_could_send():
    assert f.window_ratio(1000, 10.0, 1050, 10.5, 100.0, 1) == 1.0  # 50 ticks in 0.5 s of a 100 B/s link
    assert f.window_ratio(1000, 10.0, 1010, 11.0, 100.0, 4) == pytest.approx(0.4)
    assert f.window_ratio(1000, 10.0, 1000, 11.0, 100.0, 1) == 0.0
    assert f.window_ratio(1000, 10.0, 5000, 11.0, 100.0, 1) == 1.0  # clamped, like the recording rule
    # no honest answer: a reset (the counter went back), no time, a link without a rate
    assert f.window_ratio(1000, 10.0, 10, 11.0, 100.0, 1) is None
    assert f.window_ratio(1000, 10.0, 1010, 10.0, 100.0, 1) is None
    assert f.window_ratio(1000, 10.0, 1010, 11.0, 0.0, 1) is None


def test_windows_give_peak_histogram_and_bursts():
    w = f.PortWindows()
    threshold = 0.3
    reads = [(0, 0.0), (10, 1.0), (60, 2.0), (110, 3.0), (110, 4.0), (150, 5.0), (150, 6.0), (100, 7.0), (100, 8.0)]
    ratios = [w.read(v, t, PORT, threshold) for v, t in reads]
    assert ratios == [None, 0.1, 0.5, 0.5, 0.0, 0.4, 0.0, None, 0.0]  # 150 -> 100: a reset, no window
    assert w.peak == 0.5 and w.count == 7 and w.total == pytest.approx(1.5)
    assert w.bursts == 2  # 0.5, 0.5 is one run; 0.4 another
    cumulative = dict(zip(f.FOCUS_RATIO_BUCKETS, w.buckets))
    assert cumulative[0.00001] == 3 and cumulative[0.1] == 4 and cumulative[0.25] == 4
    assert cumulative[0.5] == 7 and cumulative[1.0] == 7
    assert all(a <= b for a, b in zip(w.buckets, w.buckets[1:]))


def _sweep(counters: str, errors: str):
    topo = ib_netdiscover.parse((FIX / "ibsim_ibnetdiscover.txt").read_text())
    state = FabricState(3600)
    state.apply_topology(topo)
    c = ib_queryerrors.parse(counters)
    e = ib_queryerrors.parse(errors)
    return join_sweeps(c, e, "", state.owners, []).ports, state


def test_top_k_picks_the_highest_ratios_then_the_configured_ports():
    counters = (FIX / "ibsim_ibqueryerrors_counters_report_port.txt").read_text()
    errors = (FIX / "ibsim_ibqueryerrors_errors_zero_threshold.txt").read_text()
    ports, state = _sweep(counters, errors)
    waits = f.sweep_waits(ports)
    assert waits and all(v >= 0 for v in waits.values())
    top_rate = max(f.port_rate(p) for p in ports.values())
    linked = sorted(k for k in waits if f.port_rate(ports[k]) == top_rate)
    a, b = linked[:2]
    c = next(k for k in linked if k[0] not in (a[0], b[0]))  # on another node (the tick is per node)
    previous = dict(waits)
    now = dict(waits)
    now[a] += 3_000_000
    now[b] += 9_000_000
    now[c] += 1_000
    chosen = f.select_focus(ports, now, previous, 30.0, state, 2, ())
    assert list(chosen) == [b, a] and {fp.reason for fp in chosen.values()} == {"top"}
    fp = chosen[b]
    assert fp.rate == f.port_rate(ports[b]) and fp.wait_factor == 1 and fp.lid == ports[b].entry.link.lid
    # no previous sweep: nothing to rank; the configured ports (by name and by GUID) still come
    name = state.node_name(c[0])
    chosen = f.select_focus(ports, now, {}, None, state, 2, ((name, c[1]), (f"0x{a[0]:016x}", a[1]),
                                                               ("no-such-node", 1)))
    assert set(chosen) == {c, a} and {fp.reason for fp in chosen.values()} == {"configured"}
    # a port in both keeps reason top
    chosen = f.select_focus(ports, now, previous, 30.0, state, 1, ((f"0x{b[0]:016x}", b[1]),))
    assert list(chosen) == [b] and chosen[b].reason == "top"
    # a known tick multiplier scales the ranking ratio
    state.ticks[c[0]] = 99_999
    chosen = f.select_focus(ports, now, previous, 30.0, state, 1, ())
    assert list(chosen) == [c] and chosen[c].wait_factor == 100_000


def test_a_latched_32bit_sweep_wait_is_not_ranked():
    counters = (FIX / "ibsim_ibqueryerrors_counters_report_port.txt").read_text()
    errors = (FIX / "ibsim_ibqueryerrors_errors_zero_threshold.txt").read_text()
    ports, _state = _sweep(counters, errors)
    key = next(k for k, p in ports.items() if p.errors is not None)
    ports[key].errors = {"PortXmitWait": (1 << 32) - 1}
    assert key not in f.sweep_waits(ports)


def test_focus_set_change_keeps_the_windows_of_ports_that_stay():
    st = f.FocusState()
    a, b = f.FocusPort((1, 1), 5, 100.0, 1, "top"), f.FocusPort((2, 3), 6, 100.0, 1, "configured")
    st.apply({a.key: a, b.key: b})
    st.windows[a.key].add(0.5, 0.1)
    st.vl_unsupported = {a.key, b.key}
    st.apply({a.key: a})
    assert st.windows[a.key].count == 1 and b.key not in st.windows and st.vl_unsupported == {a.key}


def test_focus_samples_restart_the_peak_only():
    st = f.FocusState()
    st.apply({PORT.key: PORT})
    w = st.windows[PORT.key]
    w.add(0.2, 0.1)
    w.vl = {0: 5, 3: 7}
    st.reads["ok"] += 3
    labels = {"node_guid": "0x1", "node_name": "n", "port": "1", "peer_node_name": "", "peer_port": ""}
    memo = {PORT.key: PortMemo((), labels, [], True)}  # the sweep's per-port memo (mapping.py)
    first = {(s.name, s.labels.get("le") or s.labels.get("vl") or s.labels.get("result")): s.value
             for s in f.focus_samples(st, memo)}
    assert first[("fabric_ib_port_focus_xmit_wait_peak_ratio", None)] == 0.2
    assert first[("fabric_ib_port_focus_xmit_wait_ratio_bucket", "0.25")] == 1
    assert first[("fabric_ib_port_focus_xmit_wait_ratio_bucket", "0.1")] == 0
    assert first[("fabric_ib_port_focus_xmit_wait_ratio_bucket", "+Inf")] == 1
    assert first[("fabric_ib_port_bursts_total", None)] == 1
    assert first[("fabric_ib_port_vl_transmit_wait_total", "3")] == 7
    assert first[("fabric_ib_focus_reads_total", "ok")] == 3
    second = {s.name for s in f.focus_samples(st, memo)}
    assert "fabric_ib_port_focus_xmit_wait_peak_ratio" not in second  # no window since the last sweep
    assert "fabric_ib_port_bursts_total" in second  # counters stay
    info = f.focus_info_samples(st, memo)
    assert [(s.name, s.labels["reason"]) for s in info] == [("fabric_ib_port_focus_info", "top")]
    assert f.focus_samples(st, {}) and not [s for s in f.focus_samples(st, {}) if "node_name" in s.labels]


def test_read_arguments():
    assert f.read_args(False, 12, [3]) == ["-x", "12", "3"]
    assert f.read_args(False, 12, [1, 3]) == ["-x", "-l", "12", "1,3"]
    assert f.read_args(True, 12, [1, 3]) == ["-l", "12", "1,3"]
    assert f.vl_read_args(12, 3) == ["--vlxmitcounters", "12", "3"]


def test_focus_options():
    o = group_for({}).options
    assert not o.focus and o.focus_top_k == 16 and o.focus_interval == 1.0 and o.focus_concurrency == 2
    o = group_for({"focus": True, "focus_ports": ["leaf-01:3", "0x0002c90300a10000:17", "node with spaces:2"],
                "focus_interval": "200ms", "focus_burst_threshold": 0.00001, "focus_top_k": 0}).options
    assert o.focus_ports == (("leaf-01", 3), ("0x0002c90300a10000", 17), ("node with spaces", 2))
    assert o.focus_interval == 0.2 and o.focus_burst_threshold == 0.00001


@pytest.mark.parametrize("options, where", [
    ({"focus_interval": "100ms"}, "options.focus_interval"),
    ({"focus_interval": "2m"}, "options.focus_interval"),
    ({"focus_concurrency": 5}, "options.focus_concurrency"),
    ({"focus_top_k": -1}, "options.focus_top_k"),
    ({"focus_burst_threshold": 0}, "options.focus_burst_threshold"),
    ({"focus_burst_threshold": 1.5}, "options.focus_burst_threshold"),
    ({"focus_ports": ["leaf-01"]}, "options.focus_ports[0]"),
    ({"focus_ports": ["leaf-01:0"]}, "options.focus_ports[0]"),
    ({"focus_ports": [":3"]}, "options.focus_ports[0]"),
    ({"focus": True, "focus_top_k": 0}, "options.focus"),
])
def test_bad_focus_options(options, where):
    with pytest.raises(ConfigError) as e:
        group_for(options)
    assert any(where in p for p in e.value.problems), e.value.problems


def test_vl_block_from_the_parser():
    text = (FIX / "ibsim_perfquery_vlxmitcounters.txt").read_text()
    (block,) = ib_perfquery.parse(text)
    assert block.kind == "vl_xmit_wait" and (block.lid, block.port) == (1, 1)
    vl = f.vl_xmit_wait(block)
    assert sorted(vl) == list(range(16)) and vl[3] == 1234 and not math.isnan(vl[0])


class _Runner:
    def __init__(self, text: str):
        self.text, self.calls = text, []

    async def run(self, argv, timeout):
        from fabric_exporter.transport.base import CommandResult
        self.calls.append(list(argv))
        return CommandResult(tuple(argv), 0, self.text, "")


class _Tools:
    def __init__(self, runner, **options):
        from fabric_exporter.collectors.infiniband.options import InfinibandOptions
        self.options = InfinibandOptions(focus=True, **options)
        self._r = runner

    def runner(self):
        return self._r

    def argv(self, tool, *args):
        return [tool, *args]


@pytest.mark.parametrize("yield_to_sweep", [True, False])
def test_focus_reads_wait_while_a_sweep_runs(yield_to_sweep):
    import asyncio

    text = (FIX / "edr_perfquery_extended.txt").read_text()  # Lid 1719 port 7, with PortXmitWait

    async def scenario():
        runner = _Runner(text)
        st = f.FocusState()
        fp = f.FocusPort((1, 7), 1719, 100.0, 1, "top")
        st.apply({fp.key: fp})
        task = f.FocusTask(_Tools(runner, focus_yield_to_sweep=yield_to_sweep, focus_vl_xmit_wait=False), st)
        st.sweep_idle = asyncio.Event()
        st.sweep_idle.set()
        st.sweep_started()
        one = asyncio.ensure_future(task.round())
        await asyncio.sleep(0.05)
        during = len(runner.calls)
        st.sweep_done()
        await asyncio.wait_for(one, 5)
        return during, runner.calls, st

    during, calls, st = asyncio.run(scenario())
    assert during == (0 if yield_to_sweep else 1)
    assert calls == [["perfquery", "-x", "1719", "7"]]
    assert st.reads["ok"] == 1 and st.windows[(1, 7)].last[0] == 9120453371


def _one_round(runner, st, **options):
    import asyncio

    task = f.FocusTask(_Tools(runner, **options), st)
    asyncio.run(task.round())


def test_a_latched_32bit_read_gives_no_window_and_is_counted():
    st = f.FocusState()
    fp = f.FocusPort((9, 1), 33, 100.0, 1, "top")
    st.apply({fp.key: fp})
    st.basic_nodes.add(9)  # its -x lacks PortXmitWait: plain perfquery
    st.windows[fp.key].last = (1000, 0.0)
    runner = _Runner((FIX / "qdr_perfquery_basic_latched.txt").read_text())  # PortXmitWait at 2^32-1
    _one_round(runner, st, focus_vl_xmit_wait=False)
    assert runner.calls == [["perfquery", "33", "1"]]
    assert st.reads["latched"] == 1 and st.reads["ok"] == 0
    w = st.windows[fp.key]
    assert w.count == 0 and w.peak is None and w.last is None  # the next window starts from a fresh read


def test_extended_counters_without_port_xmit_wait_switch_the_node_to_port_counters():
    st = f.FocusState()
    fp = f.FocusPort((10, 4), 10, 100.0, 1, "top")
    st.apply({fp.key: fp})
    runner = _Runner((FIX / "ibsim_perfquery_extended.txt").read_text())  # Lid 10 port 4, no PortXmitWait
    _one_round(runner, st, focus_vl_xmit_wait=False)
    assert runner.calls == [["perfquery", "-x", "10", "4"]] and st.basic_nodes == {10}
    assert st.reads["failed"] == 1
    runner.text = (FIX / "ibsim_perfquery_basic.txt").read_text()
    _one_round(runner, st, focus_vl_xmit_wait=False)
    assert runner.calls[-1] == ["perfquery", "10", "4"]


def test_a_port_without_vl_xmit_wait_counters_is_not_asked_again():
    from fabric_exporter.transport.base import CommandResult

    class Failing(_Runner):
        async def run(self, argv, timeout):
            self.calls.append(list(argv))
            # perfquery's IBEXIT("cannot query %s", "PortVLXmitWaitCounters"), on stdout, exit 255
            return CommandResult(tuple(argv), 255, "perfquery: iberror: failed: cannot query PortVLXmitWaitCounters\n",
                                 "")

    st = f.FocusState()
    fp = f.FocusPort((1, 1), 1, 100.0, 1, "configured")
    st.apply({fp.key: fp})
    runner = Failing("")
    _one_round(runner, st)
    assert ["perfquery", "--vlxmitcounters", "1", "1"] in runner.calls and st.vl_unsupported == {fp.key}
    st.apply({fp.key: fp})  # the next sweep: VL reads due again, but not for this port
    runner.calls.clear()
    _one_round(runner, st)
    assert runner.calls == [["perfquery", "-x", "1", "1"]]
    assert not st.windows[fp.key].vl


def test_vl_xmit_wait_takes_vls_0_to_15_and_skips_any_other_suffix():
    """A hostile or unknown perfquery field that starts like a VL counter is no VL: not a crash
    (int() refuses 5,000 digits and "²" with ValueError), not a made-up VL."""
    prefix = "PortVLXmitWait"
    block = ib_perfquery.PerfBlock("PortVLXmitWaitCounters", 1, 1, None, None, {
        f"{prefix}0": 5, f"{prefix}15": 7, f"{prefix}16": 9, f"{prefix}{'9' * 5000}": 1,
        f"{prefix}\u00b2": 2, f"{prefix}07": 3, "PortXmitWait": 11})
    assert f.vl_xmit_wait(block) == {0: 5, 15: 7, 7: 3}
