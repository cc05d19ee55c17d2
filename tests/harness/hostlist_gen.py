"""Random Slurm hostlist expressions for the expander's check against ``scontrol show hostnames``:
zero padding, several ranges and numbers in one bracket, several bracket groups (text between
them), text after the last bracket (invalid in Slurm 22.05, so both must refuse it), commas,
empty prefixes, plus a few broken ranges (high < low, empty)."""

from __future__ import annotations

import random

LETTERS = "abcgnpru-_."


def _number(rng: random.Random) -> str:
    n = rng.choice((rng.randint(0, 12), rng.randint(0, 150), rng.randint(90, 1100)))
    pad = rng.choice((0, 0, 2, 3, 4))
    return str(n).zfill(pad)


def _bracket(rng: random.Random, broken: bool) -> str:
    items = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        lo = _number(rng)
        if rng.random() < 0.6:
            hi = int(lo) + rng.randint(0, 6)
            hi_text = str(hi).zfill(rng.choice((0, 0, len(lo), 3)))
            items.append(f"{lo}-{hi_text}")
        else:
            items.append(lo)
    if broken:
        items.append(rng.choice(("5-2", "")))  # both refused by Slurm (other junk it reads its own way)
    return "[" + ",".join(items) + "]"


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 5))).lstrip("-") or "n"


def host_expression(rng: random.Random) -> str:
    prefix = rng.choice(("", _word(rng), _word(rng) + str(rng.randint(0, 9)), "gpu-node-"))
    if rng.random() < 0.15:
        return prefix or "h"
    groups = rng.choice((1, 1, 1, 2, 2, 3))
    broken = rng.random() < 0.04
    out = prefix + _bracket(rng, broken)
    for _ in range(groups - 1):
        out += rng.choice(("", _word(rng))) + _bracket(rng, False)
    if rng.random() < 0.08:
        out += _word(rng)  # a suffix after the last bracket
    return out


def expression(rng: random.Random) -> str:
    parts = [host_expression(rng) for _ in range(rng.choice((1, 1, 2, 3)))]
    # Slurm drops an invalid element of a longer list and keeps the rest (squeue never prints one);
    # the expander refuses the whole list: compare invalid elements alone
    invalid = [p for p in parts if _invalid(p)]
    return invalid[0] if invalid else ",".join(parts)


def _invalid(part: str) -> bool:
    return "5-2" in part or "[]" in part or ",]" in part or not (part.endswith("]") or "[" not in part)
