"""switch_cli maps the counters its parsers keep as printed through the catalog's rows: names declared once."""

from fabric_exporter.catalog import CATALOG, switch_commands
from fabric_exporter.collectors import switch_cli
from fabric_exporter.parsers import nvue
from fabric_exporter.parsers import sonic_cli as p

from tests.harness import paths

ROOT = paths.ROOT
CLI_ROWS = [(spec.name, row) for spec in CATALOG.values() for row in spec.raw
            if row.source in switch_commands.SOURCES]


def test_the_doc_table_is_generated_from_the_rows():
    doc = (ROOT / "docs/collectors/switch_cli.md").read_text()
    begin, end = switch_commands.DOC_BEGIN, switch_commands.DOC_END
    assert doc[doc.index(begin):doc.index(end) + len(end)] == switch_commands.markdown(), \
        "regenerate the table in docs/collectors/switch_cli.md from switch_commands.markdown()"


def test_every_row_names_its_dialect_and_every_command_has_rows():
    assert all(row.vendor == switch_commands.VENDOR[row.source] for _m, row in CLI_ROWS)
    assert {row.source for _m, row in CLI_ROWS} == set(switch_commands.SOURCES)


def test_parsers_keep_names_as_printed_and_the_rows_map_them():
    c = p.parse_cumulus_ethtool("NIC statistics:\n     HwIfInPfc3Pkt: 5\n     HwIfOutQ12WredDrops: 9\n"
                                "     HwIfInDiscards: 2\n     HwIfSomethingElse: 1\n")
    assert c.raw == {"HwIfInPfc3Pkt": 5, "HwIfOutQ12WredDrops": 9, "HwIfInDiscards": 2, "HwIfSomethingElse": 1}
    assert [(s.name, dict(s.labels), s.value) for s in switch_cli.cumulus_samples("sw", "swp1", c)] == [
        ("fabric_roce_pfc_rx_pause_frames_total", {"switch": "sw", "interface": "swp1", "priority": "3"}, 5.0),
        ("fabric_roce_rx_discards_total", {"switch": "sw", "interface": "swp1"}, 2.0),
        ("fabric_roce_switch_queue_wred_dropped_packets_total", {"switch": "sw", "interface": "swp1", "queue": "UC12"},
         9.0)]
    counters = nvue.RoceCounters({"rx-stats/rx-non-roce-stats/non-roce-packets": 7,
                                  "tx-stats/tx-ecn-stats/ecn-marked-packets": 3})
    assert [(s.name, dict(s.labels), s.value) for s in switch_cli.nvue_roce_samples("sw", "swp1", counters)] == [
        ("fabric_roce_switch_if_ecn_marked_packets_total", {"switch": "sw", "interface": "swp1"}, 3.0),
        ("fabric_roce_switch_if_rx_traffic_packets_total",
         {"switch": "sw", "interface": "swp1", "traffic": "non_roce"}, 7.0)]


def test_exact_metrics_is_the_table_as_a_dict_and_refuses_captures():
    import pytest

    from fabric_exporter.catalog.spec import RawCounter
    from fabric_exporter.mapping import RawTable, exact_metrics

    rows = [("fabric_a_total", RawCounter("x", "s")), ("fabric_b_total", RawCounter("x", "s")),
            ("fabric_c_total", RawCounter("y", "s"))]
    assert exact_metrics(RawTable(rows)) == {"x": ("fabric_a_total", "fabric_b_total"), "y": ("fabric_c_total",)}
    with pytest.raises(ValueError):
        exact_metrics(RawTable([("fabric_a_total", RawCounter("x{p}", "s"))]))
