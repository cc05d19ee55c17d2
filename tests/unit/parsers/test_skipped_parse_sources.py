"""``parse_sources`` are derived, not listed: each parser module names the sources its skipped lines are
counted under (``SOURCES``), and a collector's ``parse_sources`` is ``skipped.sources_of`` over the
parsers it uses (switch_cli's: its dialect table). Checked here from the source text: every source a
parser passes to ``note()`` (a literal, or a module constant) is in its ``SOURCES``, and every parser
a collector imports has its sources in the collector's ``parse_sources``."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
from pathlib import Path

import pytest

import fabric_exporter.parsers as parsers_pkg
from fabric_exporter import ssh_guard
from fabric_exporter.parsers.skipped import sources_of

PARSERS = sorted(m.name for m in pkgutil.iter_modules(parsers_pkg.__path__))


def _noted_sources(module) -> tuple[set[str], int]:
    """The sources passed to note() that can be read from the text (literals and module constants),
    and how many calls pass something else (a parameter: the caller's literal, checked below)."""
    tree = ast.parse(Path(module.__file__).read_text())
    found, other = set(), 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "note" \
                and len(node.args) >= 2:
            arg = node.args[1]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.add(arg.value)
            elif isinstance(arg, ast.Name) and isinstance(getattr(module, arg.id, None), str):
                found.add(getattr(module, arg.id))
            else:
                other += 1
    return found, other


@pytest.mark.parametrize("name", PARSERS)
def test_a_parser_counts_skipped_lines_only_under_its_declared_sources(name):
    module = importlib.import_module(f"fabric_exporter.parsers.{name}")
    found, _ = _noted_sources(module)
    if not found and not hasattr(module, "SOURCES"):
        return  # skips no line (or only through another parser)
    assert hasattr(module, "SOURCES"), f"parsers/{name}.py notes skipped lines under {found}: declare SOURCES"
    assert found <= set(module.SOURCES), f"parsers/{name}.py notes {found - set(module.SOURCES)} outside SOURCES"


@pytest.mark.parametrize("name", PARSERS)
def test_sources_passed_as_a_parameter_are_declared_too(name):
    """A shared reader that takes the source as a parameter (sonic_cli's parse_tables, rdma's text
    lines, sonic_watermark's titles): the literals and constants the module passes to it are in SOURCES."""
    module = importlib.import_module(f"fabric_exporter.parsers.{name}")
    tree = ast.parse(Path(module.__file__).read_text())
    takes_source = {}  # function name -> position of its ``source`` parameter
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            names = [a.arg for a in node.args.args]
            if "source" in names:
                takes_source[node.name] = names.index("source")
    passed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in takes_source:
            pos = takes_source[node.func.id]
            args = [*node.args[pos:pos + 1], *(k.value for k in node.keywords if k.arg == "source")]
            for arg in args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    passed.add(arg.value)
                elif isinstance(arg, ast.Name) and isinstance(getattr(module, arg.id, None), str):
                    passed.add(getattr(module, arg.id))
    if passed:
        assert passed <= set(getattr(module, "SOURCES", ())), f"parsers/{name}.py: {passed} not in SOURCES"


def _parsers_imported_by(module_name: str) -> set[str]:
    """Parser modules a collector module (or package) imports."""
    module = sys.modules[module_name]
    files = [Path(module.__file__)]
    if files[0].name == "__init__.py":
        files = sorted(files[0].parent.glob("*.py"))
    out = set()
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("parsers"):
                out |= {a.name for a in node.names if a.name in PARSERS}
            elif isinstance(node, ast.ImportFrom) and node.module and ".parsers." in "." + node.module:
                out.add(node.module.rsplit(".", 1)[1])
    return out


@pytest.mark.parametrize("name", sorted(ssh_guard.builtin_collectors()))
def test_a_collector_declares_the_sources_of_every_parser_it_uses(name):
    cls = ssh_guard.builtin_collectors()[name]
    package = cls.__module__.rsplit(".", 1)[0] if cls.__module__.endswith(".collector") else cls.__module__
    used = [importlib.import_module(f"fabric_exporter.parsers.{p}") for p in sorted(_parsers_imported_by(package))]
    expected = set(sources_of(*[m for m in used if hasattr(m, "SOURCES")]))
    assert expected <= set(cls.parse_sources), f"{name}: parse_sources lacks {expected - set(cls.parse_sources)}"
    if name != "switch_cli":  # its sources follow its dialect table (test_skipped_lines checks that)
        assert set(cls.parse_sources) <= expected, f"{name}: {set(cls.parse_sources) - expected} from no parser"
