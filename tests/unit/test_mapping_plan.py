"""RawTable.plan: one device's names -> the row feeding each (metric, captures); families; unknown names."""

from fabric_exporter.catalog.spec import RawCounter
from fabric_exporter.mapping import RawTable

BNXT = frozenset({"bnxt"})
ROWS = [
    ("fabric_a_total", RawCounter("rx_prio{p}_pause", "ethtool", vendor="mlx5")),
    ("fabric_a_total", RawCounter("rx_pfc_ena_frames_pri{p}", "ethtool", vendor="bnxt_en")),
    ("fabric_b_total", RawCounter("rx_bytes_phy", "ethtool", vendor="mlx5")),
    ("fabric_b_total", RawCounter("rx_bytes", "ethtool", families=BNXT)),
    ("fabric_c_seconds_total", RawCounter("pause_us", "ethtool", scale=1e-6)),
]


def test_the_earliest_declared_row_wins_whatever_order_the_names_come_in():
    table = RawTable(ROWS)
    steps, unknown = table.plan(("rx_bytes", "rx_bytes_phy", "other"), "bnxt")
    assert steps == (("rx_bytes_phy", "fabric_b_total", (), 1),) and unknown == ("other",)
    # the fallback is used when the preferred name is absent; steps keep the names' order
    steps, _ = table.plan(("pause_us", "rx_pfc_ena_frames_pri3", "rx_bytes"), "bnxt")
    assert steps == (("pause_us", "fabric_c_seconds_total", (), 1e-6),
                     ("rx_pfc_ena_frames_pri3", "fabric_a_total", (("priority", "3"),), 1),
                     ("rx_bytes", "fabric_b_total", (), 1))


def test_a_row_of_other_driver_families_reads_nothing_and_captures_make_separate_slots():
    table = RawTable(ROWS)
    steps, unknown = table.plan(("rx_bytes", "rx_prio0_pause", "rx_prio3_pause"), "mlx5")
    assert [(s[0], s[2]) for s in steps] == [("rx_prio0_pause", (("priority", "0"),)),
                                             ("rx_prio3_pause", (("priority", "3"),))]
    assert unknown == ("rx_bytes",)
    assert table.plan(("rx_bytes",), None) == ((), ("rx_bytes",))
    assert table.plan(("rx_bytes",), "mlx5") is table.plan(("rx_bytes",), "mlx5")  # planned once
