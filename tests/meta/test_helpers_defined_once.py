"""No test helper is written twice: a function, fixture or class that two test modules both need
lives once (tests/harness/, or the folder's conftest) and is imported.

Two top-level definitions count as copies when their bodies (docstrings aside), parameters and
decorators are the same AST and the module-level names they read are bound to the same values in
both modules (so ``text(name)`` reading two different fixture folders is not a copy)."""

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
