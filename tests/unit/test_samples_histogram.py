"""samples.histogram_samples builds every histogram the collectors and the daemon publish: each
catalog histogram, from any per-bucket counts, must render byte-identical to prometheus_client's
HistogramMetricFamily for the same buckets, count and sum (its spelling of ``le``, its order)."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import generate_latest
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import CollectorRegistry
from prometheus_client.utils import floatToGoString

from fabric_exporter.catalog import CATALOG
from fabric_exporter.samples import histogram_samples, le_labels
from fabric_exporter.serving.exposition import family_header, render_chunks

HISTOGRAMS = sorted(name for name, spec in CATALOG.items() if spec.buckets)


def test_every_catalog_histogram_is_covered():
    assert len(HISTOGRAMS) >= 7 and "fabric_event_loop_lag_seconds" in HISTOGRAMS


class _One:
    def __init__(self, family):
        self.family = family

    def collect(self):
        return [self.family]


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(HISTOGRAMS), st.data())
def test_histogram_samples_render_as_prometheus_client_does(name, data):
    spec = CATALOG[name]
    names = list(spec.label_sets[0])  # "fabric" among them: the store adds it, as here
    labels = {n: data.draw(st.text("ab-_.0", min_size=1, max_size=4)) for n in names}
    extra = ("fabric", labels.pop("fabric")) if "fabric" in labels else None
    per_bucket = data.draw(st.lists(st.integers(0, 10**6), min_size=len(spec.buckets) + 1,
                                    max_size=len(spec.buckets) + 1))
    cumulative = list(itertools.accumulate(per_bucket))
    count, total = cumulative[-1], data.draw(st.floats(0, 1e9, allow_nan=False))
    samples = histogram_samples(name, labels, le_labels(spec.buckets), cumulative, float(count), total)
    ours = family_header(spec) + render_chunks(samples, extra)[name]
    if extra:
        labels[extra[0]] = extra[1]

    reference = HistogramMetricFamily(name, spec.help, labels=names)
    bounds = [floatToGoString(b) for b in spec.buckets] + ["+Inf"]
    reference.add_metric([labels[n] for n in names], list(zip(bounds, map(float, cumulative))), total)
    registry = CollectorRegistry()
    registry.register(_One(reference))
    assert ours == generate_latest(registry)


def test_an_extra_uncounted_bucket_is_ignored_and_the_inf_bucket_holds_the_count():
    samples = histogram_samples("fabric_event_loop_lag_seconds", {}, ("0.1", "1.0"), [1, 2, 99], 5, 0.5)
    assert [(s.name, dict(s.labels), s.value) for s in samples] == [
        ("fabric_event_loop_lag_seconds_bucket", {"le": "0.1"}, 1),
        ("fabric_event_loop_lag_seconds_bucket", {"le": "1.0"}, 2),
        ("fabric_event_loop_lag_seconds_bucket", {"le": "+Inf"}, 5),
        ("fabric_event_loop_lag_seconds_count", {}, 5),
        ("fabric_event_loop_lag_seconds_sum", {}, 0.5)]
