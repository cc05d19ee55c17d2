"""Issue 16 defect 3 end to end: one host printing 50 MB must not stall anyone else.

Before the fix (measured with bench/bench_faults.py big_output): a /metrics scrape waited 20 s
(client timeout), the daemon's RSS peaked at 765 MB and stayed at 506 MB. Here: a real daemon, a
real sshd per host, the roce_nic collector; the flooding host fails with reason output_too_large,
every healthy host keeps polling within its deadline, /metrics keeps answering, RSS stays bounded.
"""

from __future__ import annotations

import time

import pytest
import yaml

from tests.harness.daemon import DaemonProcess, metric_value
from tests.harness.faultlab import Sampler, gpu_host_sshd

HEALTHY = ["gpu-01", "gpu-02", "gpu-03"]
TIMEOUT = 5.0


def flood_errors(body: str) -> float | None:
    return metric_value(body, 'fabric_poll_errors_total{collector="roce_nic",fabric="f1",group="flood",'
                              'host="gpu-flood",reason="output_too_large"}')


@pytest.mark.slow
def test_a_50mb_output_fails_alone_and_costs_nobody_else(tmp_path):
    _, healthy = gpu_host_sshd(tmp_path, "healthy")
    _, flood = gpu_host_sshd(tmp_path, "flood", extra_ethtool_bytes=50_000_000)
    with healthy, flood:
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump({
            "credentials": {"healthy": healthy.credential(), "flood": flood.credential()},
            "targets": [
                {"name": "healthy", "fabric": "f1", "collector": "roce_nic", "transport": "ssh",
                 "credentials": "healthy", "interval": "6s", "timeout": f"{TIMEOUT:g}s",
                 "hosts": [{"name": h, "address": "127.0.0.1", "port": healthy.port} for h in HEALTHY]},
                {"name": "flood", "fabric": "f1", "collector": "roce_nic", "transport": "ssh",
                 "credentials": "flood", "interval": "6s", "timeout": f"{TIMEOUT:g}s",
                 # the host sends every counter (else its filter leaves the unmapped flood at home)
                 "options": {"expose_unmapped": True},
                 "hosts": [{"name": "gpu-flood", "address": "127.0.0.1", "port": flood.port}]},
            ]}))
        with DaemonProcess(config) as d:
            d.wait_http(30)
            with Sampler(d.base, d.proc.pid, set(HEALTHY), scrape_timeout=10.0) as s:
                # until the flooding host has failed twice (two polls, its backoff between), at most 60 s
                deadline = time.monotonic() + 60
                while (flood_errors(body := d.get("/metrics", timeout=10)[1]) or 0) < 2 \
                        and time.monotonic() < deadline:
                    time.sleep(0.5)
    assert flood_errors(body) >= 2, d.logs()[-3000:]
    labels = 'collector="roce_nic",fabric="f1",group="flood",host="gpu-flood"'
    assert metric_value(body, f"fabric_up{{{labels}}}") == 0
    assert s.failures == [], s.failures  # every scrape answered within 10 s
    for host in HEALTHY:
        assert s.up.get(host) and s.up[host][-1] == 1, (host, s.up.get(host))
        assert max(s.poll_durations[host]) < TIMEOUT, (host, s.poll_durations[host])
    peak_mb = max(x["VmHWM"] for x in s.status) / 1024
    assert peak_mb < 400, f"daemon RSS peaked at {peak_mb:.0f} MB with a 32 MiB output cap"
