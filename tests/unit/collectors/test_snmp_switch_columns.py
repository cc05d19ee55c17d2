"""snmp_switch's columns are the catalog's rows: declared once, walked, documented from them."""

from fabric_exporter.catalog import CATALOG, mib
from fabric_exporter.catalog.mib import split_name
from fabric_exporter.collectors import lldp
from fabric_exporter.collectors.snmp_modules import (
    DOC_BEGIN,
    DOC_END,
    IF_ALIAS,
    IF_NAME,
    MODULES,
    SYS_UPTIME,
    columns_markdown,
)
from fabric_exporter.collectors.snmp_modules import IF_OPER_STATUS

from tests.harness import paths

ROOT = paths.ROOT
MIB_SOURCES = {t.source for t in vars(mib).values() if isinstance(t, mib.MibTable)}
SNMP_ROWS = [(spec.name, row) for spec in CATALOG.values() for row in spec.raw if row.source in MIB_SOURCES]


def test_the_doc_table_is_generated_from_the_rows():
    doc = (ROOT / "docs/collectors/snmp_switch.md").read_text()
    found = doc[doc.index(DOC_BEGIN):doc.index(DOC_END) + len(DOC_END)]
    assert found == columns_markdown(), "regenerate the table in docs/collectors/snmp_switch.md from " \
        "fabric_exporter.collectors.snmp_modules.columns_markdown()"


def test_every_row_is_walked_and_every_walked_column_is_a_row():
    walked = {col.oid for m in MODULES.values() for t in m.tables for col in t.columns}
    walked |= {oid for t in lldp.REM_TABLES.values() for oid in t.columns}
    walked |= {SYS_UPTIME[:-1], IF_NAME, IF_ALIAS, IF_OPER_STATUS}
    declared = {row.oid for _m, row in SNMP_ROWS}
    assert walked == declared
    # each column's metric (or each statistic's, for a split column) is the metric its row is on
    by_name = {(row.source, row.name): metric for metric, row in SNMP_ROWS}
    for module in MODULES.values():
        for table in module.tables:
            for col in table.columns:
                source = f"{module.mib} {table.name}"
                if col.split is None:
                    assert by_name[(source, col.object)] == col.metric, col
                else:
                    metrics = {metric for metric, _cast in col.split[1].values()}
                    assert metrics == {m for (s, n), m in by_name.items() if s == source
                                       and split_name(n)[0] == col.object}, col


def test_a_row_the_structure_cannot_place_is_an_error_at_build():
    import pytest

    from fabric_exporter.collectors import snmp_modules
    from fabric_exporter.mapping import rows_of

    bad = mib.CISCO_QOS_STATS.split("csqIfQosGroupStatsValue", 4, "ucastSentPackets")  # misspelt statistic
    rows = rows_of(mib.CISCO_QOS_STATS.source) + [("fabric_roce_switch_queue_tx_packets_total", bad)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(snmp_modules, "rows_of", lambda *_s: rows)
        with pytest.raises(ValueError, match="ucastSentPackets"):
            snmp_modules._columns(mib.CISCO_QOS_STATS, ("stat", snmp_modules._CSQ_STATS_TYPE))
        two = [("fabric_roce_rx_bytes_total", mib.IF_X.column("ifHCInOctets", 6)),
               ("fabric_roce_tx_bytes_total", mib.IF_X.column("ifHCInOctets", 6))]
        mp.setattr(snmp_modules, "rows_of", lambda *_s: two)
        with pytest.raises(ValueError, match="one column feeds 2 metrics"):
            snmp_modules._columns(mib.IF_X, None)
