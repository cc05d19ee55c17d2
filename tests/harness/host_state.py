"""What a run leaves on the host outside its own directories: a listing of system directories with a
sha256 of every file's content, taken before and after, and the paths that differ.

Used by the isolation tests (tests/e2e/lab/test_isolation.py, tests/unit/lab/test_ibsim_isolation.py): the
lab, the tests and the benchmarks may write only inside their work directory and the temp dir.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

# Watched by default: where system-wide default state lives (opensm's cache and logs, net-snmp's
# persistent dir, sshd's privilege separation dir, Prometheus packages' data dirs, config under /etc).
SYSTEM_ROOTS = ("/etc", "/var/cache", "/var/log", "/var/lib", "/run")

# Left out, each for a stated reason: the machine's own package manager and services change these
# while a test runs (scripts/setup-deps may be installing packages in parallel), and none of them is
# anything the project starts.
MACHINE_ACTIVITY = {
    "/var/cache/apt": "apt's package cache (apt-get in parallel)",
    "/var/lib/apt": "apt's lists and state",
    "/var/log/apt": "apt's logs",
    "/var/lib/dpkg": "dpkg's database (package installs in parallel)",
    "/var/log/dpkg.log": "dpkg's log",
    "/var/log/alternatives.log": "update-alternatives, run by package installs",
    "/var/cache/debconf": "debconf's answers, written by package installs",
    "/var/cache/ldconfig": "ldconfig's aux cache, rebuilt by package installs",
    "/etc/ld.so.cache": "ldconfig's cache, rebuilt by package installs",
    "/var/cache/man": "man-db's index, rebuilt by package installs",
    "/var/lib/ucf": "ucf's config-file registry, written by package installs",
    "/var/log/journal": "the systemd journal (every service's logging)",
    "/var/lib/systemd": "systemd's timer stamps and random seed",
    "/run/systemd": "systemd's runtime state",
    "/run/user": "per-login runtime dirs of the machine's sessions",
    # libuuid's clock for time-based UUIDs (snmpsim makes some): one file every uuid1 caller on the
    # host shares by design, written only where uuid-runtime created the directory
    "/var/lib/libuuid": "libuuid's host-wide clock for time-based UUIDs",
}


def _entry(path: str, st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "link:" + os.readlink(path)
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if not stat.S_ISREG(st.st_mode):
        return "special"  # sockets, fifos, devices: existence only
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    except OSError as e:
        return f"unreadable:{e.errno}"
    # mtime and inode too: a file rewritten with the same bytes (opensm renames a fresh guid2lid over
    # the old one on every sweep) was still written
    return f"sha256:{digest.hexdigest()} mtime_ns:{st.st_mtime_ns} inode:{st.st_ino}"


def snapshot(roots: Iterable[str] = SYSTEM_ROOTS, exclude: Iterable[str] = MACHINE_ACTIVITY) -> dict[str, str]:
    """{path: "dir" | "link:<target>" | "sha256:<hex> mtime_ns:<n> inode:<n>" | "special"} for every
    entry under ``roots`` (not following links, not crossing into an excluded path)."""
    excluded = set(exclude)
    out: dict[str, str] = {}
    for root in roots:
        if root in excluded or not os.path.lexists(root):
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in excluded]
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                if path in excluded:
                    continue
                try:
                    out[path] = _entry(path, os.lstat(path))
                except FileNotFoundError:  # gone between listing and looking
                    continue
    return out


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Every difference, one line each: ``created <path>``, ``removed <path>``, ``changed <path>``."""
    out = [f"created {p}" for p in after.keys() - before.keys()]
    out += [f"removed {p}" for p in before.keys() - after.keys()]
    out += [f"changed {p}" for p in before.keys() & after.keys() if before[p] != after[p]]
    return sorted(out, key=lambda line: line.split(" ", 1)[1])


def opensm_system_paths() -> list[str]:
    """What a host's real subnet manager owns and a simulated fabric must never create or touch."""
    found = [str(p) for p in Path("/var/log").glob("opensm*")]
    return sorted(found + [p for p in ("/var/cache/opensm",) if os.path.lexists(p)])
