"""The collector's kept samples (PortLabels(keep_samples=True), CounterMapper.map_kept, issue 27)
never publish a stale value.

Differential: a host's dumps over many polls, each moving a random share of its counters (none, a
few, all; values around the 7-digit and 2**53 format boundaries), and now and then changing its
layout (a counter gone or new, a port down, a section failing, an ambiguous ethtool counter, a
garbled line, a device gone). Each poll goes through the collector's path (one kept PortLabels for
the host, snapshots chained as the store chains them, so kept lines are reused) and through the
plain path (``result_from_dump``, rendered whole); the bytes, problems, skipped lines and errors
must be the same on every poll.
"""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from fabric_exporter.collectors.roce_nic import RoceNicOptions, result_from_dump
from fabric_exporter.collectors.roce_nic.ports import PortLabels, _result_and_ports
from fabric_exporter.errors import CommandError, ParseError
from fabric_exporter.lab.roce_host import RoceHost
from fabric_exporter.parsers.rdma import parse_host_dump
from fabric_exporter.samples import KeptSample
from fabric_exporter.serving.exposition import render_chunks
from fabric_exporter.serving.store import build_snapshot

COUNTER = re.compile(r"^(\s*[^:@\n][^:\n]*:\s*)(\d+)$")
VALUES = (0, 1, 999_999, 1_000_000, 123_456_789, 2**53 - 1, 2**53 + 1, 10**19 - 1)


def plain(text: str, options: RoceNicOptions):
    try:
        result = result_from_dump(parse_host_dump(text), "gpu-001", options)
    except (ParseError, CommandError) as e:
        return type(e).__name__, str(e)
    return render_chunks(result.samples, ("fabric", "f")), result.problems, Counter(map(repr, result.skipped))


class KeptPath:
    """The collector's path: one kept PortLabels for the host, snapshots chained as the store chains them."""

    def __init__(self):
        self.kept = PortLabels("gpu-001", keep_samples=True)
        self.snapshot = None
        self.kept_seen = 0

    def poll(self, text: str, options: RoceNicOptions):
        try:
            result, _ports = _result_and_ports(parse_host_dump(text), "gpu-001", options, self.kept)
        except (ParseError, CommandError) as e:
            return type(e).__name__, str(e)
        self.kept_seen += sum(type(s) is KeptSample for s in result.samples)
        self.snapshot = build_snapshot("f", result.samples, 60, previous=self.snapshot)
        assert self.snapshot.renderer.lines is not None  # the render was patched on the last one
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
    return without_device(lines, rng.choice(devices(lines)))


def devices(lines: list[str]) -> list[str]:
    return [line.split()[1] for line in lines if line.startswith("@@device ")]


def without_device(lines: list[str], dev: str) -> list[str]:
    """The dump without one RDMA device (its ports and counters too)."""
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


def _with_value(text: str, counter: str, value: int, nth: int = 0) -> str:
    """``text`` with the ``nth`` line of ``counter`` set to ``value``."""
    lines = text.split("\n")
    at = [i for i, line in enumerate(lines) if line.strip().startswith(counter + ":")][nth]
    lines[at] = lines[at].split(":")[0] + f": {value}"
    return "\n".join(lines)


def test_an_unmoved_counter_hands_out_its_very_sample_and_a_moved_one_its_new_value():
    host = RoceHost.build("gpu-001", "mlx5", nics=2, seed=5)
    text = host.render_dump(counters="mapped")
    kept = PortLabels("gpu-001", keep_samples=True)
    first, _ = _result_and_ports(parse_host_dump(text), "gpu-001", RoceNicOptions(), kept)
    assert all(type(s) is KeptSample for s in first.samples)
    moved = _with_value(text, "rx_prio3_pause", 424242)
    second, _ = _result_and_ports(parse_host_dump(moved), "gpu-001", RoceNicOptions(), kept)
    assert len(first.samples) == len(second.samples)
    changed = [(a, b) for a, b in zip(first.samples, second.samples) if a is not b]
    assert [(b.name, b.labels["priority"], b.value) for _a, b in changed] == [
        ("fabric_roce_pfc_rx_pause_frames_total", "3", 424242)]
    assert all(type(s) is KeptSample for s in second.samples)
    assert changed[0][0].labels is changed[0][1].labels  # the same labels: its old line takes the new value
    # back to the first value: a new sample again, not the first poll's (no older poll is kept)
    third, _ = _result_and_ports(parse_host_dump(text), "gpu-001", RoceNicOptions(), kept)
    back = [b for a, b in zip(second.samples, third.samples) if a is not b]
    assert [(s.name, s.value) for s in back] == [("fabric_roce_pfc_rx_pause_frames_total", first.samples[
        first.samples.index(changed[0][0])].value)]
    # and the store publishes each poll's value
    snapshot = None
    for dump, want in ((text, None), (moved, b" 424242.0\n"), (text, None)):
        result, _ = _result_and_ports(parse_host_dump(dump), "gpu-001", RoceNicOptions(), kept)
        snapshot = build_snapshot("f", result.samples, 60, previous=snapshot)
        assert snapshot.chunks == render_chunks(result.samples, ("fabric", "f"))
        pause = snapshot.chunks["fabric_roce_pfc_rx_pause_frames_total"]
        assert (b'priority="3"} 424242.0\n' in pause) == (want is not None)


