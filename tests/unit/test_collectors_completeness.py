"""Every registered collector has every piece docs/adding-a-collector.md asks for, and ONE failure
names all that are missing: its doc page, its fuzzed output (``captures``, or a hand-written test in
THROUGH_COLLECTORS), its SSH guard declaration and driver (``ssh_commands`` and ``command_variants``,
if it runs commands over SSH), its config schema entry, an example config (under examples/ or in its
doc page) and its row in docs/configuration.md (generated). A toy registry missing one piece (then
two) proves the check finds each."""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import json
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import ClassVar

import pytest

from fabric_exporter import ssh_guard
from fabric_exporter.collectors import Collector
from fabric_exporter.config.schema import render as render_schema

from tests.harness import paths
from tests.unit import test_collectors_fuzz as fuzz

ROOT = paths.ROOT
GUARD = Path("deploy/ssh/fabric-exporter-ssh-guard")


def _guard_declared_by(path: Path) -> dict[str, list[str]]:
    loader = importlib.machinery.SourceFileLoader(f"completeness_guard_{abs(hash(str(path)))}", str(path))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module.DECLARED_BY


def missing_pieces(collectors: Mapping[str, type], root: Path, fuzzed: Mapping[str, tuple[str, ...] | str],
                   fuzz_tests: Mapping[str, object], hand_driven: Collection[str] = ()) -> list[str]:
    """One line per missing piece of each collector (empty: complete)."""
    schema = json.loads((root / "docs/config.schema.json").read_text())
    target = schema["properties"]["targets"]["items"]
    in_schema = set(target["properties"]["collector"]["enum"]) & {
        branch["if"]["properties"]["collector"]["const"] for branch in target.get("allOf", ())}
    examples = "\n".join(p.read_text() for p in sorted((root / "examples").glob("*.yaml")))
    configuration = (root / "docs/configuration.md").read_text()
    guarded = {c for names in _guard_declared_by(root / GUARD).values() for c in names}
    out = []
    for name in sorted(collectors):
        cls = collectors[name]
        page = root / "docs/collectors" / f"{name}.md"
        if not page.is_file():
            out.append(f"{name}: no doc page docs/collectors/{name}.md")
        entry = fuzzed.get(name)
        if entry is None and not cls.captures:
            out.append(f"{name}: declares no captures (real output of its commands, polled mutated by "
                       "tests/unit/test_collectors_fuzz.py) and has no entry in its THROUGH_COLLECTORS")
        elif isinstance(entry, tuple) and not (entry and all(callable(fuzz_tests.get(t)) for t in entry)):
            out.append(f"{name}: its fuzz entry names tests that do not exist: {entry}")
        if "ssh" in cls.transports:
            if not cls.ssh_commands:
                out.append(f"{name}: runs over SSH but declares no ssh_commands (fabric_exporter/commands.py)")
            elif name not in guarded:
                out.append(f"{name}: its ssh_commands are not in {GUARD} (python -m fabric_exporter.ssh_guard "
                           f"--write {GUARD})")
            if cls.ssh_commands and not cls.command_variants and name not in hand_driven:
                out.append(f"{name}: declares no command_variants (the options that change its commands, "
                           "polled by tests/deploy/test_ssh_guard_generated.py; ({},) for none)")
        if name not in in_schema:
            out.append(f"{name}: not in docs/config.schema.json (fabric-exporter config-schema > docs/config.schema.json)")
        example = rf"^\s*collector:\s*{re.escape(name)}\s*(#.*)?$"
        if not (re.search(example, examples, re.M) or any(
                re.search(example, block, re.M) for block in doc_examples(page.read_text() if page.is_file() else ""))):
            out.append(f"{name}: no example config with 'collector: {name}' under examples/ or in a yaml block "
                       f"of docs/collectors/{name}.md")
        if f"`{name}`" not in configuration:
            out.append(f"{name}: not mentioned in docs/configuration.md (as `{name}`; fabric-exporter "
                       "config-docs --write docs/configuration.md)")
    return out


def doc_examples(markdown: str) -> list[str]:
    """The ```yaml blocks of a doc page that are configs (they hold ``targets:``)."""
    return [b for b in re.findall(r"^```ya?ml\n(.*?)^```", markdown, re.M | re.S) if re.search(r"^targets:", b, re.M)]


def hand_driven() -> set[str]:
    """The collectors with a hand-written driver in the SSH guard test (the keys of its HAND_DRIVERS,
    read from the text: importing that module runs the tools it drives)."""
    tree = ast.parse((ROOT / "tests/deploy/test_ssh_guard_generated.py").read_text())
    (table,) = [n.value for n in tree.body if isinstance(n, ast.Assign)
                and any(getattr(t, "id", None) == "HAND_DRIVERS" for t in n.targets)]
    return {k.value.split("/")[0] for k in table.keys}


def test_every_registered_collector_is_complete():
    # the built-in ones (a plugin's docs and examples live with the plugin; tests register toy plugins)
    collectors = ssh_guard.builtin_collectors()
    assert set(collectors) >= {"infiniband", "roce_nic", "switch_cli", "snmp_switch"}, collectors
    missing = missing_pieces(collectors, ROOT, fuzz.THROUGH_COLLECTORS, vars(fuzz),
                             hand_driven())
    assert not missing, "collectors with missing pieces (docs/adding-a-collector.md):\n  " + "\n  ".join(missing)


# ---------------------------------------------------------------------------------------------
# The check itself: a toy collector with every piece passes; without one piece, that piece is named.


