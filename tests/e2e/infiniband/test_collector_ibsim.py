"""The infiniband collector against a simulated fat tree: real ibsim, opensm and infiniband-diags.

Values injected with ibsim's PerformanceSet must come out exactly (bytes = words x 4), every port of
every node is published with its peer, zeros included, and the derived link health is right."""

from __future__ import annotations

import os
import stat
import time

import pytest

from fabric_exporter.collectors.infiniband import ERROR_COUNTERS
from fabric_exporter.errors import CommandError
from fabric_exporter.parsers import ib_perfquery
from fabric_exporter.serving.store import build_snapshot

from tests.harness import paths
from tests.harness.infiniband import CollectorHarness, group_for, index, needs_ibsim, values

pytestmark = needs_ibsim

ERROR_METRICS = [m for m, _w in ERROR_COUNTERS.values()]


@pytest.fixture(scope="module")
def injected(fabric):
    """Counters set once for the module (ibsim keeps them; the tools' own MADs only move data counters)."""
    fabric.set_counter("leaf-02", 4, "SymbolErrorCounter", 7)
    fabric.set_counter("leaf-02", 4, "PortXmitWait", 123456)
    fabric.set_counter("leaf-02", 4, "PortRcvSwitchRelayErrors", 9)
    fabric.set_counter("gpu-003", 1, "PortRcvErrors", 3)
    fabric.set_counter("leaf-03", 1, "LinkDownedCounter", 255)  # 8-bit counter at its maximum: latched
    # Port 30 of leaf-02 has no link, so no MAD traffic moves its data counters: exact values.
    fabric.set_counter("leaf-02", 30, "PortXmitData", 1000, extended=True)
    fabric.set_counter("leaf-02", 30, "PortRcvData", 250, extended=True)
    fabric.set_counter("leaf-02", 30, "PortXmitPkts", 77, extended=True)
    return fabric


@pytest.fixture(scope="module")
def first_poll(injected):
    harness = CollectorHarness(group_for({"env": injected.env(), "mad_timeout_ms": 300}))
    return harness, harness.poll()


def test_poll_is_complete_and_every_sample_is_in_the_catalog(first_poll):
    _h, result = first_poll
    assert result.problems == []
    build_snapshot("lab", result.samples, 60)  # raises UnknownMetricError on a name/label set outside the catalog


def test_every_port_of_every_node_is_published_with_its_peer(first_poll, fabric):
    _h, result = first_poll
    topo = fabric.topology
    states = values(result, "fabric_ib_port_state_id")
    expected_ports = {(n.description, str(p)) for n in topo.nodes.values() for p in range(1, n.ports + 1)}
    assert set(states) == expected_ports  # 5 switches x 36 ports + 6 HCA ports, down ones included
    idx = index(result)
    for node in topo.nodes.values():
        for port in range(1, node.ports + 1):
            labels = idx[("fabric_ib_port_state_id", node.description, str(port))]["labels"]
            peer = topo.peer(node.nodeid, port)
            assert labels["node_guid"] == node.guid_hex
            if peer is None:
                assert (labels["peer_node_name"], labels["peer_port"]) == ("", "")
                assert states[(node.description, str(port))] == 1.0  # Down
            else:
                peer_node = topo.nodes[peer[0]]
                assert (labels["peer_node_name"], labels["peer_port"]) == (peer_node.description, str(peer[1]))
                assert states[(node.description, str(port))] == 4.0  # Active
    # "leaf-b2 port 17 -> spine-a1 port 2": the info series carries the peer's GUID and type too
    info = idx[("fabric_ib_port_info", "leaf-02", "4")]["labels"]
    spine2 = topo.nodes["spine-02"]
    assert (info["peer_node_guid"], info["peer_node_type"], info["peer_port"]) == (spine2.guid_hex, "switch", "2")
    ca_info = idx[("fabric_ib_port_info", "gpu-003 mlx5_0", "1")]["labels"]
    assert ca_info["port_guid"] == f"0x{topo.nodes['gpu-003'].port_guid(1):016x}"


