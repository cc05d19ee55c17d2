"""Issue 15 point 1: the raw counter -> metric pairing is declared once, in catalog/infiniband.py
(MetricSpec.raw); the collector's tables are built from it."""

from __future__ import annotations

from fabric_exporter.catalog import infiniband as ib_catalog
from fabric_exporter.collectors import infiniband as ib_collector


def test_every_counter_family_names_its_raw_counter():
    counters = [spec for spec in ib_catalog.METRICS if spec.type == "counter" and "port" in spec.label_sets[0]
                and spec.name not in ib_catalog.DERIVED_COUNTERS]
    assert counters
    for spec in counters:
        assert spec.raw, f"{spec.name}: no raw counter in the catalog"
        assert spec.origin == tuple(r.name for r in spec.raw)  # docs keep showing the raw names


def test_collector_tables_are_the_catalog():
    by_source: dict[str, dict[str, tuple[str, int | None]]] = {}
    for spec in ib_catalog.METRICS:
        for raw in spec.raw:
            by_source.setdefault(raw.source, {})[raw.name] = (spec.name, raw.width)
    assert ib_collector.DATA_COUNTERS == by_source[ib_catalog.COUNTER_SWEEP]
    assert ib_collector.ERROR_COUNTERS == by_source[ib_catalog.ERROR_SWEEP]
    assert ib_collector.QP1_DROPPED == by_source[ib_catalog.PERFQUERY]["QP1Dropped"]
    assert set(by_source) == {ib_catalog.COUNTER_SWEEP, ib_catalog.ERROR_SWEEP, ib_catalog.PERFQUERY,
                              ib_catalog.VL_XMIT_WAIT, ib_catalog.IBDIAGNET_PM}
    # the focus set's per-VL counters: PortVLXmitWait<vl>, 16-bit fields (libibmad fields.c)
    assert by_source[ib_catalog.VL_XMIT_WAIT] == {"PortVLXmitWait": ("fabric_ib_port_vl_transmit_wait_total", 16)}


def test_word_counters_scale_to_bytes_and_reset_bits_follow_counter_select():
    scales = {raw.name: raw.scale for spec in ib_catalog.METRICS for raw in spec.raw}
    assert {name for name, scale in scales.items() if scale != 1} == {"PortXmitData", "PortRcvData", "port_xmit_data",
                                                                      "port_rcv_data"}
    assert scales["PortXmitData"] == scales["PortRcvData"] == 4
    bits = ib_collector.RESET_BITS
    # IBA PortCounters CounterSelect: bits 0-15 in field order, PortXmitWait in CounterSelect2 (bit 16)
    assert sorted(bits.values()) == list(range(17))
    assert bits["SymbolErrorCounter"] == 0 and bits["VL15Dropped"] == 11 and bits["PortXmitWait"] == 16
    assert "PortUnicastXmitPkts" not in bits  # extended counters have no CounterSelect bit
