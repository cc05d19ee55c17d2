"""RDMA device facts and hardware counters, as a Linux host shows them.

- ``parse_hw_counters``: a dump of ``/sys/class/infiniband/<dev>/ports/<port>/hw_counters/*`` as
  ``grep -H . *`` prints it (``name:value`` per file). Settings (``lifespan``) are not counters
  and are dropped.
- ``parse_rdma_statistic``: ``rdma statistic show`` — text (``link mlx5_0/1 name value name value
  ...``, one line per port) or ``rdma -j statistic show`` JSON (a list of objects with ``ifname``,
  ``port`` and one key per counter).
- ``parse_rdma_link``: ``rdma link show`` text (``link mlx5_0/1 state ACTIVE physical_state
  LINK_UP netdev ens1f0np0``; older iproute2 prints ``0/1: mlx5_0/1: state ACTIVE physical_state
  LINK_UP`` with an index prefix and, for ports without one, no netdev) or ``rdma -j link show`` JSON.
- ``parse_host_dump``: the framed output of the roce_nic collector's one remote command (every
  device, port, hw counter table and ``ethtool -S`` table of a host in one SSH round trip; with
  ``@@dropped`` lines counting what the host left out as unmapped).

All parsers are pure and raise only ParseError. A value that is not a plain unsigned decimal is an
error, never a guess. A line of unknown shape (``rdma -d``'s ``caps: <...>`` lines, a note) is
skipped and counted (``skipped=``, see parsers/skipped.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from .guard import load_json, parser_entry
from .ethtool import U64_MAX, parse_u64
from .skipped import SkippedLine, note

#: what this parser's skipped lines are counted under (collectors' parse_sources: skipped.sources_of)
SOURCES = ("hw_counters", "rdma_link", "rdma_statistic")

# hw_counters files that hold a setting, not an event count.
HW_COUNTER_SETTINGS = frozenset({"lifespan"})

_COUNTER_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_DEVICE = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_NETDEV = re.compile(r"[!-~]{1,64}")  # Linux interface names: no whitespace, no '/'
_LINK = re.compile(r"(?P<dev>[A-Za-z0-9_.\-]{1,64})/(?P<port>[0-9]{1,5})")

PortKey = tuple[str, int]  # (device, port)
# One hw_counters line as grep -H prints it, for the one-pass path (values under 20 digits fit in a u64).
_HW_LINE = re.compile(r"^([A-Za-z0-9_.\-]{1,128}):([0-9]{1,20})$", re.M)


# ---------------------------------------------------------------------------------------------
# hw_counters


@parser_entry
def parse_hw_counters(text: str, skipped: list[SkippedLine] | None = None) -> dict[str, int]:
    """``name:value`` lines (``grep -H . *`` in a hw_counters directory) -> counters."""
    if not isinstance(text, str):
        raise ParseError("hw_counters: expected text")
    fast = _HW_LINE.findall(text)
    if len(fast) == text.count("\n") + (not text.endswith("\n")) - (not text) and fast:
        # Every line is a plain name:value (the common case, in one pass): the same checks below
        # would pass; a name listed twice or a value past 64 bits still goes the line-by-line way.
        counters = dict(fast)
        if len(counters) == len(fast) and max(map(len, counters.values())) < 20:
            for name in HW_COUNTER_SETTINGS.intersection(counters):
                del counters[name]
            return dict(zip(counters, map(int, counters.values())))
    counters = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        if not sep or not _COUNTER_NAME.fullmatch(name):
            note(skipped, "hw_counters", n, line)
            continue
        if name in counters:
            raise ParseError(f"hw_counters line {n}: {name} listed twice")
        number = parse_u64(value.strip(), f"hw_counters {name}")
        if name not in HW_COUNTER_SETTINGS:
            counters[name] = number
    return counters


# ---------------------------------------------------------------------------------------------
# rdma statistic / rdma link


def _link(token: str, where: str) -> PortKey:
    m = _LINK.fullmatch(token)
    if not m:
        raise ParseError(f"{where}: expected DEV/PORT, got {token[:60]!r}")
    return m.group("dev"), int(m.group("port"))


_OLD_INDEX = re.compile(r"[0-9]{1,5}/[0-9]{1,5}:")  # older iproute2: "0/1: mlx5_0/1: state ..."


def _text_lines(text: str, what: str, source: str, skipped: list[SkippedLine] | None):
    """Yield (line number, port key, words after it) for each ``link dev/port ...`` line (or the
    older ``IDX/PORT: dev/port: ...`` form); other lines are skipped and counted."""
    for n, line in enumerate(text.splitlines(), 1):
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0] == "link" and len(tokens) >= 2:
            key = _link(tokens[1], f"{what} line {n}")
        elif _OLD_INDEX.fullmatch(tokens[0]) and len(tokens) >= 2 and tokens[1].endswith(":"):
            key = _link(tokens[1][:-1], f"{what} line {n}")
        else:
            note(skipped, source, n, line)
            continue
        yield n, key, tokens[2:]


def _json_rows(text: str, what: str) -> list[dict]:
    data = load_json(text, what)
    if not isinstance(data, list) or not all(isinstance(row, dict) for row in data):
        raise ParseError(f"{what}: expected a JSON list of objects")
    return data


def _json_key(row: dict, what: str) -> PortKey:
    dev, port = row.get("ifname"), row.get("port")
    if not isinstance(dev, str) or not _DEVICE.fullmatch(dev):
        raise ParseError(f"{what}: object without a valid 'ifname'")
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise ParseError(f"{what}: {dev}: object without a valid 'port'")
    return dev, port


def _is_json(text: str) -> bool:
    return text.lstrip().startswith(("[", "{"))


_STAT_IDENTITY = frozenset({"ifindex", "ifname", "port"})


@parser_entry
def parse_rdma_statistic(text: str, skipped: list[SkippedLine] | None = None) -> dict[PortKey, dict[str, int]]:
    """``rdma statistic show`` (text) or ``rdma -j statistic show`` (JSON) -> counters per port."""
    if not isinstance(text, str):
        raise ParseError("rdma statistic: expected text")
    found: dict[PortKey, dict[str, int]] = {}
    if _is_json(text):
        for row in _json_rows(text, "rdma statistic"):
            key = _json_key(row, "rdma statistic")
            if key in found:
                raise ParseError(f"rdma statistic: {key[0]}/{key[1]} listed twice")
            counters = found[key] = {}
            for name, value in row.items():
                if name in _STAT_IDENTITY or not _COUNTER_NAME.fullmatch(name):
                    continue
                # Non-numeric members (nested lists/objects of newer iproute2) are not counters.
                if isinstance(value, bool) or not isinstance(value, int):
                    continue
                if not 0 <= value <= U64_MAX:
                    raise ParseError(f"rdma statistic: {key[0]}/{key[1]} {name}: {value} is not a u64")
                if name not in HW_COUNTER_SETTINGS:
                    counters[name] = value
        return found
    for n, key, words in _text_lines(text, "rdma statistic", "rdma_statistic", skipped):
        if len(words) % 2:  # name/value pairs are the table: an odd count is a layout we do not know
            note(skipped, "rdma_statistic", n, " ".join(["link", f"{key[0]}/{key[1]}", *words]))
            continue
        if key in found:
            raise ParseError(f"rdma statistic line {n}: {key[0]}/{key[1]} listed twice")
        counters = found[key] = {}
        for name, value in zip(words[0::2], words[1::2]):
            if not _COUNTER_NAME.fullmatch(name):
                raise ParseError(f"rdma statistic line {n}: bad counter name {name[:40]!r}")
            number = parse_u64(value, f"rdma statistic line {n} ({name})")
            if name not in HW_COUNTER_SETTINGS:
                counters[name] = number
    return found


@dataclass(frozen=True)
class RdmaLink:
    device: str
    port: int
    state: str | None = None  # ACTIVE, DOWN, INIT, ...
    physical_state: str | None = None  # LINK_UP, DISABLED, ...
    netdev: str | None = None
    lid: int | None = None  # only InfiniBand ports have a LID (iproute2 prints none for RoCE)


def _lid(value, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).isdigit() \
            or not str(value).isascii() or int(value) > 0xFFFF:
        raise ParseError(f"{where}: bad lid {str(value)[:10]!r}")
    return int(value)


@parser_entry
def parse_rdma_link(text: str, skipped: list[SkippedLine] | None = None) -> list[RdmaLink]:
    """``rdma link show`` (text) or ``rdma -j link show`` (JSON) -> one record per port."""
    if not isinstance(text, str):
        raise ParseError("rdma link: expected text")
    links: list[RdmaLink] = []
    if _is_json(text):
        for row in _json_rows(text, "rdma link"):
            dev, port = _json_key(row, "rdma link")
            fields = {}
            for name in ("state", "physical_state", "netdev"):
                value = row.get(name)
                if value is not None and (not isinstance(value, str) or not _NETDEV.fullmatch(value)):
                    raise ParseError(f"rdma link: {dev}/{port}: bad {name}")
                fields[name] = value
            links.append(RdmaLink(dev, port, **fields, lid=_lid(row.get("lid"), f"rdma link: {dev}/{port}")))
    else:
        for n, (dev, port), words in _text_lines(text, "rdma link", "rdma_link", skipped):
            # Read the words we know by name: newer iproute2 adds keys, and flag words without a
            # value, so the line is not strictly name/value pairs.
            values = {w: words[i + 1] for i, w in enumerate(words[:-1])
                      if w in ("state", "physical_state", "netdev", "lid")}
            netdev = values.get("netdev")
            if netdev is not None and not _NETDEV.fullmatch(netdev):
                raise ParseError(f"rdma link line {n}: bad netdev")
            links.append(RdmaLink(dev, port, values.get("state"), values.get("physical_state"), netdev,
                                  _lid(values.get("lid"), f"rdma link line {n}")))
    seen = set()
    for link in links:
        if (link.device, link.port) in seen:
            raise ParseError(f"rdma link: {link.device}/{link.port} listed twice")
        seen.add((link.device, link.port))
    return links


# ---------------------------------------------------------------------------------------------
# The collector's framed host dump

DUMP_MAGIC = "fabric-roce"
DUMP_VERSION = "1"


@dataclass(frozen=True)
class CommandOutput:
    exit_status: int
    text: str


@dataclass(frozen=True)
class DumpPort:
    device: str
    port: int
    netdev: str | None
    link_layer: str | None
    state: str | None  # sysfs "4: ACTIVE"


@dataclass
class HostDump:
    mode: str  # sysfs | rdma
    devices: dict[str, str | None] = field(default_factory=dict)  # device -> PCI driver
    ports: list[DumpPort] = field(default_factory=list)
    hw_counters: dict[PortKey, str] = field(default_factory=dict)  # raw bodies
    ethtool: dict[str, CommandOutput] = field(default_factory=dict)
    rdma_link: CommandOutput | None = None
    rdma_statistic: CommandOutput | None = None
    missing_devices: list[str] = field(default_factory=list)
    # counters the host left out as unmapped (the script's ``mapped`` mode), per section:
    # ("hw_counters", (device, port)) or ("ethtool", netdev) -> how many
    dropped: dict[tuple, int] = field(default_factory=dict)


def _optional(word: str) -> str | None:
    return None if word == "-" else word


_STATUS = re.compile(r"[0-9]{1,3}")


def _status(word: str, where: str) -> int:
    if not _STATUS.fullmatch(word):
        raise ParseError(f"{where}: bad exit status {word[:10]!r}")
    return int(word)


_END = ("end", None, 0)  # the @@end line's "section"
_PORT_NUMBER = re.compile(r"[0-9]{1,5}")
_COUNT = re.compile(r"[0-9]{1,9}")


def _open_section(dump: HostDump, line: str, where: str) -> tuple | None:
    """Apply one ``@@`` line to ``dump``: the section it opens (kind, key, exit status), ``_END``,
    or None for a line that is a fact, not a section (device, missing, port)."""
    words = line[2:].split(" ")
    kind, args = words[0], words[1:]
    if kind == "end" and not args:
        return _END
    if kind == "device" and len(args) == 2 and _DEVICE.fullmatch(args[0]) and _NETDEV.fullmatch(args[1]):
        dump.devices[args[0]] = _optional(args[1])
    elif kind == "missing" and len(args) == 1 and _NETDEV.fullmatch(args[0]):
        dump.missing_devices.append(args[0])
    elif kind == "port" and len(args) >= 5:
        dev, port, netdev, link_layer = args[:4]
        state = " ".join(args[4:])
        if dev not in dump.devices or not _PORT_NUMBER.fullmatch(port) \
                or not _NETDEV.fullmatch(netdev) or not _NETDEV.fullmatch(link_layer):
            raise ParseError(f"{where}: bad port line {line[:80]!r}")
        dump.ports.append(DumpPort(dev, int(port), _optional(netdev), _optional(link_layer),
                                   None if state == "-" else state))
    elif kind == "hw_counters" and len(args) == 2 and args[0] in dump.devices and _PORT_NUMBER.fullmatch(args[1]):
        return ("hw_counters", (args[0], int(args[1])), 0)
    elif kind == "ethtool" and len(args) == 2 and _NETDEV.fullmatch(args[0]):
        return ("ethtool", args[0], _status(args[1], where))
    elif kind in ("rdma_link", "rdma_statistic") and len(args) == 1:
        return (kind, None, _status(args[0], where))
    elif kind == "dropped" and len(args) >= 3 and _COUNT.fullmatch(args[-1]):
        if args[0] == "hw_counters" and len(args) == 4 and args[1] in dump.devices and _PORT_NUMBER.fullmatch(args[2]):
            dump.dropped[("hw_counters", (args[1], int(args[2])))] = int(args[3])
        elif args[0] == "ethtool" and len(args) == 3 and _NETDEV.fullmatch(args[1]):
            dump.dropped[("ethtool", args[1])] = int(args[2])
        else:
            raise ParseError(f"{where}: bad dropped line {line[:80]!r}")
    else:
        raise ParseError(f"{where}: unknown section {line[:60]!r}")
    return None


def _close_section(dump: HostDump, target: tuple, content: str) -> None:
    kind, key, status = target
    if kind == "hw_counters":
        dump.hw_counters[key] = content
    elif kind == "ethtool":
        dump.ethtool[key] = CommandOutput(status, content)
    elif kind == "rdma_link":
        dump.rdma_link = CommandOutput(status, content)
    elif kind == "rdma_statistic":
        dump.rdma_statistic = CommandOutput(status, content)


def _header(first: str) -> HostDump:
    head = first.split()
    if len(head) != 3 or head[0] != f"@@{DUMP_MAGIC}" or head[2] not in ("sysfs", "rdma"):
        raise ParseError(f"roce dump: bad header {first[:60]!r}")
    if head[1] != DUMP_VERSION:
        raise ParseError(f"roce dump: version {head[1][:10]!r}, expected {DUMP_VERSION}")
    return HostDump(mode=head[2])


# Line breaks str.splitlines() knows besides "\n": a dump holding one takes the line-by-line path.
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def _has_other_breaks(text: str) -> bool:
    """``_OTHER_BREAKS.search(text)``; for ASCII text (every real dump) a few ``in`` scans, in C and
    ~10x faster than the regex's character class over a 20 KB dump."""
    if text.isascii():
        return "\r" in text or "\x0b" in text or "\x0c" in text or "\x1c" in text or "\x1d" in text \
            or "\x1e" in text
    return _OTHER_BREAKS.search(text) is not None


