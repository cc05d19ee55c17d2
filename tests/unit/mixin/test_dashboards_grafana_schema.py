"""Every generated dashboard type-checks against Grafana's published dashboard types (@grafana/schema
on npm) with tsc, and the check fails on the structural errors it exists to catch.

No Grafana server runs here; its schema package is the next best judge of structure. Each dashboard
becomes ``export const dashboard: DashboardJson = <the JSON>;`` where ``DashboardJson`` is Grafana's
``Dashboard`` with its string enums read as their values (JSON holds "absolute", not
``ThresholdsMode.Absolute``). Object literals get TypeScript's excess-property check, so a field the
schema does not know is an error, as is a missing required one.

Tolerated, and why:
- ``null`` values (grafanalib writes ``null`` for unset options): checked with ``strictNullChecks``
  off, so ``null`` is accepted where a value of the right type is optional. Grafana's dashboard
  model treats ``null`` as unset when it loads a dashboard.
- ``__inputs`` / ``__requires``: the export envelope Grafana's import reads, not part of the model.
- the angular heatmap's fields (``cards``, ``color``, ``yAxis``, ...): Grafana's heatmap panel
  migrates them when it loads the panel (heatmap ``migrations.ts``); they are removed before the
  check, and only on heatmap panels.

scripts/setup-deps installs typescript and @grafana/schema (pinned) into FABRIC_NPM_TOOLS.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fabric_exporter.mixin import dashboards
from fabric_exporter.mixin.settings import Settings

NPM_TOOLS = Path(os.environ.get("FABRIC_NPM_TOOLS", "/var/cache/fabric-exporter/npm-tools"))
HEATMAP_LEGACY = ("cards", "color", "dataFormat", "heatmap", "hideZeroBuckets", "highlightCards", "legend",
                  "reverseYBuckets", "tooltip", "xAxis", "xBucketNumber", "xBucketSize", "yAxis", "yBucketBound",
                  "yBucketNumber", "yBucketSize")
TYPES = """import type { Dashboard } from "@grafana/schema";
// Grafana's string enums as their values, recursively: JSON holds "absolute", not ThresholdsMode.Absolute.
type Literal<T> = T extends string ? `${T}` : T extends (infer U)[] ? Literal<U>[]
  : T extends object ? { [K in keyof T]: Literal<T[K]> } : T;
export type DashboardJson = Literal<Dashboard>;
"""
TSCONFIG = {"compilerOptions": {"strict": True, "strictNullChecks": False, "noEmit": True, "module": "esnext",
                                "moduleResolution": "bundler", "target": "es2020", "skipLibCheck": True,
                                "types": []},
            "include": ["*.ts"]}


@pytest.fixture(scope="module")
def tsc() -> Path:
    path = NPM_TOOLS / "node_modules" / ".bin" / "tsc"
    if not path.exists() or shutil.which("node") is None:
        if os.environ.get("CI"):
            pytest.fail(f"tsc is not installed in {NPM_TOOLS}: scripts/setup-deps should have installed it")
        pytest.skip(f"typescript/@grafana/schema not installed in {NPM_TOOLS} (run scripts/setup-deps)")
    return path


def for_check(board: dict) -> dict:
    board = copy.deepcopy(board)
    board.pop("__inputs", None)
    board.pop("__requires", None)
    for panel in board.get("panels", []):
        if panel.get("type") == "heatmap":
            for key in HEATMAP_LEGACY:
                panel.pop(key, None)
    return board


def check(tsc: Path, boards: dict[str, dict], workdir: Path) -> subprocess.CompletedProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "node_modules").symlink_to(NPM_TOOLS / "node_modules")
    (workdir / "grafana-types.ts").write_text(TYPES)
    (workdir / "tsconfig.json").write_text(json.dumps(TSCONFIG))
    for name, board in boards.items():
        (workdir / f"{name}.ts").write_text('import type { DashboardJson } from "./grafana-types";\n'
                                            f"export const dashboard: DashboardJson = {json.dumps(for_check(board), indent=1)};\n")
    return subprocess.run([str(tsc), "-p", str(workdir)], capture_output=True, text=True, timeout=300)


# Each broken board changes one thing of the overview dashboard; tsc must report it in that file.
BREAKAGES = {
    "legacy-variable-option-tags": (lambda b: b["templating"]["list"][1].setdefault("options", []).append(
        {"selected": False, "text": "a", "value": "a", "tags": []}), "'\"tags\"' does not exist"),
    "panel-link-without-dashboardlink-fields": (lambda b: next(p for p in b["panels"] if p.get("links")).__setitem__(
        "links", [{"title": "x", "url": "/d/x"}]), "missing the following properties"),
    "legacy-panel-field": (lambda b: b["panels"][1].__setitem__("editable", True), "'\"editable\"' does not exist"),
    "missing-overrides": (lambda b: b["panels"][1]["fieldConfig"].pop("overrides"), "'overrides' is missing"),
    "bad-enum-value": (lambda b: b["panels"][1]["fieldConfig"]["defaults"]["thresholds"].__setitem__("mode", "relativ"),
                       "not assignable"),
}


@pytest.fixture(scope="module")
def checked(tsc, repo, tmp_path_factory) -> tuple[set[str], dict[str, str], subprocess.CompletedProcess]:
    """One tsc run over the committed dashboards and every broken board, a file each (tsc checks every
    file and names the file of each error; a run costs seconds, most of it loading Grafana's types):
    (the committed files, {file: its errors}, the run)."""
    boards = {p.stem: json.loads(p.read_text()) for p in sorted(Path(repo, "dashboards").glob("*.json"))}
    committed = {f"{name}.ts" for name in boards}
    for name, (breakage, _) in BREAKAGES.items():
        board = dashboards.build_all(Settings())["fabric-overview"]
        breakage(board)
        boards[f"broken-{name}"] = board
    r = check(tsc, boards, tmp_path_factory.mktemp("tsc"))
    return committed, errors_by_file(r.stdout), r


def errors_by_file(output: str) -> dict[str, str]:
    """tsc's diagnostics ("path/file.ts(line,col): error TS...: message" and its indented continuation
    lines), grouped by file name; a diagnostic naming no file is kept under ""."""
    found: dict[str, str] = {}
    name = ""
    for line in output.splitlines():
        if line and not line[0].isspace():
            name = Path(line.split(".ts(", 1)[0] + ".ts").name if ".ts(" in line else ""
        found[name] = found.get(name, "") + line + "\n"
    return found


def test_committed_dashboards_type_check(checked):
    committed, errors, r = checked
    assert len(committed) >= 5
    assert not committed & errors.keys(), r.stdout + r.stderr
    assert set(errors) == {f"broken-{name}.ts" for name in BREAKAGES}, r.stdout + r.stderr  # nothing unattributed


@pytest.mark.parametrize("name", BREAKAGES)
def test_the_check_catches_structural_errors(checked, name):
    _, errors, r = checked
    assert r.returncode != 0
    assert BREAKAGES[name][1] in errors.get(f"broken-{name}.ts", ""), r.stdout + r.stderr
