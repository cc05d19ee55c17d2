"""gnmi_switch's options block: what a target's ``options`` may say, checked once at load."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..base import ErrorSink
from ..options import OptionReader
from .dialects import DIALECTS, SONIC_PATHS

DEFAULT_PORT = 9339  # IANA's gNMI port (Cumulus' default)
MIN_SAMPLE_INTERVAL = 1.0  # SONiC's MinSampleInterval (sonic_data_client/db_client.go)


@dataclass(frozen=True)
class GnmiSwitchOptions:
    dialect: str = "sonic"
    mode: str = "poll"
    tables: tuple[str, ...] = tuple(SONIC_PATHS)
    sample_interval: float | None = None  # None: the target's interval
    port: int = DEFAULT_PORT
    insecure: bool = False
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    tls_server_name: str | None = None
    username_file: str | None = None
    password_file: str | None = None
    interface_include: re.Pattern | None = None
    interface_exclude: re.Pattern | None = None


def parse_options(raw: dict, path: str, err: ErrorSink, base_dir: Path = Path(".")) -> GnmiSwitchOptions:
    r = OptionReader(raw, path, err, base_dir)
    dialect = r.string("dialect", "sonic", choices=tuple(DIALECTS)) or "sonic"
    d = DIALECTS.get(dialect, DIALECTS["sonic"])
    mode = r.string("mode", d.default_mode, choices=("poll", "stream")) or d.default_mode
    every = tuple(dict.fromkeys(n for x in DIALECTS.values() for n in x.paths))
    tables = r.string_list("tables", tuple(d.paths), choices=every)
    for i, t in enumerate(tables):
        if t in every and t not in d.paths:
            err(f"{path}.tables[{i}]", f"{t!r} is not a table of the {dialect} dialect (known: {', '.join(d.paths)})")
    sample_interval = r.duration("sample_interval", None)
    if sample_interval is not None and sample_interval < MIN_SAMPLE_INTERVAL:
        err(f"{path}.sample_interval", f"at least {MIN_SAMPLE_INTERVAL:g}s (SONiC refuses less)")
        sample_interval = None
    opts = GnmiSwitchOptions(
        dialect=dialect, mode=mode, tables=tables, sample_interval=sample_interval,
        port=r.integer("port", DEFAULT_PORT, minimum=1, maximum=65535),
        insecure=r.boolean("insecure", False),
        ca_file=r.path("ca_file"), cert_file=r.path("cert_file"), key_file=r.path("key_file"),
        tls_server_name=r.string("tls_server_name"),
        username_file=r.path("username_file"), password_file=r.path("password_file"),
        interface_include=r.regex("interface_include"), interface_exclude=r.regex("interface_exclude"),
    )
    r.done()
    if not tables:
        err(f"{path}.tables", "needs at least one table")
    if opts.insecure and (opts.ca_file or opts.cert_file or opts.key_file):
        err(path, "insecure: true sends plaintext; ca_file/cert_file/key_file need TLS")
    if bool(opts.cert_file) != bool(opts.key_file):
        err(path, "cert_file and key_file go together (mutual TLS)")
    if bool(opts.username_file) != bool(opts.password_file):
        err(path, "username_file and password_file go together")
    return opts
