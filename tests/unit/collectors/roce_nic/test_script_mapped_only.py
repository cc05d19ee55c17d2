"""The host-side filter (roce_nic.FILTER_AWK, issue 27): a dump with only the mapped counters publishes
exactly what the whole dump publishes.

Every real capture under tests/fixtures (ethtool -S of every driver, the hw_counters tables) is framed
into host dumps as the remote script prints them, under each driver family's name; the real ``awk``
runs the collector's filter program over each; both dumps go through the collector's parse + map and
the store's renderer, and the exposition bytes, the problems, the skipped lines and any error must be
the same. Crafted dumps cover what the filter must leave to the daemon (duplicates, 20-digit values,
garbled lines, a failed ethtool, a host whose counters are all unmapped).
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter

import pytest

from fabric_exporter.collectors.roce_nic import FILTER_AWK, RoceNicOptions, result_from_dump
from fabric_exporter.errors import CommandError, ParseError
from fabric_exporter.serving.exposition import render_chunks
from fabric_exporter.lab.roce_host import DRIVERS, RoceHost
from fabric_exporter.parsers.rdma import parse_host_dump

from tests.harness import paths

FIXTURES = paths.FIXTURES
CAPTURES = sorted([*(FIXTURES / "real").glob("ethtool_*.txt"), *(FIXTURES / "roce_nic").glob("ethtool_*.txt")])
HW_CAPTURES = sorted([*(FIXTURES / "real").glob("hw_counters_*.txt"), *(FIXTURES / "roce_nic").glob("hw_counters_*.txt")])
# PCI drivers whose names select each family's rules (driver_family), and one no rule knows
DRIVER_NAMES = ("mlx5_core", "bnxt_en", "ice", "vmxnet3")


def host_filter(text: str) -> str:
    """What the remote script's ``| LC_ALL=C awk FILTER_AWK`` makes of ``text``."""
    r = subprocess.run(["awk", FILTER_AWK], input=text, capture_output=True, text=True, timeout=30,
                       env={**os.environ, "LC_ALL": "C"})
    assert r.returncode == 0, r.stderr
    return r.stdout


def published(text: str, options: RoceNicOptions = RoceNicOptions()):
    """The exposition bytes, problems and skipped lines (by source and text: line numbers count the
    lines sent) of one dump, or the kind of error it fails with."""
    try:
        result = result_from_dump(parse_host_dump(text), "gpu-001", options)
    except (ParseError, CommandError) as e:
        return type(e).__name__
    skipped = Counter((s.source, s.text) for s in result.skipped)
    return render_chunks(result.samples, ("fabric", "f")), result.problems, skipped


def frame(driver: str, ports: list[tuple[str | None, str | None]], ethtool_status: int = 0) -> str:
    """A sysfs-mode dump: one device per (hw_counters text, ethtool text) pair."""
    out = ["@@fabric-roce 1 sysfs"]
    for i, (hw, eth) in enumerate(ports):
        out += [f"@@device dev{i} {driver}", f"@@port dev{i} 1 eth{i} Ethernet 4: ACTIVE"]
        if hw is not None:
            out += [f"@@hw_counters dev{i} 1", *hw.splitlines()]
    for i, (_hw, eth) in enumerate(ports):
        if eth is not None:
            out += [f"@@ethtool eth{i} {ethtool_status}", *eth.splitlines()]
    return "\n".join(out) + "\n@@end\n"


def real_capture_dumps() -> list[tuple[str, str]]:
    hw = [p.read_text() for p in HW_CAPTURES]
    eth = [p.read_text() for p in CAPTURES]
    pairs = [(hw[i % len(hw)], text) for i, text in enumerate(eth)]
    return [(driver, frame(driver, pairs)) for driver in DRIVER_NAMES]


def test_the_corpus_is_there():
    assert len(CAPTURES) >= 15 and len(HW_CAPTURES) >= 4
    # skipped lines are among what is compared (the real captures have none)
    assert published(host_filter(frame("mlx5_core", [EDGES["unknown lines kept for the skip count"]])))[2] == \
        Counter({("ethtool", "a note"): 1})


@pytest.mark.parametrize("driver, text", real_capture_dumps(), ids=DRIVER_NAMES)
def test_every_real_capture_publishes_the_same_through_the_host_filter(driver, text):
    mapped = host_filter(text)
    assert len(mapped) < len(text) * 0.5 and "@@dropped ethtool eth0 " in mapped  # the filter does its job
    full = published(text)
    assert not isinstance(full, str), full  # the captures read (else there is nothing to compare)
    assert published(mapped) == full
    assert any("printed twice with different values" in p for p in full[1])  # vmxnet3's per-queue names


