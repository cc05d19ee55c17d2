"""SNMPv3 on a bad day (issue 16, defects 6 and 7): an agent restarted with a new engine ID is polled
again at once, a wrong password after that is `auth` not `timeout`, short keys are refused by
check-config, and no secret reaches a log line, an error text or /metrics."""

from __future__ import annotations

import asyncio
import logging

import pytest

from fabric_exporter.config import CHECK_FILES, ConfigError
from fabric_exporter.lab.snmp import SimulatedSwitch, SnmpSim

from tests.harness.switch import V3, make_config
from tests.harness.polling import Poller
from tests.harness.snmp_engines import snmp_engine  # noqa: F401  (autouse: both request paths)


def session_types(p: Poller) -> set[str]:
    return {type(c._session).__name__ for c in p.collectors.values() if c._session is not None}


def v3_cred(auth=V3.auth_key, priv=V3.priv_key, user=V3.user):
    return {"type": "snmp", "version": "3", "username": user, "auth_protocol": "sha256", "auth_password": auth,
            "priv_protocol": "aes256", "priv_password": priv, "context": "v3sw"}


def group(name, port, creds):
    return {"name": name, "fabric": "lab", "collector": "snmp_switch", "transport": "snmp", "credentials": creds,
            "hosts": [{"name": name, "address": "127.0.0.1", "port": port}], "interval": "2m", "timeout": "60s",
            "options": {"snmp_timeout": "1s", "snmp_retries": 0}}


def test_agent_restart_with_new_engine_id_recovers_on_the_next_poll(tmp_path, snmp_engine):
    sw = SimulatedSwitch("v3sw", "ieee", ports=2, seed=11)
    sim = SnmpSim([sw], workdir=tmp_path / "sim1", v3_user=V3).start()
    port = sim.port
    cfg = make_config(tmp_path, [group("good", port, "good"), group("bad", port, "bad")],
                      {"good": v3_cred(), "bad": v3_cred(auth="wrong-password-1")})

    async def scenario():
        nonlocal sim
        p = Poller(cfg)
        try:
            # states are the scheduler's live objects: keep copies of what the first poll said
            before = {k: (s.state, dict(s.errors), s.last_error) for k, s in (await p.poll_states()).items()}
            sim.stop()
            # snmpsim picks a new engine ID at every start (as net-snmp does without persistent state)
            sim = SnmpSim([sw], workdir=tmp_path / "sim2", v3_user=V3, port=port).start()
            after = await p.poll_states()
            assert session_types(p) == {"FastV3Session" if snmp_engine == "fast" else "SnmpSession"}
            # the good session rediscovered once, within this poll (no extra poll, no waiting)
            assert [c._session.rediscoveries for k, c in p.collectors.items() if k[0] == "good"] == [1]
            return before, after
        finally:
            await p.close()

    try:
        before, after = asyncio.run(scenario())
    finally:
        sim.stop()
    assert before[("good", "good")][0] == "ok", before[("good", "good")][2]
    assert before[("bad", "bad")][1]["auth"] == 1
    good, bad = after[("good", "good")], after[("bad", "bad")]
    assert good.state == "ok", good.last_error  # was: timeouts until pysnmp's 300 s engine cache expired
    assert bad.state == "failed" and bad.errors["auth"] == 2 and bad.errors["timeout"] == 0, bad.last_error
    assert "WrongDigest" in bad.last_error


@pytest.mark.parametrize("key", ["auth_password", "priv_password"])
def test_short_v3_keys_are_refused_by_check_config_without_quoting_them(tmp_path, key):
    with pytest.raises(ConfigError) as e:
        make_config(tmp_path, [group("s", 161, "c")], {"c": v3_cred(**{key[:4]: "ShrtS1"})})
    text = str(e.value)
    assert f"credentials.c.{key}" in text and "at least 8 characters" in text and "has 6" in text
    assert "ShrtS1" not in text
    # eight is enough
    make_config(tmp_path, [group("s", 161, "c")], {"c": v3_cred(**{key[:4]: "Eight8ch"})})


