"""Collector registry: each collector registered by name; the config's ``collector:`` picks one."""

from __future__ import annotations

import importlib
import os

from .base import Collector, PollContext

# name -> "module:Class". Imported lazily so a missing optional dependency breaks only its collector.
_BUILTIN = {
    "infiniband": "fabric_exporter.collectors.infiniband:InfinibandCollector",
    "roce_nic": "fabric_exporter.collectors.roce_nic:RoceNicCollector",
    "snmp_switch": "fabric_exporter.collectors.snmp_switch:SnmpSwitchCollector",
    "switch_cli": "fabric_exporter.collectors.switch_cli:SwitchCliCollector",
    "latency_probe": "fabric_exporter.collectors.latency_probe:LatencyProbeCollector",
}

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


def registry() -> dict[str, type[Collector]]:
    _load_plugins()
    found: dict[str, type[Collector]] = {}
    for name, ref in _BUILTIN.items():
        module_name, _, class_name = ref.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name == module_name:  # not written yet / not shipped
                continue
            raise
        found[name] = getattr(module, class_name)
    found.update(_extra)
    return found


__all__ = ["Collector", "PollContext", "register", "unregister", "registry"]
