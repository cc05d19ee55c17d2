"""Every registered collector has every piece docs/adding-a-collector.md asks for, and ONE failure
names all that are missing: its doc page, its fuzz entry, its SSH guard declaration (if it runs
commands over SSH), its config schema entry, an example config and its mention in
docs/configuration.md. A toy registry missing one piece (then two) proves the check finds each."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import pytest

from fabric_exporter import ssh_guard
from fabric_exporter.collectors import Collector
from fabric_exporter.config.schema import render as render_schema

from . import test_fuzz_through_collectors as fuzz

ROOT = Path(__file__).resolve().parents[2]
GUARD = Path("deploy/ssh/fabric-exporter-ssh-guard")


def _guard_declared_by(path: Path) -> dict[str, list[str]]:
    loader = importlib.machinery.SourceFileLoader(f"completeness_guard_{abs(hash(str(path)))}", str(path))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module.DECLARED_BY


def missing_pieces(collectors: Mapping[str, type], root: Path, fuzzed: Mapping[str, tuple[str, ...] | str],
                   fuzz_tests: Mapping[str, object]) -> list[str]:
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
        if not (root / "docs/collectors" / f"{name}.md").is_file():
            out.append(f"{name}: no doc page docs/collectors/{name}.md")
        entry = fuzzed.get(name)
        if entry is None:
            out.append(f"{name}: no entry in THROUGH_COLLECTORS of tests/core/test_fuzz_through_collectors.py "
                       "(a test polling it with fuzzed output, or why it reads no text)")
        elif isinstance(entry, tuple) and not (entry and all(callable(fuzz_tests.get(t)) for t in entry)):
            out.append(f"{name}: its fuzz entry names tests that do not exist: {entry}")
        if "ssh" in cls.transports:
            if not cls.ssh_commands:
                out.append(f"{name}: runs over SSH but declares no ssh_commands (fabric_exporter/commands.py)")
            elif name not in guarded:
                out.append(f"{name}: its ssh_commands are not in {GUARD} (python -m fabric_exporter.ssh_guard "
                           f"--write {GUARD})")
        if name not in in_schema:
            out.append(f"{name}: not in docs/config.schema.json (fabric-exporter config-schema > docs/config.schema.json)")
        if not re.search(rf"^\s*collector:\s*{re.escape(name)}\s*$", examples, re.M):
            out.append(f"{name}: no example config under examples/ with 'collector: {name}'")
        if f"`{name}`" not in configuration:
            out.append(f"{name}: not mentioned in docs/configuration.md (as `{name}`)")
    return out


def test_every_registered_collector_is_complete():
    # the built-in ones (a plugin's docs and examples live with the plugin; tests register toy plugins)
    collectors = ssh_guard.builtin_collectors()
    assert set(collectors) >= {"infiniband", "roce_nic", "switch_cli", "snmp_switch"}, collectors
    missing = missing_pieces(collectors, ROOT, fuzz.THROUGH_COLLECTORS, vars(fuzz))
    assert not missing, "collectors with missing pieces (docs/adding-a-collector.md):\n  " + "\n  ".join(missing)


# ---------------------------------------------------------------------------------------------
# The check itself: a toy collector with every piece passes; without one piece, that piece is named.


class ToyCollector(Collector):
    name: ClassVar[str] = "toy_link"
    transports: ClassVar[tuple[str, ...]] = ("ssh", "local")

    from fabric_exporter.commands import Shape as _Shape

    ssh_commands: ClassVar[tuple] = (_Shape("toy-stat", ("--json",)),)

    async def poll(self):  # pragma: no cover - never polled here
        raise NotImplementedError


def test_toy_fuzz_target():
    """The toy's fuzz entry points at this (a real test function, as the check requires)."""


PIECES = {
    "doc page": lambda root: (root / "docs/collectors/toy_link.md").unlink(),
    "fuzz entry": None,  # removed from the table, below
    "ssh_commands": None,  # removed from the class, below
    "guard": lambda root: (root / GUARD).write_text(ssh_guard.render((ROOT / GUARD).read_text(), {})),
    "config schema": lambda root: (root / "docs/config.schema.json").write_text(  # a schema of another collector
        render_schema({"toy_other": type("ToyOther", (ToyCollector,), {"name": "toy_other"})})),
    "example config": lambda root: (root / "examples/toy.yaml").unlink(),
    "docs/configuration.md": lambda root: (root / "docs/configuration.md").write_text("# Configuration\n"),
}
NAMED_AS = {"doc page": "no doc page", "fuzz entry": "no entry in THROUGH_COLLECTORS",
            "ssh_commands": "declares no ssh_commands", "guard": "are not in deploy/ssh",
            "config schema": "not in docs/config.schema.json", "example config": "no example config",
            "docs/configuration.md": "not mentioned in docs/configuration.md"}


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


def _check(root: Path, collectors: Mapping[str, type], fuzzed: Mapping) -> list[str]:
    return missing_pieces(collectors, root, fuzzed, {"test_toy_fuzz_target": test_toy_fuzz_target})


def test_a_complete_toy_collector_passes(tmp_path):
    collectors = {"toy_link": ToyCollector}
    assert _check(_toy_root(tmp_path, collectors), collectors, {"toy_link": ("test_toy_fuzz_target",)}) == []


@pytest.mark.parametrize("piece", sorted(PIECES))
def test_a_toy_collector_missing_one_piece_is_named(tmp_path, piece):
    collectors: dict[str, type] = {"toy_link": ToyCollector}
    root = _toy_root(tmp_path, collectors)
    fuzzed: dict = {"toy_link": ("test_toy_fuzz_target",)}
    if piece == "fuzz entry":
        fuzzed = {}
    elif piece == "ssh_commands":
        collectors = {"toy_link": type("ToyNoCommands", (ToyCollector,), {"ssh_commands": ()})}
    else:
        PIECES[piece](root)
    missing = _check(root, collectors, fuzzed)
    assert len(missing) == 1 and NAMED_AS[piece] in missing[0] and missing[0].startswith("toy_link: "), missing


def test_every_missing_piece_is_named_in_one_failure(tmp_path):
    collectors = {"toy_link": ToyCollector}
    root = _toy_root(tmp_path, collectors)
    for piece in ("doc page", "example config", "docs/configuration.md"):
        PIECES[piece](root)
    missing = _check(root, collectors, {"toy_link": ("test_no_such_test",)})
    assert [m.split(": ", 1)[1].split(" ")[0:2] for m in missing] == [
        ["no", "doc"], ["its", "fuzz"], ["no", "example"], ["not", "mentioned"]], missing


def test_a_collector_without_ssh_needs_no_guard_declaration(tmp_path):
    local = type("ToyLocal", (ToyCollector,), {"transports": ("local",), "ssh_commands": ()})
    collectors = {"toy_link": local}
    root = _toy_root(tmp_path, collectors)
    assert _check(root, collectors, {"toy_link": "reads nothing but a toy"}) == []
