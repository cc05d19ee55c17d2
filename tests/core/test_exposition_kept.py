"""KeptSample: a sample object a collector hands out again keeps its rendered line across snapshots,
and the output stays byte-identical to rendering plain Samples (issue 12: IB render cost)."""

from __future__ import annotations

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
    assert set(first_out) == {id(s) for s in kept}  # only kept samples are remembered
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
    assert same.chunks == first.chunks and same.kept[id(kept[0])] is first.kept[id(kept[0])]
    other = build_snapshot("ib-b", kept, 60, previous=first)
    assert b'fabric="ib-b"' in other.chunks["fabric_ib_port_state_id"]
    assert b'fabric="ib-a"' not in other.chunks["fabric_ib_port_state_id"]
