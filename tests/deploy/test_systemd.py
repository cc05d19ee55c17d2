"""The systemd unit: `systemd-analyze verify` is clean, the offline security exposure is <= 2.0, the
unit's command line is one the real CLI accepts, and the real daemon speaks sd_notify as the unit
expects (READY, WATCHDOG pets, RELOADING/READY on SIGHUP, STOPPING and exit 0 on SIGTERM)."""

from __future__ import annotations

import re
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from ..harness.daemon import DaemonProcess
from .conftest import DEPLOY, deploy_tool

UNIT = DEPLOY / "systemd" / "fabric-exporter.service"
INSTALLED_BINARY = "/opt/fabric-exporter/bin/fabric-exporter"
MAX_EXPOSURE = 2.0


def unit_settings(text: str) -> dict[str, list[str]]:
    """Key -> values in order (systemd keys repeat), continuation lines joined, comments dropped."""
    settings: dict[str, list[str]] = {}
    logical = re.sub(r"\\\n\s*", " ", text)
    for line in logical.splitlines():
        line = line.strip()
        if not line or line[0] in "#;[":
            continue
        key, _, value = line.partition("=")
        settings.setdefault(key.strip(), []).append(value.strip())
    return settings


@pytest.fixture()
def unit_copy(tmp_path: Path) -> Path:
    """The unit with ExecStart pointing at a real executable, since verify checks that it exists."""
    fake_bin = tmp_path / "fabric-exporter"
    fake_bin.write_text("#!/bin/sh\nexec python3 -m fabric_exporter \"$@\"\n")
    fake_bin.chmod(0o755)
    text = UNIT.read_text()
    assert INSTALLED_BINARY in text
    copy = tmp_path / UNIT.name
    copy.write_text(text.replace(INSTALLED_BINARY, str(fake_bin)))
    return copy


def test_systemd_analyze_verify_is_clean(unit_copy: Path):
    tool = deploy_tool("systemd-analyze")
    result = subprocess.run([tool, "verify", unit_copy.name], cwd=unit_copy.parent,
                            capture_output=True, text=True, timeout=60)
    # verify prints every problem (unknown keys, bad values, missing commands) on stderr.
    assert result.returncode == 0 and not result.stderr.strip() and not result.stdout.strip(), \
        f"rc={result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def test_security_exposure_at_most_two(unit_copy: Path):
    tool = deploy_tool("systemd-analyze")
    result = subprocess.run([tool, "security", "--offline=yes", "--no-pager", str(unit_copy)],
                            capture_output=True, text=True, timeout=60)
    m = re.search(r"Overall exposure level for \S+: (\d+(?:\.\d+)?)", result.stdout)
    assert m, f"no exposure score in:\n{result.stdout}\n{result.stderr}"
    exposure = float(m.group(1))
    assert exposure <= MAX_EXPOSURE, f"exposure {exposure} > {MAX_EXPOSURE}:\n{result.stdout}"


