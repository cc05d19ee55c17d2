"""Batched command output: one shell run printing several commands' outputs between marker lines.

    @@<nonce> begin <name>
    <the command's stdout>
    @@<nonce> end <name> <exit status>

The markers carry a random per-run nonce so a command's own output cannot fake one. The end marker
starts on a fresh line (the script prints "\\n" before it), so a command's output need not end with
a newline. Pure: text in, sections out; a marker that does not pair up is a ParseError -- a section
cut short is never read as a short table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ParseError


@dataclass
class Section:
    name: str
    exit_status: int
    text: str


def split_sections(stdout: str, nonce: str) -> list[Section]:
    """Cut a batched run's stdout into sections. Raises ParseError if the markers do not pair up."""
    begin = f"@@{nonce} begin "
    end = f"@@{nonce} end "
    sections: list[Section] = []
    current: str | None = None
    body: list[str] = []
    for line in stdout.split("\n"):
        if line.startswith(begin):
            if current is not None:
                raise ParseError(f"batched output: section {current} has no end marker")
            current, body = line[len(begin):], []
        elif line.startswith(end):
            name, _, status = line[len(end):].rpartition(" ")
            if current is None or name != current or not re.fullmatch(r"-?[0-9]{1,3}", status):
                raise ParseError(f"batched output: unexpected end marker {line[:80]!r}")
            # The lines between the markers, joined, are exactly the command's output: the "\n"
            # printed before the end marker is the one the join does not restore.
            sections.append(Section(current, int(status), "\n".join(body)))
            current = None
        elif current is not None:
            body.append(line)
    if current is not None:
        raise ParseError(f"batched output: section {current} was cut off (no end marker)")
    return sections


__all__ = ["Section", "split_sections"]
