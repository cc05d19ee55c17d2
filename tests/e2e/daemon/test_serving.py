"""/metrics is a join of cached bytes: plain and gzip carry the same exposition, and a real
Prometheus reads the gzip body (one gzip stream of pieces compressed against the text before them,
gzipstream.py) to its end, also while polls land and pieces are compressed again between scrapes."""

import gzip
import os
import urllib.request
import zlib

import pytest

from tests.harness.daemon import DaemonProcess
from tests.harness.prometheus import PROMETHEUS, Prometheus, wait_until
from tests.e2e.daemon.test_daemon import PLUGINS, local_group, write_config

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
    # the loop-lag histogram is a live measurement: it moves between the two scrapes
    assert _without_loop_lag(gzip.decompress(packed)) == _without_loop_lag(plain)
    text = plain.decode()
    assert text.count("# TYPE fabric_roce_rx_bytes_total counter") == 1
    for host in HOSTS:
        assert f'fabric_up{{collector="test_command",fabric="lab",group="gpus",host="{host}"}} 1.0' in text
    assert text.endswith("fabric_event_loop_lag_seconds_sum " + text.rsplit(" ", 1)[1])


def _without_loop_lag(body: bytes) -> bytes:
    return b"".join(line for line in body.splitlines(keepends=True)
                    if not line.startswith(b"fabric_event_loop_lag_seconds_"))


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(PROMETHEUS), reason="needs Debian's prometheus package")
def test_prometheus_reads_every_gzip_member(tmp_path):
    with DaemonProcess(_config(tmp_path), plugins=PLUGINS) as d:
        d.wait_http()
        d.wait_for(lambda s, b: b.count("fabric_last_success_timestamp_seconds{") == len(HOSTS), deadline=20)
        prom = Prometheus(tmp_path / "prom", job="fabric", targets=[f"127.0.0.1:{d.port}"], rule_files=[])
        try:
            prom.start()
            # The body is two members (the targets', the self-metrics'), the last text the loop-lag
            # histogram's sum: a reader stopping after one member or early would miss the tail.
            wait_until(lambda: len(prom.query("fabric_roce_rx_bytes_total")) == 2 * len(HOSTS), 30,
                       "Prometheus to ingest every target's series")
            assert len(prom.query("fabric_up == 1")) == len(HOSTS)
            assert prom.query("fabric_config_last_reload_successful")[0]["value"][1] == "1"
            assert prom.query('up{job="fabric"}')[0]["value"][1] == "1"
        finally:
            prom.stop()


MANY_HOSTS = tuple(f"gpu-{i:03d}" for i in range(40))


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(PROMETHEUS), reason="needs Debian's prometheus package")
def test_prometheus_reads_the_gzip_stream_while_polls_land(tmp_path):
    """40 targets polled every 2 s, each with steady counters (exact values to check) and one
    that moves every poll, so pieces and their successors are compressed again between scrapes;
    Prometheus scrapes gzip every second: every scrape succeeds and every value arrives exact."""
    script = tmp_path / "values.sh"
    script.write_text('n=${1#gpu-}; for i in 0 1 2 3 4 5 6; do echo "eth$i $((1${n} * 1000 + i))"; done; '
                      'echo "eth9 $(date +%s%N)"\n')
    group = local_group("gpus", tmp_path / "unused", interval="1s")
    # a poll late on a loaded machine must not withhold a target (its series would leave a scrape)
    group.update(interval="2s", timeout="1500ms", stale_after="60s")
    group["hosts"] = [{"name": h} for h in MANY_HOSTS]
    group["options"] = {"command": ["sh", str(script), "{host}"]}
    config = tmp_path / "fabric.yaml"
    write_config(config, [group])
    with DaemonProcess(config, plugins=PLUGINS) as d:
        d.wait_http()
        d.wait_for(lambda s, b: b.count("fabric_last_success_timestamp_seconds{") == len(MANY_HOSTS), deadline=30)
        packed, encoding = _fetch(d, "gzip")
        assert encoding == "gzip"
        first = zlib.decompressobj(wbits=31)
        first.decompress(packed)
        assert first.eof and zlib.decompressobj(wbits=31).decompress(first.unused_data)  # two members, no more
        prom = Prometheus(tmp_path / "prom", job="fabric", targets=[f"127.0.0.1:{d.port}"], rule_files=[])
        try:
            prom.start()
            wait_until(lambda: prom.query('count_over_time(up{job="fabric"}[1m])') and
                       float(prom.query('count_over_time(up{job="fabric"}[1m])')[0]["value"][1]) >= 8, 60,
                       "eight scrapes")
            assert prom.query('min_over_time(up{job="fabric"}[1m])')[0]["value"][1] == "1"  # none failed
            steady = prom.query('fabric_roce_rx_bytes_total{netdev!="eth9"}')
            expected = {(h, f"eth{i}"): int(f"1{h[4:]}") * 1000 + i for h in MANY_HOSTS for i in range(7)}
            assert {(r["metric"]["host"], r["metric"]["netdev"]): float(r["value"][1]) for r in steady} == expected
            moving = prom.query('changes(fabric_roce_rx_bytes_total{netdev="eth9"}[1m])')
            assert len(moving) == len(MANY_HOSTS) and all(float(r["value"][1]) >= 2 for r in moving)
            assert len(prom.query('fabric_up == 1')) == len(MANY_HOSTS)
        finally:
            prom.stop()