@pytest.mark.parametrize("vendor", sorted(DRIVERS))
def test_the_lab_hosts_publish_the_same_through_the_host_filter(vendor):
    host = RoceHost.build("gpu-001", vendor, nics=4)
    host.advance(60)
    text = host.render_dump()
    mapped = host.render_dump(counters="mapped")
    assert mapped == host_filter(text) and len(mapped) < len(text)
    assert published(mapped) == published(text)
    # rdma mode: iproute2's tables are passed through whole, the ethtool tables filtered the same
    rdma = host.render_dump(mode="rdma")
    filtered = host_filter(rdma)
    assert filtered.split("@@ethtool")[0] == rdma.split("@@ethtool")[0] and len(filtered) < len(rdma)
    assert published(filtered) == published(rdma)


EDGES = {
    # an unmapped name twice with different values: ambiguous, named in the problem
    "ambiguous unmapped": (None, "NIC statistics:\n  rx_packets: 1\n  rx_bytes_phy: 5\n  rx_packets: 2\n"),
    "duplicate same value": (None, "NIC statistics:\n  rx_packets: 1\n  rx_packets: 1\n  rx_bytes_phy: 5\n"),
    # a duplicate beside a kept line of the same name (20 digits: kept for the daemon to check)
    "duplicate of a kept line": (None, "NIC statistics:\n  x: 10000000000000000000\n  x: 5\n  rx_bytes_phy: 5\n"),
    "value past 64 bits": (None, "NIC statistics:\n  rx_packets: 99999999999999999999\n  rx_bytes_phy: 5\n"),
    "garbled value": (None, "NIC statistics:\n  rx_packets: 3O\n  rx_bytes_phy: 5\n"),
    "unknown lines kept for the skip count": (None, "NIC statistics:\n  rx_packets: 1\n  a note\n\n  rx_bytes_phy: 5\n"),
    "counters before the header": (None, "  rx_packets: 1\nNIC statistics:\n  rx_bytes_phy: 5\n"),
    "no header": (None, "  rx_packets: 1\n  rx_bytes_phy: 5\n"),
    "hw duplicate unmapped": ("rx_write_requests:1\nnp_cnp_sent:4\nrx_write_requests:1\n", None),
    "hw duplicate beside a garbled line": ("rx_write_requests:1\nrx_write_requests:x\nnp_cnp_sent:4\n", None),
    "hw garbled and blank lines": ("rx_write_requests:1\n\nbad line\nnp_cnp_sent:4\nrx_read_requests: 7\n", None),
    "hw setting only": ("lifespan:10\n", None),
    "all unmapped": ("rx_write_requests:1\n", "NIC statistics:\n  rx_packets: 1\n"),
}


@pytest.mark.parametrize("hw, eth", EDGES.values(), ids=EDGES.keys())
def test_what_the_filter_leaves_to_the_daemon(hw, eth):
    for status in (0, 1):
        text = frame("mlx5_core", [(hw, eth)], ethtool_status=status)
        assert published(host_filter(text)) == published(text)


def test_a_host_whose_counters_are_all_unmapped_is_partial_not_failed():
    # ethtool failed, and every hw counter is one no rule maps: still a host that was read
    text = frame("mlx5_core", [("rx_write_requests:1\nrx_read_requests:2\n", "Cannot get stats: No such device\n")],
                 ethtool_status=1)
    mapped = host_filter(text)
    assert "rx_write_requests" not in mapped and "@@dropped hw_counters dev0 1 2\n" in mapped
    chunks, problems, _ = published(mapped)
    assert problems == published(text)[1] and "exit status 1" in problems[0]
    assert b"fabric_roce_nic_port_info" in b"".join(chunks.values())


def test_expose_unmapped_still_publishes_every_counter():
    host = RoceHost.build("gpu-001", "mlx5", nics=2)
    host.advance(60)
    full = published(host.render_dump(), RoceNicOptions(expose_unmapped=True))
    body = b"".join(full[0].values())
    assert b'counter="rx_write_requests"' in body and b'counter="tx_tso_packets"' in body
    # and only the unmapped series are what the filter saves
    mapped = published(host.render_dump(counters="mapped"))
    unmapped_lines = [line for line in body.splitlines() if line.startswith(b"fabric_roce_nic_unmapped_value")]
    assert len(body.splitlines()) - len(unmapped_lines) == len(b"".join(mapped[0].values()).splitlines())


@pytest.mark.parametrize("line", ["@@dropped hw_counters dev9 1 3", "@@dropped ethtool eth0", "@@dropped x eth0 1",
                                  "@@dropped ethtool eth0 -1", "@@dropped hw_counters dev0 x 1"])
def test_a_bad_dropped_line_is_a_parse_error(line):
    text = frame("mlx5_core", [("np_cnp_sent:4\n", None)]).replace("@@end\n", f"{line}\n@@end\n")
    with pytest.raises(ParseError):
        parse_host_dump(text)
