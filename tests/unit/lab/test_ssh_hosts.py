"""The lab's in-process SSH server (used by the benchmark and a later ``fabric-exporter lab``)
answers the collector exactly like a real host running the script (see test_ssh for the latter)."""

from __future__ import annotations

import pytest

from fabric_exporter.lab.roce_host import RoceHost, answer, serve
from fabric_exporter.lab.ssh_hosts import known_hosts_lines, write_key_files

from tests.harness.roce_nic import group, run
from tests.harness.polling import Poller, one


def test_answer_understands_the_collectors_command():
    host = RoceHost.build("gpu-001", "mlx5", nics=2)
    from fabric_exporter.collectors.roce_nic import REMOTE_SCRIPT
    import shlex

    command = shlex.join(["timeout", "-k", "2", "9", "sh", "-c", REMOTE_SCRIPT, "fabric-roce", "sysfs", "1", "all",
                          "mlx5_1"])
    status, out, err = answer(host, command)
    assert status == 0 and out == host.render_dump(("mlx5_1",))
    status, mapped, err = answer(host, command.replace(" all ", " mapped "))
    assert status == 0 and mapped == host.render_dump(("mlx5_1",), counters="mapped") != out
    assert "@@dropped hw_counters mlx5_1 1 " in mapped and "@@device mlx5_0" not in mapped
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
            return await poller.poll(by_host=True)
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


def test_a_lab_host_streams_the_real_burst_probe_over_its_in_place_counter_files(tmp_path):
    """The lab's burst path: SimulatedHosts hands the probe's command to a streamer, which runs the
    probe as sent on the host's CounterFiles; updates written in place reach the probe's kept-open
    descriptors (a rename would not), and closing the channel ends the probe process."""
    import asyncio
    import os
    import shlex

    import asyncssh

    from fabric_exporter.collectors.burst import PROBE_SOURCE
    from fabric_exporter.lab.roce_host import CounterFiles, burst_probe_argv
    from fabric_exporter.lab.ssh_hosts import SimulatedHosts

    host = RoceHost.build("gpu-001", "mlx5", nics=1)
    files = CounterFiles(host, tmp_path / "gpu-001")
    pause = host.ports[0].ethtool
    cnp = host.ports[0].hw_counters
    inode = os.stat(files.ethtool_dir / "ens1f0np0").st_ino

    async def not_found(name, argv):
        return 127, "", "not found\n"

    async def scenario():
        server = SimulatedHosts(tmp_path / "ssh", not_found,
                                streamer=lambda name, argv: burst_probe_argv(files, argv, PROBE_SOURCE))
        ports = await server.start(["gpu-001"])
        conn = await asyncssh.connect("127.0.0.1", ports["gpu-001"], username="lab", client_keys=[str(server.client_key)],
                                      known_hosts=str(server.known_hosts))
        try:
            argv = ["python3", "-c", PROBE_SOURCE, "fabric-burst", "50", "hw/mlx5_0/1/np_cnp_sent",
                    "eth/ens1f0np0/rx_prio3_pause_duration"]
            # another python3 -c is not the exporter's probe: a normal (refused) answer
            other = await conn.run(shlex.join(["python3", "-c", "print(1)", "fabric-burst", "50", "hw/x/1/y"]))
            assert other.exit_status == 127
            process = await conn.create_process(shlex.join(argv), stdin=asyncssh.DEVNULL)
            text = ""
            async with asyncio.timeout(20):
                while text.count("\nw ") < 2:  # header and two windows before any change
                    text += await process.stdout.read(4096)
                cnp["np_cnp_sent"] += 7
                pause["rx_prio3_pause_duration"] += 12345
                files.update()
                while " 0:7" not in text or " 1:12345" not in text:
                    chunk = await process.stdout.read(4096)
                    assert chunk, text
                    text += chunk
            assert text.startswith("@@fabric-burst 1 50000 2 ")
            assert len(server._streams) == 1  # noqa: SLF001
            process.close()
            async with asyncio.timeout(10):
                while server._streams:  # noqa: SLF001 - the probe process is gone when the channel closes
                    await asyncio.sleep(0.05)
        finally:
            conn.close()
            await server.stop()

    asyncio.run(scenario())
    assert os.stat(files.ethtool_dir / "ens1f0np0").st_ino == inode  # rewritten in place, never renamed
    files.close()
