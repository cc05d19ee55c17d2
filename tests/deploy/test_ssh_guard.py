"""deploy/ssh/fabric-exporter-ssh-guard, the forced command for SSH targets: rule decisions, the pin
on the roce_nic script, and end to end as the `command=` of a real sshd's authorized key, with the
real collectors polling through it (roce_nic on a lab GPU host, infiniband on an ibsim fabric)."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fabric_exporter.collectors.roce_nic import REMOTE_SCRIPT
from fabric_exporter.lab.roce_host import RoceHost, write_fake_tools
from tests.harness.scripts import write_sh as _exe
from tests.harness.sshd import SSHD

from .conftest import DEPLOY

GUARD = DEPLOY / "ssh" / "fabric-exporter-ssh-guard"


def load_guard():
    loader = importlib.machinery.SourceFileLoader("fabric_exporter_ssh_guard", str(GUARD))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


guard = load_guard()
ROCE = ["sh", "-c", REMOTE_SCRIPT, "fabric-roce"]


def quote(argv):
    import shlex

    return shlex.join(argv)


def test_pinned_roce_script_is_the_collectors():
    digest = hashlib.sha256(REMOTE_SCRIPT.encode()).hexdigest()
    assert digest in guard.ROCE_SCRIPT_SHA256, \
        f"roce_nic's script changed: regenerate {GUARD.name} (python -m fabric_exporter.ssh_guard --write ...; " \
        "targets need the new guard)"


def test_pinned_burst_probe_is_the_collectors():
    from fabric_exporter.collectors.burst import PROBE_SOURCE

    digest = hashlib.sha256(PROBE_SOURCE.encode()).hexdigest()
    assert digest in guard.BURST_PROBE_SHA256, \
        f"the burst probe changed: regenerate {GUARD.name} (python -m fabric_exporter.ssh_guard --write ...; " \
        "targets need the new guard)"


def _burst(*rest):
    from fabric_exporter.collectors.burst import PROBE_SOURCE

    return ["python3", "-c", PROBE_SOURCE, "fabric-burst", *rest]


def test_burst_probe_shapes():
    ok = _burst("100", "hw/mlx5_0/1/np_cnp_sent", "eth/ens1f0np0/rx_prio3_pause_duration",
                "eth/ens1f0/rx_priority_3_xoff.nic")
    assert guard.decide(quote(ok), guard.Policy()) == ok
    lab = _burst("10", "--ethtool-dir", "/srv/lab/ethtool", "eth/ens1f0np0/rx_prio3_pause")
    assert guard.decide(quote(lab), guard.Policy(burst_ethtool_dir="/srv/lab/ethtool")) == lab
    for bad in (lab, _burst("5", "hw/mlx5_0/1/x"), _burst("100"), _burst("100", "hw/../1/x"),
                _burst("100", "hw/mlx5_0/1/.."), _burst("100", "eth/../../etc/passwd"), _burst("100", "/etc/shadow"),
                _burst("100", "hw/mlx5_0/x/y"), _burst("100", "--ethtool-dir", "/etc", "eth/a/b"),
                ["python3", "-c", "import os; os.system('id')", "fabric-burst", "100", "hw/a/1/b"],
                ["python3", "-m", "http.server"]):
        with pytest.raises(guard.Refused):
            guard.decide(quote(bad), guard.Policy())
    other = "print(1)\n"
    argv = ["python3", "-c", other, "fabric-burst", "100", "hw/a/1/b"]
    assert guard.decide(quote(argv), guard.Policy(script_hashes=[hashlib.sha256(other.encode()).hexdigest()])) == argv


ALLOWED = [
    ["timeout", "-k", "2", "18", *ROCE, "sysfs", "1"],
    [*ROCE, "rdma", "0", "mlx5_0", "mlx5_1"],
    ["timeout", "-k", "2", "18", *ROCE, "sysfs", "1", "mapped"], [*ROCE, "rdma", "0", "all", "mlx5_0"],
    ["ibqueryerrors", "--counters", "--report-port"],
    ["ibqueryerrors", "--threshold-file", "/dev/null"],
    ["ibqueryerrors", "-C", "mlx5_0", "-P", "1", "-t", "200", "--counters", "--report-port"],
    ["ibnetdiscover"], ["ibnetdiscover", "-C", "mlx5_0", "-P", "1"],
    ["ibnetdiscover", "--cache", "/tmp/fabric-exporter-ib-ib-mgmt-01.ibnetdiscover-cache"],
    ["ibqueryerrors", "--load-cache", "/tmp/fabric-exporter-ib-ib-all.ibnetdiscover-cache", "--threshold-file", "/dev/null"],
    ["perfquery", "-l", "12", "255"], ["perfquery", "12", "1"], ["perfquery", "-c", "12", "1"], ["perfquery", "-x", "-a"],
    ["perfquery", "-x", "-l", "12", "1,3,17"], ["perfquery", "-l", "12", "1,3"], ["perfquery", "-x", "12", "3"],
    ["perfquery", "--vlxmitcounters", "12", "3"],
    ["perfquery", "-E", "12", "1"], ["perfquery", "-D", "-C", "mlx5_0", "-P", "1", "12", "1"],
    ["perfquery", "--rcverr", "12", "1"], ["perfquery", "--xmtdisc", "12", "1"],
    ["ethtool", "-S", "ens1f0np0"], ["rdma", "-j", "statistic", "show"], ["rdma", "statistic", "show", "link", "mlx5_0/1"],
    ["rdma", "link", "show"],
    ["cat", "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent"],
    ["cat", "/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_wait"],
    ["ib_write_lat", "-p", "18515", "-n", "1000", "-s", "8", "-d", "mlx5_0", "--out_json",
     "--out_json_file=/dev/stdout", "10.0.0.2"],
    ["show", "pfc", "counters"], ["show", "queue", "counters", "--json"], ["show", "queue", "wredcounters"],
    ["show", "pfcwd", "stats"], ["show", "pfc", "counters", "--history"],
    ["show", "queue", "watermark", "unicast", "--json"], ["show", "queue", "persistent-watermark", "multicast"],
    ["show", "priority-group", "watermark", "headroom", "--json"], ["show", "priority-group", "persistent-watermark", "shared"],
    ["show", "buffer_pool", "watermark"], ["show", "headroom-pool", "persistent-watermark"],
    ["show", "pfcwd", "stats"], ["show", "lldp", "table"],
]

REFUSED = [
    "", "bash", "id", "sh -c 'id' fabric-roce sysfs 1", "sh -c id",
    quote([*ROCE, "sysfs", "1", "mlx5_0;id"]), quote([*ROCE, "everything", "1"]),
    "perfquery -R 12 1", "perfquery -xr 12 1", "perfquery --reset_after_read 12 1",
    "perfquery -E -r 12 1", "perfquery -ED 12 1", "perfquery -D -R 12 1 0x1", "perfquery --rcvcc 12 1",
    "ibqueryerrors -k", "ibqueryerrors -K", "ibqueryerrors --clear-errors", "ibqueryerrors --threshold-file /etc/shadow",
    "ibnetdiscover --cache /tmp/x", "ibnetdiscover --load-cache /etc/shadow", "ibnetdiscover --cache",
    "ibnetdiscover --cache /tmp/fabric-exporter-ib-x/../../etc/cron.d/x.ibnetdiscover-cache",
    "ibqueryerrors --load-cache /etc/shadow", "ibqueryerrors --load-cache",
    "cat /etc/shadow", "cat /sys/class/infiniband/mlx5_0/ports/1/hw_counters/../../../../../../etc/shadow",
    "cat /sys/class/infiniband/mlx5_0/ports/1/hw_counters/x/y", "find / -name x",
    "ethtool -s eth0 speed 10", "ethtool -S eth0 extra", "rdma statistic set link mlx5_0/1 optional-counters x",
    "rdma dev set mlx5_0 name x", "ib_write_lat --out_json_file=/tmp/owned", "ib_write_lat $(id)",
    "show run", "config save -y", "sudo show pfc counters", "show queue watermark", "show queue watermark unicast -c",
    "show queue watermark unicast --json --json", "show priority-group watermark shared -n asic0",
    "sonic-clear queue watermark unicast", "show buffer_pool watermark --clear", "show pfc counters --history -c",
    "watermarkstat -t q_shared_uni -c", "timeout 5", "timeout x perfquery",
    "show lldp table --json", "show lldp table -d", "show lldp table -p Ethernet0", "show lldp neighbors",
    "show lldp", "sudo show lldp table",
    "/usr/sbin/perfquery 1 1", "perfquery 'unterminated",
    "perfquery -x 12 1,3", "perfquery -l 1,2 3", "perfquery -R -l 12 1,3 1,2", "perfquery -l 12 1,,3",
    "perfquery -l 12 1,3;id", "perfquery --vlxmit 12 1", "perfquery --vlxmitcounters=1 12 1",
]


@pytest.mark.parametrize("argv", ALLOWED, ids=lambda a: " ".join(a)[:60])
def test_allowed(argv):
    assert guard.decide(quote(argv), guard.Policy()) == argv


@pytest.mark.parametrize("command", REFUSED, ids=lambda c: c[:60] or "<empty>")
def test_refused(command):
    with pytest.raises(guard.Refused):
        guard.decide(command, guard.Policy())


def test_policy_options():
    reset = "perfquery -R 12 1 0x1000"
    assert guard.decide(reset, guard.Policy(allow_counter_reset=True)) == reset.split()
    find = ["find", "/var/tmp/ibdiagnet2", "-maxdepth", "2", "(", "-name", "ibdiagnet2.db_csv", "-o", "-name",
            "ibdiagnet2.pm", ")", "-type", "f", "-printf", "%T@ %p\\n"]
    with pytest.raises(guard.Refused):
        guard.decide(quote(find), guard.Policy())
    policy = guard.Policy(ibdiagnet_dir="/var/tmp/ibdiagnet2/")
    assert guard.decide(quote(find), policy) == find
    assert guard.decide("cat -- /var/tmp/ibdiagnet2/run1/ibdiagnet2.pm", policy)
    with pytest.raises(guard.Refused):
        guard.decide("cat -- /var/tmp/ibdiagnet2/run1/notes.txt", policy)
    custom_cache = "ibnetdiscover --cache /var/cache/fabric/ib.cache"
    with pytest.raises(guard.Refused):
        guard.decide(custom_cache, guard.Policy())
    assert guard.decide(custom_cache, guard.Policy(ib_cache_files=["/var/cache/fabric/ib.cache"]))
    other = "#!/bin/sh\necho other\n"
    argv = ["sh", "-c", other, "fabric-roce", "sysfs", "1"]
    with pytest.raises(guard.Refused):
        guard.decide(quote(argv), guard.Policy())
    assert guard.decide(quote(argv), guard.Policy(script_hashes=[hashlib.sha256(other.encode()).hexdigest()])) == argv


def test_cli_refusal_status_and_dry_run():
    env = {**os.environ, "SSH_ORIGINAL_COMMAND": "id"}
    r = subprocess.run([sys.executable, str(GUARD)], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 126 and "refused" in r.stderr and r.stdout == ""
    env["SSH_ORIGINAL_COMMAND"] = "perfquery 12 1"
    r = subprocess.run([sys.executable, str(GUARD), "--dry-run"], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout == "allowed: perfquery 12 1\n"
    r = subprocess.run([sys.executable, str(GUARD), "--bogus"], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert os.access(GUARD, os.X_OK)


# ---------------------------------------------------------------------------------------------
# End to end: the guard as the forced command of a real sshd.


def _guard_python() -> str:
    # The target's own interpreter, as on a real host; the test interpreter where there is none.
    return "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


def force_guard(sshd: SSHD, *options: str) -> None:
    """Pin the client key to the guard, as docs/ssh-targets.md tells operators to."""
    command = " ".join([_guard_python(), str(GUARD), *options])
    key = sshd.authorized_keys.read_text().strip()
    sshd.authorized_keys.write_text(f'restrict,command="{command}" {key}\n')


@pytest.fixture
def guarded_roce_host(tmp_path):
    model = RoceHost.build("gpu-001", "mlx5", nics=2, pfc_priorities=(3,))
    sysfs, data, bin_dir = tmp_path / "sys", tmp_path / "data", tmp_path / "bin"
    model.write_sysfs(sysfs)
    model.write_tool_outputs(data)
    write_fake_tools(bin_dir, data)
    sshd = SSHD(tmp_path, path_dirs=[bin_dir], sysfs_tree=sysfs)
    force_guard(sshd)
    sshd.start()
    try:
        yield model, sshd
    finally:
        sshd.stop()


def test_roce_nic_collector_polls_through_the_guard(guarded_roce_host):
    from tests.harness.roce_nic import group, run
    from tests.harness.polling import Poller, one

    model, sshd = guarded_roce_host
    raw = {"credentials": {"lab": sshd.credential()},
           "targets": [group("gpu", [{"name": "gpu-001", "address": "127.0.0.1", "port": sshd.port}])]}
    poller = Poller(raw)

    states, samples = run(poller.poll_once(by_host=True))
    assert states["gpu-001"].state == "ok", states["gpu-001"].last_error
    port = model.ports[0]
    labels = {"fabric": "f1", "host": "gpu-001", "device": port.device, "port": "1", "netdev": port.netdev}
    assert one(samples, "fabric_roce_nic_cnp_sent_total", **labels) == port.hw_counters["np_cnp_sent"]
    assert one(samples, "fabric_roce_pfc_rx_pause_frames_total", **labels, priority="3") == port.ethtool["rx_prio3_pause"]

    # The same key cannot do anything else.
    for command, status in (("id", 126), ("cat /etc/passwd", 126), ("", 126),
                            (f"cat /sys/class/infiniband/{port.device}/ports/1/hw_counters/np_cnp_sent", 0)):
        r = subprocess.run(sshd.ssh_argv(command), capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        assert r.returncode == status, (command, r.returncode, r.stderr)
        if status == 0:
            assert int(r.stdout) == port.hw_counters["np_cnp_sent"]
        else:
            assert "fabric-exporter-ssh-guard: refused" in r.stderr


def test_infiniband_collector_polls_through_the_guard(tmp_path_factory):
    """A management node whose perfquery/ibqueryerrors/ibnetdiscover are the real tools on an ibsim
    fabric; the collector's whole sweep must pass the guard, and a counter reset must not."""
    if shutil.which("ibsim") is None:
        pytest.skip("ibsim not installed")  # tests/e2e/infiniband fails loudly for that in CI
    from tests.harness.infiniband import CollectorHarness, group_for, make_fabric, values

    fabric = make_fabric(tmp_path_factory, "guard")
    fabric.start()
    try:
        bin_dir = tmp_path_factory.mktemp("guard-ib-bin")
        env = fabric.env()
        for tool in ("ibqueryerrors", "ibnetdiscover", "perfquery"):
            _exe(bin_dir / tool, f'exec env LD_PRELOAD={env["LD_PRELOAD"]} IBSIM_SOCKNAME={env["IBSIM_SOCKNAME"]} '
                                 f'{shutil.which(tool)} "$@"')
        fabric.set_counter("leaf-02", 4, "SymbolErrorCounter", 7)
        # error_details: perfquery -E on the port whose PortRcvErrors is non-zero passes the guard
        fabric.set_counter("leaf-02", 4, "PortRcvErrors", 2)
        fabric.command('PerformanceSet "leaf-02"[4] PortRcvErrorDetails.PortVLMappingErrors=2')
        sshd = SSHD(tmp_path_factory.mktemp("guard-ib-sshd"), path_dirs=[bin_dir])
        force_guard(sshd)
        with sshd:
            group = group_for({"error_details": True}, transport="ssh", host=f"127.0.0.1:{sshd.port}",
                              credentials=sshd.credential())
            harness = CollectorHarness(group)
            # Two polls: the first discovers (ibnetdiscover --cache), the second may sweep errors
            # from that cache (ibqueryerrors --load-cache); both must pass the guard.
            for _ in range(2):
                result = harness.poll()
                assert result.problems == []
                assert values(result, "fabric_ib_symbol_error_total")[("leaf-02", "4")] == 7
                assert values(result, "fabric_ib_port_receive_vl_mapping_errors_total") == {("leaf-02", "4"): 2}
            r = subprocess.run(sshd.ssh_argv("perfquery -R 1 1"), capture_output=True, text=True, timeout=30,
                               stdin=subprocess.DEVNULL)
            assert r.returncode == 126 and "--allow-counter-reset" in r.stderr
            # getopt_long abbreviations of --Reset_only (issue 16: these reset 77 -> 0 through the old
            # guard), at every LID of this small fabric; the counter must survive them all.
            for lid in range(1, 17):
                for spelling in ("--Re", "--R", "--Res", "--Reset_only", "-xR"):
                    r = subprocess.run(sshd.ssh_argv(f"timeout -k 2 18 perfquery {spelling} {lid} 4"),
                                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
                    assert r.returncode == 126 and "refused" in r.stderr, (spelling, lid, r.returncode, r.stderr)
                    if lid > 1:
                        break
            assert values(harness.poll(), "fabric_ib_symbol_error_total")[("leaf-02", "4")] == 7
    finally:
        fabric.stop()


def test_burst_sampler_streams_through_the_guard(tmp_path):
    """The roce_nic burst sampler's one long-lived channel passes the guard (pinned probe, lab
    ethtool directory allowed by --allow-burst-ethtool-dir); without that option the guard refuses
    it and the poll says so (partial), the regular counters still published."""
    import asyncio

    from fabric_exporter.collectors.base import PollContext
    from fabric_exporter.collectors.roce_nic import RoceNicCollector
    from fabric_exporter.scheduler import Scheduler
    from fabric_exporter.serving.store import SnapshotStore
    from fabric_exporter.transport.factory import Transports
    from tests.harness.configs import parse_config
    from tests.harness.roce_nic import group
    from tests.harness.polling import one, parse_exposition

    model = RoceHost.build("gpu-001", "mlx5", nics=1, pfc_priorities=(3,))
    sysfs, data, bin_dir = tmp_path / "sys", tmp_path / "data", tmp_path / "bin"
    model.write_sysfs(sysfs)
    model.write_tool_outputs(data)
    write_fake_tools(bin_dir, data)
    ethtool_dir = str((data / "ethtool").resolve())
    results = {}
    for allowed in (True, False):
        sshd = SSHD(tmp_path / str(allowed), path_dirs=[bin_dir], sysfs_tree=sysfs)
        force_guard(sshd, *(["--allow-burst-ethtool-dir", ethtool_dir] if allowed else []))
        sshd.start()
        try:
            cfg = parse_config({"credentials": {"lab": sshd.credential()}, "targets": [
                {**group("gpu", [{"name": "gpu-001", "address": "127.0.0.1", "port": sshd.port}],
                         options={"burst": {"window": "50ms", "ethtool_stats_dir": ethtool_dir}}),
                 "interval": "1s", "timeout": "900ms"}]})

            async def scenario():
                transports = Transports()
                sched = Scheduler(transports, SnapshotStore())
                sched.apply(cfg, start_tasks=False)
                g = cfg.targets[0]
                collector = RoceNicCollector(PollContext(g, g.hosts[0], transports))
                try:
                    await sched.poll(("gpu", "gpu-001"), collector)
                    await asyncio.sleep(1.5)
                    state = await sched.poll(("gpu", "gpu-001"), collector)
                    return state, parse_exposition(sched.store.render().decode())
                finally:
                    await collector.close()
                    await transports.close()

            results[allowed] = asyncio.run(scenario())
        finally:
            sshd.stop()
    state, samples = results[True]
    assert state.state == "ok", state.last_error
    assert one(samples, "fabric_burst_sampler_ticks_total", host="gpu-001") >= 15
    assert one(samples, "fabric_roce_nic_burst_window_ratio_count", signal="pfc_rx_pause_time") >= 15
    state, samples = results[False]
    assert state.state == "partial" and "burst sampler" in state.last_error, state.last_error
    assert one(samples, "fabric_roce_nic_cnp_sent_total", device="mlx5_0") == model.ports[0].hw_counters["np_cnp_sent"]
    assert one(samples, "fabric_burst_sampler_ticks_total", host="gpu-001") == 0
