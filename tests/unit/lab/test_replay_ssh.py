"""The bench's SSH replay server (lab/replay_ssh.py) against the real path: hosts answered from
recorded dumps give the same series as the lab's host server answering from its counter model."""

from __future__ import annotations

from fabric_exporter.lab.replay_ssh import ReplayHosts, load, record
from fabric_exporter.lab.roce_host import RoceHost, serve
from fabric_exporter.lab.ssh_hosts import known_hosts_lines, write_key_files

from tests.harness.roce_nic import group, run
from tests.harness.polling import Poller


def _poll_all(tmp_path, client_key, known_hosts, ports, rounds):
    cred = {"type": "ssh", "username": "lab", "private_key_file": str(client_key),
            "known_hosts_file": str(known_hosts), "connect_timeout": "5s"}
    poller = Poller({"credentials": {"lab": cred}, "targets": [group("gpu", [
        {"name": name, "address": "127.0.0.1", "port": port} for name, port in ports.items()])]})

    async def go():
        out = []
        try:
            for _ in range(rounds):
                states, samples = await poller.poll(by_host=True)
                assert all(s.state == "ok" for s in states.values()), [s.last_error for s in states.values()]
                out.append(samples)
            return out
        finally:
            await poller.close()
    return go()


def test_replayed_dumps_give_the_lab_servers_series(tmp_path):
    # the recording: two hosts, two epochs 30 s apart, as the lab host answers the collector
    record(tmp_path / "dumps", recordings=2, epochs=2, nics=2)
    recordings = load(tmp_path / "dumps")
    assert len(recordings) == 2 and all(len(r) == 2 for r in recordings)
    # the host's filter left counters out of every mapped recording
    assert all(len(e["mapped"]) < len(e["all"]) and "@@dropped " in e["mapped"] for r in recordings for e in r)
    # the real path: the lab server with the same models, advanced the same way between polls
    models = []
    for r in range(2):
        h = RoceHost.build(f"gpu-{r + 1:03d}", "mlx5", nics=2, seed=r)
        h.advance(60)
        models.append(h)
    host_key, client_key, authorized = write_key_files(tmp_path)

    async def scenario():
        lab_ports, lab = await serve(models, str(host_key), str(authorized), advance_seconds=30)
        replay = ReplayHosts(tmp_path / "replay", recordings, host_key_file=str(host_key),
                             authorized_keys_file=str(authorized))
        replay_ports = await replay.start([m.name for m in models])
        known = tmp_path / "known_hosts"
        known.write_text(known_hosts_lines(host_key, [*lab_ports.values(), *replay_ports.values()]))
        try:
            real = await _poll_all(tmp_path, client_key, known, lab_ports, 2)
            replayed = await _poll_all(tmp_path, client_key, known, replay_ports, 3)
            return real, replayed, replay.commands
        finally:
            await lab.stop()
            await replay.stop()

    real, replayed, commands = run(scenario())
    assert len(real[0]) > 2 * 2 * 50
    assert replayed[0] == real[0] and replayed[1] == real[1]
    assert replayed[2] == replayed[0]  # the epochs wrap
    assert replayed[1] != replayed[0]  # counters moved between epochs
    assert commands >= 6


def test_replay_refuses_commands_it_has_no_recording_for(tmp_path):
    full, mapped = "@@fabric-roce 1 sysfs\n@@end\n", "@@fabric-roce 1 sysfs\n@@dropped ethtool e 1\n@@end\n"
    server = ReplayHosts(tmp_path, [[{"all": full, "mapped": mapped}]])
    server._index = {"h": 0}
    assert server.reply_for("h", "timeout -k 2 9 sh -c 'x' fabric-roce sysfs 1") == (0, full)
    assert server.reply_for("h", "timeout -k 2 9 sh -c 'x' fabric-roce sysfs 1 all") == (0, full)
    assert server.reply_for("h", "timeout -k 2 9 sh -c 'x' fabric-roce sysfs 1 mapped") == (0, mapped)
    assert server.reply_for("h", "timeout -k 2 9 sh -c 'x' fabric-roce rdma 1 mlx5_0")[0] == 2
    assert server.reply_for("h", "timeout -k 2 9 sh -c 'x' fabric-roce sysfs 1 mapped mlx5_0")[0] == 2
    assert server.reply_for("h", "timeout -k 2 5 true") == (0, "")
    assert server.reply_for("h", "cat /etc/shadow")[0] == 127
