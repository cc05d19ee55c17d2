"""The per-host poll's cheap paths: a port's samples sharing labels dicts, the one-pass hw_counters
parse, the sliced host dump, ethtool's own layout read with whole-text operations and the mapping
done in C. Each must give exactly what the plain path gives."""

from __future__ import annotations

import random
import re

import pytest

from fabric_exporter.collectors.roce_nic import ETHTOOL_MAPPER, HW_MAPPER, RoceNicOptions, result_from_dump
from fabric_exporter.errors import ParseError
from fabric_exporter.lab.roce_host import DRIVERS, RoceHost
from fabric_exporter.parsers import ethtool, rdma
from fabric_exporter.parsers.rdma import parse_host_dump, parse_hw_counters
from fabric_exporter.samples import LabelSet, Sample
from fabric_exporter.serving.store import build_snapshot

from tests.harness import paths

FIXTURES = paths.FIXTURES / "roce_nic"


def polls(host: RoceHost, n: int, **dump) -> list[str]:
    out = []
    for _ in range(n):
        host.advance(30)
        out.append(host.render_dump(**dump))
    return out


@pytest.mark.parametrize("vendor", ["mlx5", "bnxt", "irdma"])
def test_shared_labels_render_the_same_bytes_as_one_dict_per_sample(vendor):
    host = RoceHost.build("gpu-007", vendor, nics=4, seed=3)
    previous = None
    for n, text in enumerate(polls(host, 3)):
        result = result_from_dump(parse_host_dump(text), "gpu-007", RoceNicOptions())
        own = [Sample(s.name, dict(s.labels), s.value) for s in result.samples]
        previous = build_snapshot("f", result.samples, 60, previous=previous)
        assert previous.chunks == build_snapshot("f", own, 60).chunks, f"poll {n}"


def test_a_ports_samples_share_one_dict_per_label_set():
    host = RoceHost.build("gpu-001", nics=2, seed=1)
    result = result_from_dump(parse_host_dump(polls(host, 1)[0]), "gpu-001", RoceNicOptions())
    dicts = {id(s.labels): s.labels for s in result.samples}
    assert len(dicts) <= len(result.samples) // 8  # base, driver and one per priority, per port
    # every dict stands for one label set: no two equal dicts, none shared across ports
    assert len({tuple(sorted(d.items())) for d in dicts.values()}) == len(dicts)


def _slow(text: str):
    """The line-by-line path alone (a blank line first sends the parser there)."""
    return parse_hw_counters("\n" + text)


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("hw_counters_*.txt")))
def test_one_pass_hw_counters_equal_the_line_by_line_parse(name):
    text = (FIXTURES / name).read_text()
    assert parse_hw_counters(text) == _slow(text)
    assert parse_hw_counters(text.rstrip("\n")) == _slow(text)


@pytest.mark.parametrize("text", [
    "a:1\na:1\n",  # listed twice: an error on both paths
    f"a:{2**64}\n",  # past 64 bits
    "a:1\nb:-2\n",
    "a:1\nb:0x10\n",
])
def test_one_pass_hw_counters_leave_bad_tables_to_the_checked_path(text):
    with pytest.raises(ParseError):
        parse_hw_counters(text)


def test_one_pass_hw_counters_fuzzed_against_the_line_by_line_parse():
    rng = random.Random(27)
    alphabet = ["a", "b", "_", "1", ":", "\n", " ", "\r", "9", "-", "lifespan"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30)))
        try:
            fast = ("ok", parse_hw_counters(text, skipped=[]))
        except ParseError:
            fast = ("error", None)
        try:
            slow = ("ok", _slow(text))
        except ParseError:
            slow = ("error", None)
        assert fast == slow, repr(text)


def _dump_outcome(parse, text):
    try:
        return ("ok", parse(text))
    except ParseError as e:
        return ("error", str(e))


def test_sliced_host_dump_equals_the_line_by_line_split():
    from fabric_exporter.parsers.rdma import _dump_by_lines

    host = RoceHost.build("gpu-002", "bnxt", nics=3, seed=2)
    texts = polls(host, 1) + polls(host, 1, mode="rdma") + polls(host, 1, devices=("bnxt_re0", "nope"))
    for text in texts:
        assert parse_host_dump(text) == _dump_by_lines(text)
    # mutated dumps: the same dump or the same error (with its line number) on both paths
    rng = random.Random(2727)
    pieces = ["\n", "@@", "@@end", "@@device x mlx5", "@@port x 1 e Ethernet 4: ACTIVE", "@@hw_counters x 1",
              "a:1", " ", "\r", "\x1f", "@@ethtool e 0", "NIC statistics:", "@@missing y", "@@rdma_link 0"]
    base = texts[0]
    for _ in range(2000):
        cut = rng.randrange(len(base))
        text = base[:cut] + "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 4))) + base[cut:]
        if rng.random() < 0.3:
            text = text[:rng.randrange(len(text))]
        assert _dump_outcome(parse_host_dump, text) == _dump_outcome(_dump_by_lines, text), repr(text[:200])
    small = ["@@fabric-roce 1 sysfs", "@@device x mlx5", "@@hw_counters x 1", "a:1", "", "@@end", " ", "@@end "]
    for _ in range(3000):
        text = "\n".join(rng.choice(small) for _ in range(rng.randrange(1, 7))) + rng.choice(["", "\n"])
        assert _dump_outcome(parse_host_dump, text) == _dump_outcome(_dump_by_lines, text), repr(text)


