"""Run a command under the system-call policy of deploy/systemd/fabric-exporter.service, without
systemd: the same seccomp allow-list (SystemCallFilter=@system-service minus ~@privileged @resources,
denied calls failing with EPERM as SystemCallErrorNumber=EPERM says), socket() limited to the
RestrictAddressFamilies= families (others fail with EAFNOSUPPORT, as systemd does) and the same
MemoryDenyWriteExecute policy (PR_SET_MDWE, which systemd itself uses on Linux >= 6.3).

The syscall groups are read from the machine's own `systemd-analyze syscall-filter`, so the filter
is the one this systemd would install. Needs libseccomp.so.2 (a dependency of systemd).
"""

from __future__ import annotations

import ctypes
import json
import re
import socket
import subprocess
import sys
from pathlib import Path

LAUNCHER = Path(__file__).with_name("deploy_sandbox_exec.py")


def syscall_groups(systemd_analyze: str) -> dict[str, list[str]]:
    text = subprocess.run([systemd_analyze, "syscall-filter"], capture_output=True, text=True, check=True,
                          timeout=60).stdout
    groups: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), [])
        elif current is not None and line.startswith("    ") and not line.strip().startswith("#"):
            current.append(line.strip())
        elif not line.strip():
            current = None
    return groups


def expand(name: str, groups: dict[str, list[str]]) -> set[str]:
    if not name.startswith("@"):
        return {name}
    out: set[str] = set()
    for entry in groups[name]:
        out |= expand(entry, groups)
    return out


def unit_allow_list(unit_text: str, systemd_analyze: str) -> set[str]:
    """The system calls the unit's SystemCallFilter= lines leave allowed (allow list minus deny list)."""
    groups = syscall_groups(systemd_analyze)
    allowed: set[str] = set()
    denied: set[str] = set()
    for value in re.findall(r"^SystemCallFilter=(.*)$", unit_text, flags=re.M):
        deny = value.startswith("~")
        names = value.lstrip("~").split()
        for name in names:
            (denied if deny else allowed).update(expand(name, groups))
    assert allowed, "the unit has no allow-list SystemCallFilter="
    return allowed - denied


def unit_address_families(unit_text: str) -> list[int]:
    """RestrictAddressFamilies= (an allow list) as numbers."""
    (value,) = re.findall(r"^RestrictAddressFamilies=(.*)$", unit_text, flags=re.M)
    assert not value.startswith("~")
    return sorted(int(getattr(socket, name)) for name in value.split())


def sandboxed(argv: list[str], allow: set[str], workdir: Path, families: list[int]) -> list[str]:
    """argv wrapped so it runs under the filter (the launcher applies it, then execs argv)."""
    allow_file = workdir / "syscall-allow.json"
    allow_file.write_text(json.dumps({"syscalls": sorted(allow), "socket_families": families}))
    return [sys.executable, str(LAUNCHER), str(allow_file), "--", *argv]


def supported() -> str | None:
    """Why the sandbox cannot run here, or None."""
    try:
        ctypes.CDLL("libseccomp.so.2")
    except OSError:
        return "libseccomp.so.2 is missing"
    if ctypes.CDLL(None).prctl(66, 0, 0, 0, 0) < 0:  # PR_GET_MDWE
        return "the kernel has no PR_SET_MDWE (Linux < 6.3)"
    return None
