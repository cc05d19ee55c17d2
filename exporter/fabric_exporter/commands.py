"""Commands as data: what a collector may run over SSH, declared once, next to the code that builds it.

A collector (or a switch dialect) lists its commands in ``ssh_commands``; the SSH guard's allow-list
(deploy/ssh/fabric-exporter-ssh-guard) is generated from those lists by ``fabric_exporter.ssh_guard``,
and tests/deploy/test_ssh_guard_generated.py drives every collector's command builders and checks
the generated guard allows what they emit and nothing outside the declarations.

Four shapes cover every command the collectors send:

* ``Getopt`` -- a tool whose options are parsed by getopt(_long): exact option spellings only (no
  abbreviation, no clusters), each option either a flag or taking one value of a kind;
* ``Shape`` -- a fixed argument list (``squeue --json``, ``rm -f -- CACHE``) where some words are
  values of a kind (``Value``), optionally after leading flags;
* ``Script`` -- ``INTERPRETER -c SCRIPT MAGIC ARGS...`` where SCRIPT is pinned by its SHA-256 (the
  digest is computed from the script text itself when the guard is generated);
* ``ShellSection`` / ``ShellLoop`` -- one section of switch_cli's batched ``sh -c`` script (a show
  command between nonce markers) or one per-interface loop, given as the exact text the collector
  builds with the nonce left as ``NONCE``.

Value kinds are names the guard knows how to check (``KINDS``); a tuple of words is a closed choice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Union

#: the kinds of value an option or operand takes; the guard checks each (its KIND_CHECKS)
KINDS = {
    "name": "a plain name (device, interface, CA): letters, digits, _ . : -, not starting with -",
    "number": "decimal or 0x hex",
    "address": "an IPv4/IPv6 address or host name",
    "device_port": "DEV or DEV/PORT",
    "port_list": "a number or a comma-separated list of numbers",
    "ib_cache_file": "the infiniband collector's discovery cache (default name, or --ib-cache-file)",
    "ibdiagnet_dir": "the directory given with --ibdiagnet-dir",
    "ibdiagnet_file": "an ibdiagnet output file (FILES['ibdiagnet_file']) at most two levels below --ibdiagnet-dir",
    "rdma_counter_file": "a file matching FILES['rdma_counter_file'] (normalised absolute path)",
}

#: where a value is one of fixed words: ``("RC", "UC", "UD")``
Kind = Union[str, tuple[str, ...]]

#: the placeholder for the per-poll nonce in a ``ShellSection``/``ShellLoop`` template
NONCE = "NONCE0123456789a"  # 16 characters, like secrets.token_hex(8)


def _check_kind(kind: Kind) -> Kind:
    if isinstance(kind, str) and kind not in KINDS:
        raise ValueError(f"unknown value kind {kind!r} (known: {', '.join(KINDS)})")
    if isinstance(kind, tuple) and not (kind and all(isinstance(w, str) for w in kind)):
        raise ValueError(f"a choice must be a non-empty tuple of words: {kind!r}")
    return kind


@dataclass(frozen=True)
class Value:
    """A word of a ``Shape`` that is a value of ``kind`` rather than a fixed word."""
    kind: Kind

    def __post_init__(self) -> None:
        _check_kind(self.kind)


@dataclass(frozen=True)
class Getopt:
    """``tool [OPTIONS] [OPERANDS]`` with exactly these option spellings."""
    tool: str
    flags: tuple[str, ...] = ()
    #: option -> kind of the value in the next word
    values: Mapping[str, Kind] = field(default_factory=dict)
    #: flags that change state on the target (counter reset): only with the guard's --allow-counter-reset
    reset_flags: tuple[str, ...] = ()
    #: kind of the operands (None: no operand), and how many at most
    operand: Kind | None = None
    max_operands: int = 0
    #: options every command must give
    required: tuple[str, ...] = ()
    #: a flag that must come with another ("--out_json" only with "--out_json_file=/dev/stdout")
    together: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for k in self.values.values():
            _check_kind(k)
        if self.operand is not None:
            _check_kind(self.operand)


@dataclass(frozen=True)
class Shape:
    """``tool [LEADING FLAGS, each at most once] WORDS``: each word fixed or a ``Value``."""
    tool: str
    words: tuple[str | Value, ...] = ()
    leading_flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Script:
    """``interpreter -c SCRIPT magic ARGS...``: SCRIPT pinned by its SHA-256. ``text`` returns the
    script (read when the guard is generated); the arguments after ``magic`` are checked by the
    guard's rule for this magic word."""
    interpreter: str
    magic: str
    text: Callable[[], str]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text().encode()).hexdigest()


@dataclass(frozen=True)
class ShellSection:
    """One section of a batched ``sh -c`` script (switch_cli's SONiC dialect): ``name`` and the exact
    text the collector builds for it, with the nonce as ``NONCE``; ``json_text`` the same with
    ``--json`` when the collector may ask for JSON."""
    name: str
    argv: tuple[str, ...]
    text: str
    json_text: str | None = None


@dataclass(frozen=True)
class ShellLoop:
    """One per-interface loop of a ``sh -c`` script (switch_cli's Cumulus dialect): its exact text with
    the nonce as ``NONCE``; ``order`` is its place when several loops run in one script."""
    name: str
    text: str
    order: int


@dataclass(frozen=True)
class Files:
    """The files a value of ``kind`` may name: shell-style globs of absolute paths
    (``rdma_counter_file``) or base names (``ibdiagnet_file``)."""
    kind: str
    patterns: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.kind not in ("rdma_counter_file", "ibdiagnet_file"):
            raise ValueError(f"no file set for kind {self.kind!r}")


Command = Union[Getopt, Shape, Script, ShellSection, ShellLoop, Files]

__all__ = ["Command", "Files", "Getopt", "KINDS", "Kind", "NONCE", "Script", "Shape", "ShellLoop", "ShellSection", "Value"]
