"""Issue 16 defects 9-12: what a bad config file could do before check-config refused it.

9  duplicate YAML keys were accepted, last wins (a second ``credentials.h`` turned host-key checks off);
10 a 401-digit interval became infinite, a 1 ms interval was accepted;
11 ``listen_address: 127.0.0.1:99999`` passed check-config and ``run`` died with an OverflowError traceback;
12 a 366-byte hosts file of nested aliases expanded to 91 MB of check-config output.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from fabric_exporter import bounds
from fabric_exporter.collectors.options import OptionReader
from fabric_exporter.config import ConfigError, parse_duration, parse_listen_address

from tests.harness import paths
from tests.harness.configs import load_config, parse_config, problems_of
from tests.harness.configs import local_group as group

from tests.harness import plugin_collectors  # noqa: F401  registers test_command

ROOT = paths.ROOT
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'exporter'}:{ROOT}", "FABRIC_EXPORTER_PLUGINS": "tests.harness.plugin_collectors"}


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fabric_exporter", *args], capture_output=True, text=True,
                          env=ENV, timeout=timeout)


def problems_of_file(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as e:
        load_config(path)
    return e.value.problems


# -- 9: duplicate keys ----------------------------------------------------------------------------

DUPLICATE_CREDENTIAL = textwrap.dedent("""\
    credentials:
      h:
        type: ssh
        username: monitor
        private_key_file: key
      h:
        type: ssh
        username: monitor
        private_key_file: key
        insecure_ignore_host_key: true
    targets:
      - name: g
        fabric: lab
        collector: test_command
        transport: ssh
        credentials: h
        hosts: [a]
    """)


def test_duplicate_keys_in_the_config_are_refused_with_their_lines(tmp_path):
    (tmp_path / "key").write_text("not a real key")
    config = tmp_path / "c.yaml"
    config.write_text(DUPLICATE_CREDENTIAL)
    assert problems_of_file(config) == [f"{config}: line 6: duplicate key 'h' (first given on line 2); remove one of them"]
    # Nested mappings and lists of mappings too, every duplicate at once.
    config.write_text("targets:\n  - name: g\n    fabric: lab\n    name: h\n    collector: x\n"
                      "    collector: y\n    transport: local\n")
    problems = problems_of_file(config)
    assert [p.split(": ", 1)[1] for p in problems] == [
        "line 4: duplicate key 'name' (first given on line 2); remove one of them",
        "line 6: duplicate key 'collector' (first given on line 5); remove one of them"]
    r = cli("check-config", "--config", str(config))
    assert r.returncode == 1 and "line 4: duplicate key 'name'" in r.stderr


def test_merge_keys_still_override_without_being_duplicates():
    from fabric_exporter.config import load_yaml

    text = "base: &b {fabric: lab, interval: 10s}\ng:\n  <<: *b\n  interval: 20s\n"
    assert load_yaml(text, aliases=True)["g"] == {"fabric": "lab", "interval": "20s"}


def test_duplicate_keys_in_hosts_files_are_refused(tmp_path):
    (tmp_path / "hosts.yaml").write_text("- name: a\n  address: 127.0.0.2\n  address: 127.0.0.3\n")
    problems = problems_of({"targets": [group(hosts_file="hosts.yaml")]}, tmp_path)
    assert problems == ["targets[0].hosts_file: cannot read hosts: line 3: duplicate key 'address' "
                        "(first given on line 2); remove one of them"]
    (tmp_path / "hosts.json").write_text('[{"name": "a", "address": "127.0.0.2", "address": "127.0.0.3"}]')
    problems = problems_of({"targets": [group(hosts_file="hosts.json")]}, tmp_path)
    assert problems == ["targets[0].hosts_file: cannot read hosts: duplicate key 'address'"]


# -- 10: every duration and number bounded ---------------------------------------------------------

def test_an_endless_interval_is_refused():
    huge = "1" * 401 + "s"
    with pytest.raises(ValueError, match="too large"):
        parse_duration(huge)
    problems = problems_of({"targets": [group(interval=huge)]})
    assert len(problems) == 1 and problems[0].startswith("targets[0].interval: duration '1111")
    assert len(problems[0]) < 200  # the 401 digits are not echoed back


@pytest.mark.parametrize("key,value,where", [
    ("interval", "1ms", "targets[0].interval: must be between 100ms and 24h, got 1ms"),
    ("interval", "2d", "targets[0].interval: must be between 100ms and 24h, got 48h"),
    ("timeout", "1ms", "targets[0].timeout: must be between 10ms and 1h, got 1ms"),
    ("stale_after", "400d", "targets[0].stale_after: must be between 10ms and 720h, got 9600h"),
])
def test_durations_outside_their_range_are_refused(key, value, where):
    assert where in problems_of({"targets": [group(**{key: value})]})


def test_defaults_credentials_and_limits_are_bounded():
    raw = {"defaults": {"interval": "5ms", "max_backoff": "1" * 30 + "h", "jitter": float("nan")},
           "limits": {"max_concurrent_polls": 10**400, "per_transport": {"ssh": 10**7}},
           "credentials": {"s": {"type": "ssh", "username": "u", "password": "env:P",
                                 "connect_timeout": "1ms", "keepalive_interval": "100d", "max_sessions": 1000}},
           "targets": [group()]}
    problems = problems_of(raw)
    for expected in ("defaults.interval: must be between 100ms and 24h", "defaults.max_backoff: must be between 1s and 24h",
                     "defaults.jitter: must be a finite number", "limits.max_concurrent_polls: expected an integer between 1 and 100000, got a value far too large",
                     "limits.per_transport.ssh: expected an integer between 1 and 100000",
                     "credentials.s.connect_timeout: must be between 100ms and 5m",
                     "credentials.s.keepalive_interval: must be between 1s and 1h",
                     "credentials.s.max_sessions: expected an integer between 1 and 64"):
        assert any(p.startswith(expected) for p in problems), (expected, problems)
    assert all(len(p) < 300 for p in problems)


def test_option_reader_bounds_numbers_and_durations():
    found = []
    r = OptionReader({"n": float("inf"), "m": float("nan"), "k": 10**40, "d": "1" * 400 + "m", "e": "5ms",
                      "ok": 2.5, "dur": "2s"}, "options", lambda p, m: found.append(f"{p}: {m}"))
    assert r.number("n", 1.0) == 1.0 and r.number("m", 1.0) == 1.0
    assert r.integer("k", 3) == 3
    assert r.duration("d", 9.0) == 9.0 and r.duration("e", 9.0) == 9.0
    assert r.number("ok", 1.0) == 2.5 and r.duration("dur", 9.0) == 2.0
    assert r.duration("dur", 9.0, within=bounds.Range(5.0, 10.0, "s")) == 9.0
    assert found[:5] == ["options.n: must be a finite number, got inf", "options.m: must be a finite number, got nan",
                         "options.k: expected an integer between 0 and 1000000000, got a value far too large",
                         "options.d: duration '111111111111'... (401 characters) is too large",
                         "options.e: must be between 10ms and 720h, got 5ms"]
    assert found[5] == "options.dur: must be between 5s and 10s, got 2s"


def test_a_huge_integer_literal_is_a_config_problem_not_a_crash(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("limits:\n  max_concurrent_polls: " + "9" * 5000 + "\ntargets: []\n")
    problems = problems_of_file(config)
    assert len(problems) == 1 and "invalid value" in problems[0]


# -- 11: listen address --------------------------------------------------------------------------

@pytest.mark.parametrize("address,ok", [
    ("127.0.0.1:9315", ("127.0.0.1", 9315)), (":9315", (None, 9315)), ("[::1]:0", ("::1", 0)),
    ("exporter.example:65535", ("exporter.example", 65535)),
    ("127.0.0.1:99999", None), ("127.0.0.1:65536", None), ("127.0.0.1:", None), ("127.0.0.1", None),
    ("300.1.1.1:80", None), ("[zz::1]:80", None), ("::1:80", None), ("bad host:80", None), ("-x-:80", None),
    ("127.0.0.1:٩٣١٥", None), ("127.0.0.1:+80", None),
])
def test_listen_addresses(address, ok):
    if ok is None:
        with pytest.raises(ValueError):
            parse_listen_address(address)
        assert any(p.startswith("web.listen_address: ")
                   for p in problems_of({"web": {"listen_address": address}, "targets": [group()]}))
    else:
        assert parse_listen_address(address) == ok


def test_run_with_an_out_of_range_port_exits_cleanly(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"web": {"listen_address": "127.0.0.1:99999"}, "targets": [group()]}))
    r = cli("check-config", "--config", str(config))
    assert r.returncode == 1 and "port 99999 is out of range" in r.stderr
    r = cli("run", "--config", str(config), timeout=30)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "port 99999 is out of range" in r.stderr
    # The command-line override is not seen by check-config: run must refuse it just as clearly.
    config.write_text(yaml.safe_dump({"targets": [group()]}))
    r = cli("run", "--config", str(config), "--web.listen-address", "127.0.0.1:99999", timeout=30)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "invalid listen address" in r.stderr and "out of range" in r.stderr


# -- 12: aliases ---------------------------------------------------------------------------------

def _alias_bomb(levels: int = 9) -> str:
    lines = ["- &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"- &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_aliases_are_refused_in_hosts_files(tmp_path):
    bomb = _alias_bomb()
    assert len(bomb) < 1000
    (tmp_path / "hosts.yaml").write_text(bomb)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"targets": [group(hosts_file="hosts.yaml")]}))
    r = cli("check-config", "--config", str(config))
    assert r.returncode == 1
    assert len(r.stderr) < 2000, len(r.stderr)
    assert "line 2: alias *a0: YAML aliases are not allowed here" in r.stderr
    # Even one harmless alias: a hosts file is a plain list.
    (tmp_path / "hosts.yaml").write_text("- &h {name: a, address: 127.0.0.2}\n- *h\n")
    problems = problems_of({"targets": [group(hosts_file="hosts.yaml")]}, tmp_path)
    assert problems == ["targets[0].hosts_file: cannot read hosts: line 2: alias *h: YAML aliases are not allowed "
                        "here; write the entries out"]


def test_aliases_in_the_config_are_bounded(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("targets:\n  - name: g\n    fabric: lab\n    collector: test_command\n    transport: local\n"
                      "    options:\n      command: &bomb " + _alias_bomb().replace("\n- ", ", ").replace("- ", "[", 1)
                      .rstrip("\n") + "]\n")
    problems = problems_of_file(config)
    assert len(problems) == 1 and "YAML aliases expand this file by more than 10000 entries" in problems[0]
    # Ordinary reuse (one options block shared by several groups) is fine.
    config.write_text(textwrap.dedent("""\
        targets:
          - {name: a, fabric: lab, collector: test_command, transport: local, options: &o {command: [echo, "eth0 1"]}}
          - {name: b, fabric: lab, collector: test_command, transport: local, options: *o}
        """))
    cfg = load_config(config)
    assert [g.name for g in cfg.targets] == ["a", "b"]
