"""End to end over real sshd: the collector drives fake perftest programs on emulated hosts.

Proves the orchestration: one port per running server, servers and hung clients cleaned up by the
timeout wrapper, the per-host and total budget never exceeded (checked from the fakes' own event
log, not from the collector's word), and a dead host failing only its own probes.
"""

import asyncio
import os
import re
import time

import pytest

from tests.harness.configs import parse_config
from fabric_exporter.scheduler import Scheduler
from fabric_exporter.serving.store import SnapshotStore
from fabric_exporter.transport.factory import Transports
from tests.harness.latency_sshd import LatencyLab

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="sshd harness needs root (mount namespaces)")

HOSTS = ["gpu-a1", "gpu-a2", "gpu-a3", "gpu-b1", "gpu-b2", "gpu-b3"]
GROUPS = {"rack-a": HOSTS[:3], "rack-b": HOSTS[3:]}


def config(lab, **options):
    opts = {"host_groups": GROUPS, "plan": {"full_mesh": True, "sampled_peers": 1}, "probe_timeout": "4s",
            "server_start_wait": "150ms", **options}
    return parse_config({
        "credentials": {"lab": lab.credential()},
        "targets": [{"name": "lat", "fabric": "ib0", "collector": "latency_probe", "transport": "ssh",
                     "credentials": "lab", "hosts": lab.hosts(), "interval": "60s", "timeout": "30s",
                     "options": opts}]})


async def poll_once(cfg, transports=None):
    transports = transports or Transports()
    store = SnapshotStore()
    sched = Scheduler(transports, store)
    sched.apply(cfg, start_tasks=False)
    started = time.monotonic()
    try:
        (state,) = await sched.poll_all_once()
    finally:
        await transports.close()
    return state, store.render().decode(), time.monotonic() - started


def value(text, name, **labels):
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def intervals(events):
    """Per process: (host, port, role, start, end) from the fakes' start/end events."""
    starts, out = {}, []
    for e in events:
        role = "server" if e["event"].startswith("server") else "client"
        if e["event"] in ("server_start", "client_start"):
            starts[e["pid"]] = e
        elif e["event"] in ("server_end", "client_end", "client_failed") and e["pid"] in starts:
            s = starts.pop(e["pid"])
            out.append((s["host"], s["port"], role, s["t"], e["t"]))
    return out


def max_overlap(spans):
    points = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda p: (p[0], p[1]))
    cur = peak = 0
    for _, d in points:
        cur += d
        peak = max(peak, cur)
    return peak


def test_full_round_measures_every_planned_pair_within_budget(tmp_path):
    fixture = {"default": {"typical": 2.1, "p99": 2.9, "p999": 4.4, "max": 9.8, "min": 1.9, "avg": 2.2},
               "pairs": {"gpu-a1>gpu-a2": {"min": 1.5, "typical": 1.62, "avg": 1.66, "p99": 2.05, "p999": 3.1,
                                           "max": 7.0}},
               "cpu_warning": True}
    with LatencyLab(tmp_path, HOSTS, fixture) as lab:
        cfg = config(lab, budget={"max_concurrent_probes": 2, "max_probes_per_host": 1})
        state, text, took = asyncio.run(poll_once(cfg))
        assert state.state == "ok", state.last_error
        # 2 racks x 3 hosts: 12 mesh pairs + 6 sampled cross pairs in round 0
        assert value(text, "fabric_rdma_latency_round_probes", outcome="ok") == 18
        labels = dict(source="gpu-a1", destination="gpu-a2", source_group="rack-a", destination_group="rack-a",
                      tool="ib_write_lat", message_bytes="2")
        assert value(text, "fabric_rdma_latency_median_seconds", **labels) == 1.62e-06
        assert value(text, "fabric_rdma_latency_p99_seconds", **labels) == 2.05e-06
        assert value(text, "fabric_rdma_latency_p999_seconds", **labels) == 3.1e-06
        assert value(text, "fabric_rdma_latency_max_seconds", **labels) == 7e-06
        assert value(text, "fabric_rdma_latency_pair_seconds_count", **labels) == 10000
        assert value(text, "fabric_rdma_latency_seconds_count", source_group="rack-a",
                     destination_group="rack-a") == 6 * 10000
        assert value(text, "fabric_rdma_latency_seconds_bucket", source_group="rack-a", destination_group="rack-a",
                     le="+Inf") == 6 * 10000

        spans = intervals(lab.events())
        servers = [s for s in spans if s[2] == "server"]
        assert len(servers) == 18
        # ports: overlapping servers never share one, all inside the configured range
        for i, a in enumerate(servers):
            assert 19000 <= a[1] <= 19999
            for b in servers[i + 1:]:
                if a[3] < b[4] and b[3] < a[4]:
                    assert a[1] != b[1], f"port {a[1]} used by two running servers"
        # budget: total probes at once (servers running) and per host (server or client)
        assert max_overlap([(s[3], s[4]) for s in servers]) <= 2
        for host in HOSTS:
            assert max_overlap([(s[3], s[4]) for s in spans if s[0] == host]) <= 1, host
        assert lab.wait_no_fakes(3) == []


