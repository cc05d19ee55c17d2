import os
import subprocess
import sys

import pytest
import yaml

from fabric_exporter.config import ConfigError, Secret, parse_duration

from tests.harness import paths
from tests.harness.configs import load_config, parse_config, problems_of
from tests.harness.configs import local_group as group

from tests.harness import plugin_collectors  # noqa: F401  registers test_command

ROOT = paths.ROOT


def test_duration_forms():
    assert parse_duration("500ms") == 0.5
    assert parse_duration("30s") == 30
    assert parse_duration("5m") == 300
    assert parse_duration("1h") == 3600
    assert parse_duration("1m30s") == 90
    for bad in ("30", "", "5 m", "-1s", "1x", 30, None, "0s"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_problems_name_their_key_paths(tmp_path):
    raw = {
        "credentials": {"ssh1": {"type": "ssh", "username": "u", "password": "env:X"}},
        "targets": [
            group(),
            group(name="g2", interval="10s", timeout="10s"),
            group(name="g3", transport="ssh", credentials="ssh1", hosts=["h1", "h1"]),
            group(name="g4", transport="ssh", credentials="x", hosts=["h"]),
            group(name="g5", colector="typo"),
            group(name="g6", options={"comand": ["x"]}),
            group(name="g7", hosts=["bad host!"]),
        ],
    }
    problems = problems_of(raw, tmp_path)
    assert "targets[1].timeout: timeout (10s) must be shorter than interval (10s)" in problems
    assert "targets[2].hosts: host 'h1' listed twice" in problems
    assert "targets[3].credentials: unknown credential 'x'" in problems
    assert any(p.startswith("targets[4].colector: unknown key") for p in problems)
    assert "targets[5].options.comand: unknown option" in problems
    assert any(p.startswith("targets[6].hosts[0]: invalid host") for p in problems)
    assert len(problems) == 6  # every problem reported at once, none twice


def test_unknown_top_level_and_credential_keys(tmp_path):
    problems = problems_of({"webb": {}, "credentials": {"c": {"type": "snmp", "version": "2c",
                                                                 "comunity": "x"}}, "targets": []}, tmp_path)
    assert "webb: unknown key (did you mean 'web'?)" in problems
    assert any(p.startswith("credentials.c.comunity: unknown key") for p in problems)
    assert "credentials.c: SNMP v2c needs community_file (or community: env:VAR)" in problems


def test_snmp_v3_rules(tmp_path):
    (tmp_path / "auth").write_text("authpass123\n")
    problems = problems_of({"credentials": {"v3": {"type": "snmp", "version": "3", "username": "u",
                                                   "priv_protocol": "aes128", "priv_password_file": "auth"}},
                            "targets": []}, tmp_path)
    assert "credentials.v3: privacy without authentication is not allowed by SNMPv3" in problems


def test_secrets_are_read_on_use_and_never_shown(tmp_path, monkeypatch):
    (tmp_path / "community").write_text("s3cret\n")
    monkeypatch.setenv("FX_COMMUNITY", "fromenv")
    cfg = parse_config({"credentials": {
        "a": {"type": "snmp", "version": "2c", "community_file": "community"},
        "b": {"type": "snmp", "version": "2c", "community": "env:FX_COMMUNITY"}}, "targets": []},
        base_dir=tmp_path)
    assert cfg.credentials["a"].community.read() == "s3cret"
    assert cfg.credentials["b"].community.read() == "fromenv"
    assert "s3cret" not in repr(cfg) and "fromenv" not in repr(cfg)
    assert "inline" in repr(Secret("pw", "inline")) and "pw" not in repr(Secret("pw", "inline"))


def test_hosts_forms_and_hosts_file(tmp_path):
    (tmp_path / "hosts.yaml").write_text(yaml.safe_dump(["a", "b:2222", {"name": "c", "address": "127.0.0.3"}]))
    cfg = parse_config({"targets": [group(hosts=["gpu-001", "gpu-002:2222", "10.0.0.7", "[::1]:22"]),
                                    group(name="f", hosts_file="hosts.yaml")]}, base_dir=tmp_path)
    hosts = cfg.targets[0].hosts
    assert [(h.name, h.address, h.port) for h in hosts] == [
        ("gpu-001", "gpu-001", None), ("gpu-002:2222", "gpu-002", 2222), ("10.0.0.7", "10.0.0.7", None),
        ("[::1]:22", "::1", 22)]
    assert [(h.name, h.address, h.port) for h in cfg.targets[1].hosts] == [
        ("a", "a", None), ("b:2222", "b", 2222), ("c", "127.0.0.3", None)]


def test_defaults_apply_and_stale_after_defaults_to_two_intervals():
    cfg = parse_config({"defaults": {"interval": "10s", "timeout": "5s"}, "targets": [group(), group(name="h", interval="1m")]})
    a, b = cfg.targets
    assert (a.interval, a.timeout, a.stale_after) == (10, 5, 20)
    assert (b.interval, b.timeout, b.stale_after) == (60, 5, 120)


def test_check_config_cli_exit_codes(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({"targets": [group()]}))
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"targets": [group(), group(collector="nope", interval="1s", timeout="2s")]}))
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'exporter'}:{ROOT}", "FABRIC_EXPORTER_PLUGINS": "tests.harness.plugin_collectors"}
    ok = subprocess.run([sys.executable, "-m", "fabric_exporter", "check-config", "--config", str(good)],
                        capture_output=True, text=True, env=env, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert "g: collector=test_command fabric=lab transport=local hosts=1" in ok.stdout
    fail = subprocess.run([sys.executable, "-m", "fabric_exporter", "check-config", "--config", str(bad)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert fail.returncode == 1
    assert "targets[1].collector: unknown collector 'nope'" in fail.stderr
    assert "targets[1].name: duplicate group name 'g'" in fail.stderr
    assert "targets[1].timeout: timeout (2s) must be shorter than interval (1s)" in fail.stderr


EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def test_there_are_examples():
    assert EXAMPLES, "examples/ must hold complete configs"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_passes_check_config(example):
    # Examples point at /etc/fabric-exporter/... key files that exist on a deployed host, not here:
    # --syntax-only checks everything else (keys, types, collectors' options, references).
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'exporter'}:{ROOT}"}
    env.pop("FABRIC_EXPORTER_PLUGINS", None)
    r = subprocess.run([sys.executable, "-m", "fabric_exporter", "check-config", "--syntax-only",
                        "--config", str(example)], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr


def test_missing_files_are_problems_unless_syntax_only(tmp_path):
    from tests.harness.configs import load_config

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({
        "credentials": {"k": {"type": "ssh", "username": "u", "private_key_file": "/nonexistent/key"}},
        "targets": [group(transport="ssh", credentials="k", hosts=["h"], interval="1s")]}))
    with pytest.raises(ConfigError) as e:
        load_config(config)
    assert e.value.problems == ["credentials.k.private_key_file: file not found: /nonexistent/key"]
    load_config(config, check_files=False)
    config.write_text(config.read_text().replace("username: u", "usernme: u"))
    with pytest.raises(ConfigError):
        load_config(config, check_files=False)  # every other check still applies