@parser_entry
def parse_host_dump(text: str) -> HostDump:
    """Split the collector's remote output into its sections (see collectors/roce_nic/script.py).

    The dump must begin with ``@@fabric-roce 1 MODE`` and end with ``@@end``: output cut short (a
    session killed mid-way) is a ParseError, never a partial table read as complete.

    A well-formed dump is cut at its ``@@`` lines in one pass, each section's body a slice of the
    text; anything else (and any error) goes line by line, which names the line at fault."""
    if not isinstance(text, str):
        raise ParseError("roce dump: expected text")
    if text.startswith("@@") and not _has_other_breaks(text):
        try:
            dump = _sliced_dump(text)
        except ParseError:
            dump = None
        if dump is not None:
            return dump
    return _dump_by_lines(text)


def _sliced_dump(text: str) -> HostDump | None:
    """The one-pass path: None (or ParseError) when the dump is not well formed."""
    markers = _markers(text)
    start, end = next(markers)
    dump = _header(text[start:end])
    target: tuple | None = None
    body_start = end + 1
    for start, end in markers:
        if target is not None:
            _close_section(dump, target, text[body_start:start])
        elif start > body_start:
            return None  # text outside a section
        target = _open_section(dump, text[start:end], "roce dump")
        if target is _END:
            return dump if not text[end:].strip() else None
        body_start = end + 1
    return None  # no @@end


