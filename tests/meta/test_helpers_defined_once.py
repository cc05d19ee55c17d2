"""No test helper is written twice: a function, fixture or class that two test modules both need
lives once (tests/harness/, or the folder's conftest) and is imported.

Two top-level definitions count as copies when their bodies (docstrings aside), parameters and
decorators are the same AST and the module-level names they read are bound to the same values in
both modules (so ``text(name)`` reading two different fixture folders is not a copy).

The shared set itself, tests/harness/, defines each name once: two harness modules each with their
own ``Poller`` (or ``series``, or exposition parser) are two helpers for one job, however different
their bodies, and a test importing one of them cannot tell which it got."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.harness import paths

TESTS = paths.TESTS
# Bodies this small (``return asyncio.run(coro)`` is larger) are not worth a shared helper.
MIN_BODY = 60


def _module_bindings(tree: ast.Module) -> dict[str, str]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = ast.dump(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out[node.target.id] = ast.dump(node.value)
    return out


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return body[1:]
    return body


def definition_key(node: ast.AST, bindings: dict[str, str]) -> str | None:
    """What makes two definitions the same helper; None for tests and for bodies too small to share."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or node.name.startswith("test"):
        return None
    body = ast.dump(ast.Module(body=_without_docstring(node.body), type_ignores=[]))
    if len(body) < MIN_BODY:
        return None
    args = ast.dump(node.args) if not isinstance(node, ast.ClassDef) else ast.dump(ast.Tuple(node.bases, ast.Load()))
    read = sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)})
    context = [(name, bindings[name]) for name in read if name in bindings]
    return repr((type(node).__name__, args, [ast.dump(d) for d in node.decorator_list], body, context))


def copies(root: Path) -> list[list[str]]:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        bindings = _module_bindings(tree)
        for node in tree.body:
            key = definition_key(node, bindings)
            if key is not None:
                seen[key].append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    return [where for where in seen.values() if len(where) > 1]


# A script's entry point is its own: the harness runs these modules as programs.
ENTRY_POINTS = {"main"}


def names_defined_twice(harness: Path) -> dict[str, list[str]]:
    """Top-level function and class names that more than one module of ``harness`` defines."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(harness.glob("*.py")):
        for node in ast.parse(path.read_text(), filename=str(path)).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name not in ENTRY_POINTS:
                where[node.name].append(f"{path.name}:{node.lineno}")
    return {name: places for name, places in where.items() if len(places) > 1}


def test_no_helper_is_defined_twice_in_the_tests():
    found = copies(TESTS)
    assert not found, "test helpers defined more than once (move one copy to tests/harness/ or the " \
                      "folder's conftest and import it):\n" + "\n".join(", ".join(w) for w in found)


def test_the_check_finds_a_copy_and_tells_a_different_fixture_folder_apart(tmp_path):
    helper = '''
FIX = {fix!r}


def _exe(path, body):
    path.write_text("#!/bin/sh\\n" + body + "\\n")
    path.chmod(0o755)


def text(name):
    return (FIX / name).read_text()


def test_something():
    assert True
'''
    (tmp_path / "a.py").write_text(helper.format(fix="fixtures/a"))
    (tmp_path / "b.py").write_text(helper.format(fix="fixtures/b"))
    (tmp_path / "c.py").write_text(helper.format(fix="fixtures/a").replace("def _exe(path, body)",
                                                                           "def make_exe(path, body)"))
    found = {tuple(sorted(w.split(" ")[1] for w in group)): sorted(w.split(":")[0] for w in group)
             for group in copies(tmp_path)}
    # _exe three times (the name does not matter: the body does); text only where FIX is the same
    assert found == {("_exe", "_exe", "make_exe"): ["a.py", "b.py", "c.py"], ("text", "text"): ["a.py", "c.py"]}


def test_the_harness_defines_each_name_once():
    found = names_defined_twice(TESTS / "harness")
    assert not found, "tests/harness/ defines these names in more than one module (keep one, import it):\n" + \
        "\n".join(f"{name}: {', '.join(places)}" for name, places in sorted(found.items()))


def test_the_harness_check_finds_two_pollers_of_different_bodies(tmp_path):
    (tmp_path / "roce.py").write_text("class Poller:\n    keyed_by = 'host'\n\n\ndef main():\n    pass\n")
    (tmp_path / "switch.py").write_text("class Poller:\n    keyed_by = 'target'\n\n\ndef main():\n    pass\n")
    (tmp_path / "other.py").write_text("def series():\n    pass\n")
    assert names_defined_twice(tmp_path) == {"Poller": ["roce.py:1", "switch.py:1"]}
