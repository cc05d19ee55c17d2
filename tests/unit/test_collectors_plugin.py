"""A collector from outside this repository needs only what docs/adding-a-collector.md says: one
module (the Collector subclass and its MetricSpec list) and two entry points in its own package's
metadata. Nothing in fabric_exporter is edited; the real CLI (check-config, catalog, once) and
the real daemon path (registry, scheduler, store, catalog check) find it.

The plugin is "installed" the way pip installs it: a module and a ``*.dist-info`` directory with
``entry_points.txt`` on the interpreter's path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from fabric_exporter.collectors import registry
from tests.harness import paths

ROOT = paths.ROOT
DOC = ROOT / "docs" / "adding-a-collector.md"

PLUGIN = '''
"""acme_link: link flaps per port, read from a command printing '<port> <flaps>' lines."""

from dataclasses import dataclass

from fabric_exporter.catalog.spec import MetricSpec
from fabric_exporter.collectors import Collector
from fabric_exporter.collectors.options import OptionReader
from fabric_exporter.errors import CommandError, ParseError
from fabric_exporter.samples import PollResult, Sample


METRICS = [
    MetricSpec("fabric_acme_link_flaps_total", "counter", "", "Link flaps per port (acme 'show flaps').",
               (("fabric", "host", "port"),), ("acme_link",)),
]


@dataclass(frozen=True)
class Options:
    command: tuple


class AcmeLinkCollector(Collector):
    name = "acme_link"
    transports = ("local", "ssh")

    @classmethod
    def parse_options(cls, raw, path, err, *, base_dir=None):
        r = OptionReader(raw, path, err)
        command = r.string_list("command", ("acme-show-flaps",))
        r.done()
        return Options(command)

    async def poll(self):
        result = await self.ctx.runner().run(list(self.options.command), timeout=self.ctx.remaining())
        if result.exit_status != 0:
            raise CommandError(result.describe_failure())
        samples = []
        for line in result.stdout.splitlines():
            port, _, flaps = line.partition(" ")
            if not flaps.isdigit():
                raise ParseError(f"expected '<port> <flaps>', got {line!r}")
            samples.append(Sample("fabric_acme_link_flaps_total", {"host": self.host.name, "port": port}, int(flaps)))
        return PollResult(samples)
'''

ENTRY_POINTS = """
[fabric_exporter.collectors]
acme_link = acme_link_plugin:AcmeLinkCollector

[fabric_exporter.metrics]
acme_link = acme_link_plugin:METRICS
"""


def install_plugin(site: Path) -> None:
    site.mkdir(parents=True, exist_ok=True)
    (site / "acme_link_plugin.py").write_text(PLUGIN)
    dist = site / "acme_link_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-link-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS)


def cli(site: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "exporter"), str(ROOT)])}
    env.pop("FABRIC_EXPORTER_PLUGINS", None)
    return subprocess.run([sys.executable, "-m", "fabric_exporter", *argv], capture_output=True, text=True,
                          timeout=120, env=env)


def test_the_doc_describes_the_plugin_route():
    text = DOC.read_text()
    for needed in ("fabric_exporter.collectors", "fabric_exporter.metrics", "MetricSpec", "ctx.remaining()",
                   "parse_options", "docs/collectors/"):
        assert needed in text, needed


def test_an_installed_plugin_collector_works_with_no_edit_to_the_exporter(tmp_path):
    site = tmp_path / "site"
    install_plugin(site)
    flaps = tmp_path / "flaps.txt"
    flaps.write_text("1/1 3\n1/2 0\n")
    config = tmp_path / "fabric.yaml"
    config.write_text(yaml.safe_dump({"targets": [
        {"name": "acme", "fabric": "lab", "collector": "acme_link", "transport": "local", "interval": "30s",
         "hosts": [{"name": "sw1", "address": "localhost"}], "options": {"command": ["cat", str(flaps)]}}]}))

    checked = cli(site, "check-config", "--config", str(config))
    assert checked.returncode == 0, checked.stderr

    listed = cli(site, "catalog", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    spec = next(m for m in json.loads(listed.stdout) if m["name"] == "fabric_acme_link_flaps_total")
    assert spec["sources"] == ["acme_link"]

    once = cli(site, "once", "--config", str(config))
    assert once.returncode == 0, once.stderr
    assert "# TYPE fabric_acme_link_flaps_total counter\n" in once.stdout
    assert 'fabric_acme_link_flaps_total{fabric="lab",host="sw1",port="1/1"} 3.0\n' in once.stdout
    assert 'fabric_up{collector="acme_link",fabric="lab",group="acme",host="sw1"} 1.0\n' in once.stdout

    # Its options are validated by its own parse_options, with the key path.
    config.write_text(yaml.safe_dump({"targets": [
        {"name": "acme", "fabric": "lab", "collector": "acme_link", "transport": "local", "interval": "30s",
         "hosts": [{"name": "sw1", "address": "localhost"}], "options": {"comand": ["x"]}}]}))
    bad = cli(site, "check-config", "--config", str(config))
    assert bad.returncode == 1 and "targets[0].options.comand" in bad.stderr, bad.stderr


def test_without_the_plugin_the_collector_is_unknown(tmp_path):
    config = tmp_path / "fabric.yaml"
    config.write_text(yaml.safe_dump({"targets": [
        {"name": "acme", "fabric": "lab", "collector": "acme_link", "transport": "local", "interval": "30s",
         "hosts": [{"name": "sw1", "address": "localhost"}]}]}))
    out = cli(tmp_path / "empty-site", "check-config", "--config", str(config))
    assert out.returncode == 1 and "unknown collector 'acme_link'" in out.stderr, out.stderr


def test_a_builtin_collector_is_found_by_its_module_alone(tmp_path, monkeypatch):
    """collectors/<name>.py defining a Collector with that name is registered: no list to edit."""
    import fabric_exporter.collectors as collectors_pkg

    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "acme_builtin.py").write_text(textwrap.dedent('''
        from fabric_exporter.collectors.base import Collector

        class AcmeBuiltin(Collector):
            name = "acme_builtin"
            transports = ("local",)

            async def poll(self):
                raise NotImplementedError
    '''))
    monkeypatch.setattr(collectors_pkg, "__path__", [*collectors_pkg.__path__, str(extra)])
    try:
        found = registry()
        assert found["acme_builtin"].__name__ == "AcmeBuiltin"
        assert "base" not in found and "options" not in found  # helper modules are not collectors
        assert {"infiniband", "roce_nic", "snmp_switch", "switch_cli", "latency_probe"} <= set(found)
    finally:
        sys.modules.pop("fabric_exporter.collectors.acme_builtin", None)


def test_the_registry_imports_only_the_collectors_asked_for():
    code = ("import sys; from fabric_exporter.collectors import registry; r = registry(); r['roce_nic']; "
            "print(sorted({'.'.join(m.split('.')[:3]) for m in sys.modules if m.startswith('fabric_exporter.collectors.')}), "
            "'pysnmp' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "exporter"), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("['fabric_exporter.collectors.base', 'fabric_exporter.collectors.options', "
                                  "'fabric_exporter.collectors.roce_nic'] False")


BUILTIN = sorted(n for n, c in registry().items() if c.__module__.startswith("fabric_exporter.collectors."))


@pytest.mark.parametrize("name", BUILTIN)
def test_every_builtin_collector_has_its_doc_and_catalog_entries(name):
    from fabric_exporter.catalog import families_for

    assert (ROOT / "docs" / "collectors" / f"{name}.md").exists(), f"docs/collectors/{name}.md"
    assert families_for(name), f"no catalog metric lists {name!r} in its sources"
