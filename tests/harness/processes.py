"""This machine's processes, as tests look for what a run left behind, and stopping the ones they started."""

from __future__ import annotations

import os
import signal
import subprocess


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


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM, 10 s to exit, then SIGKILL (and 5 s to be reaped); nothing if it already exited."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
