"""KeptSample: a sample object a collector hands out again keeps its rendered line across snapshots,
and the output stays byte-identical to rendering plain Samples (issue 12: IB render cost)."""

from __future__ import annotations

import gzip
import random
import sys

import pytest

from fabric_exporter.serving import exposition
from fabric_exporter.serving.exposition import (LineCache, RenderMismatch, TargetRenderer, UnknownMetricError,
                                                render_chunks)
from fabric_exporter.samples import KeptSample, Sample
from fabric_exporter.serving.store import SnapshotStore, build_snapshot

LABELS = {"node_guid": "0x0000000000000001", "node_name": "sw1", "port": "1", "peer_node_name": "", "peer_port": ""}


def _plain(samples):
    return [Sample(*s) for s in samples]


def _counting_formats(monkeypatch) -> list:
    """Every value format_value formats from now on (a reused line formats none)."""
    monkeypatch.delenv("FABRIC_VERIFY_RENDER", raising=False)  # its whole render would count too
    seen: list = []
    original = exposition.format_value

    def counting(value):
        seen.append(value)
        return original(value)

    monkeypatch.setattr(exposition, "format_value", counting)
    return seen


def test_kept_samples_render_like_plain_ones_and_keep_their_lines(monkeypatch):
    kept = [KeptSample("fabric_ib_port_state_id", LABELS, 4.0), KeptSample("fabric_ib_port_degraded", LABELS, 0.0)]
    fresh = [Sample("fabric_ib_port_transmit_wait_total", LABELS, 12.0)]
    renderer = TargetRenderer(("fabric", "ib"))
    first = renderer.render(kept + fresh)
    assert first == render_chunks(_plain(kept) + fresh, ("fabric", "ib"))
    cache = renderer.lines
    assert cache.samples == tuple(kept + fresh)
    formatted = _counting_formats(monkeypatch)
    fresh2 = [Sample("fabric_ib_port_transmit_wait_total", LABELS, 13.0)]
    second = renderer.render(kept + fresh2)
    assert formatted == [13.0]  # the kept lines were not formatted again
    assert second["fabric_ib_port_state_id"] is first["fabric_ib_port_state_id"]
    assert second == render_chunks(_plain(kept) + fresh2, ("fabric", "ib"))


def test_a_new_object_with_a_new_value_is_never_rendered_from_the_old_line():
    old = KeptSample("fabric_ib_port_state_id", LABELS, 4.0)
    renderer = TargetRenderer(("fabric", "ib"))
    renderer.render([old])
    new = KeptSample("fabric_ib_port_state_id", LABELS, 1.0)  # the link went down: a new object
    chunks = renderer.render([new])
    assert chunks["fabric_ib_port_state_id"].endswith(b"} 1.0\n")


def test_snapshots_reuse_lines_only_for_the_same_fabric_label(monkeypatch):
    kept = [KeptSample("fabric_ib_port_state_id", LABELS, 4.0)]
    first = build_snapshot("ib-a", kept, 60)
    formatted = _counting_formats(monkeypatch)
    same = build_snapshot("ib-a", kept, 60, previous=first)
    assert same.chunks == first.chunks and formatted == []
    other = build_snapshot("ib-b", kept, 60, previous=first)
    assert b'fabric="ib-b"' in other.chunks["fabric_ib_port_state_id"]
    assert b'fabric="ib-a"' not in other.chunks["fabric_ib_port_state_id"]
    assert same.renderer is first.renderer and other.renderer is not first.renderer  # handed on, or a new one


def _port(n: int, value: float = 0.0) -> list:
    labels = {**LABELS, "port": str(n)}
    return [KeptSample("fabric_ib_port_state_id", labels, 4.0), KeptSample("fabric_ib_port_degraded", labels, value),
            KeptSample("fabric_ib_node_xmit_wait_tick_multiplier",
                       {"node_guid": labels["node_guid"], "node_name": f"sw{n}"}, 1.0),
            Sample("fabric_ib_port_transmit_wait_total", labels, float(n))]


