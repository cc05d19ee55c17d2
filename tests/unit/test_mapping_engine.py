"""The mapping engine on rows of its own: exact names, captures, order, OIDs, unknown names."""

from fabric_exporter.catalog.spec import RawCounter
from fabric_exporter.mapping import RawTable, rows_of

ROWS = [
    ("fabric_a_total", RawCounter("rx_prio{p}_pause", "ethtool", vendor="mlx5")),
    ("fabric_a_total", RawCounter("rx_pfc_ena_frames_pri{p}", "ethtool", vendor="bnxt_en")),
    ("fabric_b_total", RawCounter("rx_bytes_phy", "ethtool", vendor="mlx5")),
    ("fabric_b_total", RawCounter("rx_bytes", "ethtool", families=frozenset({"bnxt"}))),
    ("fabric_c_total", RawCounter("txq{q}_drops", "ethtool", scale=1e-6)),
    ("fabric_d_total", RawCounter("ifHCInOctets", "IF-MIB ifXTable", oid=(1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6))),
]


def test_exact_names_and_captures_map_to_their_metric_and_labels():
    table = RawTable(ROWS)
    assert [(m, r.name, c) for _o, m, r, c in table.matches("rx_prio3_pause")] == [
        ("fabric_a_total", "rx_prio{p}_pause", (("priority", "3"),))]
    assert [(m, c) for _o, m, _r, c in table.matches("txq12_drops")] == [("fabric_c_total", (("queue", "12"),))]
    assert [m for _o, m, _r, _c in table.matches("rx_bytes_phy")] == ["fabric_b_total"]


def test_captures_accept_only_their_range_and_unknown_names_match_nothing():
    table = RawTable(ROWS)
    assert table.matches("rx_prio8_pause") == ()
    assert table.matches("txq123_drops") == ()
    assert table.matches("rx_prio3_pause_extra") == ()
    assert table.matches("no_such_counter") == ()


def test_matches_keep_declaration_order_and_oids_are_indexed():
    rows = [("fabric_x_total", RawCounter("n", "s")), ("fabric_y_total", RawCounter("n{p}", "s")),
            ("fabric_z_total", RawCounter("n1", "s"))]
    table = RawTable(rows)
    assert [m for _o, m, _r, _c in table.matches("n1")] == ["fabric_y_total", "fabric_z_total"]
    assert RawTable(ROWS).by_oid[(1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6)][0] == "fabric_d_total"
    assert RawTable(ROWS).names()[:2] == ["rx_prio{p}_pause", "rx_pfc_ena_frames_pri{p}"]


def test_the_catalog_rows_of_a_source_come_in_catalog_order():
    rows = rows_of("ibqueryerrors")
    assert rows and all(raw.source == "ibqueryerrors" for _m, raw in rows)
    assert ("fabric_ib_port_transmit_wait_total", "PortXmitWait") in [(m, raw.name) for m, raw in rows]