def test_a_changed_section_is_read_again_whole():
    """A section whose names changed (a counter gone, one new) is mapped by its new plan: no sample
    of the old plan is handed out for it, the counters after the change included."""
    host = RoceHost.build("gpu-001", "mlx5", nics=1, seed=2)
    text = host.render_dump(counters="mapped")
    kept = PortLabels("gpu-001", keep_samples=True)
    first, _ = _result_and_ports(parse_host_dump(text), "gpu-001", RoceNicOptions(), kept)
    lines = text.split("\n")
    gone = next(i for i, line in enumerate(lines) if line.strip().startswith("rx_prio3_pause:"))
    reshaped = "\n".join(lines[:gone] + ["     rx_prio5_pause: 77"] + lines[gone + 1:])
    second, _ = _result_and_ports(parse_host_dump(reshaped), "gpu-001", RoceNicOptions(), kept)
    assert second.samples == result_from_dump(parse_host_dump(reshaped), "gpu-001", RoceNicOptions()).samples
    pauses = {s.labels["priority"]: s.value for s in second.samples if s.name == "fabric_roce_pfc_rx_pause_frames_total"}
    assert pauses["5"] == 77 and "3" not in pauses
    # the hw_counters section did not change (its samples handed out again), the ethtool one is new
    (port,) = kept._ports.values()
    same = {id(s) for s in first.samples} & {id(s) for s in second.samples}
    assert same == {id(s) for s in port.sources["hw_counters"].samples} | {id(s) for s in port.static.values()}


def test_a_host_whose_nic_set_changed_publishes_its_ports_and_forgets_the_gone_ones():
    host = RoceHost.build("gpu-001", "mlx5", nics=3, seed=4)
    full = host.render_dump().splitlines()  # no @@dropped lines (a gone device would leave its own)
    gone = devices(full)[1]
    fewer = without_device(full, gone)
    kept = PortLabels("gpu-001", keep_samples=True)
    snapshot = None
    for lines in (full, fewer, fewer, full, _moved_all(full)):
        text = "\n".join(lines) + "\n"
        result, ports = _result_and_ports(parse_host_dump(text), "gpu-001", RoceNicOptions(), kept)
        assert result.samples == result_from_dump(parse_host_dump(text), "gpu-001", RoceNicOptions()).samples
        snapshot = build_snapshot("f", result.samples, 60, previous=snapshot)
        assert snapshot.chunks == render_chunks(result.samples, ("fabric", "f"))
        assert {key[0] for key in kept._ports} == {p.device for p in ports}  # a gone port's samples go too
    assert gone in {key[0] for key in kept._ports}


def _moved_all(lines: list[str]) -> list[str]:
    return [f"{m.group(1)}{int(m.group(2)) + 7}" if (m := COUNTER.match(line)) else line for line in lines]


def test_without_kept_labels_the_samples_are_plain():
    """Pure callers (no PortLabels, or one without keep_samples) get plain Samples: a KeptSample
    is for objects a collector holds on to, never one made per call."""
    text = RoceHost.build("gpu-001", "mlx5", nics=1, seed=1).render_dump()
    for labels in (None, PortLabels("gpu-001")):
        result = result_from_dump(parse_host_dump(text), "gpu-001", RoceNicOptions(), labels)
        assert result.samples and not any(type(s) is KeptSample for s in result.samples)
