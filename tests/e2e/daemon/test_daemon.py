"""The daemon as a user runs it: a subprocess, HTTP endpoints, signals, reloads, promtool."""

import signal
import subprocess
import sys
import time

import yaml

from tests.conftest import require_tool
from tests.harness.daemon import DaemonProcess, metric_value, package_env
from tests.harness.ssh_server import SilentTCPServer, ThreadedSSHServer

PLUGINS = "tests.harness.plugin_collectors"


def write_config(path, targets, credentials=None):
    path.write_text(yaml.safe_dump({"credentials": credentials or {}, "targets": targets}))


def local_group(name, value_file, interval="1s"):
    return {"name": name, "fabric": "lab", "collector": "test_command", "transport": "local",
            "interval": interval, "timeout": "800ms", "options": {"command": ["cat", str(value_file)]}}


def hung_ssh_group(tmp_path, port):
    key = tmp_path / "unused_key"
    if not key.exists():
        import asyncssh

        asyncssh.generate_private_key("ssh-ed25519").write_private_key(key)
    creds = {"lab": {"type": "ssh", "username": "root", "private_key_file": str(key),
                     "insecure_ignore_host_key": True, "connect_timeout": "30s"}}
    group = {"name": "hung", "fabric": "lab", "collector": "test_command", "transport": "ssh",
             "credentials": "lab", "interval": "40s", "timeout": "30s",
             "hosts": [{"name": "stuck", "address": "127.0.0.1", "port": port}]}
    return creds, group


def test_endpoints_and_a_hanging_poll(tmp_path):
    values = tmp_path / "values"
    values.write_text("eth0 11\neth1 12\n")
    promtool = require_tool("promtool")
    with SilentTCPServer() as silent:
        creds, hung = hung_ssh_group(tmp_path, silent.port)
        config = tmp_path / "fabric.yaml"
        write_config(config, [local_group("gpus", values), hung], creds)
        with DaemonProcess(config, plugins=PLUGINS) as d:
            d.wait_http()
            assert d.get("/healthz") == (200, "ok\n")
            text = d.wait_for(lambda s, b: 'netdev="eth1"' in b)
            # /ready waits until every target was tried once: the hung one is still in its 30s poll.
            status, body = d.get("/ready")
            assert status == 503 and "1 target(s) not polled yet" in body
            # /metrics answers while a poll hangs; the hung host's series are simply absent.
            started = time.monotonic()
            status, text = d.get("/metrics", timeout=5)
            elapsed = time.monotonic() - started
            assert status == 200
            assert metric_value(text, 'fabric_roce_rx_bytes_total{device="mlx5_0",fabric="lab",host="localhost",'
                                      'netdev="eth0",port="1"}') == 11
            assert metric_value(text, 'fabric_up{collector="test_command",fabric="lab",group="gpus",'
                                      'host="localhost"}') == 1
            assert 'fabric_up{collector="test_command",fabric="lab",group="hung",host="stuck"} 0.0' in text
            status, page = d.get("/")
            assert status == 200 and "<td>stuck</td>" in page and "<td>gpus</td>" in page
            # gzip when asked (Prometheus always asks): the same exposition, compressed
            import gzip
            import urllib.request

            req = urllib.request.Request(d.base + "/metrics", headers={"Accept-Encoding": "gzip"})
            with urllib.request.urlopen(req, timeout=5) as r:
                assert r.headers["Content-Encoding"] == "gzip"
                assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
                unzipped = gzip.decompress(r.read()).decode()
            assert 'netdev="eth0",port="1"} 11.0' in unzipped
            # the exposition is valid by promtool's linter: it prints nothing
            lint = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                                  timeout=30)
            assert lint.returncode == 0 and lint.stdout == "" and lint.stderr == "", lint.stdout + lint.stderr
            # SIGTERM while the poll still hangs: the daemon is gone within 5 s
            t0 = time.monotonic()
            d.signal(signal.SIGTERM)
            d.proc.wait(5)
            assert d.proc.returncode == 0 and time.monotonic() - t0 < 5
            print(f"/metrics latency while a poll hangs: {elapsed * 1000:.1f} ms")


def test_sighup_with_a_broken_config_keeps_the_old_one(tmp_path):
    values = tmp_path / "values"
    values.write_text("eth0 1\n")
    config = tmp_path / "fabric.yaml"
    write_config(config, [local_group("gpus", values)])
    with DaemonProcess(config, plugins=PLUGINS) as d:
        d.wait_http()
        d.wait_for(lambda s, b: 'group="gpus"' in b and "fabric_roce_rx_bytes_total{" in b)
        config.write_text("targets:\n  - name: gpus\n    colector: typo\n")
        d.signal(signal.SIGHUP)
        text = d.wait_for(lambda s, b: "fabric_config_last_reload_successful 0.0" in b)
        assert "fabric_roce_rx_bytes_total{" in text  # the old config still polls
        values.write_text("eth0 2\n")
        d.wait_for(lambda s, b: metric_value(b, 'fabric_roce_rx_bytes_total{device="mlx5_0",fabric="lab",'
                                                'host="localhost",netdev="eth0",port="1"}') == 2)
        assert "config reload rejected" in d.logs() and "colector" in d.logs()
        write_config(config, [local_group("gpus", values), local_group("more", values)])
        d.signal(signal.SIGHUP)
        d.wait_for(lambda s, b: "fabric_config_last_reload_successful 1.0" in b and 'group="more"' in b)


