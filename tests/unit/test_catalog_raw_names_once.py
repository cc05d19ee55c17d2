"""A raw counter name (or SNMP column OID) is declared in one product place: the catalog's rows (issue 21 item 1).

Every source's raw names -- NIC ethtool/hw_counters names, SNMP columns, switch CLI headers and keys,
InfiniBand sweep and ibdiagnet fields -- are ``RawCounter`` rows under ``catalog/``; collectors, HELP,
``origin`` and the per-vendor doc tables are built from them. A raw name typed by hand anywhere else
under exporter/ is a second copy that can drift, and fails here.

Left out, each for a reason: the lab's simulated hosts and switches (``lab/``: the remote side, which
prints the names as the devices do, like tests/fixtures); parsers naming what they recognise (a header
they check) -- but never as a dict key, which would be a mapping of their own; a name handed to
``mapping.oid_of`` (resolved against the rows at import, so it cannot drift); docstrings (prose).
"""

from __future__ import annotations

import ast
import re
import subprocess

from fabric_exporter.catalog import CATALOG, mib
from fabric_exporter.catalog.spec import RawCounter, raw_text
from fabric_exporter.mapping import rows_of
from tests.harness import paths

ROOT = paths.ROOT
PACKAGE = "exporter/fabric_exporter/"
SKIPPED_DIRS = (PACKAGE + "catalog/", PACKAGE + "lab/")
# Words that are a raw name and also something else: an option key, label values the mixin puts in
# rules and settings (the retransmit kinds; SONiC names queues as its watermark columns).
NOT_RAW = {(PACKAGE + "collectors/infiniband/options.py", "qp1_dropped"),
           (PACKAGE + "mixin/rules/roce.py", "out_of_sequence"),
           (PACKAGE + "mixin/rules/roce.py", "duplicate_request"),
           (PACKAGE + "mixin/settings.py", "UC3")}
# Words that are a NIC raw name and also a SONiC queue-counter record field.
NOT_NIC = {(PACKAGE + "parsers/sonic_cli.py", "tx_bytes")}


def all_rows() -> list[RawCounter]:
    return [row for spec in CATALOG.values() for row in spec.raw]


def product_files() -> dict[str, str]:
    listed = subprocess.run(["git", "ls-files", "exporter"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            check=True).stdout.split()
    return {p: (ROOT / p).read_text(errors="replace") for p in listed
            if p.endswith((".py", ".md", ".txt", ".yml", ".yaml", ".json", ".sh")) and (ROOT / p).exists()
            and not p.startswith(SKIPPED_DIRS)}


# -- string literals: no module outside catalog/ types a row's raw name ---------------------------------


class _Literals:
    def __init__(self, rows: list[RawCounter]):
        self.exact = {row.name for row in rows if not row.is_pattern}
        self.patterns = [(row.name, re.compile(row.regex())) for row in rows if row.is_pattern]

    def names_in(self, text: str) -> list[str]:
        """The raw names one string literal is: a row's name, a pattern row as declared, or a name a
        pattern row matches (``rx_prio3_pause``)."""
        if text in self.exact or any(text == name or rx.fullmatch(text) for name, rx in self.patterns):
            return [text]
        return []


def typed_names(path: str, source: str, literals: _Literals) -> list[str]:
    tree = ast.parse(source)
    skip: set[int] = set()
    keys: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))  # a docstring
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "oid_of":
            skip.update(id(a) for a in node.args)
        if isinstance(node, ast.Dict):
            keys.update(id(k) for k in node.keys if k is not None)
    is_parser = path.startswith(PACKAGE + "parsers/")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            if is_parser and id(node) not in keys:
                continue  # a parser may name what it recognises, not map it
            found += [name for name in literals.names_in(node.value) if (path, name) not in NOT_RAW]
    return found


def test_no_raw_name_is_typed_outside_the_catalog():
    literals = _Literals(all_rows())
    offenders = {}
    for path, text in product_files().items():
        if path.endswith(".py"):
            names = typed_names(path, text, literals)
            if names:
                offenders[path] = sorted(set(names))
    assert offenders == {}


def test_the_literal_scan_finds_what_it_looks_for():
    literals = _Literals([RawCounter("rx_prio{p}_pause", "ethtool"), RawCounter("Counter/pkts", "cli"),
                          RawCounter("PortXmitWait", "ibqueryerrors")])
    collector = PACKAGE + "collectors/x.py"
    assert typed_names(collector, 'A = "rx_prio3_pause"\nB = "rx_prio{p}_pause"\nC = {"PortXmitWait": 1}\n',
                       literals) == ["rx_prio3_pause", "rx_prio{p}_pause", "PortXmitWait"]
    assert typed_names(collector, '"""PortXmitWait in a docstring"""\nX = oid_of("s", "PortXmitWait")\n', literals) == []
    parser = PACKAGE + "parsers/x.py"
    assert typed_names(parser, 'HEADERS = ("Counter/pkts", "x")\n', literals) == []
    assert typed_names(parser, 'MAP = {"Counter/pkts": "tx_packets"}\n', literals) == ["Counter/pkts"]


