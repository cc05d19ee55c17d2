"""The same collector over SSH: a real sshd on 127.0.0.1 whose sessions find wrapper scripts named
ibqueryerrors/ibnetdiscover/perfquery first on PATH (SetEnv PATH=...). Each wrapper runs the real
tool with ibsim's preload and the fabric's socket name, so the remote side is exactly a management
node with infiniband-diags installed. The SSH poll must publish what the local poll publishes."""

from __future__ import annotations

import shutil

import pytest

from tests.harness import paths
from tests.harness.scripts import write_sh as _exe
from tests.harness.sshd import SSHD

from tests.harness.infiniband import CollectorHarness, group_for, index, needs_ibsim, values

pytestmark = [needs_ibsim, pytest.mark.skipif(shutil.which("sshd") is None and not shutil.os.path.exists("/usr/sbin/sshd"),
                                              reason="openssh-server not installed")]


@pytest.fixture(scope="module")
def remote(fabric, tmp_path_factory):
    bin_dir = tmp_path_factory.mktemp("ib-remote-bin")
    env = fabric.env()
    for tool in ("ibqueryerrors", "ibnetdiscover", "perfquery"):
        real = shutil.which(tool)
        _exe(bin_dir / tool, f'exec env LD_PRELOAD={env["LD_PRELOAD"]} IBSIM_SOCKNAME={env["IBSIM_SOCKNAME"]} {real} "$@"')
    # Stands in for `sudo -n` (command_prefix): runs the rest of its arguments.
    _exe(bin_dir / "fake-sudo", '[ "$1" = -n ] && shift\nexec "$@"')
    fabric.set_counter("leaf-02", 4, "SymbolErrorCounter", 7)
    fabric.set_counter("leaf-02", 4, "PortXmitWait", 123456)
    with SSHD(tmp_path_factory.mktemp("ib-sshd"), path_dirs=[bin_dir]) as sshd:
        yield sshd


def _ssh_group(sshd, **options):
    return group_for(options, transport="ssh", host=f"127.0.0.1:{sshd.port}", credentials=sshd.credential())


@pytest.fixture(autouse=True)
def _close_while_sshd_is_up():
    """Close this test's collectors (removing their discovery cache over SSH) before sshd stops."""
    yield
    while CollectorHarness.open_harnesses:
        CollectorHarness.open_harnesses.pop().close()


STABLE = ("fabric_ib_symbol_error_total", "fabric_ib_port_transmit_wait_total", "fabric_ib_port_state_id",
          "fabric_ib_port_physical_state_id", "fabric_ib_port_active_width_lanes", "fabric_ib_port_degraded",
          "fabric_ib_port_rate_bytes_per_second", "fabric_ib_port_latched", "fabric_ib_port_info",
          "fabric_ib_node_info", "fabric_ib_link_downed_total", "fabric_ib_port_receive_errors_total")


def _stable(result):
    # Data counters move with every MAD the tools send, so compare everything else.
    return sorted((s.name, tuple(sorted(s.labels.items())), s.value) for s in result.samples if s.name in STABLE)


def test_ssh_poll_publishes_what_the_local_poll_publishes(fabric, remote):
    over_ssh = CollectorHarness(_ssh_group(remote)).poll()
    local = CollectorHarness(group_for({"env": fabric.env()})).poll()
    assert over_ssh.problems == [] and local.problems == []
    assert _stable(over_ssh) == _stable(local)
    assert values(over_ssh, "fabric_ib_symbol_error_total")[("leaf-02", "4")] == 7
    labels = index(over_ssh)[("fabric_ib_port_transmit_wait_total", "leaf-02", "4")]
    assert labels["value"] == 123456
    assert (labels["labels"]["peer_node_name"], labels["labels"]["peer_port"]) == ("spine-02", "2")


def test_ssh_with_command_prefix_and_tool_paths(remote, tmp_path):
    group = _ssh_group(remote, command_prefix=["fake-sudo", "-n"], tool_paths={"ibqueryerrors": "ibqueryerrors"},
                       qp1_dropped=True, max_concurrency=3)
    result = CollectorHarness(group).poll()
    assert result.problems == []
    assert values(result, "fabric_ib_symbol_error_total")[("leaf-02", "4")] == 7
    assert values(result, "fabric_ib_qp1_dropped_total")[("leaf-02", "4")] == 0


def test_ssh_ibdiagnet_files(remote, tmp_path):
    from pathlib import Path

    fixtures = paths.FIXTURES / "infiniband"
    run_dir = tmp_path / "ibdiagnet2" / "2026-11-30"
    run_dir.mkdir(parents=True)
    shutil.copy(fixtures / "ibdiagnet2.db_csv", run_dir / "ibdiagnet2.db_csv")
    # a .pm beside a db_csv with PM_INFO is not read at all (skip_pm): even a broken one costs nothing
    (run_dir / "ibdiagnet2.pm").write_text((fixtures / "ibdiagnet2.pm").read_text() + "port_xmit_wait=0xZZ\n")
    result = CollectorHarness(_ssh_group(remote, ibdiagnet_dir=str(tmp_path / "ibdiagnet2"))).poll()
    assert result.problems == []
    ages = {s.labels["file"]: s.value for s in result.samples if s.name == "fabric_ib_ibdiagnet_file_age_seconds"}
    assert set(ages) == {"ibdiagnet2.db_csv"} and all(0 <= a < 60 for a in ages.values())
    latched = {s.labels["port"]: s.value for s in result.samples if s.name == "fabric_ib_ibdiagnet_port_latched"
               and s.labels["node_guid"] == "0x9c0591030090e1a0"}
    assert latched == {"2": 1.0}  # port_rcv_data at 2^32-1 with no 64-bit twin
    pm = {(s.labels["port"], s.labels["counter"]): s.value for s in result.samples
          if s.name == "fabric_ib_ibdiagnet_pm_counter" and s.labels["node_guid"] == "0x9c0591030090e1a0"}
    assert pm[("2", "port_xmit_wait")] == 0x11FF6B726  # from PM_INFO (db_csv wins over .pm)
    assert ("2", "qp1_dropped") not in pm  # -1: unsupported, not published
    assert pm[("2", "port_xmit_data_bytes")] == 13723100472336 * 4  # the 64-bit twin, in bytes
    assert ("2", "port_xmit_data") not in pm and ("2", "port_xmit_data_extended") not in pm
    temps = [s.value for s in result.samples if s.name == "fabric_ib_ibdiagnet_cable_temperature_celsius"]
    assert temps == [38.0]
