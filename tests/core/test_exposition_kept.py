"""KeptSample: a sample object a collector hands out again keeps its rendered line across snapshots,
and the output stays byte-identical to rendering plain Samples (issue 12: IB render cost)."""

from __future__ import annotations

import gzip
import random

import pytest

from fabric_exporter.exposition import render_chunks
from fabric_exporter.samples import KeptSample, Sample
from fabric_exporter.store import build_snapshot

LABELS = {"node_guid": "0x0000000000000001", "node_name": "sw1", "port": "1", "peer_node_name": "", "peer_port": ""}


def _plain(samples):
    return [Sample(*s) for s in samples]


def test_kept_samples_render_like_plain_ones_and_reuse_their_lines():
    kept = [KeptSample("fabric_ib_port_state_id", LABELS, 4.0), KeptSample("fabric_ib_port_degraded", LABELS, 0.0)]
    fresh = [Sample("fabric_ib_port_transmit_wait_total", LABELS, 12.0)]
    first_out: dict = {}
    first = render_chunks(kept + fresh, ("fabric", "ib"), kept=None, kept_out=first_out)
    assert first == render_chunks(_plain(kept) + fresh, ("fabric", "ib"))
    # only kept samples are remembered: one run (they are consecutive), holding exactly them
    assert set(first_out) == {id(kept[0])}
    assert [id(s) for run in first_out.values() for s in run[1]] == [id(s) for s in kept]
    second_out: dict = {}
    fresh2 = [Sample("fabric_ib_port_transmit_wait_total", LABELS, 13.0)]
    second = render_chunks(kept + fresh2, ("fabric", "ib"), kept=first_out, kept_out=second_out)
    assert all(second_out[k] is first_out[k] for k in first_out)  # reused, not formatted again
    assert second == render_chunks(_plain(kept) + fresh2, ("fabric", "ib"))


def test_a_new_object_with_a_new_value_is_never_rendered_from_the_old_line():
    old = KeptSample("fabric_ib_port_state_id", LABELS, 4.0)
    out: dict = {}
    render_chunks([old], ("fabric", "ib"), kept_out=out)
    new = KeptSample("fabric_ib_port_state_id", LABELS, 1.0)  # the link went down: a new object
    chunks = render_chunks([new], ("fabric", "ib"), kept=out, kept_out={})
    assert chunks["fabric_ib_port_state_id"].endswith(b"} 1.0\n")


def test_snapshots_reuse_lines_only_for_the_same_fabric_label():
    kept = [KeptSample("fabric_ib_port_state_id", LABELS, 4.0)]
    first = build_snapshot("ib-a", kept, 60)
    same = build_snapshot("ib-a", kept, 60, previous=first)
    assert same.chunks == first.chunks and same.lines.runs[id(kept[0])] is first.lines.runs[id(kept[0])]
    other = build_snapshot("ib-b", kept, 60, previous=first)
    assert b'fabric="ib-b"' in other.chunks["fabric_ib_port_state_id"]
    assert b'fabric="ib-a"' not in other.chunks["fabric_ib_port_state_id"]


def _port(n: int, value: float = 0.0) -> list:
    labels = {**LABELS, "port": str(n)}
    return [KeptSample("fabric_ib_port_state_id", labels, 4.0), KeptSample("fabric_ib_port_degraded", labels, value),
            KeptSample("fabric_ib_node_xmit_wait_tick_multiplier",
                       {"node_guid": labels["node_guid"], "node_name": f"sw{n}"}, 1.0),
            Sample("fabric_ib_port_transmit_wait_total", labels, float(n))]


def test_a_run_with_one_object_changed_is_rendered_afresh_from_the_new_objects():
    ports = [_port(n) for n in range(4)]
    out: dict = {}
    render_chunks([s for p in ports for s in p], ("fabric", "ib"), kept_out=out)
    assert len(out) == 4  # a run per port (the plain counter ends each)
    ports[2][1] = KeptSample("fabric_ib_port_degraded", ports[2][0].labels, 1.0)  # middle of a run
    samples = [s for p in ports for s in p]
    out2: dict = {}
    chunks = render_chunks(samples, ("fabric", "ib"), kept=out, kept_out=out2)
    assert chunks == render_chunks(_plain(samples), ("fabric", "ib"))
    assert b'port="2"} 1.0\n' in chunks["fabric_ib_port_degraded"]
    assert out2[id(ports[1][0])] is out[id(ports[1][0])]  # unchanged runs reused
    assert out2[id(ports[2][0])] is not out[id(ports[2][0])]  # the changed one rebuilt
    assert [s for s in out2[id(ports[2][0])][1]] == ports[2][:3]


def test_a_run_cut_short_by_the_end_of_the_samples_is_not_reused_whole():
    port = _port(1)[:3]
    out: dict = {}
    render_chunks(port, ("fabric", "ib"), kept_out=out)
    chunks = render_chunks(port[:2], ("fabric", "ib"), kept=out, kept_out={})
    assert chunks == render_chunks(_plain(port[:2]), ("fabric", "ib"))
    assert "fabric_ib_node_xmit_wait_tick_multiplier" not in chunks


