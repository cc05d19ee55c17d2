"""Our renderer must produce exactly prometheus_client's bytes for the same samples."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import CollectorRegistry

from fabric_exporter.catalog import CATALOG
from fabric_exporter.exposition import UnknownMetricError, family_header, format_value, render_chunks
from fabric_exporter.store import SnapshotStore, build_snapshot
from fabric_exporter.samples import Sample

FAMILY = CATALOG["fabric_roce_pfc_rx_pause_frames_total"]
GAUGE = CATALOG["fabric_poll_duration_seconds"]

label_values = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
values = st.one_of(st.integers(min_value=0, max_value=2**64 - 1), st.floats(allow_nan=True, allow_infinity=True),
                   st.integers(min_value=-(10**20), max_value=10**20))


class _Fixed:
    def __init__(self, families):
        self.families = families

    def collect(self):
        return self.families


def reference(spec, rows) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    labels = sorted({k for r in rows for k in r[0]}) or list(spec.label_sets[0])
    if spec.type == "counter":
        fam = CounterMetricFamily(spec.name.removesuffix("_total"), spec.help, labels=labels)
    else:
        fam = GaugeMetricFamily(spec.name, spec.help, labels=labels)
    for lab, v in rows:
        fam.add_metric([lab[k] for k in labels], v)
    registry.register(_Fixed([fam]))
    return generate_latest(registry)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.fixed_dictionaries({k: label_values for k in FAMILY.label_sets[0]}), values),
                min_size=1, max_size=5))
def test_counter_family_bytes_identical_to_prometheus_client(rows):
    ours = family_header(FAMILY) + render_chunks((FAMILY.name, lab, v) for lab, v in rows)[FAMILY.name]
    assert ours == reference(FAMILY, rows)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.fixed_dictionaries({k: label_values for k in GAUGE.label_sets[0]}), values),
                min_size=1, max_size=5))
def test_gauge_family_bytes_identical_to_prometheus_client(rows):
    ours = family_header(GAUGE) + render_chunks((GAUGE.name, lab, v) for lab, v in rows)[GAUGE.name]
    assert ours == reference(GAUGE, rows)


def test_value_formatting_matches_go():
    assert format_value(5) == "5.0"
    assert format_value(2**64 - 1) == "1.8446744073709552e+19"
    assert format_value(math.inf) == "+Inf"
    assert format_value(0.25) == "0.25"


def test_unknown_names_and_label_sets_are_refused():
    with pytest.raises(UnknownMetricError):
        render_chunks([("fabric_not_a_metric_total", {}, 1)])
    with pytest.raises(UnknownMetricError):
        render_chunks([(FAMILY.name, {"fabric": "x", "host": "h"}, 1)])


def test_store_groups_families_across_targets_and_withholds_stale():
    store = SnapshotStore()
    labels = {"host": "h", "device": "mlx5_0", "port": "1", "netdev": "eth0"}
    store.put(("g", "a"), build_snapshot("f1", [Sample("fabric_roce_rx_bytes_total", labels, 1)], 10, now_mono=0))
    store.put(("g", "b"), build_snapshot("f1", [Sample("fabric_roce_rx_bytes_total", {**labels, "host": "i"}, 2),
                                                Sample("fabric_roce_tx_bytes_total", labels, 3)], 100, now_mono=0))
    text = store.render(now_mono=5).decode()
    assert text.count("# TYPE fabric_roce_rx_bytes_total counter") == 1
    assert 'fabric_roce_rx_bytes_total{device="mlx5_0",fabric="f1",host="h",netdev="eth0",port="1"} 1.0' in text
    assert 'host="i"' in text
    later = store.render(now_mono=50).decode()  # target a is past stale_after: its series are gone
    assert 'host="h",netdev="eth0",port="1"} 1.0' not in later
    assert "fabric_roce_tx_bytes_total" in later and 'host="i"' in later


def test_shared_label_dicts_and_the_extra_label_render_as_separate_dicts_would():
    shared = {"host": "h", "device": "mlx5_0", "port": "1", "netdev": "eth0"}
    other = {**shared, "netdev": 'eth"1'}
    rows = [("fabric_roce_rx_bytes_total", shared, 1), ("fabric_roce_tx_bytes_total", shared, 2.5),
            ("fabric_roce_rx_bytes_total", other, 3), ("fabric_roce_tx_bytes_total", shared, 1234567.0)]
    fast = render_chunks(rows, ("fabric", "f1"))
    plain = render_chunks([(n, {"fabric": "f1", **dict(lab)}, v) for n, lab, v in rows])
    assert fast == plain
    assert b'netdev="eth\\"1"' in fast["fabric_roce_rx_bytes_total"]
    assert fast["fabric_roce_tx_bytes_total"].endswith(b'port="1"} 1.234567e+06\n')


def test_a_snapshot_recompresses_only_families_that_changed():
    import zlib

    store = SnapshotStore()
    labels = {"host": "h", "device": "mlx5_0", "port": "1", "netdev": "eth0"}
    first = build_snapshot("f", [Sample("fabric_roce_rx_bytes_total", labels, 1),
                                 Sample("fabric_roce_tx_bytes_total", labels, 5)], 60)
    store.put(("g", "h"), first)
    second = build_snapshot("f", [Sample("fabric_roce_rx_bytes_total", labels, 2),
                                  Sample("fabric_roce_tx_bytes_total", labels, 5)], 60, previous=first)
    store.put(("g", "h"), second)
    assert second.chunks["fabric_roce_tx_bytes_total"] is first.chunks["fabric_roce_tx_bytes_total"]
    assert second.deflated["fabric_roce_tx_bytes_total"] is first.deflated["fabric_roce_tx_bytes_total"]
    assert second.deflated["fabric_roce_rx_bytes_total"] != first.deflated["fabric_roce_rx_bytes_total"]
    for family, text in second.chunks.items():
        preceding, piece = second.deflated[family]
        assert preceding == family_header(CATALOG[family])  # the first target: after HELP/TYPE
        assert zlib.decompressobj(-15, zdict=preceding).decompress(piece) == text