# -- the whole-text fast paths of issue 27 (ethtool's own layout, the dump's @@ lines, the mapping
# in C): each must give what the plain path it stands in for gives, on every real capture

ETHTOOL_CAPTURES = sorted([*(paths.FIXTURES / "real").glob("ethtool_*.txt"), *FIXTURES.glob("ethtool_*.txt")])
HW_CAPTURES = sorted([*(paths.FIXTURES / "real").glob("hw_counters_*.txt"), *FIXTURES.glob("hw_counters_*.txt")])


def _lab_dumps() -> list[str]:
    out = []
    for vendor in sorted(DRIVERS):
        host = RoceHost.build("gpu-003", vendor, nics=2, seed=5)
        out += polls(host, 1) + polls(host, 1, counters="mapped")
    return out


def _ethtool_texts() -> list[str]:
    texts = [p.read_text() for p in ETHTOOL_CAPTURES]
    for text in _lab_dumps():
        texts += [out.text for out in parse_host_dump(text).ethtool.values()]
    return texts


def _outcome(parse, text, **kw):
    skipped: list = []
    try:
        return ("ok", parse(text, skipped=skipped, **kw), skipped)
    except ParseError as e:
        return ("error", str(e), skipped)


def _plain_ethtool(monkeypatch, text):
    with monkeypatch.context() as m:
        m.setattr(ethtool, "_ethtool_layout", lambda _text: None)
        return _outcome(ethtool.parse_ethtool_stats, text)


def test_ethtool_layout_reads_what_the_regex_reads(monkeypatch):
    taken = 0
    for text in _ethtool_texts():
        layout = ethtool._ethtool_layout(text)
        if layout is not None:
            taken += 1
            assert list(zip(*layout)) == ethtool._LINE.findall(text, len(ethtool.HEADER))
        assert _outcome(ethtool.parse_ethtool_stats, text) == _plain_ethtool(monkeypatch, text)
    # ethtool's own layout (mlx5, ice, i40e, sfc... and the lab's) takes it; per-ring names with
    # spaces (bnxt's "[0]: rx_ucast_packets") and other indents per line do not
    assert taken >= 20
    assert ethtool._ethtool_layout((FIXTURES / "ethtool_bnxt.txt").read_text()) is None


def test_ethtool_layout_fuzzed_against_the_plain_path(monkeypatch):
    rng = random.Random(2706)
    bases = [p.read_text() for p in ETHTOOL_CAPTURES if "mlx5" in p.name or "ice" in p.name]
    # what keeps the layout (a digit, a name character) and what breaks it anywhere
    pieces = ["7", "x", "_", ":", " ", "  ", ": ", "\t", "\n", "\n\n", "\x01", "\x7f", "é", "9" * 21,
              "18446744073709551616", "\r", "NIC statistics:\n", " : 1\n", "\x1c"]
    taken = 0
    for _ in range(1500):
        text = rng.choice(bases)
        for _ in range(rng.randrange(1, 3)):
            cut = rng.randrange(len(text))
            text = text[:cut] + rng.choice(pieces) + text[cut + rng.randrange(0, 2):]
        if ethtool._ethtool_layout(text) is not None:
            taken += 1
            assert list(zip(*ethtool._ethtool_layout(text))) == ethtool._LINE.findall(text, len(ethtool.HEADER))
        assert _outcome(ethtool.parse_ethtool_stats, text) == _plain_ethtool(monkeypatch, text), repr(text[:300])
    small = ["NIC statistics:\n", "  a: 1\n", "  a: 2\n", "  b: 9\n", " b: 9\n", "  c:d: 3\n", "  : 4\n",
             f"  big: {2**64}\n", f"  max: {2**64 - 1}\n", "  e:  5\n", "  f: 6 \n", "  g 7\n", "\n", "  h: 8"]
    for _ in range(3000):
        text = "NIC statistics:\n" + "".join(rng.choice(small) for _ in range(rng.randrange(0, 5)))
        taken += ethtool._ethtool_layout(text) is not None
        assert _outcome(ethtool.parse_ethtool_stats, text) == _plain_ethtool(monkeypatch, text), repr(text)
    assert taken >= 300  # both sides of the layout check were exercised


