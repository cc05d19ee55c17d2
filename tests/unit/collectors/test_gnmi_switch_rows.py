"""gnmi_switch reads the catalog's rows: every SONiC COUNTERS_DB field and OpenConfig/Cumulus leaf it
maps is declared once (catalog/gnmi_paths.py's containers, rows on the metrics' specs), compiled into
the collector's tables at import, and documented from the same rows (issue 21 item 1)."""

from __future__ import annotations

import ast
import re

import pytest

from fabric_exporter.catalog import CATALOG, gnmi_paths
from fabric_exporter.catalog.spec import CAPTURES
from fabric_exporter.collectors.gnmi_switch import DIALECTS, TEXT_ENUMS, compile_container, docs
from fabric_exporter.collectors.gnmi_switch import dialects as dialects_module
from fabric_exporter.mapping import RawTable, rows_of
from tests.harness import paths

ROOT = paths.ROOT
PACKAGE = ROOT / "exporter" / "fabric_exporter"
DOC = ROOT / "docs" / "collectors" / "gnmi_switch.md"
GNMI_ROWS = rows_of(*gnmi_paths.SOURCES)
# the labels a container's keys give every value below it
KEY_LABELS = {"ports": (), "queues": ("queue",), "pfcwd": ("queue",), "pg_watermarks": ("pg",),
              "interface": (), "queue": ("queue",), "priority": ("priority",), "pg": ("pg",)}


def test_the_doc_tables_are_generated_from_the_rows(tmp_path):
    text = DOC.read_text()
    assert docs.render(text) == text, \
        "regenerate: python -m fabric_exporter.collectors.gnmi_switch.docs --write docs/collectors/gnmi_switch.md"
    assert docs.main(["--check", str(DOC)]) == 0
    stale = tmp_path / "gnmi_switch.md"
    stale.write_text(text.replace("`SAI_QUEUE_STAT_BYTES`", "`SAI_QUEUE_STAT_OCTETS`"))
    assert docs.main(["--check", str(stale)]) == 1
    assert docs.main(["--write", str(stale)]) == 0 and stale.read_text() == text


def test_every_gnmi_row_names_a_gnmi_metric_with_labels_it_allows():
    assert len(GNMI_ROWS) >= 50
    by_source = {c.source: c for c in gnmi_paths.CONTAINERS}
    for metric, row in GNMI_ROWS:
        container = by_source[row.source]
        spec = CATALOG[metric]
        assert "gnmi_switch" in spec.sources, (metric, row.name)
        assert row.vendor == container.vendor, row
        assert row.families is None or row.families <= set(DIALECTS) - {"sonic"}, row
        captured = tuple(label for key, (label, _rx) in CAPTURES.items() if "{" + key + "}" in row.name)
        labels = ("fabric", "switch", "interface") + KEY_LABELS[container.word] + captured + tuple(k for k, _v in row.labels)
        assert spec.allows_labels(metric, labels), (metric, row.name, labels)


def test_the_collector_tables_are_the_rows():
    """Each dialect's compiled tables hold exactly the rows of its family that hold for it, every
    capture filled in (``{p}``: 0-7), with the row's metric, scale and labels."""
    for name, dialect in DIALECTS.items():
        vendor = gnmi_paths.SONIC if name == "sonic" else gnmi_paths.OPENCONFIG
        containers = {c.word: c for c in gnmi_paths.CONTAINERS if c.vendor == vendor}
        assert set(dialect.tables) == set(containers)
        for word, table in dialect.tables.items():
            expected = {}
            for metric, row in rows_of(containers[word].source):
                if row.families is not None and name not in row.families:
                    continue
                for value in (range(8) if "{p}" in row.name else [None]):
                    raw = row.name.replace("{p}", str(value))
                    extra = tuple(sorted(row.labels + ((("priority", str(value)),) if value is not None else ())))
                    expected[raw] = (metric, extra, TEXT_ENUMS.get(metric, row.scale))
            assert {n: (use[1], use[2], use[3]) for n, use in table.by_name.items()} == expected, (name, word)


