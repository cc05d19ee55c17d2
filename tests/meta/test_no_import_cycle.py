"""No import cycle among fabric_exporter's modules, and the config loads without any collector.

The graph is read from the source with ``ast`` (every ``import`` statement, at top level or inside
a function, except those under ``if TYPE_CHECKING:``), so a late import that merely dodges a cycle
at run time still counts as an edge. Importing ``a.b.c`` also runs the packages ``a.b`` and ``a``:
those count as edges too, except packages that contain the importing module (Python is already
running them when the module's own import statement runs). ``importlib.import_module`` calls (the
collector registry's lazy loading) are not edges: they name no module in the source.

``python tests/meta/test_no_import_cycle.py [MODULE ...]`` prints the edges of the named modules.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.harness import paths

PACKAGE = "fabric_exporter"
PACKAGE_DIR = paths.ROOT / "exporter" / PACKAGE


def package_modules(root: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Module name -> file, for every .py file of the package."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST):
    """Every Import/ImportFrom in the tree, skipping ``if TYPE_CHECKING:`` bodies."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _imported_names(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    submodules = {f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in known}
    # "from pkg import sub" imports the submodule pkg.sub; it reads pkg itself only for names that
    # are not submodules (a package's own module importing a sibling this way is no edge to pkg).
    if isinstance(node, ast.ImportFrom) and submodules and len(submodules) == len(node.names):
        return submodules
    return {target} | submodules


def import_graph(root: Path = PACKAGE_DIR) -> dict[str, set[str]]:
    """Module -> the package modules its import statements run."""
    modules = package_modules(root)
    known = set(modules)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        own_packages = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1 + is_package)}
        for node in _import_nodes(ast.parse(path.read_text(), str(path))):
            for name in _imported_names(module, is_package, node, known):
                parts = name.split(".")
                for i in range(1, len(parts) + 1):  # the module and the packages above it
                    target = ".".join(parts[:i])
                    if target in known and target != module and (target == name or target not in own_packages):
                        graph[module].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None (iterative depth-first search)."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    for start in sorted(graph):
        if colour[start] != WHITE:
            continue
        path, iters = [start], [iter(sorted(graph[start]))]
        colour[start] = GREY
        while path:
            nxt = next(iters[-1], None)
            if nxt is None:
                colour[path.pop()] = BLACK
                iters.pop()
            elif colour.get(nxt, BLACK) == GREY:
                return path[path.index(nxt):] + [nxt]
            elif colour.get(nxt) == WHITE:
                colour[nxt] = GREY
                path.append(nxt)
                iters.append(iter(sorted(graph[nxt])))
    return None


def test_the_cycle_finder_finds_a_cycle_through_a_late_import(tmp_path):
    """The checker itself: a function-level import closing a loop is found, and printed in order."""
    pkg = tmp_path / PACKAGE
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub.b import thing\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def thing():\n    from ..a import x\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import y\n")
    graph = import_graph(pkg)
    assert graph[f"{PACKAGE}.c"] == set()  # type-checking imports do not run
    assert find_cycle(graph) == [f"{PACKAGE}.a", f"{PACKAGE}.sub.b", f"{PACKAGE}.a"]
    (pkg / "sub" / "b.py").write_text("def thing():\n    pass\n")
    assert find_cycle(import_graph(pkg)) is None


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 50 and f"{PACKAGE}.collectors.base" in graph[f"{PACKAGE}.collectors"]  # the walk works
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_config_modules_import_no_collector():
    """The loader is handed the collectors (daemon/cli pass the registry); it never reaches for them."""
    graph = import_graph()
    reach: set[str] = set()
    todo = [m for m in graph if m == f"{PACKAGE}.config" or m.startswith(f"{PACKAGE}.config.")]
    while todo:
        module = todo.pop()
        for target in graph[module] - reach:
            reach.add(target)
            todo.append(target)
    assert f"{PACKAGE}.config.loader" in reach and f"{PACKAGE}.config.model" in reach
    assert sorted(m for m in reach if m.startswith(f"{PACKAGE}.collectors")) == []


def test_importing_the_config_alone_imports_no_collector():
    code = ("import json, sys; import fabric_exporter.config; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('fabric_exporter'))))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    modules = json.loads(out.stdout)
    assert "fabric_exporter.config" in modules
    assert [m for m in modules if m.startswith("fabric_exporter.collectors")] == []


if __name__ == "__main__":
    g = import_graph()
    for name in sys.argv[1:] or sorted(g):
        print(name, "->", ", ".join(sorted(g[name])) or "-")
    print("cycle:", " -> ".join(find_cycle(g) or ["none"]))
