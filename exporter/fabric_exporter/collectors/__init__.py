"""Collector registry: each collector registered by name; the config's ``collector:`` picks one.

Where collectors come from (docs/adding-a-collector.md), later ones winning on a name clash:

1. built in: every module ``fabric_exporter/collectors/<name>.py`` (or package) that defines a
   ``Collector`` subclass whose ``name`` is ``<name>`` — no list to edit;
2. installed plugins: entry points in the ``fabric_exporter.collectors`` group
   (``name = "module:Class"`` in the plugin's pyproject.toml);
3. modules named in ``FABRIC_EXPORTER_PLUGINS`` (comma-separated), which call ``register()``;
4. ``register()`` itself (tests).

Classes are imported on first use, so a daemon without SNMP targets never imports pysnmp, and a
missing optional dependency breaks only its own collector.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import entry_points

from .base import Collector, PollContext

ENTRY_POINT_GROUP = "fabric_exporter.collectors"

_extra: dict[str, type[Collector]] = {}


def register(cls: type[Collector]) -> type[Collector]:
    """Register a collector class (plugins, tests). Usable as a decorator."""
    _extra[cls.name] = cls
    return cls


def unregister(name: str) -> None:
    _extra.pop(name, None)


def _load_plugins() -> None:
    """Import the modules named in FABRIC_EXPORTER_PLUGINS (comma-separated); they call register()."""
    for module_name in filter(None, (m.strip() for m in os.environ.get("FABRIC_EXPORTER_PLUGINS", "").split(","))):
        importlib.import_module(module_name)


def _builtin(module_name: str) -> Callable[[], type[Collector] | None]:
    def load() -> type[Collector] | None:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name == module_name:  # not shipped in this build
                return None
            raise
        name = module_name.rsplit(".", 1)[1]
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Collector) and getattr(value, "name", None) == name \
                    and value.__module__.startswith(module_name):
                return value
        return None  # a helper module (base, options, ...), not a collector
    return load


def _entry_point(ep) -> Callable[[], type[Collector] | None]:
    def load() -> type[Collector] | None:
        # The catalog first: it loads the plugin's metrics (maybe from this same module), which
        # must not be imported half-way through the catalog's own import.
        importlib.import_module("fabric_exporter.catalog")
        return ep.load()
    return load


class Registry(Mapping):
    """Collector name -> class, each imported on first access. Iterating imports them all (it is
    only needed to list the known names)."""

    def __init__(self, loaders: dict[str, Callable[[], type[Collector] | None]]):
        self._loaders = loaders
        self._loaded: dict[str, type[Collector] | None] = {}

    def _load(self, name: str) -> type[Collector] | None:
        if name not in self._loaded:
            loader = self._loaders.get(name)
            self._loaded[name] = loader() if loader is not None else None
        return self._loaded[name]

    def __getitem__(self, name: str) -> type[Collector]:
        cls = self._load(name)
        if cls is None:
            raise KeyError(name)
        return cls

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._load(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter([name for name in self._loaders if self._load(name) is not None])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def registry() -> Registry:
    _load_plugins()
    loaders: dict[str, Callable[[], type[Collector] | None]] = {}
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            loaders[info.name] = _builtin(f"{__name__}.{info.name}")
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        loaders[ep.name] = _entry_point(ep)
    for name, cls in _extra.items():
        loaders[name] = (lambda c=cls: c)
    return Registry(loaders)


__all__ = ["Collector", "PollContext", "Registry", "register", "unregister", "registry", "ENTRY_POINT_GROUP"]
