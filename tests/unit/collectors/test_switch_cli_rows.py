"""switch_cli maps the counters its parsers keep as printed through the catalog's rows: names declared once."""

from fabric_exporter.catalog import CATALOG, switch_commands
from fabric_exporter.collectors import switch_cli
from fabric_exporter.collectors.switch_cli import docs as switch_cli_docs
from fabric_exporter.collectors.switch_cli import samples
from fabric_exporter.parsers import nvue
from fabric_exporter.parsers import sonic_cli as p

from tests.harness import paths

ROOT = paths.ROOT
SW = switch_cli.SwitchLabels("sw")  # one switch's kept label sets, shared by the calls below
CLI_ROWS = [(spec.name, row) for spec in CATALOG.values() for row in spec.raw
            if row.source in switch_commands.SOURCES]


def test_the_doc_table_is_generated_from_the_rows():
    doc = (ROOT / "docs/collectors/switch_cli.md").read_text()
    begin, end = switch_commands.DOC_BEGIN, switch_commands.DOC_END
    assert doc[doc.index(begin):doc.index(end) + len(end)] == switch_commands.markdown(), \
        "regenerate it: python -m fabric_exporter.collectors.switch_cli.docs --write docs/collectors/switch_cli.md"


def test_the_doc_table_command_rewrites_only_the_table(tmp_path):
    doc = tmp_path / "switch_cli.md"
    doc.write_text(f"before\n{switch_commands.DOC_BEGIN}\nstale\n{switch_commands.DOC_END}\nafter\n")
    assert switch_cli_docs.main(["--check", str(doc)]) == 1
    assert switch_cli_docs.main(["--write", str(doc)]) == 0
    assert doc.read_text() == f"before\n{switch_commands.markdown()}\nafter\n"
    assert switch_cli_docs.main(["--check", str(doc)]) == 0


def test_every_row_names_its_dialect_and_every_command_has_rows():
    assert all(row.vendor == switch_commands.VENDOR[row.source] for _m, row in CLI_ROWS)
    assert {row.source for _m, row in CLI_ROWS} == set(switch_commands.SOURCES)


