"""The config loader with the built-in collectors, as the daemon and the CLI call it.

``config_loader`` takes the collectors from its caller (so no config module imports a collector);
tests pass the same registry the daemon passes, unless a test gives its own ``options_parsers``.
"""

from __future__ import annotations

from typing import Any

from fabric_exporter import config_loader
from fabric_exporter.collectors import registry
from fabric_exporter.config_model import Config


def parse_config(raw: Any, **kwargs: Any) -> Config:
    kwargs.setdefault("options_parsers", registry())
    return config_loader.parse_config(raw, **kwargs)


def load_config(path: Any, **kwargs: Any) -> Config:
    kwargs.setdefault("options_parsers", registry())
    return config_loader.load_config(path, **kwargs)
