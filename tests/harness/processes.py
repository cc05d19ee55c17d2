"""This machine's processes, as tests look for what a run left behind."""

from __future__ import annotations

import os


def processes_mentioning(needle: str) -> list[str]:
    """'PID: command line' of every process (but this one) whose command line contains ``needle``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmdline:
            found.append(f"{pid}: {cmdline}")
    return found
