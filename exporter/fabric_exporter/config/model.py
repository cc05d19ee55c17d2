"""What a configuration IS: frozen objects, built by the loader and read by everything else.

Secrets are references (a file, an environment variable or an inline value), read on use and never
shown in a repr or a log. Nothing here reads files or validates: see loader and validator.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..durations import format_duration

DEFAULT_LISTEN = "0.0.0.0:9315"

TRANSPORTS = ("ssh", "local", "snmp", "gnmi")


class ConfigError(Exception):
    """Raised with every problem found; ``problems`` holds ``path: message`` strings."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


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
    per_transport: dict = field(default_factory=lambda: {"ssh": 32, "snmp": 64, "local": 8, "gnmi": 64})
    # Largest stdout+stderr one command may print; more fails the poll with reason output_too_large.
    max_output_bytes: int = 32 << 20
    # Most bytes of SNMP responses one poll may read (GETs and walks); more fails it as output_too_large.
    max_snmp_poll_bytes: int = 32 << 20


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


#: RFC 3414 section 11.2: SNMPv3 passwords are at least 8 octets (agents and pysnmp refuse shorter)
SNMPV3_MIN_KEY_LENGTH = 8