def test_a_new_layout_is_patched_too_and_the_next_poll_patches_again(monkeypatch):
    ports = [_port(n) for n in range(8)]
    renderer = TargetRenderer(("fabric", "ib"))
    renderer.render([s for p in ports for s in p])
    ports[2][1] = KeptSample("fabric_ib_port_degraded", ports[2][0].labels, 1.0)  # a new object
    del ports[1]  # a port gone: another layout
    samples = [s for p in ports for s in p]
    formatted = _counting_formats(monkeypatch)
    chunks = renderer.render(samples)
    assert formatted == [1.0]  # only the new object: the port gone was cut out of its families
    assert chunks == render_chunks(_plain(samples), ("fabric", "ib"))
    assert b'port="2"} 1.0\n' in chunks["fabric_ib_port_degraded"]
    assert renderer.lines.samples == tuple(samples)  # the new layout is the one the next poll is patched on
    formatted = _counting_formats(monkeypatch)
    moved = [Sample(s.name, s.labels, 9.0) if type(s) is Sample else s for s in samples]
    again = renderer.render(moved)
    assert formatted == [9.0] * 7  # only the counters that moved
    assert again["fabric_ib_port_state_id"] is chunks["fabric_ib_port_state_id"]


@pytest.mark.parametrize("seed", range(20))
def test_kept_objects_reshuffled_replaced_and_dropped_render_like_plain_samples(seed):
    """Poll after poll, kept objects come back, are replaced, move, drop out or repeat: every
    render equals rendering the same samples as plain Samples with no reuse at all."""
    rng = random.Random(seed)
    ports = [_port(n, float(n % 2)) for n in range(12)]
    renderer = TargetRenderer(("fabric", "ib"))
    for _round in range(6):
        for p in ports:
            if rng.random() < 0.2:
                p[rng.randrange(3)] = KeptSample(p[0].name, p[0].labels, rng.choice([0.0, -0.0, 4.0, 1e7]))
        order = [s for p in rng.sample(ports, rng.randrange(6, 13)) for s in p]
        if rng.random() < 0.3:
            order += order[: rng.randrange(1, 8)]  # the same objects twice in one call
        if rng.random() < 0.3:
            order = [s for s in order if rng.random() < 0.8]  # layouts broken up
        assert renderer.render(order) == render_chunks(_plain(order), ("fabric", "ib"))


def _snapshot_text(snapshot, store: SnapshotStore) -> dict:
    """The snapshot's families, plain and through the store's gzip body, which must say the same."""
    store.put(("g", "ib"), snapshot)
    assert gzip.decompress(b"".join(store.parts(0, gzip=True))) == store.render(0)
    return snapshot.chunks


def _sweep_tail(tools: int) -> list:
    """An IB sweep's closing samples: one duration per tool run this poll, then the port counts."""
    return [Sample("fabric_ib_sweep_duration_seconds", {"tool": f"tool{t}"}, 0.5 + t) for t in range(tools)] + \
           [Sample("fabric_ib_topology_ports", {"state": state}, 3.0) for state in ("up", "down")]


@pytest.mark.parametrize("seed", range(30))
def test_snapshots_patched_in_place_render_like_plain_samples(seed, monkeypatch):
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
    store = SnapshotStore()
    patches: list = []
    original_patch = exposition._patch
    monkeypatch.setattr(exposition, "_patch", lambda *a: patches.append(original_patch(*a)) or patches[-1])
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
        assert _snapshot_text(snapshot, store) == render_chunks(_plain(samples), ("fabric", "ib"))
        previous = snapshot
    assert sum(p is not None for p in patches) >= 3  # patched in place, not rendered whole


