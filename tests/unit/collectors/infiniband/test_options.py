"""Options of the infiniband collector: the example configs load, defaults are safe, bad values are
reported with their key paths, and the tools' argument lists come out as documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric_exporter.collectors.base import PollContext
from fabric_exporter.collectors.infiniband import InfinibandCollector, InfinibandOptions
from fabric_exporter.config import ConfigError

from tests.harness import paths
from tests.harness.configs import parse_config
from fabric_exporter.transport.factory import Transports

from tests.conftest import EXAMPLES, load_example
from tests.harness.infiniband import group_for

def load(name: str, tmp_path: Path):
    return load_example(name, tmp_path, base_dir=EXAMPLES)


def test_local_example(tmp_path):
    (group,) = load("infiniband-local.yaml", tmp_path).targets
    o = group.options
    assert group.transport == "local" and group.collector == "infiniband"
    assert o.node_name_map == str(EXAMPLES / "infiniband" / "node-name-map.txt")
    assert not o.reset_latched_counters and o.use_discovery_cache and o.topology_interval == 600
    assert o.forget_missing_after == 3600


def test_ssh_example(tmp_path):
    (group,) = load("infiniband-ssh.yaml", tmp_path).targets
    o = group.options
    assert group.transport == "ssh" and group.hosts[0].address == "10.10.0.5"
    assert o.command_prefix == ("sudo", "-n") and o.tool("perfquery") == "/usr/sbin/perfquery"
    assert o.ibdiagnet_dir == "/var/tmp/ibdiagnet2"
    assert o.use_discovery_cache and o.discovery_cache_path == "/var/tmp/fabric-exporter-ib0.cache"


def test_defaults_never_reset_and_stay_cheap():
    o = group_for({}).options
    assert o == InfinibandOptions()
    assert not o.reset_latched_counters and not o.qp1_dropped and not o.read_tick_multiplier
    assert not o.error_details and o.error_details_max_ports == 32  # one perfquery per erroring port: opt-in
    assert o.max_concurrency <= 7  # ibsim refuses 8 clients; SMs dislike MAD floods


@pytest.mark.parametrize("options, where", [
    ({"reset_latched_counters": "yes"}, "options.reset_latched_counters"),
    ({"max_concurrency": 8}, "options.max_concurrency"),
    ({"tool_paths": {"ibstat": "/x"}}, "options.tool_paths.ibstat"),
    ({"env": {"1BAD": "x"}}, "options.env.1BAD"),
    ({"node_name_map": "/nonexistent/map"}, "options.node_name_map"),
    ({"topology_interval": 600}, "options.topology_interval"),
    ({"command_prefix": "sudo -n"}, "options.command_prefix"),
    ({"typo_option": 1}, "options.typo_option"),
    ({"error_details": "on"}, "options.error_details"),
    ({"error_details_max_ports": 0}, "options.error_details_max_ports"),
])
def test_bad_options_are_reported_with_their_path(options, where):
    with pytest.raises(ConfigError) as e:
        group_for(options)
    assert any(where in p for p in e.value.problems), e.value.problems


def test_tick_multiplier_is_refused_on_a_simulated_fabric():
    """perfquery -c (PortSamplesControl) makes ibsim's opensm segfault: a config that would send it
    through libumad2sim is refused, naming the option and why; a real fabric may turn it on."""
    from fabric_exporter.lab.ibsim import tool_env

    with pytest.raises(ConfigError) as e:
        group_for({"env": tool_env("lab"), "read_tick_multiplier": True})
    assert any("options.read_tick_multiplier" in p and "ibsim" in p for p in e.value.problems), e.value.problems
    assert group_for({"env": tool_env("lab")}).options.read_tick_multiplier is False
    assert group_for({"read_tick_multiplier": True}).options.read_tick_multiplier is True
    # a perfquery of one's own (the tests' stand-in that answers -c itself) is not ibsim's
    assert group_for({"env": tool_env("lab"), "read_tick_multiplier": True,
                   "tool_paths": {"perfquery": "/opt/fake/perfquery"}}).options.read_tick_multiplier is True


def test_unreadable_node_name_map_is_a_config_error(tmp_path):
    bad = tmp_path / "map"
    bad.write_text("not-a-guid name\n")
    with pytest.raises(ConfigError, match="node_name_map"):
        group_for({"node_name_map": str(bad)})


def test_argv_prefix_env_and_tool_options():
    group = group_for({"command_prefix": ["sudo", "-n"], "env": {"IBSIM_SOCKNAME": "lab"}, "ca": "mlx5_1", "ca_port": 2,
                    "mad_timeout_ms": 250, "tool_paths": {"ibqueryerrors": "/opt/ib/ibqueryerrors"}})
    c = InfinibandCollector(PollContext(group, group.hosts[0], Transports()))
    assert c.tools.argv("ibqueryerrors", "--counters") == [
        "sudo", "-n", "env", "IBSIM_SOCKNAME=lab", "/opt/ib/ibqueryerrors", "-C", "mlx5_1", "-P", "2", "-t", "250",
        "--counters"]
    assert c.tools.argv("ibnetdiscover")[-7:] == ["ibnetdiscover", "-C", "mlx5_1", "-P", "2", "-t", "250"]
    import os
    import socket

    assert c.discovery_cache_path() == (f"/tmp/fabric-exporter-ib-{socket.gethostname()}-{os.getpid()}-ib-localhost"
                               ".ibnetdiscover-cache")
    skip = InfinibandCollector(PollContext(group_for({"skip_sl": True}), group_for({}).hosts[0], Transports()))
    assert skip.tools.argv("ibqueryerrors", "--counters") == ["ibqueryerrors", "--skip-sl", "--counters"]
    assert skip.tools.argv("perfquery", "-c") == ["perfquery", "-c"]


@pytest.mark.parametrize("name", ["infiniband-local.yaml", "infiniband-ssh.yaml"])
def test_examples_pass_check_config_as_shipped(name):
    import subprocess
    import sys

    env_path = str(paths.ROOT / "exporter")
    out = subprocess.run([sys.executable, "-m", "fabric_exporter", "check-config", "--config", str(EXAMPLES / name)],
                         capture_output=True, text=True, timeout=60, env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "collector=infiniband" in out.stdout


def test_one_fabric_swept_twice_is_refused():
    sweep = {"fabric": "ib0", "collector": "infiniband", "transport": "local"}
    with pytest.raises(ConfigError) as e:
        parse_config({"targets": [{"name": "sm-a", **sweep}, {"name": "sm-b", **sweep}]})
    assert e.value.problems == [
        "targets[1]: fabric 'ib0' is already swept by targets[0] (sm-a, host localhost): every port would be "
        "published twice; sweep each fabric from one node, or give each its own fabric label"]
    parse_config({"targets": [{"name": "sm-a", **sweep}, {"name": "sm-b", **sweep, "fabric": "ib1"}]})