def test_injected_counters_come_out_exactly(first_poll):
    _h, result = first_poll
    idx = index(result)

    def v(metric, node, port):
        return idx[(metric, node, port)]["value"]

    assert v("fabric_ib_symbol_error_total", "leaf-02", "4") == 7
    assert v("fabric_ib_port_transmit_wait_total", "leaf-02", "4") == 123456
    assert v("fabric_ib_port_receive_switch_relay_errors_total", "leaf-02", "4") == 9
    assert v("fabric_ib_port_receive_errors_total", "gpu-003 mlx5_0", "1") == 3
    assert v("fabric_ib_link_downed_total", "leaf-03", "1") == 255
    # words x 4 = bytes; packets as they are
    assert v("fabric_ib_port_data_transmitted_bytes_total", "leaf-02", "30") == 4000
    assert v("fabric_ib_port_data_received_bytes_total", "leaf-02", "30") == 1000
    assert v("fabric_ib_port_packets_transmitted_total", "leaf-02", "30") == 77
    # zeros are published, for every error counter of every port (a quiet port is not a missing port)
    for metric in ERROR_METRICS:
        assert v(metric, "spine-01", "2") == 0
        assert len(values(result, metric)) == 5 * 36 + 6
    assert v("fabric_ib_symbol_error_total", "spine-02", "2") == 0  # the other end of leaf-02 port 4


def test_latched_flag_and_extended_counters(first_poll):
    _h, result = first_poll
    latched = values(result, "fabric_ib_port_latched")
    assert latched[("leaf-03", "1")] == 1.0
    assert {k for k, v in latched.items() if v} == {("leaf-03", "1")}
    ext = values(result, "fabric_ib_port_extended_counters")
    assert set(ext.values()) == {1.0}  # ibsim advertises PortCountersExtended for data counters


def test_link_width_speed_rate_and_degraded(first_poll):
    _h, result = first_poll
    degraded = values(result, "fabric_ib_port_degraded")
    assert {k for k, v in degraded.items() if v} == {("leaf-01", "3"), ("spine-01", "1")}
    width = values(result, "fabric_ib_port_active_width_lanes")
    supported = values(result, "fabric_ib_port_supported_width_lanes")
    rate = values(result, "fabric_ib_port_rate_bytes_per_second")
    assert (width[("leaf-01", "3")], supported[("leaf-01", "3")]) == (4, 12)
    assert rate[("leaf-01", "3")] == 4 * 8e9 / 8  # QDR: 8 Gb/s of data per lane
    assert (width[("leaf-02", "4")], supported[("leaf-02", "4")], rate[("leaf-02", "4")]) == (12, 12, 12e9)
    assert (width[("leaf-02", "30")], rate[("leaf-02", "30")]) == (0, 0)
    assert ("leaf-02", "30") not in supported  # no peer: nothing both ends support
    assert set(values(result, "fabric_ib_port_link_down_unexpected").values()) == {0.0}
    assert set(values(result, "fabric_ib_port_sweep_missing").values()) == {0.0}


def test_nodes_and_topology_series(first_poll, fabric):
    _h, result = first_poll
    nodes = {s.labels["node_name"]: s.labels for s in result.samples if s.name == "fabric_ib_node_info"}
    assert set(nodes) == {n.description for n in fabric.topology.nodes.values()}
    assert nodes["leaf-01"]["node_type"] == "switch" and nodes["leaf-01"]["ports"] == "36"
    assert nodes["gpu-001 mlx5_0"]["node_type"] == "ca"
    counts = {s.labels["node_type"]: s.value for s in result.samples if s.name == "fabric_ib_topology_nodes"}
    assert counts == {"switch": 5, "ca": 6, "router": 0}
    tools = {s.labels["tool"] for s in result.samples if s.name == "fabric_ib_sweep_duration_seconds"}
    assert tools == {"ibqueryerrors_counters", "ibqueryerrors_errors", "ibnetdiscover"}