def _markers(text: str):
    """(start, end) of each line that begins with ``@@`` (the text's first line does): ``str.find``
    of newline + ``@@`` skips the section bodies in C (a multi-line ``^@@`` regex tries its ``^``
    at every character, ~2x the whole split's time)."""
    start = 0
    while start >= 0:
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        yield start, end
        start = text.find("\n@@", end)
        if start >= 0:
            start += 1


def _dump_by_lines(text: str) -> HostDump:
    lines = text.splitlines()
    if not lines or not lines[0].startswith("@@"):
        raise ParseError("roce dump: output does not start with the @@fabric-roce header "
                         f"(got {lines[0][:60]!r})" if lines else "roce dump: empty output")
    dump = _header(lines[0])
    body: list[str] = []
    target: tuple | None = None  # where the current section's body goes
    ended = False
    for n, line in enumerate(lines[1:], 2):
        if ended:
            if line.strip():
                raise ParseError(f"roce dump line {n}: text after @@end")
            continue
        if not line.startswith("@@"):
            if target is None:
                raise ParseError(f"roce dump line {n}: text outside a section: {line[:60]!r}")
            body.append(line)
            continue
        if target is not None:
            _close_section(dump, target, "\n".join(body) + ("\n" if body else ""))
        body = []
        target = _open_section(dump, line, f"roce dump line {n}")
        if target is _END:
            ended, target = True, None
    if target is not None:
        _close_section(dump, target, "\n".join(body) + ("\n" if body else ""))
    if not ended:
        raise ParseError("roce dump: output ends before @@end (cut short)")
    return dump


__all__ = [
    "CommandOutput", "DumpPort", "HostDump", "RdmaLink", "HW_COUNTER_SETTINGS",
    "parse_host_dump", "parse_hw_counters", "parse_rdma_link", "parse_rdma_statistic",
]


# Real captures of each entry point's input (paths under tests/fixtures): the fuzz tests
# (tests/unit/test_collectors_fuzz.py) mutate them; a public parse* function not here fails there.
FUZZ = {
    "parse_hw_counters": ("roce_nic/hw_counters_mlx5.txt",),
    "parse_rdma_statistic": ("roce_nic/rdma_statistic_mlx5.txt", "roce_nic/rdma_statistic_mlx5.json"),
    "parse_rdma_link": ("roce_nic/rdma_link.txt", "roce_nic/rdma_link.json"),
}