def test_no_secret_reaches_a_log_an_error_or_the_metrics(tmp_path, caplog, capsys):
    secrets = {"short": "ShrtS1", "short_priv": "Pr1vS", "wrong": "Wr0ng-Secret-9", "community": "Comm-Secret-7"}
    sw = SimulatedSwitch("v3sw", "ieee", ports=2, seed=12)
    with SnmpSim([sw], workdir=tmp_path / "sim", v3_user=V3) as sim:
        # files are not read at syntax check (check_files=False), so the short keys get to run time: the
        # transport must refuse them as cleanly as check-config does
        token = CHECK_FILES.set(False)
        try:
            cfg = make_config(tmp_path, [
                group("short", sim.port, "short"), group("shortpriv", sim.port, "shortpriv"),
                group("wrong", sim.port, "wrong"), group("comm", sim.port, "comm"),
            ], {"short": v3_cred(auth=secrets["short"], user="fabric-short"),
                "shortpriv": v3_cred(priv=secrets["short_priv"], user="fabric-shortpriv"),
                "wrong": v3_cred(auth=secrets["wrong"], priv=secrets["wrong"]),
                "comm": {"type": "snmp", "version": "2c", "community": secrets["community"]}})
        finally:
            CHECK_FILES.reset(token)
        caplog.set_level(logging.DEBUG)

        async def scenario():
            p = Poller(cfg)
            try:
                states, _ = await p.poll()
                return states, p.store.render()
            finally:
                await p.close()

        states, rendered = asyncio.run(scenario())
    out = capsys.readouterr()
    assert states[("short", "short")].errors["auth"] == 1
    assert "shorter than 8 characters" in states[("short", "short")].last_error
    assert states[("shortpriv", "shortpriv")].errors["auth"] == 1
    assert states[("wrong", "wrong")].errors["auth"] == 1
    assert states[("comm", "comm")].errors["timeout"] == 1  # snmpsim has no such community
    everything = "\n".join([caplog.text, out.out, out.err, rendered.decode(),
                            *(s.last_error for s in states.values()),
                            *(r.getMessage() + str(r.__dict__) for r in caplog.records)])
    assert "poll crashed" not in everything
    for name, value in secrets.items():
        assert value not in everything, f"secret {name} leaked"


def test_refusals_read_the_same_on_both_engines(tmp_path, snmp_engine):
    """A wrong auth key, a wrong priv key and an unknown user fail the poll as `auth` with the same
    text on the fast path as on pysnmp (only the group name differs)."""
    if snmp_engine == "pysnmp":
        pytest.skip("compares both engines in one run")
    sw = SimulatedSwitch("v3sw", "ieee", ports=2, seed=13)
    cases = {"badauth": v3_cred(auth="wrong-password-1"), "badpriv": v3_cred(priv="wrong-password-2"),
             "nouser": v3_cred(user="nobody-here"), "good": v3_cred()}
    with SnmpSim([sw], workdir=tmp_path / "sim", v3_user=V3) as sim:
        groups, creds = [], {}
        for engine in ("fast", "pysnmp"):
            for case, cred in cases.items():
                g = group(f"{case}-{engine}", sim.port, f"{case}-{engine}")
                g["options"] = {**g["options"], "snmp_engine": engine, "snmp_timeout": "3s"}
                groups.append(g)
                creds[f"{case}-{engine}"] = cred
        cfg = make_config(tmp_path, groups, creds)

        async def scenario():
            p = Poller(cfg)
            try:
                states = await p.poll_states()
                types = {k[0]: type(c._session).__name__ for k, c in p.collectors.items()}
                return states, types
            finally:
                await p.close()

        states, types = asyncio.run(scenario())
    want = {"badauth": "WrongDigest", "badpriv": "DecryptionError", "nouser": "UnknownUserName"}
    for case in cases:
        fast, slow = states[(f"{case}-fast", f"{case}-fast")], states[(f"{case}-pysnmp", f"{case}-pysnmp")]
        assert types[f"{case}-fast"] == "FastV3Session" and types[f"{case}-pysnmp"] == "SnmpSession"
        if case == "good":
            assert fast.state == slow.state == "ok", (fast.last_error, slow.last_error)
            continue
        assert fast.state == slow.state == "failed"
        assert fast.errors["auth"] == slow.errors["auth"] == 1, (fast.last_error, slow.last_error)
        assert want[case] in fast.last_error
        assert fast.last_error.replace("-fast", "") == slow.last_error.replace("-pysnmp", ""), \
            (fast.last_error, slow.last_error)


def test_protocols_the_fast_path_does_not_serve_fall_back_to_pysnmp_with_a_log_line(
        tmp_path, snmp_engine, monkeypatch, caplog):
    if snmp_engine == "pysnmp":
        pytest.skip("about the fast path")
    from fabric_exporter.transport import snmp, snmp_usm

    monkeypatch.setattr(snmp_usm, "PRIV_PROTOCOLS", {k: v for k, v in snmp_usm.PRIV_PROTOCOLS.items() if k != "aes256"})
    monkeypatch.setattr(snmp, "_fallbacks_logged", set())
    sw = SimulatedSwitch("v3sw", "ieee", ports=2, seed=14)
    with SnmpSim([sw], workdir=tmp_path / "sim", v3_user=V3) as sim:
        cfg = make_config(tmp_path, [group("g", sim.port, "c")], {"c": v3_cred()})
        caplog.set_level(logging.INFO)

        async def scenario():
            p = Poller(cfg)
            try:
                states = await p.poll_states()
                return states, session_types(p)
            finally:
                await p.close()

        states, types = asyncio.run(scenario())
    assert states[("g", "g")].state == "ok", states[("g", "g")].last_error
    assert types == {"SnmpSession"}
    assert "credential c: SNMPv3 on pysnmp rather than the fast path: priv_protocol aes256" in caplog.text