def test_dead_host_fails_only_its_own_probes(tmp_path):
    with LatencyLab(tmp_path, HOSTS, {}, dead=("gpu-b2",)) as lab:
        cfg = config(lab, plan={"full_mesh": True}, budget={"max_concurrent_probes": 8})
        state, text, took = asyncio.run(poll_once(cfg))
        assert state.state == "partial"
        assert "gpu-b2 (server) connect" in state.last_error and "gpu-b2 (client) connect" in state.last_error
        # rack-b mesh: 6 pairs, 4 involve gpu-b2 -> 4 failed; rack-a's 6 and b1<->b3 succeed
        assert value(text, "fabric_rdma_latency_round_probes", outcome="failed") == 4
        assert value(text, "fabric_rdma_latency_round_probes", outcome="ok") == 8
        assert value(text, "fabric_rdma_latency_probe_failures_total", host="gpu-b2", role="server",
                     reason="connect") == 2
        assert value(text, "fabric_rdma_latency_probe_failures_total", host="gpu-b2", role="client",
                     reason="connect") == 2
        assert not [line for line in text.splitlines()
                    if line.startswith("fabric_rdma_latency_probe_failures_total") and 'host="gpu-b2"' not in line]
        assert value(text, "fabric_rdma_latency_median_seconds", source="gpu-b1", destination="gpu-b3") is not None
        assert value(text, "fabric_rdma_latency_median_seconds", source="gpu-b1", destination="gpu-b2") is None
        assert took < 10, "a refused host must fail fast, not hold the round"


def test_hung_probe_times_out_and_nothing_is_left_running(tmp_path):
    fixture = {"pairs": {"gpu-a1>gpu-a2": {"behaviour": "hang"}, "gpu-a2>gpu-a3": {"behaviour": "fail"},
                         "gpu-a3>gpu-a1": {"behaviour": "garbage"}, "gpu-a2>gpu-a1": {"behaviour": "vanish"}}}
    with LatencyLab(tmp_path, HOSTS[:3], fixture) as lab:
        cfg = config(lab, host_groups={"rack-a": HOSTS[:3]}, plan={"full_mesh": True}, probe_timeout="2s",
                     budget={"max_concurrent_probes": 6})
        state, text, took = asyncio.run(poll_once(cfg))
        assert state.state == "partial", state.last_error
        assert value(text, "fabric_rdma_latency_probe_failures_total", host="gpu-a1", role="client",
                     reason="timeout") == 1
        assert value(text, "fabric_rdma_latency_probe_failures_total", host="gpu-a3", role="client",
                     reason="parse") == 1
        # the client never connected (no device): its server on gpu-a1 is left waiting for the timeout
        assert value(text, "fabric_rdma_latency_probe_failures_total", host="gpu-a2", role="client",
                     reason="client_failed") == 2
        assert value(text, "fabric_rdma_latency_round_probes", outcome="ok") == 2
        # a failed probe never becomes a latency
        assert value(text, "fabric_rdma_latency_median_seconds", source="gpu-a1", destination="gpu-a2") is None
        assert value(text, "fabric_rdma_latency_pair_seconds_count", source="gpu-a3", destination="gpu-a1") is None
        # the hung client and its server are killed by the remote timeout (2 s + 2 s kill grace)
        assert lab.wait_no_fakes(6) == [], "fake perftest processes outlived their timeout"


