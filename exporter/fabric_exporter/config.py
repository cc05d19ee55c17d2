"""Configuration: YAML in, validated frozen objects out.

Every problem is reported with its key path (``targets[3].credentials: unknown credential 'x'``) and
all problems are reported at once. Unknown keys are errors: a typo must never be silently ignored.
Secrets are never stored inline in these objects' reprs and never logged.
"""

from __future__ import annotations

import contextvars
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import bounds

DEFAULT_LISTEN = "0.0.0.0:9315"

# False while validating syntax only (``check-config --syntax-only``, like promtool's): files the
# config refers to (keys, hosts files, maps) are not required to exist on this machine.
CHECK_FILES: contextvars.ContextVar[bool] = contextvars.ContextVar("check_files", default=True)
TRANSPORTS = ("ssh", "local", "snmp")


class ConfigError(Exception):
    """Raised with every problem found; ``problems`` holds ``path: message`` strings."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


# ---------------------------------------------------------------------------------------------
# Durations


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: Any) -> float:
    """'500ms', '30s', '5m', '1h', '1m30s' -> seconds. Bare numbers are refused (units are mandatory)."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"expected a duration such as 30s, got {text!r}")
    pos, total = 0, 0.0
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        if not m:
            raise ValueError(f"invalid duration {text!r} (use e.g. 500ms, 30s, 5m, 1h)")
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    if not math.isfinite(total):
        shown = repr(text) if len(text) <= 40 else f"{text[:12]!r}... ({len(text)} characters)"
        raise ValueError(f"duration {shown} is too large")
    if total <= 0:
        raise ValueError(f"duration {text!r} must be positive")
    return total


def format_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


# ---------------------------------------------------------------------------------------------
# Secrets


@dataclass(frozen=True)
class Secret:
    """A secret's source (file path, env var or inline); the value is read on use, never printed."""

    source: str
    kind: str  # file | env | inline

    def read(self) -> str:
        if self.kind == "env":
            value = os.environ.get(self.source)
            if value is None:
                raise ValueError(f"environment variable {self.source} is not set")
            return value
        if self.kind == "file":
            return Path(self.source).read_text().strip()
        return self.source

    def __repr__(self) -> str:  # never leak the value
        return f"Secret({self.kind}:{'<inline>' if self.kind == 'inline' else self.source})"

    def describe(self) -> str:
        return {"env": f"env:{self.source}", "file": self.source, "inline": "<inline>"}[self.kind]


# ---------------------------------------------------------------------------------------------
# Config objects


@dataclass(frozen=True)
class SSHCredential:
    name: str
    username: str
    private_key_file: str | None = None
    private_key_passphrase: Secret | None = None  # for an encrypted private_key_file
    password: Secret | None = None
    known_hosts_file: str | None = None
    insecure_ignore_host_key: bool = False
    connect_timeout: float = 10.0
    keepalive_interval: float = 15.0
    max_sessions: int = 4  # concurrent commands per connection; keep below sshd's MaxSessions (10)
    type: str = "ssh"


@dataclass(frozen=True)
class SNMPCredential:
    name: str
    version: str  # "2c" | "3"
    community: Secret | None = None
    username: str | None = None
    auth_protocol: str | None = None
    auth_password: Secret | None = None
    priv_protocol: str | None = None
    priv_password: Secret | None = None
    context: str = ""
    type: str = "snmp"


Credential = SSHCredential | SNMPCredential


@dataclass(frozen=True)
class Host:
    """One polled endpoint. ``name`` is the label value; ``address``/``port`` are where to connect."""

    name: str
    address: str
    port: int | None = None


@dataclass(frozen=True)
class TargetGroup:
    name: str
    fabric: str
    collector: str
    transport: str
    hosts: tuple[Host, ...]
    interval: float
    timeout: float
    stale_after: float
    credentials: Credential | None = None
    options: Any = None  # parsed by the collector's parse_options
    hosts_file: str | None = None
    raw_options: dict = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Limits:
    max_concurrent_polls: int = 64
    per_transport: dict = field(default_factory=lambda: {"ssh": 32, "snmp": 64, "local": 8})
    # Largest stdout+stderr one command may print; more fails the poll with reason output_too_large.
    max_output_bytes: int = 32 << 20


