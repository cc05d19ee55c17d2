"""The per-host poll's cheap paths: a port's samples sharing labels dicts, the one-pass hw_counters
parse and the sliced host dump. Each must give exactly what the plain path gives."""

from __future__ import annotations

import random

import pytest

from fabric_exporter.collectors.roce_nic import RoceNicOptions, result_from_dump
from fabric_exporter.errors import ParseError
from fabric_exporter.lab.roce_host import RoceHost
from fabric_exporter.parsers.rdma import parse_host_dump, parse_hw_counters
from fabric_exporter.samples import Sample
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