def test_a_patched_snapshot_keeps_untouched_families_and_a_failed_render_keeps_the_last_good_one():
    ports = [_port(n) for n in range(20)]
    samples = [s for p in ports for s in p] + _sweep_tail(2)
    first = build_snapshot("ib", samples, 60)
    first_lines = first.renderer.lines
    store = SnapshotStore()
    store.put(("g", "ib"), first)
    moved = [Sample(s.name, s.labels, s.value + 1) if type(s) is Sample else s for s in samples]
    moved[3] = Sample(moved[3].name, {**moved[3].labels, "node_name": "renamed"}, 5.0)  # a new labels dict
    second = build_snapshot("ib", moved + _sweep_tail(1), 60, previous=first)  # and a longer tail
    assert b'node_name="renamed"' in second.chunks["fabric_ib_port_transmit_wait_total"]
    assert second.chunks["fabric_ib_port_state_id"] is first.chunks["fabric_ib_port_state_id"]
    store.put(("g", "ib"), second)
    assert second.deflated["fabric_ib_port_state_id"] is first.deflated["fabric_ib_port_state_id"]  # not compressed again
    renderer = second.renderer
    assert renderer is first.renderer  # the target's renderer, handed on
    good = renderer.lines
    assert good.families[:80] == first_lines.families[:80]  # patched before the tail
    assert second.chunks == render_chunks(_plain(moved + _sweep_tail(1)), ("fabric", "ib"))
    # a render that fails half-way (a sample outside the catalog where a port came: a break) leaves
    # the renderer on its last good render, unchanged: the next poll is patched on that, and right
    layout = (list(good.samples), list(good.families), good.index.tolist(), dict(good.chunks))
    again = [Sample(s.name, s.labels, s.value + 2) if type(s) is Sample else s for s in samples]
    bogus = KeptSample("fabric_no_such_metric", {**LABELS, "port": "99"}, 1.0)
    with pytest.raises(UnknownMetricError) as failed:
        build_snapshot("ib", again[:40] + [bogus] + again[40:], 60, previous=second)
    assert any(entry.name == "replace_break" for entry in failed.traceback)  # half-way through the patch
    assert renderer.lines is good
    assert (list(good.samples), list(good.families), good.index.tolist(), good.chunks) == layout
    third = build_snapshot("ib", again[:-3], 60, previous=second)  # a shorter tail
    assert third.chunks == render_chunks(_plain(again[:-3]), ("fabric", "ib"))
    fourth = build_snapshot("ib", again[:-4], 60, previous=third)  # no tail at all
    assert fourth.chunks == render_chunks(_plain(again[:-4]), ("fabric", "ib"))
    # a target without kept samples holds no cache (nor its samples)
    assert build_snapshot("ib", _plain(samples), 60).renderer.lines is None


def test_verify_mode_is_read_when_the_renderer_is_made_and_a_mismatch_keeps_the_last_good_render(monkeypatch):
    """FABRIC_VERIFY_RENDER is read once, by the renderer's constructor; with it, a patched render
    that differs from a whole one raises RenderMismatch and the renderer stays on its last good render."""
    monkeypatch.setenv("FABRIC_VERIFY_RENDER", "1")
    renderer = TargetRenderer(("fabric", "ib"))
    monkeypatch.delenv("FABRIC_VERIFY_RENDER")
    assert renderer.verify and not TargetRenderer(("fabric", "ib")).verify
    samples = [s for p in (_port(n) for n in range(4)) for s in p]
    renderer.render(samples)
    good = renderer.lines
    original_patch = exposition._patch

    def losing_a_family(samples, cache):  # a patch gone wrong: one family's lines lost
        lines = original_patch(samples, cache)
        chunks = {f: text for f, text in lines.chunks.items() if f != "fabric_ib_port_degraded"}
        return LineCache(lines.extra_label, lines.samples, lines.families, lines.index, chunks)

    monkeypatch.setattr(exposition, "_patch", losing_a_family)
    with pytest.raises(RenderMismatch):
        renderer.render(samples)
    assert renderer.lines is good
    assert TargetRenderer(("fabric", "ib"), verify=False).render(samples) == render_chunks(_plain(samples), ("fabric", "ib"))
    monkeypatch.setattr(exposition, "_patch", original_patch)
    assert renderer.render(samples) == render_chunks(_plain(samples), ("fabric", "ib"))