def test_parsers_keep_names_as_printed_and_the_rows_map_them():
    c = p.parse_cumulus_ethtool("NIC statistics:\n     HwIfInPfc3Pkt: 5\n     HwIfOutQ12WredDrops: 9\n"
                                "     HwIfInDiscards: 2\n     HwIfSomethingElse: 1\n")
    assert c.raw == {"HwIfInPfc3Pkt": 5, "HwIfOutQ12WredDrops": 9, "HwIfInDiscards": 2, "HwIfSomethingElse": 1}
    assert [(s.name, dict(s.labels), s.value) for s in switch_cli.cumulus_samples(SW, "swp1", c)] == [
        ("fabric_roce_pfc_rx_pause_frames_total", {"switch": "sw", "interface": "swp1", "priority": "3"}, 5.0),
        ("fabric_roce_rx_discards_total", {"switch": "sw", "interface": "swp1"}, 2.0),
        ("fabric_roce_switch_queue_wred_dropped_packets_total", {"switch": "sw", "interface": "swp1", "queue": "UC12"},
         9.0)]
    counters = nvue.RoceCounters({"rx-stats/rx-non-roce-stats/non-roce-packets": 7,
                                  "tx-stats/tx-ecn-stats/ecn-marked-packets": 3})
    assert [(s.name, dict(s.labels), s.value) for s in switch_cli.nvue_roce_samples(SW, "swp1", counters)] == [
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


def test_every_dialects_samples_share_kept_label_sets():
    """The renderer keys lines on labels objects: every command's samples carry immutable LabelSets,
    the same objects on the next poll of the same rows."""
    from fabric_exporter.lab import eos_cli as eos_lab
    from fabric_exporter.lab import sonic_cli as lab
    from fabric_exporter.lab.snmp import SimulatedSwitch
    from fabric_exporter.parsers import eos_cli
    from fabric_exporter.parsers import sonic_watermark as wm
    from fabric_exporter.samples import LabelSet

    sw = SimulatedSwitch("leaf1", "sonic", ports=4, queues=4, seed=1)
    yes = lambda _port: True  # noqa: E731
    polls = [
        lambda: switch_cli.pfc_samples(SW, p.parse_pfc_counters(lab.render_pfc_counters(sw)), yes),
        lambda: switch_cli.queue_samples(switch_cli.QUEUE_METRICS, SW,
                                         p.parse_queue_counters(lab.render_queue_counters(sw)), yes),
        lambda: switch_cli.pfcwd_samples(SW, p.parse_pfcwd_stats(lab.render_pfcwd_stats(sw)), yes),
        lambda: switch_cli.pfc_history_samples(SW, p.parse_pfc_history(lab.render_pfc_history(sw)), yes),
        lambda: switch_cli.queue_watermark_samples(
            "watermark", SW, wm.parse_queue_watermark(lab.render_queue_watermark(sw, "user", "unicast")), yes),
        lambda: switch_cli.pg_watermark_samples(
            "shared", SW, wm.parse_pg_watermark(lab.render_pg_watermark(sw, "user", "shared")), yes),
        lambda: switch_cli.pool_watermark_samples(
            switch_cli.POOL_WATERMARKS["buffer_pool"][1], SW,
            wm.parse_pool_watermark(lab.render_pool_watermark(sw, "user")), yes),
        lambda: switch_cli.eos_queue_samples(SW, eos_cli.parse_queue_counters(eos_lab.render_queue_counters(sw)), yes),
        lambda: switch_cli.eos_port_samples(switch_cli.EOS_DISCARD_METRICS, SW,
                                            eos_cli.parse_discards_json(eos_lab.render_discards_json(sw)), yes),
        lambda: switch_cli.eos_ecn_samples(
            SW, eos_cli.parse_ecn_counters_json(eos_lab.render_ecn_counters_json(sw, frozenset({3}))), yes),
        lambda: switch_cli.cumulus_samples(SW, "swp1", p.parse_cumulus_ethtool(
            "NIC statistics:\n     HwIfInPfc3Pkt: 5\n     HwIfOutQ12WredDrops: 9\n     HwIfInDiscards: 2\n")),
        lambda: switch_cli.nvue_roce_samples(SW, "swp1", nvue.RoceCounters(
            {"rx-stats/rx-non-roce-stats/non-roce-packets": 7, "tx-stats/tx-ecn-stats/ecn-marked-packets": 3})),
    ]
    for poll in polls:
        first, again = poll(), poll()
        assert first and all(type(s.labels) is LabelSet for s in first)
        assert all(a.labels is b.labels for a, b in zip(first, again))


def test_kept_label_sets_belong_to_their_switch_and_are_bounded(monkeypatch):
    """Each switch's collector keeps its own rows' label sets (SwitchLabels): another switch's rows
    never reach them, and one switch's are bounded (cleared when full, then made again)."""
    mine, others = switch_cli.SwitchLabels("sw-a"), [switch_cli.SwitchLabels(f"sw-{n}") for n in range(10)]
    rows = [p.PfcwdStats(f"Ethernet{n}", 3, "operational", {"STORM DETECTED": 1}) for n in range(3)]
    first = switch_cli.pfcwd_samples(mine, rows, lambda port: True)
    kept = dict(mine.kept(samples._QUEUE))
    for other in others:
        switch_cli.pfcwd_samples(other, rows, lambda port: True)
    assert set(kept) == {("sw-a", f"Ethernet{n}", "UC3") for n in range(3)}
    assert mine.kept(samples._QUEUE) == kept
    again = switch_cli.pfcwd_samples(mine, rows, lambda port: True)
    assert all(a.labels is b.labels for a, b in zip(first, again))
    monkeypatch.setattr(switch_cli.SwitchLabels, "MAX", 4)
    more = [p.PfcwdStats(f"Ethernet{n}", 3, "operational", {"STORM DETECTED": 1}) for n in range(9)]
    switch_cli.pfcwd_samples(mine, more, lambda port: True)
    assert 0 < len(mine.kept(samples._QUEUE)) <= 4

