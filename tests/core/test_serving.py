"""/metrics is a join of cached bytes: plain and gzip carry the same exposition, and a real
Prometheus reads the gzip body (one gzip member per family piece, concatenated) to its end."""

import gzip
import os
import urllib.request

import pytest

from ..harness.daemon import DaemonProcess
from ..harness.prometheus import PROMETHEUS, Prometheus, wait_until
from .test_daemon import PLUGINS, local_group, write_config

HOSTS = ("gpu-a", "gpu-b", "gpu-c")


def _config(tmp_path):
    script = tmp_path / "values.sh"
    script.write_text('echo "eth0 11"; echo "eth1 7"\n')
    group = local_group("gpus", tmp_path / "unused", interval="60s")
    group["hosts"] = [{"name": h} for h in HOSTS]
    group["options"] = {"command": ["sh", str(script), "{host}"]}
    config = tmp_path / "fabric.yaml"
    write_config(config, [group])
    return config


def _fetch(d: DaemonProcess, encoding: str | None) -> tuple[bytes, str | None]:
    req = urllib.request.Request(d.base + "/metrics", headers={"Accept-Encoding": encoding} if encoding else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read(), r.headers.get("Content-Encoding")


def test_gzip_and_plain_bodies_carry_the_same_exposition(tmp_path):
    with DaemonProcess(_config(tmp_path), plugins=PLUGINS) as d:
        d.wait_http()
        d.wait_for(lambda s, b: b.count("fabric_last_success_timestamp_seconds{") == len(HOSTS), deadline=20)
        plain, plain_encoding = _fetch(d, None)
        packed, packed_encoding = _fetch(d, "gzip")
    assert plain_encoding is None and packed_encoding == "gzip"
    assert gzip.decompress(packed) == plain
    text = plain.decode()
    assert text.count("# TYPE fabric_roce_rx_bytes_total counter") == 1
    for host in HOSTS:
        assert f'fabric_up{{collector="test_command",fabric="lab",group="gpus",host="{host}"}} 1.0' in text
    assert text.endswith("fabric_config_last_reload_success_timestamp_seconds " + text.rsplit(" ", 1)[1])


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(PROMETHEUS), reason="needs Debian's prometheus package")
def test_prometheus_reads_every_gzip_member(tmp_path):
    with DaemonProcess(_config(tmp_path), plugins=PLUGINS) as d:
        d.wait_http()
        d.wait_for(lambda s, b: b.count("fabric_last_success_timestamp_seconds{") == len(HOSTS), deadline=20)
        prom = Prometheus(tmp_path / "prom", job="fabric", targets=[f"127.0.0.1:{d.port}"], rule_files=[])
        try:
            prom.start()
            # The first member is only a HELP/TYPE header and the last is the reload timestamp: a reader
            # stopping after one member would see no sample at all, one stopping early would miss the tail.
            wait_until(lambda: len(prom.query("fabric_roce_rx_bytes_total")) == 2 * len(HOSTS), 30,
                       "Prometheus to ingest every target's series")
            assert len(prom.query("fabric_up == 1")) == len(HOSTS)
            assert prom.query("fabric_config_last_reload_successful")[0]["value"][1] == "1"
            assert prom.query('up{job="fabric"}')[0]["value"][1] == "1"
        finally:
            prom.stop()
