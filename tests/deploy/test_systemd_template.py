"""The template unit fabric-exporter@.service runs N shards on one machine: it verifies clean, is
as hardened as the single unit (and otherwise identical to it), its command line with an instance's
environment file is one the CLI accepts, and shards started that way split the targets exactly."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from ..harness.daemon import DaemonProcess
from .conftest import DEPLOY, deploy_tool
from .test_systemd import INSTALLED_BINARY, MAX_EXPOSURE, UNIT, unit_settings

TEMPLATE = DEPLOY / "systemd" / "fabric-exporter@.service"
# The settings in which the template differs from the single unit, and nothing else.
SHARD_ONLY = {"Description", "EnvironmentFile", "ExecStart", "BindReadOnlyPaths", "DefaultInstance"}


@pytest.fixture()
def instance(tmp_path: Path) -> Path:
    fake_bin = tmp_path / "fabric-exporter"
    fake_bin.write_text("#!/bin/sh\nexit 0\n")
    fake_bin.chmod(0o755)
    text = TEMPLATE.read_text().replace(INSTALLED_BINARY, str(fake_bin))
    (tmp_path / TEMPLATE.name).write_text(text)
    copy = tmp_path / "fabric-exporter@3.service"
    copy.write_text(text)
    return copy


def test_template_verifies_clean(instance: Path):
    result = subprocess.run([deploy_tool("systemd-analyze"), "verify", instance.name], cwd=instance.parent,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and not result.stderr.strip() and not result.stdout.strip(), \
        f"rc={result.returncode}\n{result.stdout}\n{result.stderr}"


def test_template_exposure_at_most_two(instance: Path):
    result = subprocess.run([deploy_tool("systemd-analyze"), "security", "--offline=yes", "--no-pager", str(instance)],
                            capture_output=True, text=True, timeout=60)
    m = re.search(r"Overall exposure level for \S+: (\d+(?:\.\d+)?)", result.stdout)
    assert m and float(m.group(1)) <= MAX_EXPOSURE, result.stdout + result.stderr


def test_template_is_the_single_unit_plus_the_shard_settings():
    single, template = unit_settings(UNIT.read_text()), unit_settings(TEMPLATE.read_text())
    for key in set(single) | set(template):
        if key not in SHARD_ONLY:
            assert single.get(key) == template.get(key), f"{key}: the template drifted from fabric-exporter.service"
    assert template["EnvironmentFile"] == ["/etc/fabric-exporter/shard-%i.env"]
    assert sorted(template["BindReadOnlyPaths"]) == sorted(single["BindReadOnlyPaths"] +
                                                           ["%d:/run/fabric-exporter/credentials"])


def _shard_argv(env: dict[str, str]) -> list[str]:
    """ExecStart as systemd runs it: ${VAR} replaced by the instance's environment file's values."""
    command = unit_settings(TEMPLATE.read_text())["ExecStart"][0]
    return shlex.split(re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], command))


def test_execstart_with_an_instance_environment_is_accepted_by_the_cli():
    from fabric_exporter.cli import build_parser

    argv = _shard_argv({"SHARD": "1/4", "LISTEN_ADDRESS": "0.0.0.0:9317"})
    assert argv[0] == INSTALLED_BINARY
    args = build_parser().parse_args(argv[1:])
    assert args.command == "run" and (args.shard.index, args.shard.count) == (1, 4)
    assert args.listen_address == "0.0.0.0:9317" and args.config == "/etc/fabric-exporter/config.yaml"


def test_shards_started_as_the_template_does_split_the_targets(tmp_path: Path):
    hosts = [f"gpu-{i:02d}" for i in range(12)]
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"targets": [{
        "name": "gpus", "fabric": "lab", "collector": "test_command", "transport": "local", "interval": "1s",
        "timeout": "800ms", "hosts": [{"name": h} for h in hosts], "options": {"command": ["echo", "eth0 1"]}}]}))
    seen = []
    for index in range(2):
        argv = _shard_argv({"SHARD": f"{index}/2", "LISTEN_ADDRESS": "unused"})
        shard_args = argv[argv.index("--shard"):argv.index("--shard") + 2]
        with DaemonProcess(config, plugins="tests.harness.plugin_collectors", args=tuple(shard_args)) as d:
            d.wait_http()
            text = d.wait_for(lambda s, b: "fabric_up{" in b and " 0.0" not in
                              "".join(line for line in b.splitlines() if line.startswith("fabric_up{")), deadline=20)
        seen.append({m for m in re.findall(r'^fabric_up\{[^}]*host="([^"]+)"', text, re.M)})
    assert seen[0] and seen[1] and not seen[0] & seen[1]
    assert seen[0] | seen[1] == set(hosts)