def test_steady_state_polls_sweep_live_and_load_the_cache_only_for_errors(first_poll):
    """The counter sweep discovers live (fresh link state); the error sweep loads the cache, which is
    rewritten only on topology_interval or a change: no ibnetdiscover in a steady-state poll."""
    harness, first = first_poll
    cache = harness.collector.discovery_cache_path()
    before = os.stat(cache).st_mtime_ns
    second = harness.poll()
    assert second.problems == []
    assert os.stat(cache).st_mtime_ns == before  # not rewritten: nothing changed
    tools = {s.labels["tool"] for s in second.samples if s.name == "fabric_ib_sweep_duration_seconds"}
    assert tools == {"ibqueryerrors_counters", "ibqueryerrors_errors"}
    for metric in ERROR_METRICS:
        assert values(second, metric) == values(first, metric)


def test_the_cache_is_rewritten_on_topology_interval(injected):
    harness = CollectorHarness(group_for({"env": injected.env(), "topology_interval": "1s"}))
    harness.poll()
    cache = harness.collector.discovery_cache_path()
    before = os.stat(cache).st_mtime_ns
    time.sleep(1.1)
    second = harness.poll()
    assert second.problems == []
    assert os.stat(cache).st_mtime_ns > before
    tools = {s.labels["tool"] for s in second.samples if s.name == "fabric_ib_sweep_duration_seconds"}
    assert tools == {"ibnetdiscover", "ibqueryerrors_counters", "ibqueryerrors_errors"}
    harness.close()


def test_close_removes_the_discovery_cache(injected):
    harness = CollectorHarness(group_for({"env": injected.env()}))
    harness.poll()
    cache = harness.collector.discovery_cache_path()
    assert os.path.exists(cache)
    harness.close()
    assert not os.path.exists(cache)


def test_without_the_cache_two_live_sweeps_and_the_topology_on_its_interval(injected, first_poll):
    _h, cached = first_poll
    harness = CollectorHarness(group_for({"env": injected.env(), "use_discovery_cache": False}))
    first = harness.poll()
    second = harness.poll()
    assert first.problems == [] and second.problems == []
    tools = {s.labels["tool"] for s in second.samples if s.name == "fabric_ib_sweep_duration_seconds"}
    assert tools == {"ibqueryerrors_counters", "ibqueryerrors_errors"}  # no ibnetdiscover: not due yet
    for metric in ERROR_METRICS + ["fabric_ib_port_state_id", "fabric_ib_port_degraded"]:
        assert values(second, metric) == values(cached, metric)
    labels = {tuple(sorted(s.labels.items())) for s in second.samples if s.name == "fabric_ib_port_info"}
    assert labels == {tuple(sorted(s.labels.items())) for s in cached.samples if s.name == "fabric_ib_port_info"}


def test_node_name_map_names_nodes_and_peers(injected, tmp_path):
    topo = injected.topology
    leaf2 = topo.nodes["leaf-02"]
    (tmp_path / "map").write_text(f'{leaf2.guid_hex} "leaf-b2"\n{topo.nodes["spine-02"].guid_hex} spine-a1\n')
    harness = CollectorHarness(group_for({"env": injected.env(), "node_name_map": str(tmp_path / "map")}))
    idx = index(harness.poll())
    labels = idx[("fabric_ib_symbol_error_total", "leaf-b2", "4")]["labels"]
    assert (labels["peer_node_name"], labels["peer_port"]) == ("spine-a1", "2")
    assert idx[("fabric_ib_symbol_error_total", "leaf-b2", "4")]["value"] == 7


