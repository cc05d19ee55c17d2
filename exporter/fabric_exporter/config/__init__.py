"""The configuration, in one import: the model (``model``: what a config is), the loader
(``loader``: YAML in, validated model out, read by ``strict_yaml``), the value rules
(``validator``) and the JSON Schema generated from them (``schema``).

Modules of the package import the part they need; this module is for tools and tests. Loading
needs the collectors to validate each group's ``options:``; the caller passes them
(``load_config(path, options_parsers=collectors.registry())``), so no config module imports a
collector (tests/meta/test_no_import_cycle.py).
"""

from __future__ import annotations

import importlib
from typing import Any

# Each public name and the module it comes from, loaded on first use: a module that needs only the
# model (``from ..config.model import Host``) must not pull in YAML and the validator with it.
_FROM = {
    "format_duration": "..durations", "parse_duration": "..durations",
    **dict.fromkeys(("load_config", "parse_config", "parse_host", "parse_listen_address", "private_key_problem",
                     "read_hosts_file"), ".loader"),
    **dict.fromkeys(("DEFAULT_LISTEN", "SNMPV3_MIN_KEY_LENGTH", "TRANSPORTS", "Config", "ConfigError", "Credential",
                     "Defaults", "Host", "Limits", "Secret", "SNMPCredential", "SSHCredential", "TargetGroup",
                     "WebConfig"), ".model"),
    "MAX_ALIAS_EXPANSION": ".strict_yaml", "load_yaml": ".strict_yaml",
    **dict.fromkeys(("CHECK_FILES", "OptionReader", "Validator"), ".validator"),
}
__all__ = sorted(_FROM)


def __getattr__(name: str) -> Any:
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_FROM[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FROM))
