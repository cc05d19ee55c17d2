"""What a target's render cache (``TargetRenderer.lines``, a ``LineCache``) holds, in bytes, for the
benchmarks: counted over its fields whatever they are, so a checkout with another layout of the
cache (e.g. one that kept a prefix string per sample) is measured the same way."""

from __future__ import annotations

import sys

# Not counted: the samples (the collector's; the cache only keeps them alive a poll longer) and the
# extra label (one per target).
_NOT_COUNTED = ("samples", "extra_label")


def line_cache_bytes(lines) -> dict[str, int]:
    """{"chunks": the family bytes and their dict, "layout": every other field (per-sample
    positions, families, any per-sample text)}; shared objects (family names, the catalog's)
    are counted once. Zeros for None (a target without kept samples holds no cache)."""
    held = {"chunks": 0, "layout": 0}
    if lines is None:
        return held
    seen: set[int] = set()
    for field in type(lines).__slots__:
        if field not in _NOT_COUNTED:
            held["chunks" if field == "chunks" else "layout"] += _deep_size(getattr(lines, field), seen)
    return held


def _deep_size(value, seen: set[int]) -> int:
    if id(value) in seen or value is None:
        return 0
    seen.add(id(value))
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        size += sum(_deep_size(k, seen) + _deep_size(v, seen) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        size += sum(_deep_size(item, seen) for item in value)
    return size
