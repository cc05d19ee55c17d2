"""The CLI dialects' part of the catalog is one table (catalog/switch_commands.py, issue #21 item 2):
a dialect's rows are declared beside its sources and join the metrics they name when the catalog is
built, so adding a dialect touches no metric module."""

from __future__ import annotations

import pytest

from fabric_exporter import catalog
from fabric_exporter.catalog import CATALOG
from fabric_exporter.catalog import switch_commands as sc

TOY_SOURCE = "toy show counters"
TOY = {"toyos": sc.CliDialect("ToyOS", {TOY_SOURCE: {
    "fabric_roce_rx_bytes_total": sc.Printed(("InOctets", "InBytes")),
    "fabric_roce_switch_voq_packets_total": "VoqPkts"}})}


def test_a_new_dialects_rows_join_the_metrics_it_names():
    specs = list(CATALOG.values())
    built = {s.name: s for s in catalog._attach(specs, sc.rows_of(TOY), sc.ROWS_COLLECTOR)}
    rx = built["fabric_roce_rx_bytes_total"]
    before = CATALOG["fabric_roce_rx_bytes_total"]
    assert rx.raw[:len(before.raw)] == before.raw
    assert [(r.name, r.source, r.vendor, r.shown) for r in rx.raw[len(before.raw):]] == [
        ("InOctets", TOY_SOURCE, "toyos", f"ToyOS '{TOY_SOURCE}'"),
        ("InBytes", TOY_SOURCE, "toyos", f"ToyOS '{TOY_SOURCE}'")]
    # the metric had no CLI source: the collector that reads the rows now emits it
    assert "switch_cli" not in before.sources and rx.sources == before.sources + ("switch_cli",)
    # HELP and origin are made again from every row; nothing is typed twice
    assert f"ToyOS '{TOY_SOURCE}' InOctets / InBytes" in rx.help and before.help != rx.help
    assert rx.origin == before.origin + ("InOctets", "InBytes")
    voq = built["fabric_roce_switch_voq_packets_total"]
    assert voq.help.endswith(f"EOS 'show interfaces counters queue: Aggregate VoQ Counters' Pkts, "
                             f"ToyOS '{TOY_SOURCE}' VoqPkts).")
    # every other metric is untouched (the same object)
    assert all(built[s.name] is s for s in specs if s.name not in ("fabric_roce_rx_bytes_total",
                                                                    "fabric_roce_switch_voq_packets_total"))


def test_rows_naming_an_undeclared_metric_fail_the_build():
    typo = {"toyos": sc.CliDialect("ToyOS", {TOY_SOURCE: {"fabric_roce_rx_byte_total": "InOctets"}})}
    with pytest.raises(ValueError, match="fabric_roce_rx_byte_total"):
        catalog._attach(list(CATALOG.values()), sc.rows_of(typo), sc.ROWS_COLLECTOR)


def test_every_cli_row_comes_from_the_dialect_table():
    """A CLI row typed on a metric in its own module would be a second place to declare a dialect."""
    for spec in CATALOG.values():
        cli = tuple(r for r in spec.raw if r.source in sc.VENDOR)
        assert cli == sc.ROWS.get(spec.name, ()), spec.name
        if cli:
            assert "switch_cli" in spec.sources, spec.name


def test_a_scale_reaches_the_row():
    rows = sc.ROWS["fabric_roce_switch_pfc_rx_pause_seconds_total"]
    assert [(r.name, r.scale) for r in rows] == [("Total RX Pause Time US", 1e-6)]
    assert "microseconds / 1e6" in CATALOG["fabric_roce_switch_pfc_rx_pause_seconds_total"].help