def test_a_reloaded_name_map_renames_every_series_of_the_port(injected, tmp_path):
    """The link/info series of a port are reused between polls while nothing they are made of
    changes: a new name must still reach all of them, not only the counters."""
    leaf2 = injected.topology.nodes["leaf-02"]
    name_map = tmp_path / "map"
    name_map.write_text(f'{leaf2.guid_hex} "leaf-b2"\n')
    harness = CollectorHarness(group_for({"env": injected.env(), "node_name_map": str(name_map)}))
    before = harness.poll()
    assert ("fabric_ib_port_info", "leaf-b2", "4") in index(before)
    name_map.write_text(f'{leaf2.guid_hex} "leaf-renamed"\n')
    os.utime(name_map, ns=(time.time_ns(), os.stat(name_map).st_mtime_ns + 10**9))
    after = harness.poll()
    guid = "0x" + leaf2.guid_hex[2:].zfill(16)
    names = {s.labels["node_name"] for s in after.samples
             if s.labels.get("node_guid") == guid and s.name.startswith("fabric_ib_port_")}
    assert names == {"leaf-renamed"}
    peers = {s.labels["peer_node_name"] for s in after.samples
             if s.name.startswith("fabric_ib_port_") and s.labels.get("node_name") == "spine-02"
             and s.labels.get("port") == "2"}
    assert peers == {"leaf-renamed"}
    harness.close()


def test_skip_sl_gives_the_same_data(first_poll, injected):
    _h, first = first_poll
    result = CollectorHarness(group_for({"env": injected.env(), "skip_sl": True})).poll()
    assert result.problems == []
    for metric in ERROR_METRICS + ["fabric_ib_port_state_id"]:
        assert values(result, metric) == values(first, metric)


def test_qp1_dropped_from_batched_perfquery(injected):
    harness = CollectorHarness(group_for({"env": injected.env(), "qp1_dropped": True, "max_concurrency": 3}))
    result = harness.poll()
    assert result.problems == []
    qp1 = values(result, "fabric_ib_qp1_dropped_total")
    assert qp1[("leaf-02", "4")] == 0 and len(qp1) >= 5 * 36