_MARKER_LINES = re.compile(r"^@@[^\n]*", re.M)
_OTHER_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _real_capture_dumps() -> list[str]:
    """Each real ethtool -S capture framed as a host dump, beside a real hw_counters capture."""
    hw = [p.read_text() for p in HW_CAPTURES]
    return [f"@@fabric-roce 1 sysfs\n@@device dev0 mlx5_core\n@@port dev0 1 eth0 Ethernet 4: ACTIVE\n"
            f"@@hw_counters dev0 1\n{hw[i % len(hw)]}@@ethtool eth0 0\n{p.read_text()}@@end\n"
            for i, p in enumerate(ETHTOOL_CAPTURES)]


def test_dump_markers_and_line_breaks_equal_the_regexes():
    rng = random.Random(2707)
    pieces = ["\n", "@@", "\n@@", "@@\n", "@", "a", "é", *_OTHER_BREAKS]
    for base in _lab_dumps() + _real_capture_dumps():
        assert parse_host_dump(base) == rdma._dump_by_lines(base)
        assert not rdma._has_other_breaks(base)
        for _ in range(120):
            text = base
            for _ in range(rng.randrange(1, 4)):
                cut = rng.randrange(len(text))
                text = text[:cut] + rng.choice(pieces) + text[cut:]
            text = "@@" + text.lstrip("@")
            assert list(rdma._markers(text)) == [m.span() for m in _MARKER_LINES.finditer(text)], repr(text[:200])
            assert rdma._has_other_breaks(text) == any(c in text for c in _OTHER_BREAKS)
            assert _dump_outcome(parse_host_dump, text) == _dump_outcome(rdma._dump_by_lines, text), repr(text[:200])


def _mapped_by_steps(mapper, counters, family, base):
    """The plain path: one Sample per planned step, labels merged from the step's extra labels."""
    steps, unknown = mapper.plan(tuple(counters), family)
    samples = [Sample(metric, base.merged(dict(extra)) if extra else base,
                      counters[name] if scale == 1.0 else counters[name] * scale)
               for name, metric, extra, scale in steps]
    return samples, list(unknown)


def test_mapping_in_c_gives_the_samples_of_the_plain_steps():
    tables = [(HW_MAPPER, parse_hw_counters(p.read_text())) for p in HW_CAPTURES]
    tables += [(ETHTOOL_MAPPER, ethtool.parse_ethtool_stats(text).counters) for text in _ethtool_texts()]
    for text in _lab_dumps():
        dump = parse_host_dump(text)
        tables += [(HW_MAPPER, parse_hw_counters(raw)) for raw in dump.hw_counters.values()]
    base = LabelSet({"host": "h", "device": "d", "port": "1", "netdev": "n"})
    scaled = 0
    for mapper, counters in tables:
        for family in ("mlx5", "bnxt", "intel", None):
            unmapped: list[str] = []
            got = mapper.map(counters, family, base, unmapped, {})
            want, unknown = _mapped_by_steps(mapper, counters, family, base)
            assert [(s.name, s.labels, type(s.value), s.value) for s in got] == \
                [(s.name, s.labels, type(s.value), s.value) for s in want]
            assert all(g.labels is w.labels for g, w in zip(got, want)) and unmapped == unknown
            scaled += any(isinstance(s.value, float) for s in got)
    assert scaled  # the scaled rows (microseconds to seconds) were among them


def test_a_hosts_port_label_sets_are_kept_by_its_collector_across_polls():
    """The kept label sets are the collector's (PortLabels), not a module-wide memo: a poll looks a
    port's label sets up in its own host's, another host's polls never reach them, and they are
    bounded (cleared when full, then made again)."""
    from fabric_exporter.collectors.roce_nic.ports import PortLabels

    mine, other = PortLabels("gpu-001"), PortLabels("gpu-002")
    texts = polls(RoceHost.build("gpu-001", nics=2, seed=1), 2)
    first = result_from_dump(parse_host_dump(texts[0]), "gpu-001", RoceNicOptions(), mine)
    kept = dict(mine._ports)
    assert {key[:2] for key in kept} == {(s.labels["device"], int(s.labels["port"])) for s in first.samples}
    result_from_dump(parse_host_dump(texts[0]), "gpu-002", RoceNicOptions(), other)
    again = result_from_dump(parse_host_dump(texts[1]), "gpu-001", RoceNicOptions(), mine)
    assert mine._ports == kept and all(mine._ports[k] is v for k, v in kept.items())
    assert {s.labels["host"] for s in again.samples} == {"gpu-001"}
    assert all(a.labels is b.labels for a, b in zip(first.samples, again.samples))

    class Tiny(PortLabels):
        __slots__ = ()
        MAX = 1

    tiny = Tiny("gpu-001")
    result_from_dump(parse_host_dump(texts[0]), "gpu-001", RoceNicOptions(), tiny)
    assert len(tiny._ports) == 1  # two ports, a bound of one: cleared, then the last one kept