def test_label_sets_are_immutable_interned_and_read_like_dicts():
    from fabric_exporter.samples import LabelSet
    labels = LabelSet(LABELS)
    assert LabelSet(dict(LABELS)) is labels  # built again: the very same object
    assert labels == LABELS and LABELS == labels and dict(labels) == LABELS and {**labels} == LABELS
    assert labels["port"] == "1" and list(labels) == list(LABELS) and len(labels) == len(LABELS)
    with pytest.raises(TypeError):
        labels["port"] = "2"  # type: ignore[index]
    with pytest.raises(AttributeError):
        labels._values = {}
    assert LabelSet({**LABELS, "port": "2"}) is not labels
    # renders like the dict it was made from
    assert render_chunks([Sample("fabric_ib_port_state_id", labels, 4.0)], ("fabric", "ib")) == \
        render_chunks([Sample("fabric_ib_port_state_id", dict(LABELS), 4.0)], ("fabric", "ib"))


def test_label_sets_merge_into_interned_label_sets_and_copy_out_as_dicts():
    from fabric_exporter.samples import LabelSet
    labels = LabelSet(LABELS)
    merged = labels.merged({"priority": "3", "port": "2"})
    assert merged is LabelSet({**LABELS, "priority": "3", "port": "2"})  # extra names win, order kept
    assert list(merged) == [*LABELS, "priority"] and labels == LABELS
    copy = labels.as_dict()
    assert type(copy) is dict and copy == LABELS
    copy["port"] = "9"  # a copy: the label set is unchanged
    assert labels["port"] == "1"
    # with the exposition's extra label in front, as the renderer reads it
    port2 = labels.merged({"port": "2"})
    assert render_chunks([Sample("fabric_ib_port_state_id", port2, 4.0)], ("fabric", "ib")) == \
        render_chunks([Sample("fabric_ib_port_state_id", dict(port2), 4.0)], ("fabric", "ib"))


def test_a_port_whose_kept_samples_are_made_again_under_interned_labels_keeps_its_place(monkeypatch):
    """A memo rebuilt (after a rediscovery) makes new KeptSamples, but under the same interned
    label set: the samples stay aligned, a new object with its old value keeps its line and only
    the value that changed is formatted (onto its old line)."""
    from fabric_exporter.samples import LabelSet
    ports = [[KeptSample("fabric_ib_port_state_id", LabelSet({**LABELS, "port": str(n)}), 4.0)] for n in range(6)]
    renderer = TargetRenderer(("fabric", "ib"))
    renderer.render([s for p in ports for s in p])
    rebuilt = [[KeptSample(p[0].name, LabelSet({**LABELS, "port": str(n)}), 1.0 if n == 2 else 4.0)]
               for n, p in enumerate(ports)]
    del rebuilt[4]
    formatted = _counting_formats(monkeypatch)
    samples = [s for p in rebuilt for s in p]
    chunks = renderer.render(samples)
    assert formatted == [1.0]  # new objects, but the same series: only the moved value is formatted
    assert chunks == render_chunks(_plain(samples), ("fabric", "ib"))


# Label values a line's value must be told apart from: spaces (the value follows the line's last
# space), escaped quotes, backslashes and newlines, a value that looks like a number.
_AWKWARD_NAMES = ["sw 1", 'a "quoted" name', "back\\slash", "line\nbreak", "1.0", "ends with space ", ""]


