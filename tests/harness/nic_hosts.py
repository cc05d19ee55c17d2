"""Simulated GPU hosts (``lab.roce_host.RoceHost``) behind the lab's asyncssh server, on its own
event loop in a thread, so a daemon subprocess can poll them with the roce_nic collector over SSH.
Counters move only when a test calls ``host.advance()``."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from fabric_exporter.lab.roce_host import RoceHost, serve
from fabric_exporter.lab.ssh_hosts import known_hosts_lines, write_key_files


class NicHosts:
    def __init__(self, tmp: Path, hosts: list[RoceHost]):
        self.hosts = hosts
        host_key, self.client_key, authorized = write_key_files(tmp, "nic_")
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="nic-hosts", daemon=True)
        self._thread.start()
        self.ports, self._server = asyncio.run_coroutine_threadsafe(
            serve(hosts, str(host_key), str(authorized)), self.loop).result(30)
        self.known_hosts = tmp / "nic_known_hosts"
        self.known_hosts.write_text(known_hosts_lines(host_key, self.ports.values()))

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