def test_compiling_rows_sums_scales_enumerates_and_fills_captures(monkeypatch):
    c = gnmi_paths.GnmiContainer("sonic", "ports", "COUNTERS_DB", "X/Ethernet*")
    rows = [("fabric_roce_rx_packets_total", c.field("A")), ("fabric_roce_rx_packets_total", c.field("B")),
            ("fabric_roce_switch_pfc_rx_pause_seconds_total", c.field("D_{p}", scale=1e-6)),
            ("fabric_roce_switch_pfcwd_storm_active", c.field("S")),
            ("fabric_roce_switch_pg_watermark_bytes", c.field("W", labels=(("region", "headroom"),))),
            ("fabric_roce_switch_queue_occupancy_bytes", c.field("C", dialects=frozenset({"cumulus"})))]
    monkeypatch.setattr(dialects_module.RawTable, "for_source", classmethod(lambda cls, *s: RawTable(rows)))
    table = compile_container(c, "openconfig")
    assert table.sums == (("fabric_roce_rx_packets_total", ("A", "B"), 0),)
    assert [(f, m, s) for f, m, s, _g in table.scaled] == [
        (f"D_{p}", "fabric_roce_switch_pfc_rx_pause_seconds_total", 1e-6) for p in range(8)]
    assert [table.extras[g] for *_x, g in table.scaled] == [(("priority", str(p)),) for p in range(8)]
    assert table.enums == (("S", "fabric_roce_switch_pfcwd_storm_active", TEXT_ENUMS[
        "fabric_roce_switch_pfcwd_storm_active"], 0),)
    assert [(f, m, table.extras[g]) for f, m, g in table.direct] == [
        ("W", "fabric_roce_switch_pg_watermark_bytes", (("region", "headroom"),))]
    assert "C" not in table.by_name  # a Cumulus row is not the openconfig dialect's
    rows.append(("fabric_roce_rx_packets_total", c.field("E", scale=2.0)))
    with pytest.raises(ValueError, match="different scales"):
        compile_container(c, "openconfig")


# -- a raw name is typed in the catalog only -------------------------------------------------------------------

# The lab's simulated switches (lab/gnmi_target.py, lab/sonic_cli.py ...) are the remote side, like
# tests/fixtures: they send what SONiC and Cumulus send, fields the catalog does not map included
# (SAI_PORT_STAT_IF_IN_NON_UCAST_PKTS, PFC_WD_ACTION), spelt by the switch's schema. Reading the names
# from the rows would make a misspelt row served misspelt, and the end-to-end tests (three protocols,
# one truth) could no longer catch it; so the lab keeps its own copy on purpose.
SIMULATED_SWITCHES = ("lab",)


def _name_patterns() -> list[re.Pattern]:
    """A regex per gNMI row name and per last path component of a leaf (``in-octets`` of
    ``counters/in-octets``); captures match a number or an f-string's ``{...}``."""
    names = {row.name for _m, row in GNMI_ROWS}
    names |= {n.rsplit("/", 1)[-1] for n in names}
    out = []
    for name in sorted(names):
        text = re.escape(name)
        for key in CAPTURES:
            text = text.replace(re.escape("{" + key + "}"), r"(?:[0-9]+|\{[^{}]*\})")
        out.append(re.compile(r"(?<![\w-])" + text + r"(?![\w-])"))
    return out


def _literals(source: str) -> list[tuple[str, bool]]:
    """(text, is a dict key) of every string literal of a module: f-strings with ``{...}`` for their
    values; docstrings left out (prose)."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    keys = {id(k) for node in ast.walk(tree) if isinstance(node, ast.Dict) for k in node.keys if k is not None}
    inside_fstring = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            out.append((text, id(node) in keys))
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
              and id(node) not in inside_fstring):
            out.append((node.value, id(node) in keys))
    return out


def _names_typed(source: str, allow_recognised: bool) -> list[str]:
    """Literals of a module that hold a gNMI row's name. ``allow_recognised``: a parser may name the
    leaves or fields it keeps as text (OC_TEXT_LEAVES), but not as a dict key: that would be a mapping."""
    patterns = _name_patterns()
    return [text for text, is_key in _literals(source) if any(rx.search(text) for rx in patterns)
            and (is_key or not allow_recognised)]


def test_no_gnmi_raw_name_is_typed_outside_the_catalog():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "catalog" or rel.parts[0] in SIMULATED_SWITCHES:
            continue
        names = _names_typed(path.read_text(), allow_recognised=rel.parts[0] == "parsers")
        if names:
            offenders.append((str(rel), names))
    assert not offenders


def test_the_name_scan_finds_what_it_looks_for():
    assert _names_typed('X = {"SAI_QUEUE_STAT_PACKETS": "fabric_x_total"}', False) == ["SAI_QUEUE_STAT_PACKETS"]
    assert _names_typed('X = {f"SAI_PORT_STAT_PFC_{p}_RX_PKTS": 1 for p in range(8)}', False) == [
        "SAI_PORT_STAT_PFC_{}_RX_PKTS"]
    assert _names_typed('X = "SAI_PORT_STAT_PFC_3_TX_PKTS"', False) == ["SAI_PORT_STAT_PFC_3_TX_PKTS"]
    assert _names_typed('P = "/interfaces/interface[name=*]/state/counters/in-octets"', False) == [
        "/interfaces/interface[name=*]/state/counters/in-octets"]
    assert _names_typed('L = ("in-pause-duration", 1e-6)', False) == ["in-pause-duration"]
    assert _names_typed('TEXT = frozenset({"oper-status"})', True) == []
    assert _names_typed('M = {"oper-status": 1}', True) == ["oper-status"]
    assert _names_typed('"""SAI_QUEUE_STAT_PACKETS is a counter"""\nX = "in-octets-extra"', False) == []
    assert _names_typed('X = "SAI_QUEUE_STAT_PACKETS_EXTRA"', False) == []

