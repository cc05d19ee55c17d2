"""Files generated from the code (the SSH guard, docs/configuration.md's collector row): write them,
or check that the committed copy is current."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable
from pathlib import Path


def write_or_check(path: Path, text: str, new: str, write: bool) -> int:
    """``write``: put ``new`` in place of ``text`` (0). Else 0 when they are equal, or 1 and a diff."""
    if write:
        if new != text:
            path.write_text(new)
        return 0
    if new != text:
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), str(path),
                                                   f"{path} (generated)"))
        return 1
    return 0


def replace_block(text: str, begin: str, end: str, block: str) -> str:
    """``text`` with its one ``begin`` ... ``end`` block (markers included) replaced by ``block``."""
    if text.count(begin) != 1 or text.count(end) != 1:
        raise ValueError(f"expected one {begin!r} ... {end!r} block")
    return text[:text.index(begin)] + block + text[text.index(end) + len(end):]


def main(argv: list[str] | None, prog: str, description: str, what: str, render: Callable[[str], str]) -> int:
    """The ``--write FILE | --check FILE`` command line of a generated ``what``: ``render`` makes the
    new text from the file's current one."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar=what, type=Path, help="regenerate it in place")
    mode.add_argument("--check", metavar=what, type=Path, help="exit 1 (with a diff) if it is not current")
    args = ap.parse_args(argv)
    path = args.write or args.check
    text = path.read_text()
    return write_or_check(path, text, render(text), bool(args.write))
