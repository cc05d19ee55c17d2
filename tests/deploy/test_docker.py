"""The container image recipe. No container engine runs here, so the image is never built in these
tests: hadolint lints the Dockerfile, its instructions are checked for the promised properties, and
the build context that .dockerignore lets through is shown to be enough to build the package wheel."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import DEPLOY, ROOT, deploy_tool

DOCKERFILE = DEPLOY / "docker" / "Dockerfile"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def final_stage(text: str) -> list[tuple[str, str]]:
    ins = instructions(text)
    last_from = max(i for i, (word, _) in enumerate(ins) if word == "FROM")
    return ins[last_from:]


def test_hadolint_is_clean():
    hadolint = deploy_tool("hadolint")
    result = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_would_catch_a_bad_dockerfile(tmp_path: Path):
    """The lint is not vacuous: the classic mistakes fail it."""
    hadolint = deploy_tool("hadolint")
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install curl\nCMD fabric-exporter run\n")
    result = subprocess.run([hadolint, "--no-color", str(bad)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    for rule in ("DL3007", "DL3014", "DL3015", "DL3025"):  # :latest, no -y, recommends, shell-form CMD
        assert rule in result.stdout, result.stdout


def test_image_properties():
    text = DOCKERFILE.read_text()
    ins = instructions(text)
    stage = final_stage(text)
    words = dict(stage[1:])  # last of each instruction in the final stage

    args = dict(a.split("=", 1) for w, a in ins if w == "ARG" and "=" in a)
    assert re.fullmatch(r"python:3\.1[1-9]-slim-\w+", args["PYTHON_IMAGE"]), args
    assert stage[0] == ("FROM", "${PYTHON_IMAGE}")
    user = words["USER"]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0 and (not gid or int(gid) != 0), user
    assert words["EXPOSE"] == "9315"
    assert "/healthz" in words["HEALTHCHECK"] and "9315" in words["HEALTHCHECK"]
    assert words["HEALTHCHECK"].split("CMD", 1)[1].strip().startswith("[")  # exec form, no shell needed
    apt = " ".join(a for w, a in stage if w == "RUN" and "apt-get install" in a)
    for package in ("infiniband-diags", "iproute2", "ethtool", "tini"):
        assert re.search(rf"\b{package}\b", apt), package
    assert "--no-install-recommends" in apt and "rm -rf /var/lib/apt/lists/*" in apt

    entrypoint = json.loads(words["ENTRYPOINT"])
    assert entrypoint == ["/usr/bin/tini", "--", "fabric-exporter"]
    cmd = json.loads(words["CMD"])
    from fabric_exporter.cli import build_parser

    parsed = build_parser().parse_args(cmd)
    assert parsed.command == "run" and parsed.config == "/etc/fabric-exporter/config.yaml"
    # The user switch happens after every RUN that needs root.
    order = [w for w, _ in stage]
    assert order.index("USER") > max(i for i, w in enumerate(order) if w == "RUN")


def dockerignore_allows(patterns: list[tuple[bool, str]], rel: str) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parent directories decides."""
    parts = rel.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for negated, pattern in patterns:
        regex = fnmatch.translate(pattern).replace(".*.*/", "(?:.*/)?")
        if any(re.match(regex, c) for c in candidates):
            excluded = not negated
    return not excluded


def build_context() -> list[str]:
    patterns = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            negated = line.startswith("!")
            patterns.append((negated, line.lstrip("!").rstrip("/")))
    files = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT).as_posix()
        if path.is_file() and not rel.startswith((".git/", ".venv/")) and dockerignore_allows(patterns, rel):
            files.append(rel)
    return sorted(files)


def test_build_context_is_small_and_sufficient(tmp_path: Path):
    context = build_context()
    assert "pyproject.toml" in context and "exporter/fabric_exporter/cli.py" in context
    assert not [f for f in context if f.startswith(("tests/", "deploy/", "bench/", ".git"))]
    assert not [f for f in context if "__pycache__" in f or f.endswith(".pyc")]
    # Every COPY source from the build context is in it.
    for word, arg in instructions(DOCKERFILE.read_text()):
        if word == "COPY" and not arg.startswith("--from"):
            *sources, _dest = shlex.split(arg)
            for source in sources:
                assert any(f == source or f.startswith(source.rstrip("/") + "/") for f in context), \
                    f"COPY {source}: not in the build context (missing or .dockerignored)"
    # What the build stage does with it (`pip install .`, with build isolation like the image build,
    # so setuptools/wheel come from PyPI): build the wheel from exactly these files.
    src = tmp_path / "src"
    for rel in context:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    out = tmp_path / "wheels"
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = out.glob("fabric_exporter-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert "fabric_exporter/cli.py" in names and "fabric_exporter/daemon.py" in names
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert "fabric-exporter = fabric_exporter.cli:main" in z.read(entry_points).decode()


@pytest.mark.parametrize("ignored", [".git/config", "tests/conftest.py", "deploy/docker/Dockerfile",
                                     "exporter/fabric_exporter/__pycache__/cli.cpython-311.pyc"])
def test_dockerignore_matcher_excludes(ignored: str):
    patterns = [(line.startswith("!"), line.lstrip("!").rstrip("/"))
                for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert not dockerignore_allows(patterns, ignored)
    assert dockerignore_allows(patterns, "exporter/fabric_exporter/cli.py")


def test_apt_packages_exist_in_the_images_debian_release():
    """The runtime stage's apt packages exist in the Debian release the base image is built on,
    checked with this machine's apt when it runs that same release."""
    text = DOCKERFILE.read_text()
    base = dict(a.split("=", 1) for w, a in instructions(text) if w == "ARG" and "=" in a)["PYTHON_IMAGE"]
    release = base.rsplit("-", 1)[1]
    os_release = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    if f"VERSION_CODENAME={release}" not in os_release:
        pytest.skip(f"this machine does not run Debian {release}, so its apt cannot answer for the image")
    apt_cache = shutil.which("apt-cache")
    if apt_cache is None:
        pytest.skip("no apt-cache here")
    apt = " ".join(a for w, a in final_stage(text) if w == "RUN" and "apt-get install" in a)
    packages = [w for w in apt.split("apt-get install", 1)[1].split("&&")[0].split() if not w.startswith("-")]
    assert packages
    if not list(Path("/var/lib/apt/lists").glob("*_Packages*")):
        pytest.skip("apt has no package lists here (apt-get update has not run)")
    for package in packages:
        r = subprocess.run([apt_cache, "show", "--no-all-versions", package], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and f"Package: {package}" in r.stdout, f"{package}: not in Debian {release}: {r.stderr}"
