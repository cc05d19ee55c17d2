"""Recorded NIC dumps with only a share of their counters moving (bench_cluster.py and
bench_roce_nic.py --moving): a real host's error counters and idle priorities stay flat, the lab
model moves every counter on every poll."""

from __future__ import annotations

import re
import zlib

_COUNTER_LINE = re.compile(r"^(\s*[^:@\n][^:\n]*:\s*)(\d+)$")


def hold_still(host: str, dump: str, first: dict[tuple[str, str], str], moving: float) -> str:
    """``dump`` with only ``moving`` of its counters moved: every other counter (a stable hash of
    host, section and name) keeps its value in ``first`` (the host's first dump, filled from it)."""
    section, out = "", []
    for line in dump.split("\n"):
        if line.startswith("@@"):
            section = line
        else:
            m = _COUNTER_LINE.match(line)
            if m:
                key = (section, m.group(1).strip())
                was = first.setdefault(key, m.group(2))
                if zlib.crc32(f"{host} {key}".encode()) % 10_000 >= moving * 10_000:
                    line = m.group(1) + was
        out.append(line)
    return "\n".join(out)
