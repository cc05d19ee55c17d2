"""The SSH transport offers AES-GCM first (half chacha20-poly1305's CPU per NIC dump) and still
connects to a server that offers only chacha20-poly1305 (real asyncssh servers on 127.0.0.1)."""

from __future__ import annotations

import asyncio

import asyncssh
import pytest

from fabric_exporter.config.model import SSHCredential
from fabric_exporter.transport.ssh import PREFERRED_CIPHERS, SSHPool


class _Open(asyncssh.SSHServer):
    def begin_auth(self, username):
        return False  # no authentication: the test is about the cipher


async def _negotiated(server_algs) -> str:
    key = asyncssh.generate_private_key("ssh-ed25519")
    kwargs = {"encryption_algs": server_algs} if server_algs else {}
    server = await asyncssh.create_server(_Open, "127.0.0.1", 0, server_host_keys=[key],
                                          process_factory=lambda p: p.exit(0), **kwargs)
    port = server.sockets[0].getsockname()[1]
    pool = SSHPool()
    conn = pool.get("127.0.0.1", port, SSHCredential("t", "lab", insecure_ignore_host_key=True, connect_timeout=5))
    try:
        result = await conn.run(["true"], timeout=10)
        assert result.exit_status == 0
        return conn._conn.get_extra_info("send_cipher")
    finally:
        await conn.close()
        server.close()


@pytest.mark.parametrize("server_algs,expected", [
    (None, "aes128-gcm@openssh.com"),  # asyncssh's own default order would pick chacha20-poly1305
    (["chacha20-poly1305@openssh.com"], "chacha20-poly1305@openssh.com"),
    (["aes128-ctr"], "aes128-ctr"),
])
def test_cipher_negotiated(server_algs, expected):
    assert asyncio.run(_negotiated(server_algs)) == expected


def test_every_default_cipher_is_still_offered():
    assert set(PREFERRED_CIPHERS) == {a.decode() for a in asyncssh.encryption.get_default_encryption_algs()}
    assert PREFERRED_CIPHERS[0] == "aes128-gcm@openssh.com"
