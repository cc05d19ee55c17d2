"""The shipped example configs load (with this machine's paths for the key files) and the
collector's options in them are the documented ones."""

from __future__ import annotations

from pathlib import Path

from fabric_exporter.collectors.roce_nic import RoceNicOptions

from tests.conftest import load_example


def load(name: str, tmp_path: Path):
    (tmp_path / "gpu-hosts.yaml").write_text("- gpu-001\n- {name: gpu-002, address: 10.0.0.2}\n")
    return load_example(name, tmp_path)


def test_ssh_example(tmp_path):
    cfg = load("roce-nic-ssh.yaml", tmp_path)
    first, second = cfg.targets
    assert first.collector == "roce_nic" and first.transport == "ssh" and len(first.hosts) == 2
    assert first.options == RoceNicOptions()  # the example spells out the defaults
    assert [(h.name, h.address, h.port) for h in second.hosts] == [
        ("gpu-001", "10.20.0.11", None), ("gpu-002", "10.20.0.12", 2222)]
    assert not first.credentials.insecure_ignore_host_key


def test_local_example(tmp_path):
    cfg = load("roce-nic-local.yaml", tmp_path)
    (group,) = cfg.targets
    assert group.transport == "local" and group.hosts[0].name == "gpu-017"
    o = group.options.burst
    assert o is not None and o.window == 0.1 and o.priority == 3 and "pfc_rx_pause_time" in o.signals
