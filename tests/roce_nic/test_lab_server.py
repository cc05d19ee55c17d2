"""The lab's in-process SSH server (used by the benchmark and a later ``fabric-exporter lab``)
answers the collector exactly like a real host running the script (see test_ssh for the latter)."""

from __future__ import annotations

import pytest

from fabric_exporter.lab.roce_host import RoceHost, answer, serve
from fabric_exporter.lab.ssh_hosts import known_hosts_lines, write_key_files

from .conftest import Poller, group, one, run


def test_answer_understands_the_collectors_command():
    host = RoceHost.build("gpu-001", "mlx5", nics=2)
    from fabric_exporter.collectors.roce_nic import REMOTE_SCRIPT
    import shlex

    command = shlex.join(["timeout", "-k", "2", "9", "sh", "-c", REMOTE_SCRIPT, "fabric-roce", "sysfs", "1", "mlx5_1"])
    status, out, err = answer(host, command)
    assert status == 0 and out == host.render_dump(("mlx5_1",))
    assert answer(host, "timeout -k 2 5 true") == (0, "", "")
    assert answer(host, "ls /")[0] == 127


def test_polls_against_the_lab_server(tmp_path):
    hosts = [RoceHost.build(f"gpu-{i:03d}", vendor, nics=2, seed=i) for i, vendor in enumerate(("mlx5", "bnxt"), 1)]
    for h in hosts:
        h.advance(20)
    host_key, client_key, authorized = write_key_files(tmp_path)

    async def scenario():
        ports, server = await serve(hosts, str(host_key), str(authorized))
        (tmp_path / "known_hosts").write_text(known_hosts_lines(host_key, ports.values()))
        cred = {"type": "ssh", "username": "lab", "private_key_file": str(client_key),
                "known_hosts_file": str(tmp_path / "known_hosts"), "connect_timeout": "5s"}
        poller = Poller({"credentials": {"lab": cred}, "targets": [group("gpu", [
            {"name": name, "address": "127.0.0.1", "port": port} for name, port in ports.items()])]})
        try:
            return await poller.poll()
        finally:
            await poller.close()
            await server.stop()

    states, samples = run(scenario())
    assert {h: s.state for h, s in states.items()} == {"gpu-001": "ok", "gpu-002": "ok"}
    mlx, bnxt = hosts
    p = mlx.port("mlx5_1")
    assert one(samples, "fabric_roce_nic_cnp_handled_total", host="gpu-001", device="mlx5_1") == p.hw_counters["rp_cnp_handled"]
    q = bnxt.port("bnxt_re0")
    assert one(samples, "fabric_roce_nic_pfc_rx_pause_seconds_total", host="gpu-002", device="bnxt_re0",
               priority="3") == pytest.approx(q.ethtool["pfc_pri3_rx_duration_us"] / 1e6)
