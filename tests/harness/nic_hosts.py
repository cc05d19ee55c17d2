"""Simulated GPU hosts (``lab.roce_host.RoceHost``) behind the lab's asyncssh server, on its own
event loop in a thread, so a daemon subprocess can poll them with the roce_nic collector over SSH.
Counters move only when a test calls ``host.advance()``."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import asyncssh

from fabric_exporter.lab.roce_host import RoceHost, serve


class NicHosts:
    def __init__(self, tmp: Path, hosts: list[RoceHost]):
        self.hosts = hosts
        host_key, self.client_key = tmp / "nic_host_key", tmp / "nic_client_key"
        asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(host_key))
        key = asyncssh.generate_private_key("ssh-ed25519")
        key.write_private_key(str(self.client_key))
        key.write_public_key(str(tmp / "nic_authorized_keys"))
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="nic-hosts", daemon=True)
        self._thread.start()
        self.ports, self._server = asyncio.run_coroutine_threadsafe(
            serve(hosts, str(host_key), str(tmp / "nic_authorized_keys")), self.loop).result(30)
        pub = " ".join(asyncssh.read_public_key(str(host_key)).export_public_key().decode().split()[:2])
        self.known_hosts = tmp / "nic_known_hosts"
        self.known_hosts.write_text("".join(f"[127.0.0.1]:{p} {pub}\n" for p in self.ports.values()))

    def credential(self) -> dict:
        return {"type": "ssh", "username": "lab", "private_key_file": str(self.client_key),
                "known_hosts_file": str(self.known_hosts), "connect_timeout": "5s"}

    def targets(self) -> list[dict]:
        return [{"name": name, "address": "127.0.0.1", "port": port} for name, port in self.ports.items()]

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
