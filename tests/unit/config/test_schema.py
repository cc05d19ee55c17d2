"""The JSON Schema of the config (docs/config.schema.json) is generated from the validator, committed,
and agrees with check-config on what it can express."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import jsonschema
import pytest
import yaml

from fabric_exporter.collectors import registry
from fabric_exporter.config.model import ConfigError
from fabric_exporter.config.schema import config_schema

from tests.harness import paths
from tests.harness.configs import parse_config

ROOT = paths.ROOT
COMMITTED = ROOT / "docs" / "config.schema.json"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def test_the_committed_schema_is_what_config_schema_prints():
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'exporter'}:{ROOT}"}
    env.pop("FABRIC_EXPORTER_PLUGINS", None)  # the built-in collectors only
    out = subprocess.run([sys.executable, "-m", "fabric_exporter", "config-schema"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout == COMMITTED.read_text(), \
        "docs/config.schema.json is stale: fabric-exporter config-schema > docs/config.schema.json"


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(json.loads(COMMITTED.read_text()))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_fits_the_schema(example):
    validator = jsonschema.Draft202012Validator(json.loads(COMMITTED.read_text()))
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(
        yaml.safe_load(example.read_text()))]
    assert errors == []


def _doc_examples() -> list[tuple[str, str]]:
    from tests.unit.test_collectors_completeness import doc_examples

    return [(f"{page.name}#{i}", block) for page in sorted((ROOT / "docs/collectors").glob("*.md"))
            for i, block in enumerate(doc_examples(page.read_text()))]


@pytest.mark.parametrize("name,block", _doc_examples(), ids=[n for n, _ in _doc_examples()])
def test_every_config_in_a_collector_page_fits_the_schema(name, block):
    """A collector page's example config (a yaml block with ``targets:``) stands in for a file under
    examples/ (tests/unit/test_collectors_completeness.py): it is checked the same way."""
    validator = jsonschema.Draft202012Validator(json.loads(COMMITTED.read_text()))
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(
        yaml.safe_load(block))]
    assert errors == []


def test_the_collector_row_of_configuration_md_is_generated():
    from fabric_exporter import ssh_guard
    from fabric_exporter.config import docs

    text = (ROOT / "docs/configuration.md").read_text()
    assert docs.render(text, ssh_guard.builtin_collectors()) == text, \
        "docs/configuration.md's collector row is stale: fabric-exporter config-docs --write docs/configuration.md"
    assert docs.render(text, {}) != text  # the row is there, and generated from the registry


BASE = {
    "web": {"listen_address": "127.0.0.1:9315", "max_connections": 64},
    "defaults": {"interval": "30s", "jitter": 0.2},
    "limits": {"max_output_bytes": "16MiB", "per_transport": {"ssh": 8}},
    "credentials": {"k": {"type": "ssh", "username": "u", "password": "env:P", "max_sessions": 2},
                    "c": {"type": "snmp", "version": "2c", "community": "env:C"}},
    "targets": [
        {"name": "ib", "fabric": "ib0", "collector": "infiniband", "transport": "local",
         "options": {"ca_port": 1, "max_concurrency": 2, "topology_interval": "10m"}},
        {"name": "nic", "fabric": "roce", "collector": "roce_nic", "transport": "ssh", "credentials": "k",
         "hosts": ["gpu-1", {"name": "gpu-2", "address": "127.0.0.2", "port": 22}],
         "options": {"hw_counters_from": "rdma", "devices": ["mlx5_0"]}},
        {"name": "sw", "fabric": "roce", "collector": "snmp_switch", "transport": "snmp", "credentials": "c",
         "hosts": ["127.0.0.1:1161"], "options": {"modules": ["if_mib"], "max_repetitions": 50}},
    ],
}


def _edit(path: str, value):
    doc = copy.deepcopy(BASE)
    *parents, last = path.split("/")
    node = doc
    for p in parents:
        node = node[int(p)] if p.isdigit() else node[p]
    node[int(last) if last.isdigit() else last] = value
    return doc


CASES = [
    ("as it is", BASE, True),
    ("fabric written as a number", _edit("targets/0/fabric", 2024), True),
    ("count at its minimum", _edit("targets/0/options/max_concurrency", 1), True),
    ("unknown top-level key", _edit("webb", {}), False),
    ("unknown option", _edit("targets/1/options/devics", ["x"]), False),
    ("an infiniband option under roce_nic", _edit("targets/1/options/ca_port", 1), False),
    ("integer below its minimum", _edit("targets/0/options/max_concurrency", 0), False),
    ("integer above its maximum", _edit("credentials/k/max_sessions", 65), False),
    ("config count below its minimum", _edit("limits/per_transport/ssh", 0), False),
    ("not one of the choices", _edit("targets/1/options/hw_counters_from", "proc"), False),
    ("not a list item choice", _edit("targets/2/options/modules", ["no_such_mib"]), False),
    ("duration without unit", _edit("defaults/interval", "30"), False),
    ("empty string", _edit("targets/0/fabric", ""), False),
    ("boolean for a string", _edit("targets/0/name", True), False),
    ("string for a boolean", _edit("targets/1/options/ethtool", "yes"), False),
    ("transport the collector lacks", _edit("targets/2/transport", "local"), False),
    ("unknown collector", _edit("targets/0/collector", "nope"), False),
    ("ssh key on an snmp credential", _edit("credentials/c/username", "u"), False),
    ("unknown credential key", _edit("credentials/k/passwd", "x"), False),
    ("missing required key", {"targets": [{"name": "x", "fabric": "f", "collector": "roce_nic"}]}, False),
    ("jitter out of range", _edit("defaults/jitter", 0.9), False),
    ("size without a unit it knows", _edit("limits/max_output_bytes", "16MB"), False),
]


@pytest.mark.parametrize("name, doc, valid", CASES, ids=[c[0] for c in CASES])
def test_schema_and_check_config_agree(name, doc, valid):
    """What the schema can express it decides as check-config does (one source: the validator)."""
    schema_ok = jsonschema.Draft202012Validator(config_schema(registry())).is_valid(doc)
    try:
        parse_config(copy.deepcopy(doc))
        loader_ok = True
    except ConfigError as e:
        loader_ok = False
        problems = e.problems
    if name == "ssh key on an snmp credential":  # v3-only key on a v2c credential: a cross-key rule
        assert schema_ok and not loader_ok and problems == ["credentials.c.username: only for version 3"]
        return
    assert (schema_ok, loader_ok) == (valid, valid)


def test_config_docs_check_and_write(tmp_path, capsys):
    from fabric_exporter.cli import main

    stale = tmp_path / "configuration.md"
    text = (ROOT / "docs/configuration.md").read_text()
    stale.write_text(text.replace("[`slurm_jobs`](collectors/slurm_jobs.md)", "`slurm_jobs`", 1))
    assert main(["config-docs", "--check", str(stale)]) == 1 and "+| `collector` | required |" in capsys.readouterr().out
    assert main(["config-docs", "--write", str(stale)]) == 0 and stale.read_text() == text
    assert main(["config-docs", "--check", str(stale)]) == 0
