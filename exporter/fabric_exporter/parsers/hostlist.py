"""Slurm hostlist expressions (``gpu-[001-004,007],login1``) expanded into node names.

Our own expander (python-hostlist is GPL-2.0+), written to give exactly what Slurm's
``scontrol show hostnames`` gives (checked against it on generated expressions,
tests/unit/parsers/test_hostlist_vs_scontrol.py):

* top-level commas separate host expressions; order and duplicates are kept;
* ``[...]`` holds comma-separated numbers and ``lo-hi`` ranges; the numbers are zero-padded to
  the width of ``lo`` as written (``[01-3]`` -> 01 02 03, ``[1-03]`` -> 1 2 3, ``[8-10]`` -> 8 9 10);
* several bracket groups in one name (``r[1-2]n[01-02]``) expand in Slurm's own order: the last
  group varies fastest, then the first, the second, ... (``a[1-2]b[3-4]c[5-6]`` gives a1b3c5
  a1b3c6 a2b3c5 a2b3c6 a1b4c5 ...);
* text after the last bracket group (``n[1-2]-ib``) is an invalid hostlist for Slurm 22.05 (it
  never prints one: names with a suffix are listed uncompressed), and so it is here;
  ``lo > hi``, an empty range, a non-digit in a range or an unbalanced bracket are errors too.

Pure: text in, names out; raises HostlistError (a ParseError) only.
"""

from __future__ import annotations

import itertools

from ..errors import ParseError

#: most names one expression may expand to: a corrupt ``[0-999999999]`` must not eat the memory
MAX_HOSTS = 1 << 20


class HostlistError(ParseError):
    """An expression Slurm would call an invalid hostlist."""


def _split_top(text: str) -> list[str]:
    """``text`` split on commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"nested '[' in hostlist {text!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in hostlist {text!r}")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise HostlistError(f"unclosed '[' in hostlist {text!r}")
    parts.append(text[start:])
    return parts


def _range_values(body: str, expr: str) -> list[str]:
    """The numbers of one bracket body, formatted with their zero padding."""
    out: list[str] = []
    for item in body.split(","):
        lo, sep, hi = item.partition("-")
        if not lo.isdigit() or not lo.isascii() or (sep and (not hi.isdigit() or not hi.isascii())):
            raise HostlistError(f"invalid range {item!r} in hostlist {expr!r}")
        if len(lo) > 18 or len(hi) > 18:  # no node number is that long (and int() of 4300+ digits raises)
            raise HostlistError(f"number too long in range {item[:40]!r} of hostlist {expr[:60]!r}")
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a:
            raise HostlistError(f"invalid range {item!r} (high < low) in hostlist {expr!r}")
        if len(out) + (b - a + 1) > MAX_HOSTS:
            raise HostlistError(f"hostlist {expr[:60]!r} expands to more than {MAX_HOSTS} names")
        width = len(lo)
        out.extend(str(n).zfill(width) for n in range(a, b + 1))
    return out


def _expand_one(expr: str) -> list[str]:
    """One comma-free host expression: a name, or text and bracket groups ending in ']'."""
    if "[" not in expr:
        if "]" in expr:
            raise HostlistError(f"unbalanced ']' in hostlist {expr!r}")
        return [expr]
    texts: list[str] = []  # the text before each group
    groups: list[list[str]] = []
    pos = 0
    while True:
        open_at = expr.find("[", pos)
        if open_at < 0:
            break
        close_at = expr.find("]", open_at)
        texts.append(expr[pos:open_at])
        groups.append(_range_values(expr[open_at + 1:close_at], expr))
        pos = close_at + 1
    if pos != len(expr):
        raise HostlistError(f"text after the last ']' in hostlist {expr!r}")
    total = 1
    for g in groups:
        total *= len(g)
    if total > MAX_HOSTS:
        raise HostlistError(f"hostlist {expr[:60]!r} expands to more than {MAX_HOSTS} names")
    if len(groups) == 1:
        return [texts[0] + v for v in groups[0]]
    # Slurm's order: the groups before the last vary from the second-to-last (slowest) down to the
    # first, and the last group is the fastest.
    n = len(groups)
    order = list(range(n - 2, -1, -1)) + [n - 1]
    names = []
    for combo in itertools.product(*(groups[i] for i in order)):
        values = [""] * n
        for i, v in zip(order, combo):
            values[i] = v
        names.append("".join(t + v for t, v in zip(texts, values)))
    return names


def expand(text: str, max_hosts: int = MAX_HOSTS) -> list[str]:
    """Every node name of a Slurm hostlist expression, in Slurm's order (duplicates kept).
    An empty expression (or "(null)", squeue's word for none) gives []."""
    text = text.strip()
    if not text or text == "(null)":
        return []
    names: list[str] = []
    for part in _split_top(text):
        if not part:
            raise HostlistError(f"empty name in hostlist {text[:60]!r}")
        names.extend(_expand_one(part))
        if len(names) > max_hosts:
            raise HostlistError(f"hostlist {text[:60]!r} expands to more than {max_hosts} names")
    return names
