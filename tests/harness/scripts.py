"""Small executables tests put on a PATH (fake tools, wrappers)."""

from __future__ import annotations

import stat
from pathlib import Path


def write_sh(path: Path, body: str) -> None:
    """``path`` as an executable ``/bin/sh`` script running ``body`` (readable and runnable by all, as
    an sshd's user must)."""
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