@dataclass(frozen=True)
class Defaults:
    interval: float = 30.0
    timeout: float = 20.0
    stale_after: float | None = None  # None: 2 x interval
    jitter: float = 0.1  # fraction of the interval
    max_backoff: float = 300.0


@dataclass(frozen=True)
class WebConfig:
    listen_address: str = DEFAULT_LISTEN
    config_file: str | None = None
    # Slow or idle clients must not hold the server (see web.ConnectionGuard).
    header_timeout: float = 10.0  # a request's headers must arrive within this (also the TLS handshake)
    idle_timeout: float = 60.0  # a keep-alive connection with no request is closed after this
    max_connections: int = 256  # at the limit the oldest connection still sending headers makes room


@dataclass(frozen=True)
class Config:
    web: WebConfig
    defaults: Defaults
    limits: Limits
    credentials: dict[str, Credential]
    targets: tuple[TargetGroup, ...]
    source: str = ""

    def summary_lines(self) -> list[str]:
        lines = []
        for g in self.targets:
            creds = f" credentials={g.credentials.name}" if g.credentials else ""
            lines.append(
                f"{g.name}: collector={g.collector} fabric={g.fabric} transport={g.transport} "
                f"hosts={len(g.hosts)} interval={format_duration(g.interval)} "
                f"timeout={format_duration(g.timeout)}{creds}"
            )
        return lines


# ---------------------------------------------------------------------------------------------
# Validation helpers


