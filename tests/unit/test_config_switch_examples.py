"""The shipped switch examples are complete configs that check-config accepts; option typos fail."""

from __future__ import annotations


import pytest

from fabric_exporter.config import ConfigError

from tests.harness import paths
from tests.harness.configs import load_config, parse_config

EXAMPLES = paths.EXAMPLES


@pytest.mark.parametrize("name", ["roce-switches-snmp.yaml", "sonic-cli.yaml", "gnmi-switches.yaml"])
def test_example_loads(name):
    cfg = load_config(EXAMPLES / name)
    assert cfg.targets and all(g.collector in ("snmp_switch", "switch_cli", "gnmi_switch") for g in cfg.targets)


def test_snmp_options_are_checked(tmp_path):
    (tmp_path / "c").write_text("x\n")
    raw = {"credentials": {"c": {"type": "snmp", "version": "2c", "community_file": str(tmp_path / "c")}},
           "targets": [{"name": "s", "fabric": "f", "collector": "snmp_switch", "transport": "snmp",
                        "credentials": "c", "hosts": ["sw1"],
                        "options": {"modules": ["if_mib", "cisco_pfx"], "max_repetitons": 10,
                                    "interface_include": "Ethernet(", "snmp_timeout": 2}}]}
    with pytest.raises(ConfigError) as e:
        parse_config(raw)
    text = "\n".join(e.value.problems)
    assert "targets[0].options.modules[1]: unknown value 'cisco_pfx'" in text
    assert "targets[0].options.max_repetitons: unknown option" in text
    assert "targets[0].options.interface_include: invalid regular expression" in text
    assert "targets[0].options.snmp_timeout" in text
