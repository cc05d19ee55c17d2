"""SNMPv3 against net-snmp's snmpd (an implementation independent of pysnmp, unlike snmpsim), on both
request paths: every auth protocol and cipher the config offers, authNoPriv, refusals, and a restart
that keeps the engine ID but moves its boots (net-snmp keeps both in its persistent directory).

net-snmp 5.9's AES-256 extends a short key the Blumenthal way, pysnmp's ``aes256`` (and so ours) the
Reeder way: they agree only where the auth hash already gives 32 octets, so AES-256 is tried with
SHA-256 and SHA-512 here (tests/unit/transport/test_snmp_usm.py shows the extension equals pysnmp's)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from fabric_exporter.errors import PollError
from fabric_exporter.transport.factory import Transports
from tests.harness.processes import stop_process

from tests.harness.switch import make_config

SNMPD = shutil.which("snmpd") or "/usr/sbin/snmpd"
pytestmark = pytest.mark.skipif(not os.path.exists(SNMPD), reason="needs Debian's snmpd")

# (user, net-snmp auth, auth password, net-snmp priv, priv password, our auth, our priv)
USERS = [
    ("u-md5-des", "MD5", "auth-secret-1", "DES", "priv-secret-1", "md5", "des"),
    ("u-sha-aes", "SHA", "auth-secret-2", "AES", "priv-secret-2", "sha", "aes"),
    ("u-sha256-aes256", "SHA-256", "auth-secret-3", "AES-256", "priv-secret-3", "sha256", "aes256"),
    ("u-sha512-aes256", "SHA-512", "auth-secret-4", "AES-256", "priv-secret-4", "sha512", "aes256"),
    ("u-sha512-aes", "SHA-512", "auth-secret-5", "AES", "priv-secret-5", "sha512", "aes128"),
    ("u-sha-noauth", "SHA", "auth-secret-6", None, None, "sha", None),
]
SYS_NAME = (1, 3, 6, 1, 2, 1, 1, 5, 0)
IF_DESCR = (1, 3, 6, 1, 2, 1, 2, 2, 1, 2)


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NetSnmpd:
    """One snmpd on 127.0.0.1 with the USERS; restartable with the same persistent state."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.port = _free_udp_port()
        (workdir / "persist").mkdir(parents=True, exist_ok=True)
        # a fixed engine ID: a restart then moves only the boots (as on a switch with persistent state)
        lines = [f"agentAddress udp:127.0.0.1:{self.port}", "engineID fabric-test-agent"]
        for user, auth, auth_pw, priv, priv_pw, *_ in USERS:
            lines.append(f'createUser {user} {auth} "{auth_pw}"' + (f' {priv} "{priv_pw}"' if priv else ""))
            lines.append(f"rouser {user} {'priv' if priv else 'auth'}")
        (workdir / "snmpd.conf").write_text("\n".join(lines) + "\n")
        self.proc: subprocess.Popen | None = None

    def start(self) -> NetSnmpd:
        persist = self.workdir / "persist"
        configs = [str(self.workdir / "snmpd.conf")]
        if (persist / "snmpd.conf").exists():  # -C skips the persistent file too: name it (engineBoots)
            configs.append(str(persist / "snmpd.conf"))
        self.proc = subprocess.Popen(
            [SNMPD, "-f", "-I", "-smux", "-Lf", str(self.workdir / "snmpd.log"), "-C", "-c", ",".join(configs),
             f"--persistentDir={persist}"],
            env={**os.environ, "SNMP_PERSISTENT_DIR": str(persist)},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        user, auth, auth_pw, *_ = USERS[-1]
        while subprocess.run(["snmpget", "-v3", "-l", "authNoPriv", "-u", user, "-a", auth, "-A", auth_pw,
                              "-t", "1", "-r", "0", f"127.0.0.1:{self.port}", "1.3.6.1.2.1.1.5.0"],
                             # snmpget keeps state in /var/lib/snmp unless told otherwise
                             env={**os.environ, "SNMP_PERSISTENT_DIR": str(self.workdir / "client-persist")},
                             capture_output=True, timeout=10).returncode != 0:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("snmpd did not answer")
            time.sleep(0.2)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
        self.proc = None


@pytest.fixture(scope="module")
def snmpd(tmp_path_factory):
    agent = NetSnmpd(tmp_path_factory.mktemp("snmpd")).start()
    try:
        yield agent
    finally:
        agent.stop()


def _config(tmp_path: Path, port: int, engine: str, user, *, auth_pw=None, priv_pw=None, timeout="3s", retries=1):
    name, _, real_auth_pw, _, real_priv_pw, auth, priv = user
    cred = {"type": "snmp", "version": "3", "username": name, "auth_protocol": auth,
            "auth_password": auth_pw or real_auth_pw}
    if priv:
        cred.update(priv_protocol=priv, priv_password=priv_pw or real_priv_pw)
    return make_config(tmp_path, [{
        "name": "g", "fabric": "lab", "collector": "snmp_switch", "transport": "snmp", "credentials": "c",
        "hosts": [{"name": "sw", "address": "127.0.0.1", "port": port}], "interval": "2m", "timeout": "60s",
        "options": {"snmp_timeout": timeout, "snmp_retries": retries, "snmp_engine": engine}}], {"c": cred})


async def _fetch(cfg):
    transports = Transports()
    try:
        group = cfg.targets[0]
        session = transports.snmp(group, group.hosts[0])
        name = await session.get([SYS_NAME])
        descr = await session.walk(IF_DESCR)
        return type(session).__name__, name[SYS_NAME], descr
    finally:
        await transports.close()


@pytest.mark.parametrize("user", USERS, ids=[u[0] for u in USERS])
def test_every_protocol_reads_the_same_on_both_engines(snmpd, tmp_path, user):
    fast = asyncio.run(_fetch(_config(tmp_path, snmpd.port, "fast", user)))
    slow = asyncio.run(_fetch(_config(tmp_path, snmpd.port, "pysnmp", user)))
    assert (fast[0], slow[0]) == ("FastV3Session", "SnmpSession")
    assert fast[1] is not None and fast[1].value == socket.gethostname().encode()
    assert fast[1:] == slow[1:]
    assert fast[2] and fast[2][0].oid[:len(IF_DESCR)] == IF_DESCR  # lo at least


@pytest.mark.parametrize("which", ["auth", "priv", "user"])
def test_refusals_read_the_same_on_both_engines(snmpd, tmp_path, which):
    """net-snmp reports a wrong digest and an unknown user; a wrong priv key it cannot tell from
    garbage (AES-CFB has no padding to check) and drops silently: a timeout on both engines."""
    user = USERS[2]
    if which == "user":
        user = ("nobody",) + user[1:]
    kw = {"auth": {"auth_pw": "wrong-password-1"}, "priv": {"priv_pw": "wrong-password-2"}, "user": {}}[which]
    errors = {}
    for engine in ("fast", "pysnmp"):
        with pytest.raises(PollError) as e:
            asyncio.run(_fetch(_config(tmp_path, snmpd.port, engine, user, timeout="1s", retries=0, **kw)))
        errors[engine] = (type(e.value).__name__, e.value.reason, str(e.value))
    assert errors["fast"] == errors["pysnmp"]
    want = {"auth": "WrongDigest", "priv": "no response after 1 request of 1s", "user": "UnknownUserName"}[which]
    assert want in errors["fast"][2]
    assert errors["fast"][1] == ("timeout" if which == "priv" else "auth")
    for secret in ("wrong-password-1", "wrong-password-2", "auth-secret-3", "priv-secret-3"):
        assert secret not in errors["fast"][2]


def test_restart_with_new_boots_recovers_within_the_request(tmp_path):
    """net-snmp keeps its engine ID and counts boots up at each start: the first request after a
    restart draws an authenticated notInTimeWindow Report, whose boots/time the fast path adopts
    before trying once more -- no failed poll, no waiting."""
    agent = NetSnmpd(tmp_path / "agent").start()

    async def scenario():
        transports = Transports()
        try:
            group = _config(tmp_path, agent.port, "fast", USERS[2]).targets[0]
            session = transports.snmp(group, group.hosts[0])
            first = await session.get([SYS_NAME])
            boots = session._boots
            agent.stop()
            agent.start()
            second = await session.get([SYS_NAME])
            return first, second, boots, session
        finally:
            await transports.close()

    try:
        first, second, boots, session = asyncio.run(scenario())
    finally:
        agent.stop()
    assert first[SYS_NAME] == second[SYS_NAME]
    assert session._boots > boots and session.rediscoveries == 1
