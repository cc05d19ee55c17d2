"""Files generated from the code (the SSH guard, docs/configuration.md's collector row): write them,
or check that the committed copy is current."""

from __future__ import annotations

import difflib
import sys
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