def test_budget_caps_a_round_and_the_rest_rotates(tmp_path):
    with LatencyLab(tmp_path, HOSTS, {}) as lab:
        cfg = config(lab, plan={"full_mesh": True}, budget={"max_probes_per_round": 5, "max_concurrent_probes": 3})
        state, text, _ = asyncio.run(poll_once(cfg))
        assert state.state == "ok", state.last_error
        assert value(text, "fabric_rdma_latency_round_probes", outcome="ok") == 5
        assert value(text, "fabric_rdma_latency_plan_pairs") == 12
        assert value(text, "fabric_rdma_latency_plan_cover_rounds") == 3
        assert len([e for e in lab.events() if e["event"] == "client_end"]) == 5


def test_roce_flags_and_json_report(tmp_path):
    with LatencyLab(tmp_path, HOSTS[:2], {"default": {"typical": 3.05, "p99": 3.71}, "cpu_warning": True}) as lab:
        cfg = config(lab, host_groups={"rack-a": HOSTS[:2]}, plan={"full_mesh": True}, tool="ib_send_lat",
                     message_bytes=64, iterations=20000, device="mlx5_2", gid_index=3, traffic_class=106,
                     report="json", command_prefix=["nice", "-n", "5"])
        state, text, _ = asyncio.run(poll_once(cfg))
        assert state.state == "ok", state.last_error
        labels = dict(source="gpu-a1", destination="gpu-a2", tool="ib_send_lat", message_bytes="64")
        assert value(text, "fabric_rdma_latency_median_seconds", **labels) == 3.05e-06
        assert value(text, "fabric_rdma_latency_p99_seconds", **labels) == 3.71e-06
        assert value(text, "fabric_rdma_latency_pair_seconds_count", **labels) == 20000
        starts = [e for e in lab.events() if e["event"] in ("server_start", "client_start")]
        for e in starts:
            argv = e["argv"]
            assert argv[argv.index("-x") + 1] == "3" and argv[argv.index("--tclass") + 1] == "106"
            assert argv[argv.index("-d") + 1] == "mlx5_2" and argv[argv.index("-n") + 1] == "20000"
            assert e["nice"] == 5  # command_prefix ran it under nice
        clients = [e for e in starts if e["event"] == "client_start"]
        assert len(clients) == 2
        for e in clients:
            assert e["argv"][-1] == lab.address[e["peer"]]  # dials the destination's address
            assert "--out_json" in e["argv"] and "--out_json_file=/dev/stdout" in e["argv"]


def test_exposition_passes_promtool(tmp_path):
    import shutil
    import subprocess
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed")
    with LatencyLab(tmp_path, HOSTS[:3], {}) as lab:
        state, text, _ = asyncio.run(poll_once(config(lab, host_groups={"rack-a": HOSTS[:3]},
                                                      plan={"full_mesh": True})))
        assert state.state == "ok", state.last_error
    out = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stdout + out.stderr


def test_hanging_host_costs_one_connect_timeout_and_fails_only_its_probes(tmp_path):
    from tests.harness.sshd import SilentServer
    with LatencyLab(tmp_path, HOSTS[:4], {}) as lab, SilentServer() as silent:
        hosts = [h if h["name"] != "gpu-b1" else {"name": "gpu-b1", "address": "127.0.0.1", "port": silent.port}
                 for h in lab.hosts()]
        cfg = parse_config({
            "credentials": {"lab": lab.credential(connect_timeout="2s")},
            "targets": [{"name": "lat", "fabric": "ib0", "collector": "latency_probe", "transport": "ssh",
                         "credentials": "lab", "hosts": hosts, "interval": "60s", "timeout": "30s",
                         "options": {"plan": {"full_mesh": True}, "probe_timeout": "4s",
                                     "budget": {"max_concurrent_probes": 6}}}]})
        state, text, took = asyncio.run(poll_once(cfg))
        assert state.state == "partial", state.last_error
        # 4 hosts, full mesh: 12 probes, 6 involve gpu-b1 (3 as server, 3 as client)
        assert value(text, "fabric_rdma_latency_round_probes", outcome="ok") == 6
        assert value(text, "fabric_rdma_latency_probe_failures_total", host="gpu-b1", role="server",
                     reason="timeout") == 3
        assert value(text, "fabric_rdma_latency_probe_failures_total", host="gpu-b1", role="client",
                     reason="timeout") == 3
        assert took < 12, f"round took {took:.1f}s: the silent host was waited for more than once per probe slot"
