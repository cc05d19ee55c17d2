"""One host vocabulary: a rule turning a name the exporter knows (a configured host name, an IB
node's name) into the scheduler's node name, so every series that belongs to a host can be joined
with the scheduler's (``fabric_job_node_info{node}``, ``kube_pod_info{node}``).

A rule is a regular expression searched in the name and a template built from its groups
(``re.Match.expand`` syntax: ``\\1``, ``\\g<name>``; default ``\\1``)::

    node_name: {regex: '^([^.]+)'}                          # gpu-node-017.cluster.example -> gpu-node-017
    node_name: {regex: '^(\\w+)-(\\d+)', template: 'gpu\\2'}   # node-017 -> gpu017

Read by the one validator (``OptionReader``), so ``check-config`` and the generated schema know it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .config.validator import OptionReader

_GROUP_REF = re.compile(r"\\(?:(\d+)|g<([^>]*)>)")


@dataclass(frozen=True)
class NameRule:
    regex: re.Pattern
    template: str = "\\1"

    def apply(self, name: str) -> str | None:
        """The mapped name, or None when the regex does not match (or maps to an empty name)."""
        m = self.regex.search(name)
        if m is None:
            return None
        return m.expand(self.template) or None


def template_problem(regex: re.Pattern, template: str) -> str | None:
    """What is wrong with ``template`` for ``regex`` (a group it does not have), or None."""
    for number, name in _GROUP_REF.findall(template):
        if number and int(number) > regex.groups:
            return f"refers to group {number}, but the regex has {regex.groups} group(s)"
        if name and not (name.isdigit() and int(name) <= regex.groups) and name not in regex.groupindex:
            return f"refers to group {name!r}, which the regex does not have"
    return None


def read_name_rule(r: OptionReader, key: str, default: NameRule | None = None) -> NameRule | None:
    """The rule under ``key`` of an options mapping (``{regex, template}``), or ``default`` when absent."""
    raw = r.mapping(key)
    where = f"{r.key_path}.{key}"
    sub = OptionReader(raw or {}, where, r.err, r.base_dir)
    regex = sub.regex("regex")
    template = sub.string("template", "\\1") or "\\1"
    sub.done()
    if raw is None:
        return default
    if "regex" not in raw:
        r.err(f"{where}.regex", "required: the regular expression searched in the name")
        return default
    if regex is None:
        return default
    problem = template_problem(regex, template)
    if problem:
        r.err(f"{where}.template", problem)
        return default
    return NameRule(regex, template)


__all__ = ["NameRule", "read_name_rule", "template_problem"]
