"""Switch tests: real snmpsim agents on 127.0.0.1 serving data the tests generate and change, hostile
agents, and configs with their secrets in files (polling: tests/harness/polling.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.aio import run  # noqa: F401  (tests import it from here)
from tests.harness.configs import parse_config
from fabric_exporter.lab.snmp import SimulatedSwitch, SnmpSim, V3User

V3 = V3User("fabric", "auth-secret-1", "priv-secret-1", auth_proto="SHA256", priv_proto="AES256")
# More users, so every auth/priv protocol the config offers for authPriv is tried for real.
V3_MORE = [V3User("fab-sha", "auth-secret-2", "priv-secret-2", auth_proto="SHA", priv_proto="AES128"),
           V3User("fab-sha512", "auth-secret-3", "priv-secret-3", auth_proto="SHA512", priv_proto="AES128"),
           V3User("fab-md5", "auth-secret-4", "priv-secret-4", auth_proto="MD5", priv_proto="DES")]


@pytest.fixture(scope="module")
def switches():
    return {
        "leaf1": SimulatedSwitch("leaf1", "sonic", ports=64, seed=1),
        "arista1": SimulatedSwitch("arista1", "arista", ports=16, seed=2),
        "ieee1": SimulatedSwitch("ieee1", "ieee", ports=8, seed=3),
    }


@pytest.fixture(scope="module")
def snmpsim(switches, tmp_path_factory):
    sim = SnmpSim(list(switches.values()), workdir=tmp_path_factory.mktemp("snmpsim"), v3_user=V3, v3_users=V3_MORE)
    sim.start()
    try:
        yield sim
    finally:
        sim.stop()


def make_config(tmp_path: Path, targets: list[dict], credentials: dict | None = None):
    secrets = tmp_path / "secrets"
    secrets.mkdir(exist_ok=True)
    creds = {}
    for name, body in (credentials or {}).items():
        body = dict(body)
        for key in ("community", "auth_password", "priv_password"):
            if key in body:
                f = secrets / f"{name}-{key}"
                f.write_text(body.pop(key) + "\n")
                body[f"{key}_file"] = str(f)
        creds[name] = body
    return parse_config({"credentials": creds, "targets": targets}, base_dir=tmp_path)


@pytest.fixture
def hostile_snmp():
    """Start hostile SNMPv2c agents (tests/harness/hostile_snmp.py) on 127.0.0.1, each in its own
    thread, so code under test that runs its own event loop meets them: ``agent = hostile_snmp("silent")``
    (then ``agent.port``, ``agent.requests``, ``agent.set_mode(...)``). Stopped after the test."""
    from tests.harness.hostile_snmp import ThreadedAgent

    started: list[ThreadedAgent] = []

    def start(mode: str = "honest", **kw) -> ThreadedAgent:
        agent = ThreadedAgent(mode, **kw).__enter__()
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.__exit__(None, None, None)