@pytest.mark.parametrize("seed", range(20))
def test_runs_reshuffled_replaced_and_dropped_render_like_plain_samples(seed):
    """Poll after poll, kept objects come back, are replaced, move, drop out or repeat: every
    render equals rendering the same samples as plain Samples with no reuse at all."""
    rng = random.Random(seed)
    ports = [_port(n, float(n % 2)) for n in range(12)]
    kept: dict | None = None
    for _round in range(6):
        for p in ports:
            if rng.random() < 0.2:
                p[rng.randrange(3)] = KeptSample(p[0].name, p[0].labels, rng.choice([0.0, -0.0, 4.0, 1e7]))
        order = [s for p in rng.sample(ports, rng.randrange(6, 13)) for s in p]
        if rng.random() < 0.3:
            order += order[: rng.randrange(1, 8)]  # the same objects twice in one call
        if rng.random() < 0.3:
            order = [s for s in order if rng.random() < 0.8]  # runs broken up
        out: dict = {}
        chunks = render_chunks(order, ("fabric", "ib"), kept=kept, kept_out=out)
        assert chunks == render_chunks(_plain(order), ("fabric", "ib"))
        kept = out


def _snapshot_text(snapshot) -> dict:
    """The snapshot's families, plain and through its gzip members, which must say the same."""
    assert {f: gzip.decompress(member) for f, member in snapshot.gz.items()} == snapshot.chunks
    return snapshot.chunks


def _sweep_tail(tools: int) -> list:
    """An IB sweep's closing samples: one duration per tool run this poll, then the port counts."""
    return [Sample("fabric_ib_sweep_duration_seconds", {"tool": f"tool{t}"}, 0.5 + t) for t in range(tools)] + \
           [Sample("fabric_ib_topology_ports", {"state": state}, 3.0) for state in ("up", "down")]


@pytest.mark.parametrize("seed", range(30))
def test_snapshots_patched_in_place_render_like_plain_samples(seed):
    """A target polled again: only the samples that are new objects are formatted, in place, and
    the tail (closing families, of any length) is rendered whole. Values move (or not: a new object
    with the same value keeps its line, but not -0.0 for 0.0 nor NaN), kept samples are replaced by
    new ones with the same or a new labels dict, or by one of another family (a new layout:
    rendered whole); ports come and go; the tail grows and shrinks. Every snapshot equals a render
    of the same samples as plain Samples with no reuse at all."""
    rng = random.Random(seed)
    ports = [_port(n, float(n % 2)) for n in range(20)]
    values = [0.0, -0.0, 1.0, 4.0, 1e7, 4363776.0, 1.5e16, float("nan"), float("inf"), 7]
    previous = None
    patched = 0
    for _round in range(12):
        for p in ports:
            # the plain counter is a new object every poll, its value moving or not
            p[3] = Sample(p[3].name, p[3].labels, rng.choice([p[3].value, *values]))
            roll = rng.random()
            if roll < 0.1:
                p[1] = KeptSample(p[1].name, p[1].labels, rng.choice(values))  # same labels dict
            elif roll < 0.15:
                labels = {**p[0].labels, "peer_node_name": f"peer{rng.randrange(3)}"}  # a new dict
                p[0] = KeptSample(p[0].name, labels, p[0].value)
            elif roll < 0.17:
                p[2] = KeptSample(p[0].name, p[0].labels, 4.0)  # another family at that place
        if rng.random() < 0.1:
            ports.append(_port(100 + _round))  # a port more: another layout
        samples = [s for p in ports for s in p] + _sweep_tail(rng.randrange(4))
        snapshot = build_snapshot("ib", samples, 60, previous=previous)
        assert _snapshot_text(snapshot) == render_chunks(_plain(samples), ("fabric", "ib"))
        if previous is not None and snapshot.lines.runs is previous.lines.runs:
            patched += 1  # the positions were reused (a full render makes new runs)
        previous = snapshot
    assert patched >= 3


def test_a_patched_snapshot_keeps_untouched_families_and_the_previous_cache_stays_valid():
    ports = [_port(n) for n in range(20)]
    samples = [s for p in ports for s in p] + _sweep_tail(2)
    first = build_snapshot("ib", samples, 60)
    moved = [Sample(s.name, s.labels, s.value + 1) if type(s) is Sample else s for s in samples]
    moved[3] = Sample(moved[3].name, {**moved[3].labels, "node_name": "renamed"}, 5.0)  # a new labels dict
    second = build_snapshot("ib", moved + _sweep_tail(1), 60, previous=first)  # and a longer tail
    assert b'node_name="renamed"' in second.chunks["fabric_ib_port_transmit_wait_total"]
    assert second.chunks["fabric_ib_port_state_id"] is first.chunks["fabric_ib_port_state_id"]
    assert second.gz["fabric_ib_port_state_id"] is first.gz["fabric_ib_port_state_id"]
    assert second.lines.runs is first.lines.runs  # patched, not rendered whole
    assert second.chunks == render_chunks(_plain(moved + _sweep_tail(1)), ("fabric", "ib"))
    # the first snapshot's cache was not changed by the patch: another poll from it is right too
    again = [Sample(s.name, s.labels, s.value + 2) if type(s) is Sample else s for s in samples]
    third = build_snapshot("ib", again[:-3], 60, previous=first)  # a shorter tail
    assert third.chunks == render_chunks(_plain(again[:-3]), ("fabric", "ib"))
    assert third.lines.runs is first.lines.runs
    fourth = build_snapshot("ib", again[:-4], 60, previous=first)  # no tail at all
    assert fourth.chunks == render_chunks(_plain(again[:-4]), ("fabric", "ib"))
    assert first.lines.tail == len(samples) - 4 and fourth.lines.runs is first.lines.runs
    # a target without kept samples holds no cache (nor its samples)
    assert build_snapshot("ib", _plain(samples), 60).lines is None
