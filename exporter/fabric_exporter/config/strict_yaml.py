"""Strict reading of YAML and JSON documents that configure the daemon (the config, hosts files,
the web config): duplicate keys are refused with both line numbers (last-wins would hide the
first), aliases are refused (hosts files) or bounded (the config: at most MAX_ALIAS_EXPANSION
added nodes, so a few hundred bytes of nested aliases cannot expand to billions).
"""

from __future__ import annotations

from typing import Any

import yaml

from .model import ConfigError


# How many nodes aliases may add to a document. Reusing an options block across a few dozen groups
# adds hundreds; nested aliases (a "billion laughs" file of a few hundred bytes) add billions.
MAX_ALIAS_EXPANSION = 10_000


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that records duplicate keys (last-wins would hide the first) and aliases."""

    def __init__(self, stream):
        super().__init__(stream)
        self.duplicates: list[str] = []
        self.aliases: list[str] = []

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            self.aliases.append(f"line {event.start_mark.line + 1}: alias *{event.anchor}")
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if key in first_line:
                    self.duplicates.append(f"line {line}: duplicate key {key!r} (first given on line "
                                           f"{first_line[key]}); remove one of them")
                else:
                    first_line[key] = line
        return super().construct_mapping(node, deep=deep)


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many nodes the document holds once every alias is expanded (memoized per shared node)."""
    known = memo.get(id(node))
    if known is not None:
        return known
    memo[id(node)] = 1  # a recursive alias counts once instead of looping
    if isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(n, memo) for n in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    else:
        size = 1
    memo[id(node)] = min(size, 10**12)
    return memo[id(node)]


def _tree_size(node: yaml.Node, seen: set[int]) -> int:
    if id(node) in seen:
        return 0
    seen.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        return 1 + sum(_tree_size(n, seen) for n in node.value)
    if isinstance(node, yaml.MappingNode):
        return 1 + sum(_tree_size(k, seen) + _tree_size(v, seen) for k, v in node.value)
    return 1


def load_yaml(text: str, *, aliases: bool) -> Any:
    """Parse one YAML document strictly. Raises ConfigError (problems prefixed by line) for duplicate
    keys, for any alias when ``aliases`` is False, and for aliases expanding past
    MAX_ALIAS_EXPANSION nodes; yaml.YAMLError for invalid YAML."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if loader.aliases:
            if not aliases:
                raise ConfigError([f"{a}: YAML aliases are not allowed here; write the entries out"
                                   for a in loader.aliases[:5]])
            added = _expanded_size(node, {}) - _tree_size(node, set())
            if added > MAX_ALIAS_EXPANSION:
                raise ConfigError([f"{loader.aliases[0]}: YAML aliases expand this file by more than "
                                   f"{MAX_ALIAS_EXPANSION} entries; write the entries out"])
        data = loader.construct_document(node)
        if loader.duplicates:
            raise ConfigError(loader.duplicates)
        return data
    except ValueError as e:  # e.g. an integer longer than Python's 4300-digit conversion limit
        raise ConfigError([f"invalid value: {str(e)[:200]}"]) from None
    except RecursionError:
        raise ConfigError(["YAML nested too deeply"]) from None
    finally:
        loader.dispose()


def refuse_duplicate_json_keys(pairs: list[tuple[str, Any]]) -> dict:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen

