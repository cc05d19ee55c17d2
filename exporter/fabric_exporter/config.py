"""The configuration, in one import: the model (``config_model``: what a config is), the loader
(``config_loader``: YAML in, validated model out, read by ``strict_yaml``) and the value rules
(``validator``).

Modules of the package import the part they need; this module is for tools and tests. Loading
needs the collectors to validate each group's ``options:``; the caller passes them
(``load_config(path, options_parsers=collectors.registry())``), so no config module imports a
collector (tests/core/test_no_import_cycle.py).
"""

from __future__ import annotations

from .config_loader import (load_config, parse_config, parse_host, parse_listen_address, private_key_problem,
                            read_hosts_file)
from .config_model import (DEFAULT_LISTEN, SNMPV3_MIN_KEY_LENGTH, TRANSPORTS, Config, ConfigError, Credential,
                           Defaults, Host, Limits, Secret, SNMPCredential, SSHCredential, TargetGroup, WebConfig)
from .durations import format_duration, parse_duration
from .strict_yaml import MAX_ALIAS_EXPANSION, load_yaml
from .validator import CHECK_FILES, OptionReader, Validator

__all__ = [
    "CHECK_FILES", "DEFAULT_LISTEN", "MAX_ALIAS_EXPANSION", "SNMPV3_MIN_KEY_LENGTH", "TRANSPORTS", "Config",
    "ConfigError", "Credential", "Defaults", "Host", "Limits", "OptionReader", "SNMPCredential", "SSHCredential",
    "Secret", "TargetGroup", "Validator", "WebConfig", "format_duration", "load_config", "load_yaml",
    "parse_config", "parse_duration", "parse_host", "parse_listen_address", "private_key_problem",
    "read_hosts_file",
]
