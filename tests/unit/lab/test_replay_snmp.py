"""The bench's SNMP replay agent (lab/replay_snmp.py) against the real path: the same switch's walk
served by snmpsim and by the replay agent gives the same series, SNMPv2c and SNMPv3 authPriv."""

from __future__ import annotations

import asyncio
import socket

import pytest

from fabric_exporter.lab.replay_snmp import Agent, ReplayResponder, V3User as ReplayUser, Walk, serve
from fabric_exporter.lab.snmp import SimulatedSwitch, SnmpSim
from fabric_exporter.transport.snmp_ber import GET_NEXT_REQUEST, decode_response, encode_message, encode_pdu

from tests.harness.switch import V3, make_config
from tests.harness.polling import Poller

# the snmpsim user's protocols, as our config names them (conftest's V3: SHA256 / AES256)
V3_CRED = {"type": "snmp", "version": "3", "username": V3.user, "auth_protocol": "sha256",
           "auth_password": V3.auth_key, "priv_protocol": "aes256", "priv_password": V3.priv_key}


def group(name, port, creds, modules):
    return {"name": "sw", "fabric": "lab", "collector": "snmp_switch", "transport": "snmp", "credentials": creds,
            "hosts": [{"name": name, "address": "127.0.0.1", "port": port}], "interval": "2m", "timeout": "30s",
            "options": {"snmp_timeout": "2s", "snmp_retries": 1, "modules": modules}}


async def _poll(cfg):
    p = Poller(cfg)
    try:
        states, samples = await p.poll()
        assert all(s.state == "ok" for s in states.values()), [s.last_error for s in states.values()]
        return samples
    finally:
        await p.close()


def _series(samples):
    # the poll's own timing is not the agent's data, nor are its request count: snmpsim cuts long
    # GETBULK pages shorter than the replay agent does (RFC 3416 lets an agent answer fewer repetitions)
    return {k: v for k, v in samples.items() if "duration" not in k[0] and "poll_requests" not in k[0]}


@pytest.mark.parametrize("model,modules", [("ieee", ["if_mib", "ieee8021_pfc"]),
                                           ("sonic", ["if_mib", "cisco_pfc", "cisco_qos"])])
def test_replay_answers_the_same_series_as_snmpsim(tmp_path, model, modules):
    sw = SimulatedSwitch("leafr", model, ports=8, seed=5)
    sw.advance(3)
    walk = Walk.from_snmprec(sw.render())
    responder = ReplayResponder({"leafr": Agent([walk])},
                                [ReplayUser(V3.user, "sha256", V3.auth_key, "aes256", V3.priv_key)])
    with SnmpSim([sw], workdir=tmp_path / "sim", v3_user=V3) as sim:
        async def scenario():
            transport, port = await serve(responder)
            try:
                out = {}
                for version, cred in (("2c", {"type": "snmp", "version": "2c", "community": "leafr"}),
                                      ("3", {**V3_CRED, "context": "leafr"})):
                    real = await _poll(make_config(tmp_path, [group("leafr", sim.port, "c", modules)], {"c": cred}))
                    replay = await _poll(make_config(tmp_path, [group("leafr", port, "c", modules)], {"c": cred}))
                    out[version] = (real, replay)
                return out
            finally:
                transport.close()

        results = asyncio.run(scenario())
    for version, (real, replay) in results.items():
        assert len(_series(real)) > 8 * 10, version
        assert _series(replay) == _series(real), version
    assert responder.counters.reports >= 1  # SNMPv3 engine discovery went through the Report path
    assert responder.counters.errors == 0


def _ask(port: int, community: bytes, oid) -> object:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.sendto(encode_message(1, community, encode_pdu(GET_NEXT_REQUEST, 7, [oid])), ("127.0.0.1", port))
        return decode_response(s.recv(65535))


def test_epochs_move_with_time_and_unknown_communities_get_no_answer(monkeypatch):
    sw = SimulatedSwitch("e", "ieee", ports=1, seed=1)
    first = sw.render()
    sw.advance(10)
    clock = [5000.0]  # the responder starts here: epochs count from its start, the first is the first recording
    monkeypatch.setattr("fabric_exporter.lab.replay_snmp.time.monotonic", lambda: clock[0])
    responder = ReplayResponder({"e": Agent([Walk.from_snmprec(first), Walk.from_snmprec(sw.render())])},
                                epoch_seconds=1000.0)
    clock[0] += 999  # still the first epoch
    oid = (1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6)  # ifHCInOctets
    recorded = {line.split("|")[0]: int(line.split("|")[2]) for line in first.splitlines()
                if line.startswith("1.3.6.1.2.1.31.1.1.1.6.")}

    async def scenario():
        transport, port = await serve(responder)
        try:
            loop = asyncio.get_running_loop()
            a = await loop.run_in_executor(None, _ask, port, b"e", oid)
            clock[0] += 1000
            b = await loop.run_in_executor(None, _ask, port, b"e", oid)
            with pytest.raises(TimeoutError):
                await loop.run_in_executor(None, _ask, port, b"nobody", oid)
            return a, b
        finally:
            transport.close()

    a, b = asyncio.run(scenario())
    assert a.varbinds[0].oid == b.varbinds[0].oid
    assert a.varbinds[0].value == recorded[".".join(map(str, a.varbinds[0].oid))]
    assert b.varbinds[0].value > a.varbinds[0].value


def test_the_replay_process_answers_every_agent_on_each_of_its_listeners(tmp_path):
    """bench_cluster gives each switch a port of its own (``--listeners``): the daemon bounds the
    requests in flight per agent address and port, so switches sharing one port would share that
    bound. Each listed port answers every agent."""
    import os
    import subprocess
    import sys
    import time

    sw = SimulatedSwitch("leafr", "ieee", ports=2, seed=3)
    (tmp_path / "recs").mkdir()
    (tmp_path / "recs" / "rec0.snmprec").write_text(sw.render())
    port_file = tmp_path / "ports"
    proc = subprocess.Popen([sys.executable, "-m", "fabric_exporter.lab.replay_snmp", "--snmprec-dir",
                             str(tmp_path / "recs"), "--alias", "sw1=rec0", "--listeners", "3",
                             "--port-file", str(port_file)], env=os.environ.copy(), stdin=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if port_file.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        ports = [int(p) for p in port_file.read_text().split()]
        oid = (1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6)  # ifHCInOctets
        answers = [_ask(port, community, oid) for port in ports for community in (b"rec0", b"sw1")]
    finally:
        proc.terminate()
        proc.wait(10)
    assert len(set(ports)) == 3
    assert len({(a.varbinds[0].oid, a.varbinds[0].value) for a in answers}) == 1 and answers[0].varbinds[0].oid[:11] == oid
