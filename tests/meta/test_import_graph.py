"""The daemon apart from its tooling: ``run`` and ``once`` never import lab/, mixin/, deploy_k8s or
grafanalib; those load only when their own command runs. Each check is a fresh interpreter, so
nothing another test imported can hide an import."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

TOOLING = ("fabric_exporter.lab", "fabric_exporter.mixin", "fabric_exporter.deploy_k8s", "fabric_exporter.report",
           "grafanalib")

PROBE = r"""
import json, sys
from fabric_exporter.cli import build_parser
args = build_parser().parse_args(sys.argv[1:])
import fabric_exporter.daemon, fabric_exporter.scheduler, fabric_exporter.serving.selfmetrics
from fabric_exporter.collectors import registry
dict(registry())  # every collector imported
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(*argv: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.pop("FABRIC_EXPORTER_PLUGINS", None)
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def _tooling(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == t or m.startswith(t + ".") for t in TOOLING)]


@pytest.mark.parametrize("argv", [["run", "--config", "x.yaml"], ["once", "--config", "x.yaml"],
                                  ["check-config", "--config", "x.yaml"]])
def test_daemon_commands_import_no_tooling(argv):
    modules = _modules_after(*argv)
    assert "fabric_exporter.daemon" in modules and "fabric_exporter.collectors.infiniband" in modules  # probe works
    assert _tooling(modules) == []


def test_the_lab_command_still_has_all_its_arguments():
    """Its arguments are added when ``lab`` is parsed; ``lab --help`` shows them."""
    from fabric_exporter.cli import build_parser

    args = build_parser().parse_args(["lab", "--racks", "3", "--no-prometheus", "--duration", "5"])
    assert (args.command, args.racks, args.no_prometheus, args.duration) == ("lab", 3, True, 5.0)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-m", "fabric_exporter", "lab", "--help"], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "--scenario" in out.stdout and "--hosts-per-rack" in out.stdout
    with pytest.raises(SystemExit):
        build_parser().parse_args(["lab", "--no-such-option"])


LOCAL_DAEMON = r"""
import json, sys
import fabric_exporter.daemon
from fabric_exporter.collectors import registry
from fabric_exporter.config.loader import parse_config
from fabric_exporter.transport.factory import Transports
cfg = parse_config({"targets": [{"name": c, "fabric": c, "collector": c, "transport": "local", "interval": "30s",
                                 "hosts": [{"name": "h", "address": "localhost"}]} for c in ("infiniband", "roce_nic")]},
                   options_parsers=registry())
transports = Transports()
transports.runner(cfg.targets[0], cfg.targets[0].hosts[0])
print(json.dumps(sorted(sys.modules)))
"""


def test_a_local_only_daemon_imports_neither_ssh_nor_snmp():
    """A DaemonSet pod (infiniband + roce_nic on transport local) loads no asyncssh, pysnmp or the
    collectors it does not run: they are imported when a config first uses them."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.pop("FABRIC_EXPORTER_PLUGINS", None)
    out = subprocess.run([sys.executable, "-c", LOCAL_DAEMON], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    modules = json.loads(out.stdout)
    assert "fabric_exporter.collectors.roce_nic" in modules
    loaded = [m for m in ("asyncssh", "pysnmp", "fabric_exporter.transport.ssh", "fabric_exporter.transport.snmp",
                          "fabric_exporter.collectors.snmp_switch", "fabric_exporter.collectors.latency_probe")
              if m in modules]
    assert loaded == []


def test_ssh_is_loaded_when_the_config_is_applied_not_inside_the_first_poll():
    code = r"""
import asyncio, sys
from fabric_exporter.collectors import registry
from fabric_exporter.config.loader import parse_config
from fabric_exporter.scheduler import Scheduler
from fabric_exporter.serving.store import SnapshotStore
from fabric_exporter.transport.factory import Transports
cfg = parse_config({"credentials": {"c": {"type": "ssh", "username": "u", "private_key_file": "/dev/null"}},
                    "targets": [{"name": "g", "fabric": "f", "collector": "roce_nic", "transport": "ssh",
                                 "credentials": "c", "interval": "30s", "hosts": [{"name": "h", "address": "127.0.0.1"}]}]},
                   options_parsers=registry())
async def main():
    sched = Scheduler(Transports(), SnapshotStore())
    before = "asyncssh" in sys.modules
    sched.apply(cfg, start_tasks=False)
    print(before, "asyncssh" in sys.modules)
asyncio.run(main())
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True"]
