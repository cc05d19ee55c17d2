"""Loading a configuration: YAML (or JSON hosts files) in, validated ``model`` objects out.

Reading is strict (config/strict_yaml.py): duplicate keys are refused with both line numbers, hosts files
may not use aliases, and the config's aliases may add at most MAX_ALIAS_EXPANSION nodes. Every problem is
reported with its key path (``targets[3].credentials: unknown credential 'x'``) and all problems
at once (``ConfigError.problems``). Unknown keys are errors: a typo must never be silently ignored.

Which collectors exist is the caller's to say (``options_parsers``: the daemon and the CLI pass
``collectors.registry()``): this module imports no collector, so the collectors can import the
config model without a cycle (tests/meta/test_no_import_cycle.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from .. import bounds
from ..durations import format_duration
from .model import (DEFAULT_LISTEN, SNMPV3_MIN_KEY_LENGTH, TRANSPORTS, Config, ConfigError, Credential,
                           Defaults, Host, Limits, Secret, SNMPCredential, SSHCredential, TargetGroup, WebConfig)
from .strict_yaml import load_yaml, refuse_duplicate_json_keys
from .validator import CHECK_FILES, Validator

_HOST_RE = re.compile(r"^(?:\[(?P<v6>[0-9a-fA-F:.]+)\]|(?P<name>[A-Za-z0-9_.\-]+))(?::(?P<port>\d{1,5}))?$")


def parse_host(entry: Any, path: str, chk: Validator) -> Host | None:
    if isinstance(entry, dict):
        d = chk.mapping(entry, path, {"name", "address", "port"}, {"name"})
        name = chk.string(d, "name", path)
        address = chk.string(d, "address", path, default=name)
        port = chk.integer(d, "port", path, 0, minimum=1, maximum=65535) or None
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
        data = json.loads(text, object_pairs_hook=refuse_duplicate_json_keys)
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


def _parse_credential(name: str, raw: Any, path: str, chk: Validator) -> Credential | None:
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
            max_sessions=chk.integer(d, "max_sessions", path, 4, minimum=1, maximum=64),
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


def _check_v3_key_length(chk: Validator, path: str, secret: Secret | None) -> None:
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


def load_config(path: str | os.PathLike, *, options_parsers: Mapping[str, Any], check_files: bool = True) -> Config:
    """Read and validate a config file. Raises ConfigError listing every problem.

    ``options_parsers``: collector name -> collector class (``collectors.registry()``).
    ``check_files=False`` validates the syntax only: referenced files need not exist."""
    token = CHECK_FILES.set(check_files)
    try:
        return _load_config(path, options_parsers)
    finally:
        CHECK_FILES.reset(token)


def _load_config(path: str | os.PathLike, options_parsers: Mapping[str, Any]) -> Config:
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


def parse_config(raw: Any, *, base_dir: Path = Path("."), source: str = "",
                 options_parsers: Mapping[str, Any]) -> Config:
    """Validate a parsed config document. ``options_parsers`` maps each known collector name to
    its class (``collectors.registry()``, imported on first use): its ``transports``,
    ``parse_options`` and ``check_targets`` validate the groups that use it. Every problem in the
    document is collected before the one ConfigError, so a user fixes them in one pass."""
    if options_parsers is None or not isinstance(options_parsers, Mapping):
        raise TypeError("parse_config needs options_parsers, e.g. fabric_exporter.collectors.registry()")
    collectors = options_parsers
    chk = Validator(base_dir=base_dir)
    top = chk.mapping(raw, "", {"web", "defaults", "limits", "credentials", "targets"}, {"targets"})
    web = _parse_web(top, chk)
    dd = chk.mapping(top.get("defaults"), "defaults", {"interval", "timeout", "stale_after", "jitter", "max_backoff"})
    defaults = _parse_defaults(dd, chk)
    limits = _parse_limits(top, chk)
    declared = chk.mapping(top.get("credentials"), "credentials", set(top.get("credentials") or {}))
    creds = _parse_credentials(declared, chk)

    groups: list[TargetGroup] = []
    targets_raw = top.get("targets")
    if "targets" in top and not isinstance(targets_raw, list):
        chk.err("targets", "expected a list of target groups")
        targets_raw = []
    seen: set[str] = set()
    group_index: dict[str, int] = {}
    for i, t in enumerate(targets_raw or []):
        group = _parse_group(t, f"targets[{i}]", chk, collectors, defaults, "timeout" in dd, creds, declared, seen)
        if group is not None:
            group_index.setdefault(group.name, i)
            groups.append(group)
    # Checks across groups that only a collector knows (e.g. one fabric swept twice).
    for name in dict.fromkeys(g.collector for g in groups):  # only the collectors in use are imported
        mine = [(group_index[g.name], g) for g in groups if g.collector == name]
        collectors[name].check_targets(mine, chk.err)
    if chk.problems:
        raise ConfigError(chk.problems)
    return Config(web=web, defaults=defaults, limits=limits, credentials=creds, targets=tuple(groups), source=source)


def _parse_web(top: dict, chk: Validator) -> WebConfig:
    w = chk.mapping(top.get("web"), "web", {"listen_address", "config_file", "header_timeout", "idle_timeout",
                                            "max_connections"})
    web = WebConfig(listen_address=chk.string(w, "listen_address", "web", DEFAULT_LISTEN) or DEFAULT_LISTEN,
                    config_file=chk.path(w, "config_file", "web"),
                    header_timeout=chk.duration(w, "header_timeout", "web", WebConfig.header_timeout,
                                                bounds.HEADER_TIMEOUT),
                    idle_timeout=chk.duration(w, "idle_timeout", "web", WebConfig.idle_timeout, bounds.IDLE_TIMEOUT),
                    max_connections=chk.integer(w, "max_connections", "web", WebConfig.max_connections, minimum=8,
                                                maximum=65536))
    try:
        parse_listen_address(web.listen_address)
    except ValueError as e:
        chk.err("web.listen_address", str(e))
    return web


def _parse_defaults(dd: dict, chk: Validator) -> Defaults:
    return Defaults(
        interval=chk.duration(dd, "interval", "defaults", 30.0, bounds.INTERVAL),
        timeout=chk.duration(dd, "timeout", "defaults", 20.0, bounds.TIMEOUT),
        stale_after=chk.duration(dd, "stale_after", "defaults", None),
        jitter=chk.number(dd, "jitter", "defaults", 0.1, maximum=0.5),  # a fraction of the interval
        max_backoff=chk.duration(dd, "max_backoff", "defaults", 300.0, bounds.MAX_BACKOFF),
    )


def _parse_limits(top: dict, chk: Validator) -> Limits:
    ll = chk.mapping(top.get("limits"), "limits", {"max_concurrent_polls", "per_transport", "max_output_bytes",
                                                       "max_snmp_poll_bytes"})
    pt_raw = chk.mapping(ll.get("per_transport"), "limits.per_transport", set(TRANSPORTS))
    per_transport = {"ssh": 32, "snmp": 64, "local": 8, "gnmi": 64}
    for t in TRANSPORTS:
        per_transport[t] = chk.integer(pt_raw, t, "limits.per_transport", per_transport[t], minimum=1,
                                       maximum=100_000)
    return Limits(max_concurrent_polls=chk.integer(ll, "max_concurrent_polls", "limits", 64, minimum=1,
                                                   maximum=100_000),
                  per_transport=per_transport,
                  max_output_bytes=chk.size(ll, "max_output_bytes", "limits", Limits.max_output_bytes,
                                            minimum=64 << 10, maximum=4 << 30),
                  max_snmp_poll_bytes=chk.size(ll, "max_snmp_poll_bytes", "limits", Limits.max_snmp_poll_bytes,
                                               minimum=64 << 10, maximum=4 << 30))


def _parse_credentials(declared: dict, chk: Validator) -> dict[str, Credential]:
    creds: dict[str, Credential] = {}
    for name, body in declared.items():
        c = _parse_credential(str(name), body, f"credentials.{name}", chk)
        if c is not None:
            creds[str(name)] = c
    return creds


def _parse_group(t: Any, path: str, chk: Validator, collectors: Mapping[str, Any], defaults: Defaults,
                 timeout_is_explicit: bool, creds: dict[str, Credential], declared: dict,
                 seen: set[str]) -> TargetGroup | None:
    """One ``targets[i]`` group, or None when it has a problem (reported through ``chk``)."""
    d = chk.mapping(t, path, {"name", "fabric", "collector", "hosts", "hosts_file", "transport", "credentials",
                              "interval", "timeout", "stale_after", "options"},
                    {"name", "fabric", "collector", "transport"})
    name = chk.string(d, "name", path)
    if name in seen:
        chk.err(f"{path}.name", f"duplicate group name {name!r}")
    seen.add(name or "")
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
    cred = _group_credential(d, path, chk, transport, creds, declared)
    hosts, hosts_file = _group_hosts(d, path, chk, transport)
    interval, timeout, stale_after = _group_timing(d, path, chk, defaults, timeout_is_explicit)

    options_raw = d.get("options") or {}
    if not isinstance(options_raw, dict):
        chk.err(f"{path}.options", "expected a mapping")
        options_raw = {}
    options = None
    if collector is not None:
        options = collector.parse_options(options_raw, f"{path}.options", chk.err, base_dir=chk.base_dir)
    if not (name and fabric and transport and collector is not None):
        return None
    return TargetGroup(name=name, fabric=fabric, collector=collector_name, transport=transport,
                       hosts=tuple(hosts), interval=interval, timeout=timeout, stale_after=stale_after,
                       credentials=cred, options=options, hosts_file=hosts_file, raw_options=options_raw)


def _group_credential(d: dict, path: str, chk: Validator, transport: str | None, creds: dict[str, Credential],
                      declared: dict) -> Credential | None:
    cred = None
    cred_name = chk.string(d, "credentials", path)
    if cred_name is not None:
        cred = creds.get(cred_name)
        if cred is None and cred_name not in (declared or {}):
            chk.err(f"{path}.credentials", f"unknown credential {cred_name!r}")
        elif cred is not None and transport in ("ssh", "snmp") and cred.type != transport:
            chk.err(f"{path}.credentials", f"credential {cred_name!r} is {cred.type}, transport is {transport}")
    elif transport in ("ssh", "snmp"):
        chk.err(f"{path}.credentials", f"transport {transport} needs credentials")
    return cred


def _group_hosts(d: dict, path: str, chk: Validator, transport: str | None) -> tuple[list[Host], str | None]:
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
            hosts += filter(None, (parse_host(h, f"{path}.hosts_file[{j}]", chk) for j, h in enumerate(entries)))
    elif "hosts" in d:
        if not isinstance(d["hosts"], list):
            chk.err(f"{path}.hosts", "expected a list of hosts")
        else:
            hosts += filter(None, (parse_host(h, f"{path}.hosts[{j}]", chk) for j, h in enumerate(d["hosts"])))
    elif transport == "local":
        hosts.append(Host("localhost", "localhost"))
    else:
        chk.err(path, "needs hosts or hosts_file")
    names = [h.name for h in hosts]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        chk.err(f"{path}.hosts", f"host {dup!r} listed twice")
    return hosts, hosts_file


def _group_timing(d: dict, path: str, chk: Validator, defaults: Defaults,
                  timeout_is_explicit: bool) -> tuple[float, float, float]:
    """The group's interval, timeout and stale_after, each checked against the others."""
    interval = chk.duration(d, "interval", path, defaults.interval, bounds.INTERVAL)
    # An explicit timeout (group or defaults) is validated; an unset one always fits the interval.
    implicit = defaults.timeout if timeout_is_explicit else min(defaults.timeout, 0.8 * interval)
    timeout = chk.duration(d, "timeout", path, implicit, bounds.TIMEOUT)
    if timeout is not None and interval is not None and timeout >= interval:
        chk.err(f"{path}.timeout" if "timeout" in d else f"{path}.interval",
                f"timeout ({format_duration(timeout)}) must be shorter than interval ({format_duration(interval)})")
    stale_after = chk.duration(d, "stale_after", path, defaults.stale_after) or 2 * interval
    if stale_after < interval:
        chk.err(f"{path}.stale_after", "must be at least the interval")
    return interval, timeout, stale_after
