"""The catalog is the contract: its invariants, and docs/metrics.md generated from it."""

import json
import re

from fabric_exporter import catalog
from fabric_exporter.catalog import CATALOG

from tests.harness import paths

ROOT = paths.ROOT
# Base units only: a metric in these would need a conversion factor at every query.
NON_BASE_UNITS = {"usec", "us", "microseconds", "ms", "milliseconds", "minutes", "hours", "kb", "mb", "gb",
                  "kilobytes", "megabytes", "percent", "words", "gbps", "mbps"}


def test_names_follow_prometheus_conventions():
    for spec in CATALOG.values():
        assert re.fullmatch(r"fabric_[a-z0-9_]+", spec.name), spec.name
        assert re.fullmatch(r"[a-z_]*", spec.unit), spec.name
        assert spec.unit not in NON_BASE_UNITS, f"{spec.name}: {spec.unit} is not a base unit"
        assert not any(f"_{u}_" in spec.name + "_" for u in NON_BASE_UNITS), f"{spec.name}: base units only"
        if spec.unit in ("bytes", "seconds", "ratio") and spec.type in ("counter", "gauge"):
            assert spec.unit in spec.name, f"{spec.name}: the unit belongs in the name"
        for ls in spec.label_sets:
            assert len(set(ls)) == len(ls), spec.name
            if "exporter" not in spec.sources:
                assert ls[:1] == ("fabric",), f"{spec.name}: data series carry the fabric label first"
        assert spec.sources, spec.name


def test_docs_metrics_md_is_generated_from_the_catalog():
    assert (ROOT / "docs" / "metrics.md").read_text() == catalog.to_markdown(), \
        "regenerate with: fabric-exporter catalog --format markdown > docs/metrics.md"


def test_json_lists_every_metric():
    rows = json.loads(catalog.to_json())
    assert [r["name"] for r in rows] == list(CATALOG)