def test_once_prints_exposition_and_fails_on_a_failed_target(tmp_path):
    values = tmp_path / "values"
    values.write_text("eth0 3\n")
    config = tmp_path / "fabric.yaml"
    broken = local_group("broken", tmp_path / "missing")
    write_config(config, [local_group("gpus", values), broken])
    cmd = [sys.executable, "-m", "fabric_exporter", "once", "--config", str(config)]
    env = package_env(FABRIC_EXPORTER_PLUGINS=PLUGINS)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 1
    assert 'netdev="eth0",port="1"} 3.0' in r.stdout
    assert "broken/localhost: FAILED (command_failed)" in r.stderr and "No such file" in r.stderr
    r = subprocess.run(cmd + ["--target", "gpus"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert 'group="broken"' not in r.stdout


def test_basic_auth_and_tls_from_the_web_config_file(tmp_path):
    import ssl
    import urllib.request

    import bcrypt

    values = tmp_path / "values"
    values.write_text("eth0 1\n")
    config = tmp_path / "fabric.yaml"
    write_config(config, [local_group("gpus", values)])
    cert, key = _self_signed(tmp_path)
    web = tmp_path / "web.yaml"
    web.write_text(yaml.safe_dump({
        "tls_server_config": {"cert_file": str(cert), "key_file": str(key)},
        "basic_auth_users": {"prom": bcrypt.hashpw(b"scrape-me", bcrypt.gensalt(rounds=4)).decode()}}))
    with DaemonProcess(config, plugins=PLUGINS, args=("--web.config.file", str(web))) as d:
        ctx = ssl.create_default_context(cafile=str(cert))
        url = f"https://127.0.0.1:{d.port}/metrics"
        deadline = time.monotonic() + 15
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(url), context=ctx, timeout=2)
            except urllib.error.HTTPError as e:
                assert e.code == 401
                break
            except OSError:
                assert time.monotonic() < deadline, d.logs()
                time.sleep(0.2)
        import base64

        auth = {"Authorization": "Basic " + base64.b64encode(b"prom:scrape-me").decode()}
        with urllib.request.urlopen(urllib.request.Request(url, headers=auth), context=ctx, timeout=5) as r:
            assert r.status == 200 and b"fabric_build_info" in r.read()
        bad = {"Authorization": "Basic " + base64.b64encode(b"prom:wrong").decode()}
        try:
            urllib.request.urlopen(urllib.request.Request(url, headers=bad), context=ctx, timeout=5)
            raise AssertionError("wrong password accepted")
        except urllib.error.HTTPError as e:
            assert e.code == 401


def _self_signed(tmp_path):
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_hosts_file_changes_are_picked_up_and_logs_are_json(tmp_path):
    import json

    values = tmp_path / "values"
    values.write_text("eth0 1\n")
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(yaml.safe_dump(["gpu-a"]))
    config = tmp_path / "fabric.yaml"
    group = {"name": "gpus", "fabric": "lab", "collector": "test_command", "transport": "local",
             "interval": "1s", "timeout": "800ms", "hosts_file": str(hosts),
             "options": {"command": ["cat", str(values)]}}
    write_config(config, [group])
    with DaemonProcess(config, plugins=PLUGINS, args=("--log.format", "json")) as d:
        d.wait_http()
        d.wait_for(lambda s, b: 'host="gpu-a"' in b and "fabric_roce_rx_bytes_total{" in b)
        polls_a = 'fabric_polls_total{collector="test_command",fabric="lab",group="gpus",host="gpu-a"}'
        before = metric_value(d.get("/metrics")[1], polls_a)
        hosts.write_text(yaml.safe_dump(["gpu-a", "gpu-b"]))
        text = d.wait_for(lambda s, b: 'fabric_up{collector="test_command",fabric="lab",group="gpus",host="gpu-b"} 1.0'
                          in b, deadline=20)
        # gpu-a kept running through the reload: its poll count went on, not back to zero
        assert metric_value(text, polls_a) > before
        records = [json.loads(line) for line in d.logs().splitlines() if line.startswith("{")]
    assert records and all({"ts", "level", "logger", "msg"} <= set(r) for r in records)
    assert any(r["msg"] == "config reloaded" and "hosts file changed" in r["trigger"] for r in records)