def test_unit_contract():
    s = unit_settings(UNIT.read_text())
    assert s["Type"] == ["notify"] and s["NotifyAccess"] == ["main"]
    assert s["DynamicUser"] == ["yes"] and "User" not in s
    assert s["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    watchdog = s["WatchdogSec"][0]
    assert re.fullmatch(r"\d+s", watchdog) and int(watchdog[:-1]) >= 10
    assert s["ConfigurationDirectory"] == ["fabric-exporter"]
    assert any(v.startswith("secret:/etc/fabric-exporter/") for v in s["LoadCredential"])
    # umad access through a group and a device-cgroup rule, never through root or capabilities.
    assert s["SupplementaryGroups"] == ["umad"]
    assert s["DeviceAllow"] == ["char-infiniband_mad rw"]
    assert s["CapabilityBoundingSet"] == [""] and s["AmbientCapabilities"] == [""]
    assert s["ProtectSystem"] == ["strict"] and s["NoNewPrivileges"] == ["yes"]


def test_execstart_arguments_are_accepted_by_the_cli():
    from fabric_exporter.cli import build_parser

    argv = shlex.split(unit_settings(UNIT.read_text())["ExecStart"][0])
    assert argv[0] == INSTALLED_BINARY
    args = build_parser().parse_args(argv[1:])
    assert (args.command, args.config) == ("run", "/etc/fabric-exporter/config.yaml")
    assert args.listen_address is None and args.log_format == "json"  # the config's web.listen_address rules


# ---------------------------------------------------------------------------------------------
# sd_notify end to end, with the real daemon and a notify socket this test owns.


class NotifySocket:
    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.path = path
        self.received: list[tuple[float, dict[str, str]]] = []

    def next(self, deadline: float) -> dict[str, str] | None:
        self.sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            data = self.sock.recv(4096)
        except TimeoutError:
            return None
        fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
        self.received.append((time.monotonic(), fields))
        return fields

    def wait_for(self, key: str, value: str = "1", within: float = 15.0) -> tuple[float, list[dict]]:
        """Read datagrams until one has key=value; returns its arrival time and what came before it."""
        end = time.monotonic() + within
        before: list[dict] = []
        while time.monotonic() < end:
            msg = self.next(end)
            if msg is None:
                break
            if msg.get(key) == value:
                return time.monotonic(), before
            before.append(msg)
        raise AssertionError(f"no {key}={value} within {within}s; got {before}")

    def close(self) -> None:
        self.sock.close()


WATCHDOG_USEC = 400_000  # pets expected every 0.2 s


def test_sd_notify_ready_watchdog_reload_stop(tmp_path: Path):
    config = tmp_path / "config.yaml"
    config.write_text("targets: []\n")
    notify = NotifySocket(tmp_path / "notify.sock")
    daemon = DaemonProcess(config, env={"NOTIFY_SOCKET": str(notify.path), "WATCHDOG_USEC": str(WATCHDOG_USEC)})
    try:
        _, before_ready = notify.wait_for("READY")
        assert not any("STOPPING" in m for m in before_ready)
        ready = notify.received[-1][1]
        assert ready.get("MAINPID") == str(daemon.proc.pid), ready
        daemon.wait_http()

        # Pets keep coming, about every WATCHDOG_USEC/2: count them over 1.5 s.
        end = time.monotonic() + 1.5
        pets = []
        while time.monotonic() < end:
            msg = notify.next(end)
            if msg and msg.get("WATCHDOG") == "1":
                pets.append(time.monotonic())
        assert len(pets) >= 4, f"only {len(pets)} WATCHDOG=1 in 1.5 s (expected ~7)"
        gaps = [b - a for a, b in zip(pets, pets[1:])]
        assert max(gaps) < WATCHDOG_USEC / 1e6, f"a pet gap reached the watchdog timeout: {gaps}"

        daemon.signal(signal.SIGHUP)
        _, before_reloading = notify.wait_for("RELOADING")
        _, between = notify.wait_for("READY")
        assert all("STOPPING" not in m for m in before_reloading + between)
        assert daemon.proc.poll() is None

        daemon.signal(signal.SIGTERM)
        notify.wait_for("STOPPING")
        assert daemon.proc.wait(15) == 0, daemon.logs()
    finally:
        daemon.stop()
        notify.close()


def test_sd_notify_abstract_socket_and_no_watchdog_without_watchdog_usec(tmp_path: Path):
    """systemd may hand an abstract socket ("@name"); without WATCHDOG_USEC nothing is petted."""
    config = tmp_path / "config.yaml"
    config.write_text("targets: []\n")
    name = f"fabric-exporter-test-{time.monotonic_ns()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(15)
    env = {"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": ""}
    daemon = DaemonProcess(config, env=env)
    try:
        assert sock.recv(4096).decode().startswith("READY=1")
        sock.settimeout(1.0)
        with pytest.raises(TimeoutError):
            sock.recv(4096)  # nothing further while idle: no watchdog was asked for
        daemon.signal(signal.SIGTERM)
        sock.settimeout(15)
        assert sock.recv(4096) == b"STOPPING=1"
        assert daemon.proc.wait(15) == 0
    finally:
        daemon.stop()
        sock.close()


# ---------------------------------------------------------------------------------------------
# The umad group and its udev rule.


def test_sysusers_creates_the_umad_group(tmp_path: Path):
    tool = deploy_tool("systemd-sysusers")
    conf_dir = tmp_path / "usr" / "lib" / "sysusers.d"
    conf_dir.mkdir(parents=True)
    (tmp_path / "etc").mkdir()
    (conf_dir / "fabric-exporter.conf").write_text((DEPLOY / "systemd" / "fabric-exporter.sysusers").read_text())
    result = subprocess.run([tool, f"--root={tmp_path}"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    groups = {line.split(":")[0] for line in (tmp_path / "etc" / "group").read_text().splitlines()}
    assert unit_settings(UNIT.read_text())["SupplementaryGroups"][0] in groups


def test_udev_rule_gives_only_umad_devices_to_the_group():
    """udevadm in systemd 252 has no offline rule checker (`udevadm verify` came in 254): check the
    rule's shape: umad devices only (never issm*), the unit's group, group read/write, no world access."""
    rules = [line for line in (DEPLOY / "systemd" / "99-fabric-exporter-umad.rules").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert len(rules) == 1
    assert re.sub(r'[A-Z]+==?"[^"]*"(, )?', "", rules[0]) == ""  # nothing but KEY op "value" pairs
    found = re.findall(r'([A-Z]+)(==|=)"([^"]*)"', rules[0])
    # KERNEL/SUBSYSTEM are matches (==), GROUP/MODE assignments (=).
    assert {k: op for k, op, _ in found} == {"KERNEL": "==", "SUBSYSTEM": "==", "GROUP": "=", "MODE": "="}
    pairs = {k: v for k, _, v in found}
    assert pairs == {"KERNEL": "umad[0-9]*", "SUBSYSTEM": "infiniband_mad", "GROUP": "umad", "MODE": "0660"}
    assert pairs["GROUP"] == unit_settings(UNIT.read_text())["SupplementaryGroups"][0]
    import fnmatch

    assert fnmatch.fnmatchcase("umad0", pairs["KERNEL"]) and not fnmatch.fnmatchcase("issm0", pairs["KERNEL"])


# ---------------------------------------------------------------------------------------------
# The unit's system-call policy, applied without systemd (tests/harness/deploy_sandbox.py): its
# SystemCallFilter= allow-list as a seccomp filter (denied calls fail with EPERM) plus the
# MemoryDenyWriteExecute=yes policy (PR_SET_MDWE). A Python extension that JITs, or a code path
# that needs a filtered call, would break the service in production; these runs would show it.


@pytest.fixture(scope="module")
def unit_sandbox():
    from ..harness import deploy_sandbox

    why_not = deploy_sandbox.supported()
    if why_not:
        pytest.skip(why_not)
    allow = deploy_sandbox.unit_allow_list(UNIT.read_text(), deploy_tool("systemd-analyze"))
    families = deploy_sandbox.unit_address_families(UNIT.read_text())
    return lambda argv, workdir: deploy_sandbox.sandboxed(argv, allow, workdir, families)


def test_sandbox_is_in_force(unit_sandbox, tmp_path: Path):
    import sys

    code = ("import mmap, os\n"
            "try:\n    os.setpriority(os.PRIO_PROCESS, 0, 5); print('setpriority allowed')\n"
            "except PermissionError:\n    print('setpriority denied')\n"
            "try:\n    mmap.mmap(-1, 4096, prot=mmap.PROT_WRITE | mmap.PROT_EXEC); print('wx allowed')\n"
            "except PermissionError:\n    print('wx denied')\n"
            "import socket\n"
            "try:\n    socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print('packet allowed')\n"
            "except OSError as e:\n    print('packet denied', e.errno == 97)\n"
            "socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()\n"
            "print('pid', os.getpid() > 0)\n")
    r = subprocess.run(unit_sandbox([sys.executable, "-c", code], tmp_path), capture_output=True, text=True, timeout=30)
    # setpriority is in @resources (denied by the unit); getpid is in @default (allowed).
    # AF_PACKET is outside RestrictAddressFamilies= (EAFNOSUPPORT = 97); AF_INET6 inside.
    assert r.stdout.split("\n")[:4] == ["setpriority denied", "wx denied", "packet denied True", "pid True"], r


def test_polls_work_under_the_units_sandbox(unit_sandbox, tmp_path: Path, tmp_path_factory):
    """`fabric-exporter once` under the sandbox: an IB sweep with local subprocesses (the management
    node's case: the real perfquery/ibqueryerrors/ibnetdiscover on an ibsim fabric) and a RoCE NIC
    poll over SSH (asyncssh and its crypto) to a real sshd."""
    import shutil
    import sys

    import yaml

    from fabric_exporter.lab.roce_host import RoceHost, write_fake_tools

    from ..harness.daemon import package_env
    from ..harness.sshd import SSHD

    targets = []
    fabric = None
    if shutil.which("ibsim"):
        from tests.harness.infiniband import make_fabric

        fabric = make_fabric(tmp_path_factory, "sandbox")
        fabric.start()
        fabric.set_counter("leaf-02", 4, "SymbolErrorCounter", 7)
        targets.append({"name": "ib", "fabric": "lab", "collector": "infiniband", "transport": "local",
                        "interval": "60s", "timeout": "30s", "options": {"env": fabric.env()}})
    model = RoceHost.build("gpu-001", "mlx5", nics=1, pfc_priorities=(3,))
    model.write_sysfs(tmp_path / "sys")
    model.write_tool_outputs(tmp_path / "data")
    write_fake_tools(tmp_path / "bin", tmp_path / "data")
    try:
        with SSHD(tmp_path, path_dirs=[tmp_path / "bin"], sysfs_tree=tmp_path / "sys") as sshd:
            targets.append({"name": "gpu", "fabric": "f1", "collector": "roce_nic", "transport": "ssh",
                            "credentials": "lab", "interval": "30s", "timeout": "10s",
                            "hosts": [{"name": "gpu-001", "address": "127.0.0.1", "port": sshd.port}]})
            config = tmp_path / "config.yaml"
            config.write_text(yaml.safe_dump({"credentials": {"lab": sshd.credential()}, "targets": targets}))
            argv = [sys.executable, "-m", "fabric_exporter", "once", "--config", str(config)]
            result = subprocess.run(unit_sandbox(argv, tmp_path), env=package_env(), capture_output=True,
                                    text=True, timeout=180)
    finally:
        if fabric is not None:
            fabric.stop()
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    cnp = [line for line in lines if line.startswith("fabric_roce_nic_cnp_sent_total{")]
    assert len(cnp) == 1 and float(cnp[0].rsplit(" ", 1)[1]) == model.ports[0].hw_counters["np_cnp_sent"]
    if fabric is not None:
        symbol = [line for line in lines if line.startswith("fabric_ib_symbol_error_total{")
                  and re.search(r'[{,]node_name="leaf-02"', line) and re.search(r'[{,]port="4"', line)]
        assert len(symbol) == 1 and float(symbol[0].rsplit(" ", 1)[1]) == 7, symbol


def test_daemon_lifecycle_under_the_units_sandbox(unit_sandbox, tmp_path: Path):
    """Serve, pet the watchdog, reload on SIGHUP and stop cleanly on SIGTERM, all under the filter."""
    import sys

    from ..harness.daemon import free_port, package_env

    config = tmp_path / "config.yaml"
    config.write_text("targets: []\n")
    notify = NotifySocket(tmp_path / "notify.sock")
    port = free_port()
    argv = [sys.executable, "-m", "fabric_exporter", "run", "--config", str(config),
            "--web.listen-address", f"127.0.0.1:{port}"]
    log = open(tmp_path / "daemon.log", "wb")
    proc = subprocess.Popen(unit_sandbox(argv, tmp_path), stdout=log, stderr=subprocess.STDOUT,
                            env=package_env(NOTIFY_SOCKET=str(notify.path), WATCHDOG_USEC=str(WATCHDOG_USEC)))
    try:
        notify.wait_for("READY")
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            assert r.status == 200 and b"fabric_config_last_reload_successful 1.0" in r.read()
        notify.wait_for("WATCHDOG")
        proc.send_signal(signal.SIGHUP)
        notify.wait_for("RELOADING")
        notify.wait_for("READY")
        proc.send_signal(signal.SIGTERM)
        notify.wait_for("STOPPING")
        assert proc.wait(15) == 0, (tmp_path / "daemon.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        log.close()
        notify.close()
