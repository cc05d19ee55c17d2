"""MetricSpec: HELP's {raw} is filled from the rows, including rows attached after the spec was written."""

from __future__ import annotations

import pytest

from fabric_exporter import catalog
from fabric_exporter.catalog import CATALOG
from fabric_exporter.catalog.spec import MetricSpec, RawCounter


def _spec(**kw) -> MetricSpec:
    return MetricSpec(**{"name": "fabric_test_spec_frames_total", "type": "counter", "unit": "frames",
                         "help": "Frames ({raw}).", "label_sets": ((),), "sources": ("snmp_switch",), **kw})


def test_a_metric_whose_help_names_raw_without_rows_is_refused_at_registration():
    spec = _spec()
    with pytest.raises(ValueError, match="help names {raw} but the metric has no raw rows"):
        spec.check_complete()
    with pytest.raises(ValueError, match="fabric_test_spec_frames_total"):
        catalog.register([spec])
    assert "fabric_test_spec_frames_total" not in CATALOG


def test_rows_attached_later_fill_help_and_origin_and_sources():
    spec = _spec().with_rows((RawCounter("FramesIn", "cli x", vendor="x", shown="X 'cli x'"),), "switch_cli")
    spec.check_complete()
    assert spec.help == "Frames (X 'cli x' FramesIn)."
    assert spec.origin == ("FramesIn",) and spec.sources == ("snmp_switch", "switch_cli")
    again = spec.with_rows((RawCounter("FramesOut", "cli x", vendor="x", shown="X 'cli x'"),), "switch_cli")
    assert again.help == "Frames (X 'cli x' FramesIn / FramesOut)." and again.origin == ("FramesIn", "FramesOut")
    assert again.sources == ("snmp_switch", "switch_cli")


def test_an_origin_written_by_hand_is_kept_when_rows_join():
    spec = _spec(origin=("SAI_FRAMES",), raw=(RawCounter("FramesIn", "cli x", vendor="x", shown="X 'cli x'"),))
    more = spec.with_rows((RawCounter("Frames", "cli y", vendor="y", shown="Y 'cli y'"),), "switch_cli")
    assert more.origin == ("SAI_FRAMES",) and more.help == "Frames (X 'cli x' FramesIn, Y 'cli y' Frames)."