# -- NIC names: not even in prose (comments, docs, rule text) ------------------------------------------


def nic_copies(files: dict[str, str], names: list[str]) -> set[tuple[str, str]]:
    """(file, NIC raw name) for every whole-word occurrence of a name outside the catalog, in any text."""
    found = set()
    for path, text in files.items():
        for name in names:
            if re.search(r"(?<![\w.{}-])" + re.escape(name) + r"(?![\w{}-])", text):
                found.add((path, name))
    return found - NOT_NIC - NOT_RAW


def nic_raw_names() -> list[str]:
    return sorted({row.name for _metric, row in rows_of("ethtool", "hw_counters")})


def test_nic_raw_names_appear_only_in_the_catalog():
    names = nic_raw_names()
    assert {"rx_prio{p}_pause", "np_cnp_sent", "rx_discard_packets_cos{q}"} <= set(names)
    assert nic_copies(product_files(), names) == set()


def test_the_nic_check_finds_a_hand_copy():
    files = {PACKAGE + "collectors/roce_nic/x.py": 'PAUSE = "rx_prio{p}_pause"\n# n is np_cnp_sent\n',
             PACKAGE + "collectors/y.py": 'x = "rx_prio{p}_pause_duration_extra"  # another name'}
    assert nic_copies(files, nic_raw_names()) == {(PACKAGE + "collectors/roce_nic/x.py", "rx_prio{p}_pause"),
                                                 (PACKAGE + "collectors/roce_nic/x.py", "np_cnp_sent")}


# -- SNMP column OIDs ------------------------------------------------------------------------------------

OID_TUPLE = re.compile(r"\(\s*1\s*,\s*[03]\s*,(?:\s*\d+\s*,)+\s*\d+\s*,?\s*\)")
OID_DOTTED = re.compile(r"(?<![\d.])1\.[03](?:\.\d+){3,}")


def oids_in(text: str) -> set[tuple[int, ...]]:
    found = {tuple(int(x) for x in m.group(0).strip("() ,").replace(" ", "").split(",") if x)
             for m in OID_TUPLE.finditer(text)}
    found |= {tuple(int(x) for x in m.group(0).split(".")) for m in OID_DOTTED.finditer(text)}
    return found


def test_no_column_oid_is_typed_outside_the_catalog():
    """A column OID (as a tuple or dotted) lives in catalog/ only; every other product file takes it
    from the rows."""
    columns = {row.oid for row in all_rows() if row.oid is not None}
    columns |= {row.oid + (0,) for row in all_rows() if row.source == mib.SYSTEM.source}
    offenders = {path: sorted(oids_in(text) & columns) for path, text in product_files().items()
                 if path.endswith(".py") and oids_in(text) & columns}
    assert offenders == {}


def test_the_oid_scan_finds_what_it_looks_for():
    assert oids_in("X = (1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6)\n'1.3.6.1.4.1.30065.3.6.1.2.1.4'") == {
        (1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6), (1, 3, 6, 1, 4, 1, 30065, 3, 6, 1, 2, 1, 4)}
    assert oids_in("(1,3,111,2,802,1,1,21,1,1,1,2,)") == {(1, 3, 111, 2, 802, 1, 1, 21, 1, 1, 1, 2)}


# -- HELP: the raw-name part is generated from the rows ----------------------------------------------


def hand_typed_in_help(spec) -> list[str]:
    """The spec's own raw names its HELP types by hand (outside ``{raw}``, which the rows fill in)."""
    if "{raw}" not in spec.help_written:
        return ["<no {raw} in the help>"]
    return [row.name for row in spec.raw
            if re.search(r"(?<![\w.{}/-])" + re.escape(row.name) + r"(?![\w{}/-])", spec.help_written)]


def test_help_names_the_rows_only_through_the_generated_part():
    typed = {spec.name: hand_typed_in_help(spec) for spec in CATALOG.values() if spec.raw}
    assert len(typed) > 100
    assert {name: names for name, names in typed.items() if names} == {}
    for spec in CATALOG.values():
        if spec.raw:
            assert raw_text(spec.raw, spec.type == "counter") in spec.help, spec.name


def test_the_help_check_finds_a_typed_name():
    from fabric_exporter.catalog.spec import MetricSpec

    row = RawCounter("PortXmitWait", "ibqueryerrors")
    typed = MetricSpec("fabric_x_total", "counter", "", "Ticks (PortXmitWait).", ((),), ("x",), raw=(row,))
    generated = MetricSpec("fabric_x_total", "counter", "", "Ticks ({raw}).", ((),), ("x",), raw=(row,))
    assert generated.help == typed.help == "Ticks (PortXmitWait)."
    assert hand_typed_in_help(generated) == []
    assert hand_typed_in_help(typed) == ["<no {raw} in the help>"]
    both = MetricSpec("fabric_x_total", "counter", "", "Ticks ({raw}; PortXmitWait).", ((),), ("x",), raw=(row,))
    assert hand_typed_in_help(both) == ["PortXmitWait"]