class ToyCollector(Collector):
    name: ClassVar[str] = "toy_link"
    transports: ClassVar[tuple[str, ...]] = ("ssh", "local")

    from fabric_exporter.commands import Shape as _Shape

    ssh_commands: ClassVar[tuple] = (_Shape("toy-stat", ("--json",)),)
    command_variants: ClassVar[tuple] = ({},)
    captures: ClassVar[tuple] = (("toy/toy-stat.json",),)

    async def poll(self):  # pragma: no cover - never polled here
        raise NotImplementedError


def test_toy_fuzz_target():
    """A toy's hand-written fuzz entry points at this (a real test function, as the check requires)."""


def _without(**attrs) -> type:
    return type("ToyWithout", (ToyCollector,), attrs)


PIECES = {
    "doc page": lambda root: (root / "docs/collectors/toy_link.md").unlink(),
    "captures": None,  # removed from the class, below
    "ssh_commands": None,  # removed from the class, below
    "command_variants": None,  # removed from the class, below
    "guard": lambda root: (root / GUARD).write_text(ssh_guard.render((ROOT / GUARD).read_text(), {})),
    "config schema": lambda root: (root / "docs/config.schema.json").write_text(  # a schema of another collector
        render_schema({"toy_other": type("ToyOther", (ToyCollector,), {"name": "toy_other"})})),
    "example config": lambda root: (root / "examples/toy.yaml").unlink(),
    "docs/configuration.md": lambda root: (root / "docs/configuration.md").write_text("# Configuration\n"),
}
CLASS_PIECES = {"captures": _without(captures=()), "ssh_commands": _without(ssh_commands=()),
                "command_variants": _without(command_variants=())}
NAMED_AS = {"doc page": "no doc page", "captures": "declares no captures",
            "ssh_commands": "declares no ssh_commands", "command_variants": "declares no command_variants",
            "guard": "are not in deploy/ssh", "config schema": "not in docs/config.schema.json",
            "example config": "no example config", "docs/configuration.md": "not mentioned in docs/configuration.md"}


def _toy_root(tmp_path: Path, collectors: Mapping[str, type]) -> Path:
    root = tmp_path / "repo"
    (root / "docs/collectors").mkdir(parents=True)
    (root / "examples").mkdir()
    (root / GUARD).parent.mkdir(parents=True)
    (root / "docs/collectors/toy_link.md").write_text("# toy_link\n")
    (root / "docs/config.schema.json").write_text(render_schema(collectors))
    (root / "examples/toy.yaml").write_text("targets:\n  - name: toy\n    collector: toy_link\n")
    (root / "docs/configuration.md").write_text("| `collector` | required | `toy_link` |\n")
    (root / GUARD).write_text(ssh_guard.render((ROOT / GUARD).read_text(), collectors))
    return root


def _check(root: Path, collectors: Mapping[str, type], fuzzed: Mapping, hand_driven=()) -> list[str]:
    return missing_pieces(collectors, root, fuzzed, {"test_toy_fuzz_target": test_toy_fuzz_target}, hand_driven)


def test_a_complete_toy_collector_passes(tmp_path):
    collectors = {"toy_link": ToyCollector}
    assert _check(_toy_root(tmp_path, collectors), collectors, {}) == []


def test_hand_written_tests_stand_in_for_captures_and_variants(tmp_path):
    collectors = {"toy_link": _without(captures=(), command_variants=())}
    root = _toy_root(tmp_path, collectors)
    assert _check(root, collectors, {"toy_link": ("test_toy_fuzz_target",)}, {"toy_link"}) == []


def test_an_example_in_the_doc_page_is_an_example(tmp_path):
    collectors = {"toy_link": ToyCollector}
    root = _toy_root(tmp_path, collectors)
    PIECES["example config"](root)
    (root / "docs/collectors/toy_link.md").write_text(
        "# toy_link\n\n```yaml\ntargets:\n  - name: toy\n    collector: toy_link   # the toy\n```\n")
    assert _check(root, collectors, {}) == []
    (root / "docs/collectors/toy_link.md").write_text(  # a fragment, not a config
        "# toy_link\n\n```yaml\n  - name: toy\n    collector: toy_link\n```\n")
    assert [m.split(": ", 1)[1][:17] for m in _check(root, collectors, {})] == ["no example config"]


@pytest.mark.parametrize("piece", sorted(PIECES))
def test_a_toy_collector_missing_one_piece_is_named(tmp_path, piece):
    collectors: dict[str, type] = {"toy_link": CLASS_PIECES.get(piece, ToyCollector)}
    root = _toy_root(tmp_path, collectors)
    if piece not in CLASS_PIECES:
        PIECES[piece](root)
    missing = _check(root, collectors, {})
    assert len(missing) == 1 and NAMED_AS[piece] in missing[0] and missing[0].startswith("toy_link: "), missing


def test_every_missing_piece_is_named_in_one_failure(tmp_path):
    collectors = {"toy_link": _without(command_variants=())}
    root = _toy_root(tmp_path, collectors)
    for piece in ("doc page", "example config", "docs/configuration.md"):
        PIECES[piece](root)
    missing = _check(root, collectors, {"toy_link": ("test_no_such_test",)})
    assert [m.split(": ", 1)[1].split(" ")[0:2] for m in missing] == [
        ["no", "doc"], ["its", "fuzz"], ["declares", "no"], ["no", "example"], ["not", "mentioned"]], missing


def test_a_collector_without_ssh_needs_no_guard_declaration(tmp_path):
    local = _without(transports=("local",), ssh_commands=(), command_variants=())
    collectors = {"toy_link": local}
    root = _toy_root(tmp_path, collectors)
    assert _check(root, collectors, {"toy_link": "reads nothing but a toy"}) == []
