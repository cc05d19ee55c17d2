"""Issue 16 defect 13: a parser bug must never become an unexplained crash.

Two layers, both over every text parser the collectors use:

* every public parser entry point in ``fabric_exporter.parsers`` is fuzzed directly (real capture
  lines shuffled, cut and salted with the numbers that broke parsers before: 309 and 5000 digits,
  2**64, 1e400, NaN, Infinity); it returns or raises ParseError, nothing else. The captures are
  declared by each parser module (``FUZZ``); a test fails when a public ``parse*`` function is not.
* every text collector (infiniband, roce_nic, switch_cli and each of its dialects, latency_probe, and
  every collector declaring ``captures``) is polled through the
  scheduler with fuzzed command output: a poll ends ok, partial or failed with a reason, never
  ``internal`` (which would mean a parser raised something other than ParseError); and a parser
  made to raise a foreign exception is reported (``internal`` with the exception named, logged
  with its traceback, counted) while the target keeps being polled.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import os
import pkgutil
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fabric_exporter.parsers as parsers_pkg
from fabric_exporter.collectors import registry

from tests.harness import paths
from tests.harness.configs import parse_config
from fabric_exporter.errors import REASONS, ParseError
from fabric_exporter.lab.perftest import SimulatedPerftest
from fabric_exporter.parsers import burst_stream, ethtool, gnmi, ib_diagnet, perftest, rdma, sonic_cli
from fabric_exporter.scheduler import Scheduler
from fabric_exporter.serving.store import SnapshotStore
from fabric_exporter.transport.base import CommandResult

FIX = paths.FIXTURES
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def lines_of(*names: str) -> list[str]:
    out: list[str] = []
    for n in names:
        out += (FIX / n).read_text().splitlines()
    return out


def declared(entry: str) -> list[str]:
    """The lines of the captures a parser module declares for one of its entry points (its ``FUZZ``)."""
    module, name = entry.split(".")
    captures = getattr(importlib.import_module(f"fabric_exporter.parsers.{module}"), "FUZZ", {}).get(name)
    assert captures, f"parsers/{module}.py declares no FUZZ captures for {name}"
    return lines_of(*captures)


IB_QE = declared("ib_queryerrors.parse")
IB_ND = declared("ib_netdiscover.parse")
IB_PQ = declared("ib_perfquery.parse")
IB_VL = lines_of("infiniband/ibsim_perfquery_vlxmitcounters.txt")
IB_DB = declared("ib_diagnet.parse_db_csv")
IB_PM = declared("ib_diagnet.parse_pm")
IB_MAP = declared("ib_nodenamemap.parse")
LAT = declared("perftest.parse_report")
ETH = declared("ethtool.parse_ethtool_stats")
HW = declared("rdma.parse_hw_counters")
RDMA_LINK = declared("rdma.parse_rdma_link")
RDMA_STAT = declared("rdma.parse_rdma_statistic")
SONIC = {n: lines_of(f"switch/sonic/{n}") for n in ("show_pfc_counters.txt", "show_pfcwd_stats.txt", "show_queue_counters.txt",
                                                      "show_queue_counters.json", "show_queue_wredcounters.txt",
                                                      "show_queue_wredcounters.json")}
WM_QUEUE = declared("sonic_watermark.parse_queue_watermark")
WM_QUEUE_JSON = declared("sonic_watermark.parse_queue_watermark_json")
WM_PG = declared("sonic_watermark.parse_pg_watermark")
WM_PG_JSON = declared("sonic_watermark.parse_pg_watermark_json")
WM_POOL = declared("sonic_watermark.parse_pool_watermark")
PFC_HISTORY = declared("sonic_cli.parse_pfc_history")
SONIC_LLDP = declared("sonic_cli.parse_lldp_table")
EOS_QUEUE = declared("eos_cli.parse_queue_counters")
EOS_DISCARDS = declared("eos_cli.parse_discards_json")
CUMULUS_ETH = lines_of("real/ethtool_cumulus_37_swp1.txt", "real/ethtool_cumulus_37_mlag_swp51_trimmed.txt")
NVUE_ROCE = declared("nvue.parse_roce_counters")
EOS_PFC = declared("eos_cli.parse_pfc_counters_json")
EOS_ECN = declared("eos_cli.parse_ecn_counters_json")
GNMI_SONIC = declared("gnmi.parse_sonic_blob")
GNMI_MAPS = lines_of("switch/gnmi/sonic/COUNTERS_PORT_ALIAS_MAP.txt")[:40] + ["}"]
GNMI_XPATHS = ["/qos/interfaces/interface[interface-id=swp1]/switch-priority[priority=3]/state/in-pause-duration",
               "/interfaces/interface[name=Ethernet0/1]/state/counters/in-octets", "COUNTERS/Ethernet*/Queues"]

# Values that broke parsers or could: overflow on float(), Python's 4300-digit int limit, u64 wrap.
NASTY = ["9" * 309, "9" * 5000, str(2**64), str(2**64 - 1), "1e400", "-1e400", "NaN", "Infinity", "-0", "0x" + "f" * 40,
         "-1", "٣", "\x00", "\r", "é"]
NUMBER = re.compile(r"\d+(?:\.\d+)?")


def replace_nth_number(line: str, nasty: str, n: int) -> str:
    numbers = list(NUMBER.finditer(line))
    if not numbers:
        return line
    m = numbers[n % len(numbers)]
    return line[:m.start()] + nasty + line[m.end():]


def mutated(lines: list[str], max_lines: int = 40):
    """Real lines kept, shuffled, cut, with a character flipped or a number replaced by a nasty one."""
    line = st.one_of(
        st.sampled_from(lines),
        st.sampled_from(lines),
        st.builds(lambda s, i: s[:i], st.sampled_from(lines), st.integers(0, 120)),
        st.builds(lambda s, i, c: s[:i] + c + s[i + 1:], st.sampled_from(lines), st.integers(0, 120),
                  st.sampled_from(list("0x9 -\"[]{}()=:,.#|\t") + NASTY)),
        st.builds(replace_nth_number, st.sampled_from(lines), st.sampled_from(NASTY), st.integers(0, 6)),
        st.text(max_size=60),
    )
    return st.lists(line, max_size=max_lines).map("\n".join)


def perftest_json_with(value) -> str:
    return ('{"results": {"MsgSize": 2, "n_iterations": 10000, "t_min": 1.0, "t_max": 9.0, "t_typical": 2.0, '
            f'"t_avg": 2.0, "t_stdev": 0.1, "percentile_99": {value}, "percentile_99.9": 5.0}}}}\n')


# -- layer 1: every entry point ---------------------------------------------------------------------

def _diagnet_sections(fn):
    def run(text):
        return fn(ib_diagnet.parse_db_csv(text))
    return run


def declared_entry_points() -> dict[str, tuple]:
    """Each parser module's ``FUZZ`` (entry point name -> real captures under tests/fixtures), as
    ``{"module.function": (function, lines)}``: a new parser declares its inputs next to its code."""
    out = {}
    for info in pkgutil.iter_modules(parsers_pkg.__path__):
        module = importlib.import_module(f"fabric_exporter.parsers.{info.name}")
        for name, captures in getattr(module, "FUZZ", {}).items():
            assert callable(getattr(module, name, None)), f"{info.name}.FUZZ names {name!r}, not a function of it"
            assert captures and all((FIX / c).is_file() for c in captures), f"{info.name}.FUZZ[{name!r}]: {captures}"
            out[f"{info.name}.{name}"] = (getattr(module, name), lines_of(*captures))
    return out


# Entry points whose call or input needs code (an extra argument, input built from markers or a slice
# of a capture); every other one is declared by its parser module's FUZZ (declared_entry_points).
CODED_ENTRY_POINTS = {
    "ethtool.parse_u64": (lambda t: ethtool.parse_u64(t, "x"), ETH),
    "ib_common.parse_guid": (__import__("fabric_exporter.parsers.ib_common", fromlist=["x"]).parse_guid, IB_MAP),
    "ib_common.parse_uint": (lambda t: __import__("fabric_exporter.parsers.ib_common", fromlist=["x"]).parse_uint(t, "x"), IB_PQ),
    "ib_diagnet.pm_info": (_diagnet_sections(ib_diagnet.pm_info), IB_DB),
    "ib_diagnet.cable_info": (_diagnet_sections(ib_diagnet.cable_info), IB_DB),
    "ib_diagnet.node_temperatures": (_diagnet_sections(ib_diagnet.node_temperatures), IB_DB),
    "rdma.parse_host_dump": (rdma.parse_host_dump, ["@@fabric-roce 1 sysfs", "@@device mlx5_0 mlx5_core",
                                                    "@@port mlx5_0 1 eth0 Ethernet 4: ACTIVE", "@@hw_counters mlx5_0 1",
                                                    "@@ethtool eth0 0", "@@rdma_link 0", "@@end", *HW[:5], *ETH[:5]]),
    "sonic_cli.parse_count": (lambda t: sonic_cli.parse_count(t), ["0", "1,234", "N/A", "12"]),
    "gnmi.parse_sonic_port_aliases": (gnmi.parse_sonic_port_aliases, GNMI_MAPS),
    "gnmi.parse_xpath": (gnmi.parse_xpath, GNMI_XPATHS),
    "burst_stream.parse_header": (burst_stream.parse_header, ["@@fabric-burst 1 100000 56 8123456789"]),
    "burst_stream.parse_window": (lambda t: [burst_stream.parse_window(line, 56) for line in t.splitlines()],
                                  ["w 1 100012 830", "w 2 99870 120 0:5 3:100000 55:12", "w 5 300410 200311 7:1"]),
}
DECLARED_ENTRY_POINTS = declared_entry_points()
assert not set(DECLARED_ENTRY_POINTS) & set(CODED_ENTRY_POINTS), "an entry point declared twice"
ENTRY_POINTS = {**DECLARED_ENTRY_POINTS, **CODED_ENTRY_POINTS}


def test_every_public_parser_entry_point_is_fuzzed():
    found = set()
    for info in pkgutil.iter_modules(parsers_pkg.__path__):
        if info.name == "guard":
            continue
        module = importlib.import_module(f"fabric_exporter.parsers.{info.name}")
        for name, obj in vars(module).items():
            if (inspect.isfunction(obj) and obj.__module__ == module.__name__ and not name.startswith("_")
                    and (name.startswith("parse") or name in ("pm_info", "cable_info", "node_temperatures",
                                                              "failed_queries"))):
                found.add(f"{info.name}.{name}")
    assert found <= set(ENTRY_POINTS), f"parser entry points nobody fuzzes: {sorted(found - set(ENTRY_POINTS))}"
    unguarded = sorted(n for n in found if not hasattr(
        getattr(importlib.import_module(f"fabric_exporter.parsers.{n.split('.')[0]}"), n.split(".")[1]), "__wrapped__"))
    assert not unguarded, f"entry points without @parser_entry: {unguarded}"


def _only_parse_errors(fn, text):
    try:
        fn(text)
    except ParseError:
        pass


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_entry_point_raises_only_parse_error(name):
    fn, lines = ENTRY_POINTS[name]

    @FUZZ
    @given(st.one_of(mutated(lines), st.sampled_from(NASTY), st.text(max_size=200)))
    def fuzz(text):
        _only_parse_errors(fn, text)

    fuzz()


SWEEP_NUMBERS = ["9" * 5000, "9" * 309, str(2**64), "1e400", "NaN"]


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_entry_point_survives_every_real_number_replaced_by_a_nasty_one(name):
    """Deterministic sweep: in the real capture, each of the first numbers of each line in turn
    becomes a 5000-digit / 309-digit / 2**64 / 1e400 / NaN token."""
    fn, lines = ENTRY_POINTS[name]
    lines = lines[:150]
    for i, line in enumerate(lines):
        for n in range(min(3, len(NUMBER.findall(line)))):
            for nasty in SWEEP_NUMBERS:
                text = "\n".join(lines[:i] + [replace_nth_number(line, nasty, n)] + lines[i + 1:]) + "\n"
                _only_parse_errors(fn, text)


@pytest.mark.parametrize("value", ["9" * 309, "-" + "9" * 309, "1e400", "NaN", "Infinity", "9" * 5000])
def test_perftest_json_with_an_overflowing_number_is_a_parse_error(value):
    text = perftest_json_with(value)
    with pytest.raises(ParseError):
        perftest.parse_json(text)
    with pytest.raises(ParseError):
        perftest.parse_report(text)


def test_perftest_text_with_a_5000_digit_field_is_a_parse_error():
    header = next(line for line in LAT if "#bytes" in line)
    row = " " + "9" * 5000 + "  10000  1.00  9.00  2.00  2.00  0.10  3.00  5.00"
    with pytest.raises(ParseError):
        perftest.parse_text(header + "\n" + row + "\n")


# -- layer 2: through the collectors and the scheduler ----------------------------------------------

class _Runner:
    def __init__(self, host: str, answer):
        self.host, self.answer, self.description = host, answer, f"fake:{host}"

    async def run(self, argv, *, timeout: float, stdin=None) -> CommandResult:
        status, out, err = await self.answer(self.host, list(argv))
        return CommandResult(tuple(argv), status, out, err)

    async def run_line(self, line: str, *, timeout: float) -> CommandResult:  # a device CLI (EOS)
        status, out, err = await self.answer(self.host, [line])
        return CommandResult((line,), status, out, err)

    async def close(self) -> None:
        pass


class FakeTransports:
    """Every command of every host answered by ``answer(host, argv) -> (status, stdout, stderr)``."""

    def __init__(self, answer):
        self.answer = answer

    def runner(self, group, host):
        return _Runner(host.name if host else "localhost", self.answer)

    def snmp(self, group, host):
        raise AssertionError("no SNMP here")

    async def close(self) -> None:
        pass


def group_config(collector: str, **extra) -> dict:
    g = {"name": "g", "fabric": "f", "collector": collector, "transport": "local", "interval": "10s", "timeout": "5s"}
    g.update(extra)
    return {"targets": [g]}


def poll_once(config: dict, answer) -> list:
    cfg = parse_config(config)

    async def main():
        sched = Scheduler(FakeTransports(answer), SnapshotStore())
        sched.apply(cfg, start_tasks=False)
        return await sched.poll_all_once()

    return asyncio.run(main())


def assert_explained(states) -> None:
    for s in states:
        assert s.state in ("ok", "partial", "failed"), s.state
        assert set(s.errors) <= set(REASONS)
        assert "internal" not in s.errors, f"a parser raised something other than ParseError: {s.last_error}"


def infiniband_answer(texts):
    async def answer(host, argv):
        tool = next((Path(a).name for a in argv if Path(a).name in ("ibnetdiscover", "ibqueryerrors", "perfquery")), None)
        if tool == "ibqueryerrors":
            return 0, texts["counters" if "--counters" in argv else "errors"], ""
        if tool in ("ibnetdiscover", "perfquery"):
            return 0, texts[tool], ""
        return 0, "", ""
    return answer


@FUZZ
@given(counters=mutated(IB_QE), errors=mutated(IB_QE), nd=mutated(IB_ND), pq=mutated(IB_PQ))
def test_infiniband_collector_explains_every_fuzzed_output(counters, errors, nd, pq):
    texts = {"counters": counters, "errors": errors, "ibnetdiscover": nd, "perfquery": pq}
    for options in ({}, {"use_discovery_cache": False}):
        assert_explained(poll_once(group_config("infiniband", options=options), infiniband_answer(texts)))


def poll_in_turn(config: dict, answers) -> list:
    """One scheduler polls its targets once per answer, in turn (each poll's snapshot rendered on
    the one before, as in the daemon): the states after each poll."""
    cfg = parse_config(config)

    current = []

    async def answer_now(host, argv):
        return await current[-1](host, argv)

    async def main():
        sched = Scheduler(FakeTransports(answer_now), SnapshotStore())
        sched.apply(cfg, start_tasks=False)
        seen = []
        for answer in answers:
            current.append(answer)
            seen.append([(s.state, dict(s.errors), s.last_error) for s in await sched.poll_all_once()])
        return seen

    return asyncio.run(main())


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(counters=mutated(IB_QE), errors=mutated(IB_QE), nd=mutated(IB_ND))
def test_infiniband_snapshots_render_incrementally_like_whole_across_fuzzed_polls(counters, errors, nd):
    """FABRIC_VERIFY_RENDER=1: every snapshot's incremental render (on the previous poll's: real
    captures, then fuzzed ones, then real ones with moved counters) is compared with a whole render; a difference
    raises RenderMismatch, which the scheduler counts as an internal error."""
    real_texts = {"counters": real(lines_of("infiniband/ndr_ibqueryerrors_counters_report_port.txt")),
                  "errors": real(lines_of("infiniband/hdr_ibqueryerrors_errors_report_port.txt")),
                  "ibnetdiscover": real(IB_ND), "perfquery": real(IB_PQ)}
    fuzzed = {"counters": counters, "errors": errors, "ibnetdiscover": nd, "perfquery": real(IB_PQ)}
    # the real captures again, every counter moved: the third poll patches lines, whatever the second left
    moved = {**real_texts, "counters": re.sub(r"== (\d+)", lambda m: f"== {int(m.group(1)) + 1}", real_texts["counters"])}
    was = os.environ.get("FABRIC_VERIFY_RENDER")
    os.environ["FABRIC_VERIFY_RENDER"] = "1"
    try:
        polls = poll_in_turn(group_config("infiniband"), [infiniband_answer(t) for t in (real_texts, fuzzed, moved)])
    finally:
        if was is None:
            del os.environ["FABRIC_VERIFY_RENDER"]
        else:
            os.environ["FABRIC_VERIFY_RENDER"] = was
    for states in polls:
        for state, errors_by_reason, last_error in states:
            assert "internal" not in errors_by_reason, last_error
    assert polls[0][0][0] in ("ok", "partial"), polls[0]  # the real captures publish: the next polls patch them


@FUZZ
@given(pq=mutated(IB_PQ + IB_VL), vl=mutated(IB_VL + IB_PQ[:10]))
def test_infiniband_focus_reads_explain_every_fuzzed_output(pq, vl):
    """The focus task (collectors/infiniband/focus.py) over fuzzed perfquery answers: no crash, no
    window ratio outside 0..1, no per-VL value that is not in the answer."""
    from fabric_exporter.collectors.infiniband import focus
    from fabric_exporter.collectors.infiniband.options import InfinibandOptions
    class Runner:
        async def run(self, argv, timeout):
            return CommandResult(tuple(argv), 0, vl if "--vlxmitcounters" in argv else pq, "")

    class Tools:
        options = InfinibandOptions(focus=True, focus_burst_threshold=0.1)

        def runner(self):
            return Runner()

        def argv(self, tool, *args):
            return [tool, *args]

    state = focus.FocusState()
    ports = {(1, p): focus.FocusPort((1, p), 1719, 100.0, 1, "top") for p in (1, 7)}
    state.apply(ports)
    task = focus.FocusTask(Tools(), state)

    async def rounds():
        for _ in range(3):
            await task.round()

    asyncio.run(rounds())
    numbers = {int(t, 16) if t.lower().startswith("0x") else int(t)
               for t in re.findall(r"0x[0-9a-fA-F]+|\d+", vl) if len(t) < 4000}  # longer: never a value
    for w in state.windows.values():
        assert w.peak is None or 0.0 <= w.peak <= 1.0
        assert w.count == w.buckets[-1]  # every ratio is <= 1, the last bucket
        assert set(w.vl.values()) <= numbers
    assert sum(state.reads.values()) >= 3


def real(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def with_huge_number(lines: list[str], token: str) -> str:
    """The real capture with the first ``token`` (a number in it) made 5000 digits long."""
    text = real(lines)
    assert token in text
    return text.replace(token, re.sub(r"\d+", "9" * 5000, token), 1)


def test_infiniband_collector_with_a_5000_digit_counter_fails_as_parse():
    texts = {"counters": with_huge_number(IB_QE, "38716281036442"), "errors": real(IB_QE), "ibnetdiscover": real(IB_ND),
             "perfquery": real(IB_PQ)}
    states = poll_once(group_config("infiniband"), infiniband_answer(texts))
    assert_explained(states)
    assert states[0].state in ("failed", "partial"), states[0].state


def roce_dump(hw: str, eth: str, link: str, stat: str) -> str:
    return ("@@fabric-roce 1 sysfs\n@@device mlx5_0 mlx5_core\n@@port mlx5_0 1 eth0 Ethernet 4: ACTIVE\n"
            f"@@hw_counters mlx5_0 1\n{hw}\n@@ethtool eth0 0\n{eth}\n@@end\n",
            f"@@fabric-roce 1 rdma\n@@rdma_link 0\n{link}\n@@rdma_statistic 0\n{stat}\n@@end\n")


@FUZZ
@given(hw=mutated(HW), eth=mutated(ETH), link=mutated(RDMA_LINK), stat=mutated(RDMA_STAT), which=st.integers(0, 1))
def test_roce_nic_collector_explains_every_fuzzed_output(hw, eth, link, stat, which):
    dump = roce_dump(hw, eth, link, stat)[which]

    async def answer(host, argv):
        return 0, dump, ""

    assert_explained(poll_once(group_config("roce_nic"), answer))


_SECTION = re.compile(r"printf '@@%s begin %s\\n' (\w+) (\S+)")


def switch_answer(bodies: dict[str, str]):
    async def answer(host, argv):
        script = argv[-1]
        out = []
        for nonce, name in _SECTION.findall(script):
            body = bodies.get(name, "")
            out.append(f"@@{nonce} begin {name}\n{body}\n@@{nonce} end {name} 0\n")
        return 0, "".join(out), ""
    return answer


@FUZZ
@given(pfc=mutated(SONIC["show_pfc_counters.txt"]), wd=mutated(SONIC["show_pfcwd_stats.txt"]),
       queue=st.one_of(mutated(SONIC["show_queue_counters.json"]), mutated(SONIC["show_queue_counters.txt"])),
       wred=st.one_of(mutated(SONIC["show_queue_wredcounters.json"]), mutated(SONIC["show_queue_wredcounters.txt"])),
       lldp=mutated(SONIC_LLDP))
def test_switch_cli_collector_explains_every_fuzzed_output(pfc, wd, queue, wred, lldp):
    bodies = {"pfc": pfc, "pfcwd": wd, "queue": queue, "wred": wred, "lldp": lldp}
    options = {"commands": ["pfc", "queue", "wred", "pfcwd", "lldp"], "neighbor_name": {"regex": r"^([^.]+)"}}
    states = poll_once(group_config("switch_cli", hosts=["sw1"], options=options), switch_answer(bodies))
    assert_explained(states)


@FUZZ
@given(queue=st.one_of(mutated(WM_QUEUE), mutated(WM_QUEUE_JSON)), pg=st.one_of(mutated(WM_PG), mutated(WM_PG_JSON)),
       pool=mutated(WM_POOL), history=mutated(PFC_HISTORY))
def test_switch_cli_watermarks_explain_every_fuzzed_output(queue, pg, pool, history):
    bodies = {"queue_watermark_unicast": queue, "pg_watermark_headroom": pg, "buffer_pool_watermark": pool,
              "pfc_history": history}
    options = {"commands": ["queue_watermark", "pg_watermark", "buffer_pool_watermark", "pfc_history"],
               "queue_watermark_types": ["unicast"], "pg_watermark_regions": ["headroom"],
               "buffer_pool_watermarks": ["buffer_pool"]}
    states = poll_once(group_config("switch_cli", hosts=["sw1"], options=options), switch_answer(bodies))
    assert_explained(states)


@FUZZ
@given(ethtool=mutated(CUMULUS_ETH), roce=mutated(NVUE_ROCE))
def test_switch_cli_cumulus_explains_every_fuzzed_output(ethtool, roce):
    async def answer(host, argv):  # the two loops over swp1 and swp2, as the switch's sh would print them
        nonce = re.search(r"@@%s begin %s\\n' ([0-9a-f]{16}) ", argv[-1]).group(1)
        out = [f"@@{nonce} begin {name}\n{body}\n@@{nonce} end {name} 0\n"
               for name, body in (("swp1", ethtool), ("swp2", ethtool), ("swp1:nvue_roce", roce),
                                  ("swp2:nvue_roce", roce))]
        return 0, "".join(out), ""

    options = {"dialect": "cumulus", "commands": ["ethtool", "nvue_roce"]}
    states = poll_once(group_config("switch_cli", hosts=["sw1"], options=options), answer)
    assert_explained(states)


@FUZZ
@given(queue=mutated(EOS_QUEUE), discards=mutated(EOS_DISCARDS), pfc=mutated(EOS_PFC), ecn=mutated(EOS_ECN))
def test_switch_cli_eos_explains_every_fuzzed_output(queue, discards, pfc, ecn):
    answers = {"show interfaces counters queue": queue, "show interfaces counters discards | json": discards,
               "show priority-flow-control counters | json": pfc,
               "show qos interfaces ecn counters queue | json": ecn}

    async def answer(host, argv):
        (line,) = argv
        return 0, answers[line], ""

    states = poll_once(group_config("switch_cli", hosts=["sw1"], options={"dialect": "eos"}), answer)
    assert_explained(states)


def declared_captures(parse) -> list[str]:
    """The real captures a parser module declares (its ``FUZZ``) for the entry point ``parse``."""
    return declared(f"{parse.__module__.rsplit('.', 1)[1]}.{parse.__name__}")


def _dialects() -> dict:
    from fabric_exporter.collectors.switch_cli import DIALECTS

    return {name: d for name, d in DIALECTS.items() if d.commands}


def dialect_answer(dialect, bodies: dict[str, str]):
    """Every named command of ``dialect`` answered with ``bodies[name]``: in a batched script's sections,
    or as the one line of a device CLI (run_line)."""
    by_line = {" ".join(c.argv): name for name, c in dialect.commands.items()}

    async def answer(host, argv):
        if len(argv) == 1:
            return 0, bodies[by_line[argv[0]]], ""
        return await switch_answer(bodies)(host, argv)
    return answer


@pytest.mark.parametrize("name", sorted(_dialects()))
def test_every_switch_cli_dialect_explains_every_fuzzed_output(name):
    """Each dialect of the table polled with all its commands, each answered from its parser's declared
    captures (text or JSON form), mutated: a new dialect is fuzzed through the collector by its entry."""
    dialect = _dialects()[name]
    bodies = st.fixed_dictionaries({
        n: st.one_of(*[mutated(declared_captures(p)) for p in (c.parse, c.parse_json) if p is not None])
        for n, c in dialect.commands.items()})

    @settings(FUZZ, max_examples=20)
    @given(bodies=bodies)
    def fuzz(bodies):
        options = {"dialect": name, "commands": list(dialect.names)}
        assert_explained(poll_once(group_config("switch_cli", hosts=["sw1"], options=options),
                                   dialect_answer(dialect, bodies)))

    fuzz()


def declared_collectors() -> dict[str, type]:
    """The built-in collectors that declare ``captures`` (what their commands print): polled by the two
    tests below, so a new collector needs no test of its own here."""
    from fabric_exporter import ssh_guard

    return {n: c for n, c in ssh_guard.builtin_collectors().items() if c.captures}


def _max_lines(lines: list[str]) -> int:
    return max(40, min(400, len(lines)))  # a long JSON capture keeps enough lines to stay JSON-like


def _answer_all(out: str):
    async def answer(host, argv):
        return 0, out, ""
    return answer


@pytest.mark.parametrize("name", sorted(declared_collectors()))
def test_a_declared_collector_explains_every_fuzzed_output(name):
    """Every command answered by one mutated capture group, under each of its ``command_variants``."""
    cls = registry()[name]
    groups = [lines_of(*g) for g in cls.captures]

    @FUZZ
    @given(out=st.one_of(*[mutated(g, max_lines=_max_lines(g)) for g in groups]),
           options=st.sampled_from(cls.command_variants or ({},)))
    def fuzz(out, options):
        assert_explained(poll_once(group_config(name, options=dict(options)), _answer_all(out)))

    fuzz()


@pytest.mark.parametrize("name", sorted(declared_collectors()))
def test_a_declared_collector_with_a_5000_digit_number_is_explained(name):
    """Each real capture whole, with its first number made 5000 digits long: explained, never internal."""
    cls = registry()[name]
    for group in cls.captures:
        text = real(lines_of(*group))
        token = NUMBER.search(text)
        assert token, group
        huge = text[:token.start()] + "9" * 5000 + text[token.end():]
        for options in cls.command_variants or ({},):
            assert_explained(poll_once(group_config(name, options=dict(options)), _answer_all(huge)))


def test_switch_cli_collector_with_a_5000_digit_counter_is_explained():
    bodies = {"pfc": with_huge_number(SONIC["show_pfc_counters.txt"], " 201 "), "pfcwd": real(SONIC["show_pfcwd_stats.txt"]),
              "queue": real(SONIC["show_queue_counters.json"]), "wred": real(SONIC["show_queue_wredcounters.json"])}
    (state,) = poll_once(group_config("switch_cli", hosts=["sw1"]), switch_answer(bodies))
    assert_explained([state])
    assert state.state in ("failed", "partial") and "4300 digits" in state.last_error, state.last_error


def test_roce_nic_collector_with_a_5000_digit_link_field_is_explained():
    dump = roce_dump("", "", with_huge_number(RDMA_LINK, "lid 7 "), real(RDMA_STAT))[1]

    async def answer(host, argv):
        return 0, dump, ""

    (state,) = poll_once(group_config("roce_nic"), answer)
    assert_explained([state])
    assert state.state in ("failed", "partial"), state.state


def latency_answer(client_output):
    sim = SimulatedPerftest(server_wait=3.0)

    async def answer(host, argv):
        status, out, err = await sim.answer(host, argv)
        if status == 0 and argv != ["true"] and argv[-1] == "127.0.0.1":  # a client's report
            return 0, client_output, err
        return status, out, err
    return answer


LATENCY = group_config("latency_probe", hosts=[{"name": "a", "address": "127.0.0.1"}, {"name": "b", "address": "127.0.0.1"}],
                       options={"probe_timeout": "2s", "server_start_wait": "10ms"})


@settings(FUZZ, max_examples=25)
@given(out=st.one_of(mutated(LAT), st.sampled_from(NASTY).map(perftest_json_with)))
def test_latency_probe_explains_every_fuzzed_report(out):
    states = poll_once(LATENCY, latency_answer(out))
    assert_explained(states)


def test_latency_probe_reports_the_overflowing_json_as_a_parse_failure():
    (state,) = poll_once(LATENCY, latency_answer(perftest_json_with("9" * 309)))
    # Every probe failed, so the round fails (a whole-round failure carries command_failed); each
    # probe's own reason is parse, with the parser's message.
    assert state.state == "failed" and "internal" not in state.errors, (state.errors, state.last_error)
    assert "perftest JSON: percentile_99 is out of range" in state.last_error


# -- a parser that does raise something foreign: explained, logged, counted, polling goes on --------

FOREIGN = [OverflowError("int too large to convert to float"), KeyError("x"), IndexError("list index out of range"),
           AttributeError("'NoneType' object has no attribute 'group'"), RecursionError("maximum recursion depth")]


@pytest.mark.parametrize("exc", FOREIGN, ids=lambda e: type(e).__name__)
def test_a_foreign_exception_from_a_parser_is_explained_and_polling_goes_on(exc, monkeypatch, caplog):
    import fabric_exporter.collectors.roce_nic.collector as roce_nic

    def broken(text, *args, **kwargs):
        raise exc

    monkeypatch.setattr(roce_nic, "parse_host_dump", broken)
    cfg = parse_config({"targets": [{"name": "g", "fabric": "f", "collector": "roce_nic", "transport": "local",
                                     "interval": "200ms", "timeout": "150ms"}]})

    async def answer(host, argv):
        return 0, "@@fabric-roce 1 sysfs\n@@end\n", ""

    async def main():
        sched = Scheduler(FakeTransports(answer), SnapshotStore())
        sched.apply(cfg)
        state = sched.states[("g", "localhost")]
        for _ in range(100):  # bounded: at most 10 s
            if state.polls >= 2:
                break
            await asyncio.sleep(0.1)
        await sched.stop()
        return state

    with caplog.at_level(logging.ERROR, logger="fabric_exporter.scheduler"):
        state = asyncio.run(main())
    assert state.polls >= 2, "the target stopped being polled"
    assert state.state == "failed" and state.errors["internal"] == state.polls
    assert state.last_error.startswith(f"internal error: {type(exc).__name__}")
    crashes = [r for r in caplog.records if r.getMessage() == "poll crashed"]
    assert crashes and crashes[0].exc_info and crashes[0].exc_info[0] is type(exc)


def test_a_foreign_exception_from_the_perftest_parser_fails_that_probe_as_parse(monkeypatch, caplog):
    import fabric_exporter.collectors.latency_probe.collector as latency_probe

    def broken(text, message_bytes=None, skipped=None):
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(latency_probe, "parse_report", broken)
    with caplog.at_level(logging.ERROR):
        (state,) = poll_once(LATENCY, latency_answer("whatever"))
    assert state.state == "failed" and "internal" not in state.errors, (state.errors, state.last_error)
    assert "parser bug: OverflowError: int too large" in state.last_error
    assert any("parser bug" in r.getMessage() and r.exc_info for r in caplog.records)


# A collector whose input needs a hand-written test (several commands answered differently, a lab
# simulator, varbinds) -> the tests above that poll it through the scheduler with fuzzed output, or
# where its input is fuzzed instead. Any other collector declares ``captures`` and is polled by
# test_a_declared_collector_*. The collector completeness test (tests/unit/test_collectors_completeness.py)
# requires one or the other for every collector.
THROUGH_COLLECTORS: dict[str, tuple[str, ...] | str] = {
    "infiniband": ("test_infiniband_collector_explains_every_fuzzed_output",
                   "test_infiniband_focus_reads_explain_every_fuzzed_output",
                   "test_infiniband_collector_with_a_5000_digit_counter_fails_as_parse"),
    "roce_nic": ("test_roce_nic_collector_explains_every_fuzzed_output",
                 "test_roce_nic_collector_with_a_5000_digit_link_field_is_explained"),
    "switch_cli": ("test_switch_cli_collector_explains_every_fuzzed_output",
                   "test_switch_cli_watermarks_explain_every_fuzzed_output",
                   "test_switch_cli_cumulus_explains_every_fuzzed_output",
                   "test_switch_cli_eos_explains_every_fuzzed_output",
                   "test_switch_cli_collector_with_a_5000_digit_counter_is_explained",
                   "test_every_switch_cli_dialect_explains_every_fuzzed_output"),
    "latency_probe": ("test_latency_probe_explains_every_fuzzed_report",
                      "test_latency_probe_reports_the_overflowing_json_as_a_parse_failure"),
    "snmp_switch": "reads SNMP varbinds, not text: its BER decoder is fuzzed in tests/unit/transport/test_snmp_ber.py "
                   "and test_snmp_v3_ber.py",
    "gnmi_switch": "reads gNMI notifications: the value parsers are fuzzed as entry points above "
                   "(gnmi.parse_*) and in tests/unit/parsers/test_gnmi.py",
}


def test_registry_text_collectors_are_all_covered():
    for name, tests in THROUGH_COLLECTORS.items():
        if isinstance(tests, tuple):
            assert tests and all(callable(globals().get(t)) for t in tests), name
    assert {n for n, c in registry().items() if "snmp" not in c.transports} >= {
        "infiniband", "roce_nic", "switch_cli", "latency_probe"}