@pytest.mark.parametrize("extra_label", [("fabric", "ib lab"), None])
def test_a_moved_value_goes_onto_its_old_line_whatever_the_labels_hold(extra_label, monkeypatch):
    """A sample of the same series (name and labels object) with another value is written onto its
    old line, the line up to its last space, in every value form: no label text is made for it.
    Equal to a whole render, poll after poll, with a port gone and back (lines moved within their
    families) and a series without labels (``name value``)."""
    rng = random.Random(27)
    fabric = {"fabric": "ib lab"} if extra_label is None else {}  # the catalog's port label sets have it
    ports = [{**fabric, **LABELS, "node_name": name, "port": str(n)} for n, name in enumerate(_AWKWARD_NAMES)]
    values = [0.0, -0.0, 1.0, 7, -3, 4363776.0, 1e7, 12345678901234.0, 1.5e16, 2.5e-07, float("nan"),
              float("inf"), float("-inf"), 10**20]
    kept = [KeptSample("fabric_ib_port_state_id", labels, 4.0) for labels in ports]
    bare = {}  # the reload metric has no labels: with no extra label, its line is ``name value``
    gone = ports[2]  # every third poll

    def poll(n: int) -> list:
        samples = [s for labels, kept_sample in zip(ports, kept) if n % 3 != 1 or labels is not gone
                   for s in (kept_sample, Sample("fabric_ib_port_transmit_wait_total", labels, rng.choice(values)))]
        if extra_label is None:
            samples.append(Sample("fabric_config_last_reload_successful", bare, rng.choice(values)))
        return samples

    polls = [poll(n) for n in range(13)]
    wholes = [render_chunks(_plain(samples), extra_label) for samples in polls]
    renderer = TargetRenderer(extra_label, verify=False)
    renderer.render(polls[0])
    labelled: list = []  # the labels objects the renderer makes label text for from now on
    original_label_text = exposition._label_text
    monkeypatch.setattr(exposition, "_label_text",
                        lambda labels, extra: labelled.append(labels) or original_label_text(labels, extra))
    assert [renderer.render(samples) for samples in polls[1:]] == wholes[1:]
    assert labelled and all(labels is gone for labels in labelled)  # only the port that came back: patched, not whole


def test_the_line_cache_holds_no_text_per_sample_beyond_the_family_bytes():
    """What a target's render cache holds beyond its families' bytes (and the samples: the
    collector's) is its layout only, each sample's family and its line's place there: ~13 B a
    sample, after a whole render and after a patched one with a new layout. A ``name{labels} ``
    string per sample (~100-150 B), or a list of them (8 B), would be caught here."""
    import gc
    import tracemalloc

    first = tuple(s for p in (_port(n) for n in range(1500)) for s in p)  # a tuple: the cache holds it as it is
    second = tuple(Sample(s.name, s.labels, s.value + 1) if type(s) is Sample else s
                   for s in first[:40] + first[44:])  # every counter moved and a port gone: a new layout
    TargetRenderer(("fabric", "ib")).render(first)  # the catalog lookups' memo, filled outside the count
    renderer = TargetRenderer(("fabric", "ib"), verify=False)
    gc.collect()
    tracemalloc.start()
    try:
        for samples in (first, second):
            previous = renderer.lines  # held here, so its memory is not freed during the count
            before = tracemalloc.get_traced_memory()[0]
            chunks = renderer.render(samples)
            gc.collect()
            family_bytes = sum(sys.getsizeof(text) for family, text in chunks.items()
                               if previous is None or text is not previous.chunks.get(family))
            held = tracemalloc.get_traced_memory()[0] - before - family_bytes
            assert renderer.lines is not None and renderer.lines is not previous
            assert held < 16 * len(samples), f"{held / len(samples):.1f} B a sample"
            del previous
    finally:
        tracemalloc.stop()


def test_the_render_keeps_the_cyclic_gc_on(monkeypatch):
    """A large fabric renders on a worker thread while the loop polls on: a GC pause there would pile
    both threads' allocations into one young-generation pass that holds the loop (bench_cluster:
    0.4-0.9 s at 10k GPUs). Both ways of rendering a kept poll run with the GC on."""
    import gc

    seen: list[bool] = []
    monkeypatch.setattr(exposition, "format_value", lambda v, f=exposition.format_value: seen.append(gc.isenabled()) or f(v))
    kept = [KeptSample("fabric_ib_port_state_id", LABELS, 4.0)]
    renderer = TargetRenderer(("fabric", "ib"))
    renderer.render(kept + [Sample("fabric_ib_port_transmit_wait_total", LABELS, 1.0)])  # whole
    renderer.render(kept + [Sample("fabric_ib_port_transmit_wait_total", LABELS, 2.0)])  # patched
    assert len(seen) >= 3 and all(seen)
