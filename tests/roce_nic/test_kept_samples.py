"""The collector's kept samples (collectors/roce_nic/kept.py, issue 27) never publish a stale value.

Differential: a host's dumps over many polls, each moving a random share of its counters (none, a
few, all; values around the 7-digit and 2**53 format boundaries), and now and then changing its
layout (a counter gone or new, a port down, a section failing, an ambiguous ethtool counter, a
garbled line, a port gone). Each poll goes through the collector's path with its ``KeptPorts`` and
the store's snapshot chain (``build_snapshot`` with the previous snapshot: kept lines reused) and
through the plain path (``result_from_dump``, rendered whole); the bytes, problems, skipped lines
and errors must be the same on every poll.
"""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from fabric_exporter.collectors.roce_nic import RoceNicOptions, result_from_dump
from fabric_exporter.collectors.roce_nic.kept import KeptPorts
from fabric_exporter.collectors.roce_nic.ports import _result_and_ports
from fabric_exporter.errors import CommandError, ParseError
from fabric_exporter.exposition import render_chunks
from fabric_exporter.lab.roce_host import RoceHost
from fabric_exporter.parsers.rdma import parse_host_dump
from fabric_exporter.samples import KeptSample
from fabric_exporter.store import build_snapshot

COUNTER = re.compile(r"^(\s*[^:@\n][^:\n]*:\s*)(\d+)$")
VALUES = (0, 1, 999_999, 1_000_000, 123_456_789, 2**53 - 1, 2**53 + 1, 10**19 - 1)


def plain(text: str, options: RoceNicOptions):
    try:
        result = result_from_dump(parse_host_dump(text), "gpu-001", options)
    except (ParseError, CommandError) as e:
        return type(e).__name__, str(e)
    return render_chunks(result.samples, ("fabric", "f")), result.problems, Counter(map(repr, result.skipped))


class KeptPath:
    """The collector's path: one KeptPorts for the host, snapshots chained as the store chains them."""

    def __init__(self):
        self.kept = KeptPorts()
        self.snapshot = None
        self.kept_seen = 0

    def poll(self, text: str, options: RoceNicOptions):
        try:
            result, _ports = _result_and_ports(parse_host_dump(text), "gpu-001", options, self.kept)
        except (ParseError, CommandError) as e:
            return type(e).__name__, str(e)
        self.kept_seen += sum(type(s) is KeptSample for s in result.samples)
        self.snapshot = build_snapshot("f", result.samples, 60, previous=self.snapshot)
        return dict(self.snapshot.chunks), result.problems, Counter(map(repr, result.skipped))


def move(lines: list[str], rng: random.Random, share: float) -> list[str]:
    out = []
    for line in lines:
        m = COUNTER.match(line)
        if m and rng.random() < share:
            value = rng.choice(VALUES) if rng.random() < 0.3 else int(m.group(2)) + rng.randrange(1, 10**6)
            line = f"{m.group(1)}{value}"
        out.append(line)
    return out


def reshape(lines: list[str], rng: random.Random) -> list[str]:
    """One layout change somewhere in the dump."""
    kind = rng.randrange(6)
    counters = [i for i, line in enumerate(lines) if COUNTER.match(line)]
    i = rng.choice(counters)
    if kind == 0:  # a counter gone
        return lines[:i] + lines[i + 1:]
    if kind == 1:  # a new counter (unmapped or mapped)
        return lines[:i] + [rng.choice(["  rx_prio5_pause: 17", "  new_counter: 5", "np_cnp_sent:3"])] + lines[i:]
    if kind == 2:  # a port goes down / comes back
        return [re.sub(r"ACTIVE$", "DOWN", line) if line.startswith("@@port") and rng.random() < 0.5 else line
                for line in lines]
    if kind == 3:  # ethtool fails on one netdev
        heads = [j for j, line in enumerate(lines) if line.startswith("@@ethtool ")]
        j = rng.choice(heads)
        return lines[:j] + [re.sub(r" 0$", " 1", lines[j])] + lines[j + 1:]
    if kind == 4:  # a counter printed twice with another value (ambiguous) or a garbled line (skipped)
        return lines[:i + 1] + [rng.choice([lines[i] + "1", "  a note"])] + lines[i + 1:]
    heads = [j for j, line in enumerate(lines) if line.startswith("@@device ")]  # a device gone (its ports too)
    dev = lines[rng.choice(heads)].split()[1]
    keep, skipping = [], False
    for line in lines:
        if line.startswith("@@"):
            skipping = line.split()[1:2] == [dev] and line.startswith(("@@device", "@@port", "@@hw_counters"))
        if not skipping:
            keep.append(line)
    return keep


@pytest.mark.parametrize("vendor, seed", [("mlx5", 1), ("bnxt", 2), ("irdma", 3), ("mlx5", 4)])
@pytest.mark.parametrize("expose_unmapped", [False, True])
def test_kept_samples_render_what_the_whole_poll_renders(vendor, seed, expose_unmapped):
    rng = random.Random(seed)
    host = RoceHost.build("gpu-001", vendor, nics=4, seed=seed)
    options = RoceNicOptions(expose_unmapped=expose_unmapped)
    base = host.render_dump(counters="all" if expose_unmapped else "mapped").splitlines()
    path = KeptPath()
    lines = base
    errors = 0
    for poll in range(60):  # bounded
        share = rng.choice([0.0, 0.0, 0.02, 0.2, 1.0])
        lines = move(lines, rng, share)
        if rng.random() < 0.15:
            lines = reshape(lines, rng)
        elif rng.random() < 0.1:
            lines = base  # back to the first layout and values
        text = "\n".join(lines) + "\n"
        want = plain(text, options)
        got = path.poll(text, options)
        assert got == want, f"poll {poll} (share {share})"
        errors += isinstance(want[0], str)
    assert path.kept_seen > 0 and errors < 60


def test_an_unmoved_counter_hands_out_its_very_sample_and_a_moved_one_a_new_sample():
    host = RoceHost.build("gpu-001", "mlx5", nics=2, seed=5)
    text = host.render_dump(counters="mapped")
    kept = KeptPorts()
    first, _ = _result_and_ports(parse_host_dump(text), "gpu-001", RoceNicOptions(), kept)
    line = next(x for x in text.splitlines() if x.strip().startswith("rx_prio3_pause:"))
    moved = text.replace(line, line.split(":")[0] + ": 424242", 1)
    second, _ = _result_and_ports(parse_host_dump(moved), "gpu-001", RoceNicOptions(), kept)
    assert len(first.samples) == len(second.samples)
    changed = [(a, b) for a, b in zip(first.samples, second.samples) if a is not b]
    assert [(b.name, b.labels["priority"], b.value) for _a, b in changed] == [
        ("fabric_roce_pfc_rx_pause_frames_total", "3", 424242)]
    assert all(type(s) is KeptSample for s in second.samples)
    assert changed[0][0].labels is changed[0][1].labels  # the same labels dict: its line's prefix is kept
