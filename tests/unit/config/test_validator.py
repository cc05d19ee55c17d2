"""One validator: the config's own keys and every collector's ``options:`` follow the same rule per
kind (config/validator.py's docstring, docs/configuration.md "Value rules"), with the same messages."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from fabric_exporter import bounds
from fabric_exporter.collectors import registry
from fabric_exporter.collectors.options import OptionReader
from fabric_exporter.config import loader as config_loader
from fabric_exporter.config.model import ConfigError
from fabric_exporter.config.validator import CHECK_FILES, Validator
from tests.harness.configs import parse_config
from tests.harness.configs import problems_of as _problems


def _group(**kw):
    return {"name": "g", "fabric": "f", "collector": "roce_nic", "transport": "local", **kw}


def _read(kind: str, value, **kw):
    """(result, problems) of one read through the validator and through an OptionReader."""
    v = Validator()
    direct = getattr(v, kind)({"k": value}, "k", "top", **kw)
    found: list[str] = []
    r = OptionReader({"k": value}, "top", lambda p, m: found.append(f"{p}: {m}"))
    viewed = getattr(r, kind)("k", **kw)
    assert direct == viewed and v.problems == found, (kind, value, direct, viewed, v.problems, found)
    return direct, found


@pytest.mark.parametrize("kind, value, kw, result, problem", [
    ("string", "x", {"default": None}, "x", None),
    ("string", 2024, {"default": None}, "2024", None),  # YAML wrote a number; the operator meant text
    ("string", 1.5, {"default": None}, "1.5", None),
    ("string", "", {"default": "d"}, "d", "top.k: expected a non-empty string, got ''"),
    ("string", True, {"default": "d"}, "d", "top.k: expected a non-empty string, got True"),
    ("string", None, {"default": "d"}, "d", "top.k: expected a non-empty string, got None"),
    ("string", "c", {"default": "a", "choices": ("a", "b")}, "a", "top.k: must be one of a, b, got 'c'"),
    ("integer", 0, {"default": 5}, 0, None),  # minimum 0 unless stated
    ("integer", -1, {"default": 5}, 5, "top.k: expected an integer between 0 and 1000000000, got -1"),
    ("integer", 0, {"default": 5, "minimum": 1}, 5, "top.k: expected an integer between 1 and 1000000000, got 0"),
    ("integer", 10**9 + 1, {"default": 5}, 5, "top.k: expected an integer between 0 and 1000000000, got 1000000001"),
    ("integer", True, {"default": 5}, 5, "top.k: expected an integer between 0 and 1000000000, got True"),
    ("integer", "3", {"default": 5}, 5, "top.k: expected an integer between 0 and 1000000000, got '3'"),
    ("number", 2, {"default": 1.0}, 2.0, None),
    ("number", -0.5, {"default": 1.0}, 1.0, "top.k: must be between 0 and 1e+09, got -0.5"),
    ("size", "8MiB", {"default": 1, "minimum": 64 << 10, "maximum": 4 << 30}, 8 << 20, None),
    ("size", " 512 KiB ", {"default": 1, "minimum": 64 << 10, "maximum": 4 << 30}, 512 << 10, None),
    ("size", 1 << 20, {"default": 1, "minimum": 64 << 10, "maximum": 4 << 30}, 1 << 20, None),
    ("size", "16MB", {"default": 1, "minimum": 64 << 10, "maximum": 4 << 30}, 1,
     "top.k: expected a size between 64KiB and 4GiB (bytes, or e.g. '32MiB'), got '16MB'"),
    ("size", "5GiB", {"default": 1, "minimum": 64 << 10, "maximum": 4 << 30}, 1,
     "top.k: expected a size between 64KiB and 4GiB (bytes, or e.g. '32MiB'), got '5GiB'"),
    ("size", True, {"default": 1, "minimum": 1, "maximum": 1000}, 1,
     "top.k: expected a size between 1B and 1000B (bytes, or e.g. '32MiB'), got True"),
    ("boolean", "yes", {"default": False}, False, "top.k: expected true or false, got 'yes'"),
    ("duration", "1m30s", {"default": 1.0}, 90.0, None),
    ("duration", 30, {"default": 1.0}, 1.0, "top.k: expected a duration such as 30s, got 30"),
    ("duration", "1ms", {"default": 1.0}, 1.0, "top.k: must be between 10ms and 720h, got 1ms"),
    ("duration", "2s", {"default": 1.0, "within": bounds.Range(5.0, 10.0, "s")}, 1.0,
     "top.k: must be between 5s and 10s, got 2s"),
    ("string_list", ["a", 7], {}, ("a", "7"), None),
    ("string_list", ["a", ""], {"default": ("d",)}, ("d",), "top.k[1]: expected a non-empty string, got ''"),
    ("string_list", "a", {}, (), "top.k: expected a list of strings, got 'a'"),
])
def test_one_rule_per_kind_for_config_keys_and_options(kind, value, kw, result, problem):
    got, problems = _read(kind, value, **kw)
    assert got == result
    assert problems == ([problem] if problem else [])


def test_paths_are_relative_to_the_config_and_checked_unless_syntax_only(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    v = Validator(base_dir=tmp_path)
    raw = {"f": "f", "d": "d", "missing": "nope"}
    assert v.path(raw, "f", "o") == str(tmp_path / "f") and v.path(raw, "d", "o", directory=True) == str(tmp_path / "d")
    assert v.path(raw, "f", "o", directory=True) == str(tmp_path / "f")
    assert v.path(raw, "missing", "o") == str(tmp_path / "nope")
    assert v.problems == [f"o.f: directory not found: {tmp_path / 'f'}", f"o.missing: file not found: {tmp_path / 'nope'}"]
    token = CHECK_FILES.set(False)
    try:
        quiet = Validator(base_dir=tmp_path)
        quiet.path(raw, "missing", "o")
        assert quiet.problems == []
    finally:
        CHECK_FILES.reset(token)


def test_the_same_value_gets_the_same_verdict_as_a_config_key_and_as_an_option():
    """A number where text is expected is text in both places; an empty string is refused in both."""
    cfg = parse_config({"targets": [_group(fabric=2024, options={"hw_counters_from": "rdma"})]})
    assert cfg.targets[0].fabric == "2024"
    problems = _problems({"targets": [_group(fabric="", options={"hw_counters_from": ""})]})
    assert problems == ["targets[0].fabric: expected a non-empty string, got ''",
                        "targets[0].options.hw_counters_from: expected a non-empty string, got ''"]


def test_config_counts_keep_their_minimum_of_one():
    """The config's counts said minimum 1 implicitly before the validators merged (options said 0):
    they say it explicitly now, so 0 is still refused and every config valid before stays valid."""
    problems = _problems({"limits": {"max_concurrent_polls": 0, "per_transport": {"ssh": 0, "snmp": 1}},
                          "credentials": {"s": {"type": "ssh", "username": "u", "password": "env:P", "max_sessions": 0}},
                          "targets": [_group()]})
    assert problems == ["limits.per_transport.ssh: expected an integer between 1 and 100000, got 0",
                        "limits.max_concurrent_polls: expected an integer between 1 and 100000, got 0",
                        "credentials.s.max_sessions: expected an integer between 1 and 64, got 0"]
    cfg = parse_config({"limits": {"max_concurrent_polls": 1, "per_transport": {"ssh": 1}},
                        "credentials": {"s": {"type": "ssh", "username": "u", "password": "env:P", "max_sessions": 1}},
                        "targets": [_group()]})
    assert cfg.limits.max_concurrent_polls == 1 and cfg.credentials["s"].max_sessions == 1


def test_jitter_output_limit_and_host_ports_are_typed_reads_with_the_rules_messages():
    """Keys once checked by hand in the loader: now the number, size and integer rules, same texts."""
    problems = _problems({"defaults": {"jitter": 0.9}, "limits": {"max_output_bytes": "16MB"},
                          "targets": [_group(hosts=[{"name": "h1", "port": 0}, {"name": "h2", "port": "22"}])]})
    assert problems == ["defaults.jitter: must be between 0 and 0.5, got 0.9",
                        "limits.max_output_bytes: expected a size between 64KiB and 4GiB (bytes, or e.g. '32MiB'), "
                        "got '16MB'",
                        "targets[0].hosts[0].port: expected an integer between 1 and 65535, got 0",
                        "targets[0].hosts[1].port: expected an integer between 1 and 65535, got '22'"]
    cfg = parse_config({"defaults": {"jitter": 0.5}, "limits": {"max_output_bytes": "64KiB"},
                        "targets": [_group(hosts=[{"name": "h1", "port": 65535}, {"name": "h2"}])]})
    assert (cfg.defaults.jitter, cfg.limits.max_output_bytes) == (0.5, 64 << 10)
    assert [h.port for h in cfg.targets[0].hosts] == [65535, None]


def test_unknown_keys_name_the_closest_known_one():
    v = Validator()
    v.mapping({"intervall": "1s", "zzz": 1}, "defaults", {"interval", "timeout"}, {"timeout"})
    assert v.problems == ["defaults.intervall: unknown key (did you mean 'interval'?)", "defaults.zzz: unknown key",
                          "defaults.timeout: required key is missing"]


def test_option_reader_reports_what_nobody_read_and_hands_out_raw_values():
    found: list[str] = []
    r = OptionReader({"a": 1, "pair": [1, 2], "typo": True}, "targets[0].options", lambda p, m: found.append(f"{p}: {m}"))
    assert r.integer("a", 0) == 1 and r.value("pair") == [1, 2] and r.value("absent", "d") == "d"
    r.done()
    assert found == ["targets[0].options.typo: unknown option"]


def test_the_option_reader_call_interface_collectors_use_is_kept():
    """Collectors (and plugins) call these; their names and parameters are a public interface."""
    expected = {
        "__init__": ["raw", "path", "err", "base_dir"],
        "string": ["key", "default", "choices"],
        "integer": ["key", "default", "minimum", "maximum"],
        "number": ["key", "default", "minimum", "maximum"],
        "boolean": ["key", "default"],
        "duration": ["key", "default", "within"],
        "string_list": ["key", "default", "choices"],
        "regex": ["key"],
        "path": ["key", "must_exist", "directory"],
        "mapping": ["key"],
        "done": [],
    }
    for name, params in expected.items():
        assert list(inspect.signature(getattr(OptionReader, name)).parameters)[1:] == params, name
    assert inspect.signature(OptionReader.integer).parameters["minimum"].default == 0


def test_the_loader_must_be_told_the_collectors():
    with pytest.raises(TypeError, match="options_parsers"):
        config_loader.parse_config({"targets": []})
    with pytest.raises(TypeError, match="options_parsers"):
        config_loader.parse_config({"targets": []}, options_parsers=None)
    problems = []
    try:
        config_loader.parse_config({"targets": [_group()]}, options_parsers={})
    except ConfigError as e:
        problems = e.problems
    assert problems == ["targets[0].collector: unknown collector 'roce_nic' (known: none)"]
    cfg = config_loader.parse_config({"targets": [_group()]}, options_parsers=registry())
    assert cfg.targets[0].collector == "roce_nic"
