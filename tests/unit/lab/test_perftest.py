"""The in-process lab perftest (SimulatedPerftest) behind SimulatedHosts, driven by the collector over asyncssh."""

import asyncio

from fabric_exporter.collectors import PollContext
from fabric_exporter.collectors.latency_probe import LatencyProbeCollector
from tests.harness.configs import parse_config
from fabric_exporter.lab.perftest import SimulatedPerftest
from fabric_exporter.lab.ssh_hosts import SimulatedHosts
from fabric_exporter.transport.factory import Transports

NAMES = ["n1", "n2", "n3", "n4"]


def test_simulated_fabric_round(tmp_path):
    sim = SimulatedPerftest({"default": {"typical": 1.8}, "pairs": {"n1>n2": {"typical": 5.5, "p99": 7.0},
                                                                    "n3>n4": {"behaviour": "fail"}}}, server_wait=5)

    async def main():
        hosts = SimulatedHosts(tmp_path, sim.answer)
        ports = await hosts.start(NAMES)
        cfg = parse_config({
            "credentials": {"lab": {"type": "ssh", "username": "lab", "private_key_file": str(hosts.client_key),
                                    "known_hosts_file": str(hosts.known_hosts)}},
            "targets": [{"name": "lat", "fabric": "f", "collector": "latency_probe", "transport": "ssh",
                         "credentials": "lab", "interval": "60s", "timeout": "20s",
                         "hosts": [{"name": n, "address": "127.0.0.1", "port": ports[n]} for n in NAMES],
                         "options": {"host_groups": {"r1": ["n1", "n2"], "r2": ["n3", "n4"]},
                                     "plan": {"full_mesh": True, "sampled_peers": 2},
                                     "server_start_wait": "50ms"}}]})
        transports = Transports()
        col = LatencyProbeCollector(PollContext(cfg.targets[0], None, transports))
        try:
            return await col.poll()
        finally:
            await col.close()
            await transports.close()
            await hosts.stop()

    result = asyncio.run(main())
    by = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in result.samples}
    outcome = {dict(k[1])["outcome"]: v for k, v in by.items() if k[0] == "fabric_rdma_latency_round_probes"}
    assert outcome == {"ok": 11, "failed": 1, "not_run": 0}  # 4 mesh + 8 cross pairs, n3>n4 fails
    median = {(dict(k[1])["source"], dict(k[1])["destination"]): v for k, v in by.items()
              if k[0] == "fabric_rdma_latency_median_seconds"}
    assert median[("n1", "n2")] == 5.5e-06 and median[("n2", "n1")] == 1.8e-06
    assert ("n3", "n4") not in median
    assert sim.probes == 11
    assert any("n3 (client) client_failed" in p for p in result.problems)
