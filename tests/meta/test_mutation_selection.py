"""scripts/mutation picks the tests a run uses from MODULES alone: a full run and a --recheck of
earlier survivors run the module's own tests (or the --tests subset of them), never files found by
name, and never an empty list (pytest given no path runs all of tests/). No mutation run here."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys

import pytest

from tests.harness import paths

ROOT = paths.ROOT


@pytest.fixture(scope="module")
def mutation():
    loader = importlib.machinery.SourceFileLoader("mutation_script", str(ROOT / "scripts" / "mutation"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[loader.name] = module  # dataclasses look their module up while the class is built
    try:
        loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(loader.name, None)


@pytest.fixture
def modules(mutation, monkeypatch):
    """A MODULES of two subjects with real files: one listing files, one a node id."""
    table = {
        "scheduler": ("scheduler.py", ["tests/unit/test_scheduler.py", "tests/unit/serving/test_exposition.py"]),
        "burst_stream": ("parsers/burst_stream.py",
                         ["tests/unit/collectors/test_burst.py::test_bad_stream_lines_are_parse_errors",
                          "tests/unit/no_such_file.py"]),
    }
    monkeypatch.setattr(mutation, "MODULES", table)
    return table


def test_every_listed_test_exists_and_no_module_runs_the_whole_tree(mutation):
    for name, (rel, tests) in mutation.MODULES.items():
        assert (ROOT / mutation.PKG / rel).is_file(), name
        chosen = mutation.select_tests(name)
        assert chosen == tests, f"{name}: listed tests missing: {set(tests) - set(chosen)}"
        assert all(t.startswith("tests/") and t.partition("::")[0].endswith(".py") for t in chosen), name


def test_a_full_run_uses_the_modules_own_existing_tests(mutation, modules):
    assert mutation.select_tests("scheduler") == ["tests/unit/test_scheduler.py", "tests/unit/serving/test_exposition.py"]
    # a listed file that does not exist is left out, a node id kept as it is
    assert mutation.select_tests("burst_stream") == ["tests/unit/collectors/test_burst.py::test_bad_stream_lines_are_parse_errors"]


def test_a_recheck_runs_only_its_modules_survivors_against_the_same_tests(mutation, modules):
    earlier = {"scheduler": {"survived": [{"index": 7, "kind": "remove-raise", "line": 3}]}}
    assert mutation.plan(["scheduler", "burst_stream"], earlier) == [
        ("scheduler", {(7, "remove-raise")}, ["tests/unit/test_scheduler.py", "tests/unit/serving/test_exposition.py"])]
    # no survivors recorded: the module runs its clean baseline only (every mutant stays killed)
    assert mutation.plan(["scheduler"], {"scheduler": {"survived": []}}) == [
        ("scheduler", set(), ["tests/unit/test_scheduler.py", "tests/unit/serving/test_exposition.py"])]
    # without a recheck file every named module runs its whole sample
    assert mutation.plan(["burst_stream"]) == [
        ("burst_stream", None, ["tests/unit/collectors/test_burst.py::test_bad_stream_lines_are_parse_errors"])]


def test_a_declared_subset_keeps_only_each_modules_own_tests(mutation, modules):
    subset = ["tests/unit/test_scheduler.py::test_x", "tests/unit/collectors/test_burst.py::test_bad_stream_lines_are_parse_errors",
              "tests/unit/serving/test_exposition.py"]
    assert mutation.select_tests("scheduler", subset) == ["tests/unit/test_scheduler.py::test_x",
                                                          "tests/unit/serving/test_exposition.py"]
    assert mutation.select_tests("burst_stream", subset) == [
        "tests/unit/collectors/test_burst.py::test_bad_stream_lines_are_parse_errors"]
    # a parametrised case of an own node id is in; another test of the same file is not
    assert mutation.select_tests("burst_stream", [
        "tests/unit/collectors/test_burst.py::test_bad_stream_lines_are_parse_errors[3]",
        "tests/unit/collectors/test_burst.py::test_burst_options_are_validated"]) == [
        "tests/unit/collectors/test_burst.py::test_bad_stream_lines_are_parse_errors[3]"]
    # a file's name that merely starts like an own file is not that file
    with pytest.raises(ValueError, match="none of --tests"):
        mutation.select_tests("scheduler", ["tests/unit/test_scheduler.pyc", "tests/unit/test_scheduler_extra.py"])


def test_a_module_left_with_no_tests_is_refused_not_run_against_everything(mutation, modules, monkeypatch):
    with pytest.raises(ValueError, match="none of --tests"):
        mutation.plan(["scheduler", "burst_stream"], None, ["tests/unit/test_scheduler.py"])
    monkeypatch.setitem(modules, "scheduler", ("scheduler.py", ["tests/unit/no_such_file.py"]))
    with pytest.raises(ValueError, match="none of its tests exist"):
        mutation.select_tests("scheduler")


def test_the_command_line_refuses_a_subset_outside_the_modules_tests(mutation, capsys):
    with pytest.raises(SystemExit) as exit_info:
        mutation.main(["scheduler", "--tests", "tests/unit/serving/test_exposition.py"])
    assert exit_info.value.code == 2
    assert "scheduler: none of --tests" in capsys.readouterr().err


def test_every_parser_and_the_fast_snmp_decoders_are_mutated(mutation):
    """Every module that parses untrusted bytes is a subject (issue 21 item 6): each parsers/*.py,
    the fast SNMP path's BER codec and USM. A merge once dropped ib_common's entry unnoticed."""
    pkg = ROOT / mutation.PKG
    subjects = {rel for rel, _tests in mutation.MODULES.values()}
    wanted = {f"parsers/{p.name}" for p in (pkg / "parsers").glob("*.py") if p.name != "__init__.py"}
    wanted |= {"transport/snmp_ber.py", "transport/snmp_usm.py"}
    assert wanted - subjects == set()
    # a parser without an entry is mutated against its mirror test module, which must exist
    assert [name for name in mutation.MODULES if not mutation.own_tests(name)] == []
