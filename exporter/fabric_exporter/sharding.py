"""Split targets across replicas: ``--shard INDEX/COUNT``.

Rendezvous (highest-random-weight) hashing: each target goes to the shard with the highest hash of
(target, shard). Every target has exactly one owner, the split is deterministic across processes
and machines (blake2b, not Python's salted ``hash``), and when COUNT grows by one only the targets
the new shard wins move — about 1/(COUNT+1) of them — so a resize disturbs few series.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"shard {self.index}/{self.count}: need 0 <= INDEX < COUNT")

    def owns(self, key: str) -> bool:
        return owner(key, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def _weight(key: str, shard: int) -> int:
    return int.from_bytes(hashlib.blake2b(f"{key}\0{shard}".encode(), digest_size=8).digest(), "big")


def owner(key: str, count: int) -> int:
    """The shard (0..count-1) that polls ``key``."""
    return max(range(count), key=lambda i: _weight(key, i))


def parse_shard(text: str) -> Shard:
    """'2/5' -> Shard(2, 5). Accepts a pod name's ordinal suffix too: 'fabric-exporter-2/5'."""
    m = re.fullmatch(r"(?:[a-z0-9][a-z0-9.-]*-)?(\d+)/(\d+)", text.strip())
    if not m:
        raise ValueError(f"invalid shard {text!r}: expected INDEX/COUNT, e.g. 0/3")
    return Shard(int(m.group(1)), int(m.group(2)))


def target_key(group: str, host: str) -> str:
    return f"{group}/{host}"
