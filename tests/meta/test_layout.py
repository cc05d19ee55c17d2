"""The tests' tree mirrors the code (issue #21 item 5).

- tests/unit/ mirrors exporter/fabric_exporter/: a folder per package, and in it test_<module>.py or
  test_<module>_<aspect>.py for a module or subpackage of that package (test_<package>_<aspect>.py
  one level up for what spans a package, e.g. tests/unit/test_parsers_real_captures.py). Nothing else
  but __init__.py and conftest.py: helpers live in tests/harness/, captures in tests/fixtures/.
- tests/e2e/<area>/ holds what drives the daemon, the lab or simulators end to end; tests/deploy/ the
  deployment artifacts; tests/meta/ the rules of the repository and of the tests themselves.
A test module anywhere else fails here, each stray file named in the one failure."""

from __future__ import annotations

from pathlib import Path

from tests.harness import paths

TEST_FOLDERS = ("unit", "e2e", "deploy", "meta")
ALWAYS_ALLOWED = ("__init__.py", "conftest.py")


def module_names(package: Path, parts: tuple[str, ...]) -> set[str] | None:
    """The modules and subpackages of package/<parts> a test file there may be named after, or None
    when <parts> is no package."""
    folder = package.joinpath(*parts)
    if (folder / "__init__.py").exists():
        names = {p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__")}
        names |= {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
    else:
        return None
    return names


def strays_in_unit(unit: Path, package: Path) -> list[str]:
    """Each file under ``unit`` that does not mirror a module of ``package``, with the reason."""
    found = []
    for path in sorted(unit.rglob("*")):
        if path.is_dir() or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(unit)
        names = module_names(package, rel.parts[:-1])
        if names is None:
            found.append(f"tests/unit/{rel}: no package fabric_exporter/{'/'.join(rel.parts[:-1])}")
        elif path.name in ALWAYS_ALLOWED:
            continue
        elif path.suffix != ".py" or not path.name.startswith("test_"):
            found.append(f"tests/unit/{rel}: not a test module (helpers go to tests/harness/, captures to tests/fixtures/)")
        elif not any(path.stem == f"test_{m}" or path.stem.startswith(f"test_{m}_") for m in names):
            found.append(f"tests/unit/{rel}: no module fabric_exporter/{'/'.join(rel.parts[:-1] + (path.stem[5:],))}"
                         f"[_<aspect>] (this package has: {', '.join(sorted(names))})")
    return found


def misplaced_test_modules(tests: Path) -> list[str]:
    """Test modules outside tests/unit/, tests/e2e/<area>/, tests/deploy/ and tests/meta/."""
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        rel = path.relative_to(tests)
        if rel.parts[0] == "fixtures":
            continue
        if rel.parts[0] not in TEST_FOLDERS or (rel.parts[0] == "e2e" and len(rel.parts) < 3):
            found.append(f"tests/{rel}: test modules live in tests/unit/ (mirroring the package), "
                         "tests/e2e/<area>/, tests/deploy/ or tests/meta/")
    return found


def test_the_unit_tests_mirror_the_package_and_nothing_else_holds_test_modules():
    strays = strays_in_unit(paths.TESTS / "unit", paths.PACKAGE) + misplaced_test_modules(paths.TESTS)
    assert not strays, "files out of the tests' layout (see tests/meta/test_layout.py):\n" + "\n".join(strays)


def test_the_check_names_every_stray_and_accepts_what_mirrors(tmp_path):
    package, unit = tmp_path / "pkg", tmp_path / "unit"
    for name in ("__init__.py", "alpha.py", "sub/__init__.py", "sub/beta.py", "sub/deep/__init__.py",
                 "serving/__init__.py", "serving/store.py"):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("")
    accepted = ["__init__.py", "conftest.py", "test_alpha.py", "test_alpha_edges.py", "test_sub.py",
                "test_sub_everything.py", "sub/__init__.py", "sub/test_beta.py", "sub/test_deep_x.py",
                "serving/test_store.py"]
    refused = ["test_alphabet.py", "sub/test_gamma.py", "nope/test_alpha.py", "sub/helpers.py", "sub/data.txt",
               "serving/test_web.py", "sub/deep/test_beta.py"]
    for name in accepted + refused:
        (unit / name).parent.mkdir(parents=True, exist_ok=True)
        (unit / name).write_text("")
    strays = strays_in_unit(unit, package)
    assert sorted(s.split(":")[0] for s in strays) == sorted(f"tests/unit/{n}" for n in refused)


def test_test_modules_outside_the_four_folders_are_named(tmp_path):
    for name in ("unit/test_a.py", "e2e/lab/test_b.py", "e2e/test_c.py", "core/test_d.py", "test_e.py",
                 "fixtures/real/test_f.py", "deploy/test_g.py", "meta/test_h.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert [s.split(":")[0] for s in misplaced_test_modules(tmp_path)] == [
        "tests/core/test_d.py", "tests/e2e/test_c.py", "tests/test_e.py"]
