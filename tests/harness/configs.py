"""The config loader with the built-in collectors, as the daemon and the CLI call it.

``config_loader`` takes the collectors from its caller (so no config module imports a collector);
tests pass the same registry the daemon passes, unless a test gives its own ``options_parsers``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fabric_exporter.collectors import registry
from fabric_exporter.config import loader as config_loader
from fabric_exporter.config.model import Config, ConfigError


def parse_config(raw: Any, **kwargs: Any) -> Config:
    kwargs.setdefault("options_parsers", registry())
    return config_loader.parse_config(raw, **kwargs)


def load_config(path: Any, **kwargs: Any) -> Config:
    kwargs.setdefault("options_parsers", registry())
    return config_loader.load_config(path, **kwargs)


def problems_of(raw: Any, tmp_path: Path = Path(".")) -> list[str]:
    """The problems a config that must be refused is refused with."""
    with pytest.raises(ConfigError) as e:
        parse_config(raw, base_dir=tmp_path)
    return e.value.problems


def local_group(**kw: Any) -> dict:
    """A target group of the test_command collector, run locally; ``kw`` overrides any key."""
    return {"name": "g", "fabric": "lab", "collector": "test_command", "transport": "local", **kw}