def _script(path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_a_crashing_tool_is_a_failed_poll_never_no_errors(injected, tmp_path):
    crash = _script(tmp_path / "ibqueryerrors", "kill -SEGV $$")
    harness = CollectorHarness(group_for({"env": injected.env(), "tool_paths": {"ibqueryerrors": crash}}))
    with pytest.raises(CommandError, match="crashed"):
        harness.poll()


def test_empty_output_is_a_failed_poll(injected, tmp_path):
    silent = _script(tmp_path / "ibqueryerrors", "exit 0")
    harness = CollectorHarness(group_for({"env": injected.env(), "tool_paths": {"ibqueryerrors": silent}}))
    with pytest.raises(CommandError, match="printed nothing"):
        harness.poll()


def test_a_crash_once_is_retried(injected, tmp_path):
    real = "/usr/sbin/ibqueryerrors" if os.path.exists("/usr/sbin/ibqueryerrors") else "ibqueryerrors"
    flaky = _script(tmp_path / "ibqueryerrors",
                    f'if [ ! -e "{tmp_path}/crashed-$1" ]; then touch "{tmp_path}/crashed-$1"; kill -SEGV $$; fi\n'
                    f'exec {real} "$@"')
    harness = CollectorHarness(group_for({"env": injected.env(), "tool_paths": {"ibqueryerrors": flaky}}))
    result = harness.poll()
    assert result.problems == []
    assert values(result, "fabric_ib_symbol_error_total")[("leaf-02", "4")] == 7


def test_reset_latched_counters_resets_only_the_latched_ones(injected):
    injected.set_counter("leaf-03", 2, "LinkDownedCounter", 255)
    injected.set_counter("leaf-03", 2, "SymbolErrorCounter", 5)
    try:
        harness = CollectorHarness(group_for({"env": injected.env(), "reset_latched_counters": True}))
        result = harness.poll()
        assert values(result, "fabric_ib_port_latched")[("leaf-03", "2")] == 1.0
        after = harness.poll()
        assert values(after, "fabric_ib_link_downed_total")[("leaf-03", "2")] == 0  # was latched: reset
        assert values(after, "fabric_ib_symbol_error_total")[("leaf-03", "2")] == 5  # not latched: kept
        assert values(after, "fabric_ib_port_latched")[("leaf-03", "2")] == 0.0
    finally:
        injected.set_counter("leaf-03", 2, "SymbolErrorCounter", 0)
        injected.set_counter("leaf-03", 2, "LinkDownedCounter", 0)
    # leaf-03 port 1 was latched too and is reset by the same poll; restore it for the other tests
    injected.set_counter("leaf-03", 1, "LinkDownedCounter", 255)


def test_perfquery_agrees_with_the_sweep(injected):
    import subprocess

    env = {**os.environ, **injected.env()}
    topo_lid = None
    out = subprocess.run(["ibnetdiscover"], env=env, capture_output=True, text=True, timeout=30).stdout
    for line in out.splitlines():
        if '"leaf-02"' in line and "base port 0 lid" in line:
            topo_lid = line.split(" lid ")[1].split()[0]
    assert topo_lid
    block = ib_perfquery.parse(subprocess.run(["perfquery", topo_lid, "4"], env=env, capture_output=True,
                                              text=True, timeout=30).stdout)[0]
    assert block.values["SymbolErrorCounter"] == 7 and block.values["PortXmitWait"] == 123456


def test_through_the_scheduler_store_and_promtool(injected):
    import asyncio
    import shutil
    import subprocess

    from tests.harness.configs import parse_config
    from fabric_exporter.scheduler import Scheduler
    from fabric_exporter.serving.store import SnapshotStore
    from fabric_exporter.transport.factory import Transports

    cfg = parse_config({"targets": [{"name": "ib", "fabric": "lab", "collector": "infiniband", "transport": "local",
                                     "interval": "30s", "options": {"env": injected.env()}}]})

    async def run():
        sched = Scheduler(Transports(), SnapshotStore())
        sched.apply(cfg, start_tasks=False)
        states = await sched.poll_all_once()
        return states, sched.store.render().decode()

    loop = asyncio.new_event_loop()
    try:
        states, text = loop.run_until_complete(run())
    finally:
        loop.close()
    assert [s.state for s in states] == ["ok"], states[0].last_error
    line = ('fabric_ib_symbol_error_total{fabric="lab",node_guid="%s",node_name="leaf-02",peer_node_name="spine-02",'
            'peer_port="2",port="4"} 7' % injected.topology.nodes["leaf-02"].guid_hex)
    assert any(l.startswith(line) for l in text.splitlines()), line
    if shutil.which("promtool"):
        lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
        assert lint.returncode == 0, lint.stdout + lint.stderr


def test_tick_multiplier_where_the_switch_answers(injected, tmp_path):
    import shutil as _shutil

    fixture = os.path.join(paths.FIXTURES, "infiniband", "perfquery_samples_control.txt")
    real = _shutil.which("perfquery")
    # Only leaf-02 answers PortSamplesControl (ibsim answers none): the others must publish nothing.
    lid = None
    harness = CollectorHarness(group_for({"env": injected.env()}))
    harness.poll()
    lid = harness.collector.state.topology.nodes[injected.topology.nodes["leaf-02"].guid].lid
    # The other switches fail the way a device without PortSamplesControl does. (Not the real
    # perfquery -c against ibsim: concurrent clients timing out there make ibsim drop opensm's
    # connection, and every later SA query fails - an ibsim bug, not something to test.)
    fake = _script(tmp_path / "perfquery",
                   f'case " $* " in *" -c {lid} "*) cat "{fixture}"; exit 0;;\n'
                   f'  *" -c "*) echo "perfquery: iberror: failed: sampctlquery"; exit 255;; esac\nexec {real} "$@"')
    harness = CollectorHarness(group_for({"env": injected.env(), "read_tick_multiplier": True,
                                          "tool_paths": {"perfquery": fake}, "mad_timeout_ms": 100}))
    result = harness.poll()
    ticks = {s.labels["node_name"]: s.value for s in result.samples
             if s.name == "fabric_ib_node_xmit_wait_tick_multiplier"}
    assert ticks == {"leaf-02": 7.0}


def test_the_lab_config_polls_the_lab_fabric(injected):
    from tests.harness.configs import parse_config
    from fabric_exporter.lab.ibsim import lab_config

    group = parse_config({"targets": [lab_config(injected)]}).targets[0]
    result = CollectorHarness(group).poll()
    assert result.problems == []
    assert values(result, "fabric_ib_symbol_error_total")[("leaf-02", "4")] == 7


def test_ibdiagnet_files_locally_and_a_missing_directory(injected, tmp_path):
    import shutil as _shutil
    import time as _time

    fixtures = os.path.join(paths.FIXTURES, "infiniband")
    old_run, new_run = tmp_path / "diag" / "run1", tmp_path / "diag" / "run2"
    old_run.mkdir(parents=True)
    new_run.mkdir(parents=True)
    _shutil.copy(os.path.join(fixtures, "ibdiagnet2.pm"), old_run / "ibdiagnet2.pm")
    _shutil.copy(os.path.join(fixtures, "ibdiagnet2.pm"), new_run / "ibdiagnet2.pm")
    (new_run / "ibdiagnet2.pm").write_text((new_run / "ibdiagnet2.pm").read_text().replace(
        "port_xmit_wait=0x000000011ff6b726", "port_xmit_wait=0x0000000000000100"))
    two_hours_ago = _time.time() - 7200
    os.utime(old_run / "ibdiagnet2.pm", (two_hours_ago, two_hours_ago))
    result = CollectorHarness(group_for({"env": injected.env(), "ibdiagnet_dir": str(tmp_path / "diag")})).poll()
    assert result.problems == []
    pm = {(s.labels["port"], s.labels["counter"]): s.value for s in result.samples
          if s.name == "fabric_ib_ibdiagnet_pm_counter"}
    assert pm[("2", "port_xmit_wait")] == 0x100  # the newest run's file, .pm used as no db_csv exists
    ages = {s.labels["file"]: s.value for s in result.samples if s.name == "fabric_ib_ibdiagnet_file_age_seconds"}
    assert 0 <= ages["ibdiagnet2.pm"] < 60
    missing = CollectorHarness(group_for({"env": injected.env(), "ibdiagnet_dir": str(tmp_path / "nope")})).poll()
    assert any("ibdiagnet files" in p for p in missing.problems)
    assert values(missing, "fabric_ib_symbol_error_total")[("leaf-02", "4")] == 7  # the sweep is unaffected


def test_error_counters_follow_the_fabric_between_polls(injected):
    """A port's all-zero error samples are reused between polls: a counter that rises and a counter
    that goes back to 0 must both show in the next poll of the same collector."""
    harness = CollectorHarness(group_for({"env": injected.env()}))
    assert values(harness.poll(), "fabric_ib_symbol_error_total")[("gpu-004 mlx5_0", "1")] == 0
    injected.set_counter("gpu-004", 1, "SymbolErrorCounter", 5)
    try:
        assert values(harness.poll(), "fabric_ib_symbol_error_total")[("gpu-004 mlx5_0", "1")] == 5
    finally:
        injected.set_counter("gpu-004", 1, "SymbolErrorCounter", 0)
    after = harness.poll()
    assert values(after, "fabric_ib_symbol_error_total")[("gpu-004 mlx5_0", "1")] == 0
    assert values(after, "fabric_ib_port_receive_errors_total")[("gpu-004 mlx5_0", "1")] == 0
    harness.close()
