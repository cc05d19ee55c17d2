"""Issue 16 defect 8: an encrypted SSH private key. Before: every poll failed as `internal` with a
traceback. Now check-config refuses it without a passphrase (and with a wrong one), the passphrase
comes from a file like other secrets, and a real OpenSSH sshd accepts the decrypted key."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
import yaml

from tests.harness.configs import parse_config
from fabric_exporter.errors import AuthError
from fabric_exporter.transport.ssh import SSHConnection, SSHEndpoint
from tests.harness.daemon import package_env
from tests.harness.sshd import SSHD

PASSPHRASE = "correct horse battery 7"


@pytest.fixture
def encrypted_key_sshd(tmp_path):
    key = tmp_path / "id_encrypted"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", PASSPHRASE, "-f", str(key)], check=True, timeout=20,
                   stdin=subprocess.DEVNULL)
    sshd = SSHD(tmp_path)
    sshd.authorized_keys.write_text((tmp_path / "id_encrypted.pub").read_text())
    with sshd:
        yield sshd, key


def _config(tmp_path, sshd, key, **cred) -> dict:
    return {"credentials": {"enc": {"type": "ssh", "username": sshd.user, "private_key_file": str(key),
                                    "known_hosts_file": str(sshd.known_hosts), "connect_timeout": "5s", **cred}},
            "targets": [{"name": "gpu", "fabric": "f1", "collector": "roce_nic", "transport": "ssh",
                         "credentials": "enc", "hosts": [{"name": "h", "address": "127.0.0.1", "port": sshd.port}]}]}


def _check_config(tmp_path, raw) -> subprocess.CompletedProcess:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    return subprocess.run([sys.executable, "-m", "fabric_exporter", "check-config", "--config", str(path)],
                          capture_output=True, text=True, timeout=60, env=package_env())


def test_check_config_refuses_an_encrypted_key_without_its_passphrase(tmp_path, encrypted_key_sshd):
    sshd, key = encrypted_key_sshd
    r = _check_config(tmp_path, _config(tmp_path, sshd, key))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "is encrypted" in r.stderr and "private_key_passphrase_file" in r.stderr
    (tmp_path / "wrong").write_text("not it\n")
    r = _check_config(tmp_path, _config(tmp_path, sshd, key, private_key_passphrase_file=str(tmp_path / "wrong")))
    assert r.returncode == 1 and "does not decrypt" in r.stderr and "not it" not in r.stderr + r.stdout
    (tmp_path / "pass").write_text(PASSPHRASE + "\n")
    r = _check_config(tmp_path, _config(tmp_path, sshd, key, private_key_passphrase_file=str(tmp_path / "pass")))
    assert r.returncode == 0, r.stderr
    assert PASSPHRASE not in r.stdout + r.stderr


def test_the_passphrase_file_opens_the_key_against_a_real_sshd(tmp_path, encrypted_key_sshd):
    sshd, key = encrypted_key_sshd
    (tmp_path / "pass").write_text(PASSPHRASE + "\n")
    config = parse_config(_config(tmp_path, sshd, key, private_key_passphrase_file=str(tmp_path / "pass")))
    cred = config.credentials["enc"]
    assert PASSPHRASE not in repr(cred)
    conn = SSHConnection(SSHEndpoint("127.0.0.1", sshd.port, cred))

    async def scenario():
        try:
            return await conn.run(["echo", "logged-in"], timeout=10)
        finally:
            await conn.close()

    assert asyncio.run(scenario()).stdout == "logged-in\n"


def test_without_a_passphrase_a_poll_fails_as_auth_not_internal(tmp_path, encrypted_key_sshd):
    from tests.harness.configs import load_config

    sshd, key = encrypted_key_sshd
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(_config(tmp_path, sshd, key)))
    cred = load_config(path, check_files=False).credentials["enc"]  # as a config that skipped the check
    conn = SSHConnection(SSHEndpoint("127.0.0.1", sshd.port, cred))

    async def scenario():
        try:
            await conn.run(["echo", "x"], timeout=10)
        finally:
            await conn.close()

    with pytest.raises(AuthError, match="encrypted and no private_key_passphrase"):
        asyncio.run(scenario())