class _Checker:
    """Collects problems with key paths while walking the YAML tree."""

    def __init__(self, base_dir: Path):
        self.problems: list[str] = []
        self.base_dir = base_dir

    def err(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    def mapping(self, value: Any, path: str, allowed: set[str], required: set[str] = frozenset()) -> dict:
        if value is None:
            value = {}
        if not isinstance(value, dict):
            self.err(path, f"expected a mapping, got {type(value).__name__}")
            return {}
        for key in value:
            if key not in allowed:
                hint = _closest(str(key), allowed)
                self.err(f"{path}.{key}" if path else str(key),
                         "unknown key" + (f" (did you mean {hint!r}?)" if hint else ""))
        for key in sorted(required):
            if key not in value:
                self.err(f"{path}.{key}" if path else key, "required key is missing")
        return value

    def string(self, d: dict, key: str, path: str, default: str | None = None, choices=None) -> str | None:
        if key not in d:
            return default
        v = d[key]
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = str(v)
        if not isinstance(v, str) or not v:
            self.err(f"{path}.{key}", f"expected a non-empty string, got {v!r}")
            return default
        if choices and v not in choices:
            self.err(f"{path}.{key}", f"must be one of {', '.join(choices)}, got {v!r}")
            return default
        return v

    def duration(self, d: dict, key: str, path: str, default: float | None,
                 within: bounds.Range = bounds.DURATION) -> float | None:
        if key not in d:
            return default
        try:
            seconds = parse_duration(d[key])
        except ValueError as e:
            self.err(f"{path}.{key}", str(e))
            return default
        problem = within.problem(seconds)
        if problem:
            self.err(f"{path}.{key}", problem)
            return default
        return seconds

    def integer(self, d: dict, key: str, path: str, default: int, minimum: int = 1,
                maximum: int = bounds.INTEGER_MAX) -> int:
        if key not in d:
            return default
        v = d[key]
        if not isinstance(v, int) or isinstance(v, bool) or not minimum <= v <= maximum:
            shown = repr(v) if not isinstance(v, int) or abs(v) < 10**15 else "a value far too large"
            self.err(f"{path}.{key}", f"expected an integer between {minimum} and {maximum}, got {shown}")
            return default
        return v

    def boolean(self, d: dict, key: str, path: str, default: bool) -> bool:
        if key not in d:
            return default
        v = d[key]
        if not isinstance(v, bool):
            self.err(f"{path}.{key}", f"expected true or false, got {v!r}")
            return default
        return v

    def path(self, d: dict, key: str, path: str, must_exist: bool = True) -> str | None:
        v = self.string(d, key, path)
        if v is None:
            return None
        p = Path(v) if os.path.isabs(v) else self.base_dir / v
        if must_exist and CHECK_FILES.get() and not p.exists():
            self.err(f"{path}.{key}", f"file not found: {p}")
        return str(p)

    def secret(self, d: dict, key: str, path: str, inline_key: str | None = None) -> Secret | None:
        """``<key>_file: path`` or ``<inline_key>: env:VAR`` / inline value."""
        file_key = f"{key}_file"
        if file_key in d and inline_key and inline_key in d:
            self.err(path, f"give only one of {file_key} and {inline_key}")
        if file_key in d:
            p = self.path(d, file_key, path)
            return Secret(p, "file") if p else None
        if inline_key and inline_key in d:
            v = d[inline_key]
            if not isinstance(v, str) or not v:
                self.err(f"{path}.{inline_key}", "expected a string (a value or env:VAR)")
                return None
            if v.startswith("env:"):
                var = v[4:]
                if not var:
                    self.err(f"{path}.{inline_key}", "env: needs a variable name")
                    return None
                return Secret(var, "env")
            return Secret(v, "inline")
        return None


def _closest(word: str, options: set[str]) -> str | None:
    import difflib

    found = difflib.get_close_matches(word, sorted(options), n=1, cutoff=0.75)
    return found[0] if found else None


_HOST_RE = re.compile(r"^(?:\[(?P<v6>[0-9a-fA-F:.]+)\]|(?P<name>[A-Za-z0-9_.\-]+))(?::(?P<port>\d{1,5}))?$")


def parse_host(entry: Any, path: str, chk: _Checker) -> Host | None:
    if isinstance(entry, dict):
        d = chk.mapping(entry, path, {"name", "address", "port"}, {"name"})
        name = chk.string(d, "name", path)
        address = chk.string(d, "address", path, default=name)
        port = d.get("port")
        if port is not None and (not isinstance(port, int) or not 0 < port < 65536):
            chk.err(f"{path}.port", f"expected a port number, got {port!r}")
            port = None
        return Host(name, address, port) if name else None
    if not isinstance(entry, str):
        chk.err(path, f"expected a host name or a mapping, got {entry!r}")
        return None
    m = _HOST_RE.match(entry.strip())
    if not m:
        chk.err(path, f"invalid host {entry!r} (use name, name:port, IPv4, or [IPv6]:port)")
        return None
    address = m.group("v6") or m.group("name")
    port = int(m.group("port")) if m.group("port") else None
    if port is not None and not 0 < port < 65536:
        chk.err(path, f"invalid port in {entry!r}")
        return None
    return Host(entry.strip(), address, port)


# ---------------------------------------------------------------------------------------------
# YAML reading: duplicate keys refused, aliases refused (hosts files) or bounded (the config)

# How many nodes aliases may add to a document. Reusing an options block across a few dozen groups
# adds hundreds; nested aliases (a "billion laughs" file of a few hundred bytes) add billions.
MAX_ALIAS_EXPANSION = 10_000


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that records duplicate keys (last-wins would hide the first) and aliases."""

    def __init__(self, stream):
        super().__init__(stream)
        self.duplicates: list[str] = []
        self.aliases: list[str] = []

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            self.aliases.append(f"line {event.start_mark.line + 1}: alias *{event.anchor}")
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if key in first_line:
                    self.duplicates.append(f"line {line}: duplicate key {key!r} (first given on line "
                                           f"{first_line[key]}); remove one of them")
                else:
                    first_line[key] = line
        return super().construct_mapping(node, deep=deep)


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many nodes the document holds once every alias is expanded (memoized per shared node)."""
    known = memo.get(id(node))
    if known is not None:
        return known
    memo[id(node)] = 1  # a recursive alias counts once instead of looping
    if isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(n, memo) for n in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    else:
        size = 1
    memo[id(node)] = min(size, 10**12)
    return memo[id(node)]


def _tree_size(node: yaml.Node, seen: set[int]) -> int:
    if id(node) in seen:
        return 0
    seen.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        return 1 + sum(_tree_size(n, seen) for n in node.value)
    if isinstance(node, yaml.MappingNode):
        return 1 + sum(_tree_size(k, seen) + _tree_size(v, seen) for k, v in node.value)
    return 1


def load_yaml(text: str, *, aliases: bool) -> Any:
    """Parse one YAML document strictly. Raises ConfigError (problems prefixed by line) for duplicate
    keys, for any alias when ``aliases`` is False, and for aliases expanding past
    MAX_ALIAS_EXPANSION nodes; yaml.YAMLError for invalid YAML."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if loader.aliases:
            if not aliases:
                raise ConfigError([f"{a}: YAML aliases are not allowed here; write the entries out"
                                   for a in loader.aliases[:5]])
            added = _expanded_size(node, {}) - _tree_size(node, set())
            if added > MAX_ALIAS_EXPANSION:
                raise ConfigError([f"{loader.aliases[0]}: YAML aliases expand this file by more than "
                                   f"{MAX_ALIAS_EXPANSION} entries; write the entries out"])
        data = loader.construct_document(node)
        if loader.duplicates:
            raise ConfigError(loader.duplicates)
        return data
    except ValueError as e:  # e.g. an integer longer than Python's 4300-digit conversion limit
        raise ConfigError([f"invalid value: {str(e)[:200]}"]) from None
    except RecursionError:
        raise ConfigError(["YAML nested too deeply"]) from None
    finally:
        loader.dispose()


def _refuse_duplicate_json_keys(pairs: list[tuple[str, Any]]) -> dict:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


_HOSTNAME_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")


def parse_listen_address(text: Any) -> tuple[str | None, int]:
    """'HOST:PORT', '[IPv6]:PORT' or ':PORT' -> (host or None for every address, port 0-65535).

    Raises ValueError with the reason; the daemon must never meet an address it cannot bind to as
    a traceback (port 99999 used to raise OverflowError at start, a systemd restart loop)."""
    import ipaddress

    if not isinstance(text, str):
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isascii() or not port_text.isdigit() or len(port_text) > 5:
        raise ValueError(f"expected HOST:PORT (e.g. 0.0.0.0:9315 or [::]:9315), got {text!r}")
    port = int(port_text)
    if port > 65535:
        raise ValueError(f"port {port} is out of range (0-65535) in {text!r}")
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise ValueError(f"invalid IPv6 address {host[1:-1]!r} in {text!r}") from None
        return host[1:-1], port
    if not host:
        return None, port
    if ":" in host:
        raise ValueError(f"write an IPv6 address in brackets, e.g. [::1]:{port}, got {text!r}")
    if re.fullmatch(r"[0-9.]+", host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"invalid IPv4 address {host!r} in {text!r}") from None
    elif len(host) > 253 or not all(_HOSTNAME_LABEL.match(label) for label in host.rstrip(".").split(".")):
        raise ValueError(f"invalid host name {host!r} in {text!r}")
    return host, port


def read_hosts_file(path: str) -> list[Any]:
    """A hosts file is a YAML (or JSON) list of host entries. YAML aliases are refused: a hosts
    file is machine-written or a plain list, and nested aliases are the cheapest memory bomb."""
    text = Path(path).read_text()
    if path.endswith(".json"):
        data = json.loads(text, object_pairs_hook=_refuse_duplicate_json_keys)
    else:
        try:
            data = load_yaml(text, aliases=False)
        except ConfigError as e:
            raise ValueError("; ".join(e.problems)) from None
    if not isinstance(data, list):
        raise ValueError("a hosts file must hold a list of hosts")
    return data


# ---------------------------------------------------------------------------------------------
# The loader


def private_key_problem(key_file: str, passphrase: Secret | None) -> str | None:
    """Why an SSH private key cannot be used as configured (encrypted without a passphrase, wrong
    passphrase, unreadable), or None. Files that are not PEM/OpenSSH keys are left to the login."""
    try:
        head = Path(key_file).read_bytes()[:64]
    except OSError as e:
        return f"cannot read {key_file}: {e.strerror or e}"
    if not head.lstrip().startswith(b"-----BEGIN"):
        return None
    import asyncssh  # only here: check-config and reloads, not every import of config

    try:
        secret = passphrase.read() if passphrase is not None else None
    except (OSError, ValueError) as e:
        return f"cannot read the private key passphrase ({passphrase.describe()}): {e}"
    try:
        asyncssh.read_private_key(key_file, secret)
    except asyncssh.KeyEncryptionError:
        return f"{key_file}: the passphrase ({passphrase.describe() if passphrase else '-'}) does not decrypt it"
    except asyncssh.KeyImportError as e:
        message = str(e)
        if "assphrase must be specified" in message:
            return (f"{key_file} is encrypted: give its passphrase with private_key_passphrase_file "
                    "(or private_key_passphrase: env:VAR)")
        return f"{key_file}: not a usable private key ({message})"
    except (OSError, ValueError) as e:
        return f"{key_file}: not a usable private key ({e})"
    return None


def _parse_credential(name: str, raw: Any, path: str, chk: _Checker) -> Credential | None:
    if not isinstance(raw, dict):
        chk.err(path, "expected a mapping")
        return None
    ctype = raw.get("type")
    if ctype == "ssh":
        d = chk.mapping(raw, path, {"type", "username", "private_key_file", "private_key_passphrase",
                                     "private_key_passphrase_file", "password", "password_file",
                                     "known_hosts_file", "insecure_ignore_host_key", "connect_timeout",
                                     "keepalive_interval", "max_sessions"}, {"username"})
        insecure = chk.boolean(d, "insecure_ignore_host_key", path, False)
        known_hosts = chk.path(d, "known_hosts_file", path)
        key = chk.path(d, "private_key_file", path)
        passphrase = chk.secret(d, "private_key_passphrase", path, inline_key="private_key_passphrase")
        if passphrase is not None and not key:
            chk.err(f"{path}.private_key_passphrase", "only with private_key_file")
        if key and CHECK_FILES.get() and Path(key).is_file():  # a missing file is reported above
            problem = private_key_problem(key, passphrase)
            if problem:
                chk.err(f"{path}.private_key_file", problem)
        password = chk.secret(d, "password", path, inline_key="password")
        if not key and not password:
            chk.err(path, "needs private_key_file or password_file")
        return SSHCredential(
            name=name,
            username=chk.string(d, "username", path) or "",
            private_key_file=key,
            private_key_passphrase=passphrase,
            password=password,
            known_hosts_file=known_hosts,
            insecure_ignore_host_key=insecure,
            connect_timeout=chk.duration(d, "connect_timeout", path, 10.0, bounds.CONNECT_TIMEOUT),
            keepalive_interval=chk.duration(d, "keepalive_interval", path, 15.0, bounds.KEEPALIVE),
            max_sessions=chk.integer(d, "max_sessions", path, 4, maximum=64),
        )
    if ctype == "snmp":
        d = chk.mapping(raw, path, {"type", "version", "community", "community_file", "username",
                                     "auth_protocol", "auth_password", "auth_password_file", "priv_protocol",
                                     "priv_password", "priv_password_file", "context"}, {"version"})
        version = chk.string(d, "version", path, choices=("2c", "3"))
        cred = SNMPCredential(name=name, version=version or "2c", context=chk.string(d, "context", path, "") or "")
        if version == "2c":
            community = chk.secret(d, "community", path, inline_key="community")
            if community is None:
                chk.err(path, "SNMP v2c needs community_file (or community: env:VAR)")
            for k in ("username", "auth_protocol", "priv_protocol"):
                if k in d:
                    chk.err(f"{path}.{k}", "only for version 3")
            return SNMPCredential(name=name, version="2c", community=community)
        if version == "3":
            username = chk.string(d, "username", path)
            if not username:
                chk.err(f"{path}.username", "SNMP v3 needs a username")
            auth_proto = chk.string(d, "auth_protocol", path, choices=("sha", "sha256", "sha512", "md5"))
            priv_proto = chk.string(d, "priv_protocol", path, choices=("aes128", "aes256", "aes", "des"))
            auth_pw = chk.secret(d, "auth_password", path, inline_key="auth_password")
            priv_pw = chk.secret(d, "priv_password", path, inline_key="priv_password")
            if auth_proto and not auth_pw:
                chk.err(path, "auth_protocol needs auth_password_file (or auth_password: env:VAR)")
            if priv_proto and not priv_pw:
                chk.err(path, "priv_protocol needs priv_password_file (or priv_password: env:VAR)")
            if priv_proto and not auth_proto:
                chk.err(path, "privacy without authentication is not allowed by SNMPv3")
            for key, secret in (("auth_password", auth_pw), ("priv_password", priv_pw)):
                _check_v3_key_length(chk, f"{path}.{key}", secret)
            return SNMPCredential(name=name, version="3", username=username, auth_protocol=auth_proto,
                                  auth_password=auth_pw, priv_protocol=priv_proto, priv_password=priv_pw,
                                  context=cred.context)
        return None
    chk.err(f"{path}.type", f"must be ssh or snmp, got {ctype!r}")
    return None


#: RFC 3414 section 11.2: SNMPv3 passwords are at least 8 octets (agents and pysnmp refuse shorter)
SNMPV3_MIN_KEY_LENGTH = 8


def _check_v3_key_length(chk: Any, path: str, secret: Secret | None) -> None:
    """Refuse a short SNMPv3 password at check-config, saying where it is but never what it is."""
    if secret is None or (secret.kind != "inline" and not CHECK_FILES.get()):
        return
    try:
        value = secret.read()
    except (OSError, ValueError, UnicodeDecodeError):
        return  # a missing file or unset variable is reported elsewhere, or at run time
    if len(value.encode()) < SNMPV3_MIN_KEY_LENGTH:
        chk.err(path, f"SNMPv3 passwords need at least {SNMPV3_MIN_KEY_LENGTH} characters (RFC 3414); "
                      f"the one in {secret.describe()} has {len(value.encode())}")


def load_config(path: str | os.PathLike, *, options_parsers: dict[str, Any] | None = None,
                check_files: bool = True) -> Config:
    """Read and validate a config file. Raises ConfigError listing every problem.

    ``check_files=False`` validates the syntax only: referenced files need not exist."""
    token = CHECK_FILES.set(check_files)
    try:
        return _load_config(path, options_parsers)
    finally:
        CHECK_FILES.reset(token)


def _load_config(path: str | os.PathLike, options_parsers: dict[str, Any] | None) -> Config:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError([f"{p}: cannot read: {e.strerror or e}"]) from None
    try:
        raw = load_yaml(text, aliases=True)
    except yaml.YAMLError as e:
        raise ConfigError([f"{p}: invalid YAML: {e}"]) from None
    except ConfigError as e:
        raise ConfigError([f"{p}: {problem}" for problem in e.problems]) from None
    return parse_config(raw, base_dir=p.resolve().parent, source=str(p), options_parsers=options_parsers)


_SIZE = re.compile(r"^\s*([0-9]+)\s*(B|KiB|MiB|GiB)?\s*$")
_SIZE_UNITS = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def _output_bytes(ll: dict, chk) -> int:
    """limits.max_output_bytes: an integer or '<n> KiB|MiB|GiB', between 64 KiB and 4 GiB."""
    default = Limits.max_output_bytes
    if "max_output_bytes" not in ll:
        return default
    v = ll["max_output_bytes"]
    m = _SIZE.match(v) if isinstance(v, str) else None
    n = int(m.group(1)) * _SIZE_UNITS[m.group(2)] if m else (v if isinstance(v, int) and not isinstance(v, bool)
                                                             else None)
    if n is None or not (64 << 10) <= n <= (4 << 30):
        chk.err("limits.max_output_bytes", f"expected a size between 64KiB and 4GiB (bytes, or e.g. '32MiB'), "
                                           f"got {v!r}")
        return default
    return n


def parse_config(raw: Any, *, base_dir: Path = Path("."), source: str = "",
                 options_parsers: dict[str, Any] | None = None) -> Config:
    from .collectors import registry  # late import: collectors import config types

    collectors = options_parsers if options_parsers is not None else registry()
    chk = _Checker(base_dir)
    top = chk.mapping(raw, "", {"web", "defaults", "limits", "credentials", "targets"}, {"targets"})

    w = chk.mapping(top.get("web"), "web", {"listen_address", "config_file", "header_timeout", "idle_timeout",
                                            "max_connections"})
    web = WebConfig(listen_address=chk.string(w, "listen_address", "web", DEFAULT_LISTEN) or DEFAULT_LISTEN,
                    config_file=chk.path(w, "config_file", "web"),
                    header_timeout=chk.duration(w, "header_timeout", "web", WebConfig.header_timeout),
                    idle_timeout=chk.duration(w, "idle_timeout", "web", WebConfig.idle_timeout),
                    max_connections=chk.integer(w, "max_connections", "web", WebConfig.max_connections, minimum=8))
    for key, low, high in (("header_timeout", 0.5, 300.0), ("idle_timeout", 1.0, 3600.0)):
        if not low <= getattr(web, key) <= high:
            chk.err(f"web.{key}", f"expected a duration between {low:g}s and {high:g}s, got {w.get(key)!r}")
    if web.max_connections > 65536:
        chk.err("web.max_connections", f"expected at most 65536, got {web.max_connections}")
    try:
        parse_listen_address(web.listen_address)
    except ValueError as e:
        chk.err("web.listen_address", str(e))

    dd = chk.mapping(top.get("defaults"), "defaults", {"interval", "timeout", "stale_after", "jitter", "max_backoff"})
    jitter = dd.get("jitter", 0.1)
    if not isinstance(jitter, (int, float)) or isinstance(jitter, bool) or not 0 <= jitter <= 0.5:
        chk.err("defaults.jitter", f"expected a fraction of the interval between 0 and 0.5, got {jitter!r}")
        jitter = 0.1
    defaults = Defaults(
        interval=chk.duration(dd, "interval", "defaults", 30.0, bounds.INTERVAL),
        timeout=chk.duration(dd, "timeout", "defaults", 20.0, bounds.TIMEOUT),
        stale_after=chk.duration(dd, "stale_after", "defaults", None),
        jitter=float(jitter),
        max_backoff=chk.duration(dd, "max_backoff", "defaults", 300.0, bounds.MAX_BACKOFF),
    )

    ll = chk.mapping(top.get("limits"), "limits", {"max_concurrent_polls", "per_transport", "max_output_bytes"})
    pt_raw = chk.mapping(ll.get("per_transport"), "limits.per_transport", set(TRANSPORTS))
    per_transport = {"ssh": 32, "snmp": 64, "local": 8}
    for t in TRANSPORTS:
        per_transport[t] = chk.integer(pt_raw, t, "limits.per_transport", per_transport[t], maximum=100_000)
    limits = Limits(max_concurrent_polls=chk.integer(ll, "max_concurrent_polls", "limits", 64, maximum=100_000),
                    per_transport=per_transport,
                    max_output_bytes=_output_bytes(ll, chk))

    creds: dict[str, Credential] = {}
    cr = chk.mapping(top.get("credentials"), "credentials", set(top.get("credentials") or {}))
    for name, body in cr.items():
        c = _parse_credential(str(name), body, f"credentials.{name}", chk)
        if c is not None:
            creds[str(name)] = c

    groups: list[TargetGroup] = []
    targets_raw = top.get("targets")
    if "targets" in top and not isinstance(targets_raw, list):
        chk.err("targets", "expected a list of target groups")
        targets_raw = []
    seen: set[str] = set()
    group_index: dict[str, int] = {}
    for i, t in enumerate(targets_raw or []):
        path = f"targets[{i}]"
        d = chk.mapping(t, path, {"name", "fabric", "collector", "hosts", "hosts_file", "transport", "credentials",
                                  "interval", "timeout", "stale_after", "options"},
                        {"name", "fabric", "collector", "transport"})
        name = chk.string(d, "name", path)
        if name in seen:
            chk.err(f"{path}.name", f"duplicate group name {name!r}")
        seen.add(name or "")
        group_index.setdefault(name or "", i)
        fabric = chk.string(d, "fabric", path) or ""
        transport = chk.string(d, "transport", path, choices=TRANSPORTS)
        collector_name = chk.string(d, "collector", path)
        collector = collectors.get(collector_name) if collector_name else None
        if collector_name and collector is None:
            chk.err(f"{path}.collector", f"unknown collector {collector_name!r} "
                                         f"(known: {', '.join(sorted(collectors)) or 'none'})")
        if collector is not None and transport and transport not in collector.transports:
            chk.err(f"{path}.transport", f"collector {collector_name} supports "
                                         f"{', '.join(collector.transports)}, not {transport}")

        cred = None
        cred_name = chk.string(d, "credentials", path)
        if cred_name is not None:
            cred = creds.get(cred_name)
            if cred is None and cred_name not in (cr or {}):
                chk.err(f"{path}.credentials", f"unknown credential {cred_name!r}")
            elif cred is not None and transport in ("ssh", "snmp") and cred.type != transport:
                chk.err(f"{path}.credentials", f"credential {cred_name!r} is {cred.type}, transport is {transport}")
        elif transport in ("ssh", "snmp"):
            chk.err(f"{path}.credentials", f"transport {transport} needs credentials")

        hosts: list[Host] = []
        hosts_file = None
        if "hosts" in d and "hosts_file" in d:
            chk.err(path, "give hosts or hosts_file, not both")
        if "hosts_file" in d:
            hosts_file = chk.path(d, "hosts_file", path)
            if hosts_file and Path(hosts_file).exists():
                try:
                    entries = read_hosts_file(hosts_file)
                except (OSError, ValueError, yaml.YAMLError) as e:
                    chk.err(f"{path}.hosts_file", f"cannot read hosts: {e}")
                    entries = []
                for j, h in enumerate(entries):
                    host = parse_host(h, f"{path}.hosts_file[{j}]", chk)
                    if host:
                        hosts.append(host)
        elif "hosts" in d:
            if not isinstance(d["hosts"], list):
                chk.err(f"{path}.hosts", "expected a list of hosts")
            else:
                for j, h in enumerate(d["hosts"]):
                    host = parse_host(h, f"{path}.hosts[{j}]", chk)
                    if host:
                        hosts.append(host)
        elif transport == "local":
            hosts.append(Host("localhost", "localhost"))
        else:
            chk.err(path, "needs hosts or hosts_file")
        names = [h.name for h in hosts]
        for dup in sorted({n for n in names if names.count(n) > 1}):
            chk.err(f"{path}.hosts", f"host {dup!r} listed twice")

        interval = chk.duration(d, "interval", path, defaults.interval, bounds.INTERVAL)
        # An explicit timeout (group or defaults) is validated; an unset one always fits the interval.
        implicit = defaults.timeout if "timeout" in dd else min(defaults.timeout, 0.8 * interval)
        timeout = chk.duration(d, "timeout", path, implicit, bounds.TIMEOUT)
        if timeout is not None and interval is not None and timeout >= interval:
            chk.err(f"{path}.timeout" if "timeout" in d else f"{path}.interval",
                    f"timeout ({format_duration(timeout)}) must be shorter than interval ({format_duration(interval)})")
        stale_after = chk.duration(d, "stale_after", path, defaults.stale_after) or 2 * interval
        if stale_after < interval:
            chk.err(f"{path}.stale_after", "must be at least the interval")

        options_raw = d.get("options") or {}
        if not isinstance(options_raw, dict):
            chk.err(f"{path}.options", "expected a mapping")
            options_raw = {}
        options = None
        if collector is not None:
            options = collector.parse_options(options_raw, f"{path}.options", chk.err, base_dir=chk.base_dir)
        if name and fabric and transport and collector is not None:
            groups.append(TargetGroup(name=name, fabric=fabric, collector=collector_name, transport=transport,
                                      hosts=tuple(hosts), interval=interval, timeout=timeout,
                                      stale_after=stale_after, credentials=cred, options=options,
                                      hosts_file=hosts_file, raw_options=options_raw))
    # Checks across groups that only a collector knows (e.g. one fabric swept twice).
    for name in dict.fromkeys(g.collector for g in groups):  # only the collectors in use are imported
        mine = [(group_index[g.name], g) for g in groups if g.collector == name]
        collectors[name].check_targets(mine, chk.err)
    if chk.problems:
        raise ConfigError(chk.problems)
    return Config(web=web, defaults=defaults, limits=limits, credentials=creds, targets=tuple(groups), source=source)
