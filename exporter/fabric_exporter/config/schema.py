"""A JSON Schema of the configuration, generated from the validator's own reads.

The loader and every collector's ``parse_options`` are run once over a probe document while
``validator.RECORDING`` is set; each typed read (key, kind, range, choices, default) and each
mapping's allowed and required keys become the schema. So the schema cannot drift from what
``check-config`` accepts for the shapes it can express; ranges of durations, cross-key rules
(timeout < interval, a credential's type matching the transport) stay check-config's alone.

Editors with the YAML language server check fabric.yaml as it is typed with a first line
``# yaml-language-server: $schema=<path or URL of docs/config.schema.json>``.
Regenerate: ``fabric-exporter config-schema > docs/config.schema.json`` (a test compares).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .. import bounds
from ..durations import format_duration
from . import loader as config_loader
from .model import ConfigError
from .validator import CHECK_FILES, RECORDING, SIZE_PATTERN, size_text

DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h|d))+$"

# Keys the loader checks by hand rather than through a typed read (their shape is fixed here).
_HOSTS = {
    "type": "array",
    "description": "name, name:port, IPv4, [IPv6]:port, or {name, address, port}",
    "items": {"anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "object", "additionalProperties": False, "required": ["name"],
         "properties": {"name": {"type": ["string", "number"], "minLength": 1},
                        "address": {"type": ["string", "number"], "minLength": 1},
                        "port": {"type": "integer", "minimum": 1, "maximum": 65535}}},
    ]},
}
_BY_HAND = {
    ("target", "hosts"): _HOSTS,
    ("target", "options"): {"type": "object"},
    ("target", "credentials"): {"type": ["string", "number"], "minLength": 1},
}


def _json_default(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value if isinstance(value, (str, int, float, bool, list)) else None


def _value_schema(kind: str, facts: dict) -> dict:
    if kind in ("string", "path"):
        choices = facts.get("choices")
        schema: dict = {"enum": list(choices)} if choices else {"type": ["string", "number"], "minLength": 1}
    elif kind == "secret":
        schema = {"type": "string", "minLength": 1, "description": "the value, or env:VARIABLE to read it from"}
    elif kind == "regex":
        schema = {"type": "string", "minLength": 1, "format": "regex"}
    elif kind == "string_list":
        choices = facts.get("choices")
        item = {"enum": sorted(choices)} if choices else {"type": ["string", "number"], "minLength": 1}
        schema = {"type": "array", "items": item}
    elif kind == "integer":
        schema = {"type": "integer", "minimum": facts["minimum"], "maximum": facts["maximum"]}
    elif kind == "number":
        schema = {"type": "number", "minimum": facts["minimum"], "maximum": facts["maximum"]}
    elif kind == "size":
        schema = {"anyOf": [{"type": "integer", "minimum": facts["minimum"], "maximum": facts["maximum"]},
                            {"type": "string", "pattern": SIZE_PATTERN}],
                  "description": f"bytes, or e.g. '32MiB' ({size_text(facts['minimum'])} to "
                                 f"{size_text(facts['maximum'])})"}
    elif kind == "boolean":
        schema = {"type": "boolean"}
    elif kind == "duration":
        within: bounds.Range = facts["within"]
        schema = {"type": "string", "pattern": DURATION_PATTERN,
                  "description": f"a duration between {format_duration(within.minimum)} and "
                                 f"{format_duration(within.maximum)}"}
        default = facts.get("default")
        if isinstance(default, (int, float)):
            schema["default"] = format_duration(default)
        return schema
    elif kind == "object":
        schema = {"type": "object"}
    else:  # "any": the collector checks the shape itself
        schema = {}
    default = _json_default(facts.get("default"))
    if default not in (None, [], ()):
        schema["default"] = default
    return schema


def _objects(reads: list[tuple[str, str | None, str, dict]]) -> dict[str, dict]:
    """Key path -> object schema, from the recorded reads (the first read of a key says its kind)."""
    objects: dict[str, dict] = {}
    for path, key, kind, facts in reads:
        obj = objects.setdefault(path, {"type": "object", "properties": {}})
        if key is None:  # the mapping's own facts: its allowed and required keys
            allowed = facts["allowed"] | set(obj.get("_allowed", ()))
            obj["_allowed"] = allowed
            if facts["required"]:
                obj["required"] = sorted(set(obj.get("required", ())) | facts["required"])
        elif key not in obj["properties"]:
            obj["properties"][key] = _value_schema(kind, facts)
    for path, obj in objects.items():
        if "_allowed" in obj:
            allowed = obj.pop("_allowed")
            for key in allowed:
                obj["properties"].setdefault(key, {})
            obj["additionalProperties"] = False
        obj["properties"] = dict(sorted(obj["properties"].items()))
    for path, obj in objects.items():  # nested mappings read by a collector's own OptionReader
        parent, _, key = path.rpartition(".")
        if parent in objects and key in objects[parent]["properties"] and "[" not in key:
            objects[parent]["properties"][key] = obj
    return objects


def _by_hand(obj: dict, where: str) -> dict:
    for (place, key), schema in _BY_HAND.items():
        if place == where and key in obj["properties"]:
            obj["properties"][key] = schema
    return obj


def config_schema(options_parsers: Mapping[str, Any]) -> dict:
    """The JSON Schema (draft 2020-12) of a config whose collectors are ``options_parsers``."""
    names = sorted(options_parsers)
    probe = {
        "web": {}, "defaults": {}, "limits": {"per_transport": {}},
        "credentials": {"ssh": {"type": "ssh"}, "snmp": {"type": "snmp", "version": "2c"},
                        "snmpv3": {"type": "snmp", "version": "3"}},
        "targets": [{"name": n, "fabric": "f", "collector": n, "transport": options_parsers[n].transports[0],
                     "options": {}} for n in names],
    }
    reads: list = []
    token, files = RECORDING.set(reads), CHECK_FILES.set(False)
    try:
        config_loader.parse_config(probe, options_parsers=options_parsers)
    except ConfigError:
        pass  # the probe is incomplete on purpose (no hosts, no credentials): only the reads matter
    finally:
        RECORDING.reset(token)
        CHECK_FILES.reset(files)
    objects = _objects(reads)

    top = objects[""]
    for section in ("web", "defaults", "limits"):
        top["properties"][section] = _by_hand(objects[section], section)
    ssh, snmp = objects["credentials.ssh"], objects["credentials.snmp"]
    snmp["properties"].update({k: v for k, v in objects["credentials.snmpv3"]["properties"].items()
                               if not snmp["properties"].get(k)})
    for cred, kind in ((ssh, "ssh"), (snmp, "snmp")):
        cred["properties"]["type"] = {"const": kind}
        cred["required"] = sorted(set(cred.get("required", ())) | {"type"})
    top["properties"]["credentials"] = {
        "type": "object",
        "additionalProperties": {"type": "object", "required": ["type"], "properties": {"type": {"enum": ["snmp", "ssh"]}},
                                 "allOf": [{"if": {"properties": {"type": {"const": kind}}}, "then": cred}
                                           for kind, cred in (("ssh", ssh), ("snmp", snmp))]},
    }
    group = _by_hand(objects["targets[0]"], "target")
    group["properties"]["collector"] = {"enum": names}
    group["properties"]["hosts_file"] = {"type": "string", "minLength": 1}
    group["allOf"] = []
    for i, name in enumerate(names):
        options = objects.get(f"targets[{i}].options", {"type": "object", "properties": {},
                                                        "additionalProperties": False})
        transports = list(options_parsers[name].transports)
        group["allOf"].append({"if": {"properties": {"collector": {"const": name}}, "required": ["collector"]},
                               "then": {"properties": {"options": options, "transport": {"enum": transports}}}})
    top["properties"]["targets"] = {"type": "array", "items": group}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "fabric-exporter configuration",
            "description": "Generated by `fabric-exporter config-schema` from the validator; "
                           "`fabric-exporter check-config` checks more (cross-key rules, files, ranges of durations).",
            **top}


def render(options_parsers: Mapping[str, Any]) -> str:
    return json.dumps(config_schema(options_parsers), indent=2) + "\n"
