"""docs/configuration.md's ``collector`` row, generated from the registry: every built-in collector
with the transports it supports, linked to its page. A new collector regenerates the row (a test
compares the committed doc with it) instead of editing the doc by hand:

    fabric-exporter config-docs --write docs/configuration.md

Like the rest of config/, it is handed the collectors (the CLI passes the built-in ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..generated import write_or_check

ROW_START = "| `collector` | required | "


def collector_row(collectors: Mapping[str, type]) -> str:
    names = ", ".join(f"[`{name}`](collectors/{name}.md) ({', '.join(collectors[name].transports)})"
                      for name in sorted(collectors))
    return f"{ROW_START}one of {names} |"


def render(text: str, collectors: Mapping[str, type]) -> str:
    """``text`` with its one ``collector`` row replaced by the generated one."""
    lines = text.split("\n")
    rows = [i for i, line in enumerate(lines) if line.startswith(ROW_START)]
    if len(rows) != 1:
        raise ValueError(f"expected one line starting with {ROW_START!r}, found {len(rows)}")
    lines[rows[0]] = collector_row(collectors)
    return "\n".join(lines)


def update(path: Path, collectors: Mapping[str, type], write: bool) -> int:
    """``--write``: regenerate the row in place (0). ``--check``: 0 when current, else 1 and a diff."""
    text = path.read_text()
    return write_or_check(path, text, render(text, collectors), write)
