"""docs/configuration.md's ``collector`` row, generated from the registry: every built-in collector
with the transports it supports, linked to its page. A new collector regenerates the row (a test
compares the committed doc with it) instead of editing the doc by hand:

    PYTHONPATH=exporter python -m fabric_exporter.config.docs --write docs/configuration.md
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Mapping
from pathlib import Path

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


def main(argv: list[str] | None = None) -> int:
    from ..ssh_guard import builtin_collectors

    ap = argparse.ArgumentParser(prog="python -m fabric_exporter.config.docs", description=__doc__.split("\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="MD", type=Path, help="regenerate the row in place")
    mode.add_argument("--check", metavar="MD", type=Path, help="exit 1 (with a diff) if the row is not current")
    args = ap.parse_args(argv)
    path = args.write or args.check
    text = path.read_text()
    new = render(text, builtin_collectors())
    if args.write:
        if new != text:
            path.write_text(new)
        return 0
    if new != text:
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), str(path),
                                                   f"{path} (generated)"))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
