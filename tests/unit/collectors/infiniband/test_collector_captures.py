"""The collector on a real-hardware-layout fabric (NDR switches, an NDR HCA, an old QDR HCA with 32-bit
counters): the tools are stand-in scripts that print captures in the layouts NDR/HDR fabrics produce
(64-bit error counters with their "(12.000)" rendering, split ports, 4-field 32-bit data counters).
What ibsim cannot simulate is checked here: 64-bit error counters, latch detection per width, CA
errors attributed through port GUIDs."""

from __future__ import annotations

import gc
import stat
import threading

import pytest

from tests.harness import paths
from tests.harness.lanes import starts_processes

from tests.harness.infiniband import (  # noqa: F401  (fixtures: every harness poll render-checked, closed after)
    CollectorHarness, _close_harnesses, _verify_render, group_for, index, values)

FIX = paths.FIXTURES / "infiniband"
LEAF = "MF0;ndr-leaf-01:MQM9790/U1"
SPINE = "MF0;ndr-spine-01:MQM9790/U1"
DGX = "dgx-h100-042 mlx5_0"
OLD = "old-qdr-hca HCA-1"


def ndr_group(tmp_path):
    """A target whose tools are stand-in scripts printing the NDR fabric's captures."""
    tool = tmp_path / "fake-tool"
    tool.write_text(
        "#!/bin/sh\n"
        'case "$(basename "$0")" in\n'
        f'  ibnetdiscover) exec cat "{FIX}/ndr_fabric_ibnetdiscover.txt";;\n'
        "esac\n"
        'case " $* " in\n'
        f'  *" --counters "*) exec cat "{FIX}/ndr_fabric_counters.txt";;\n'
        f'  *) cat "{FIX}/ndr_fabric_errors.txt"; exit 1;;  # ibqueryerrors: 1 = errors found\n'
        "esac\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "ibqueryerrors").symlink_to(tool)
    (tmp_path / "ibnetdiscover").symlink_to(tool)
    return group_for({"tool_paths": {"ibqueryerrors": str(tmp_path / "ibqueryerrors"),
                                     "ibnetdiscover": str(tmp_path / "ibnetdiscover")}})


@pytest.fixture()
@starts_processes  # the collector runs the stand-in scripts through the local transport
def result(tmp_path):
    return CollectorHarness(ndr_group(tmp_path)).poll()


@starts_processes
def test_the_join_and_the_mapping_run_off_the_event_loop(tmp_path, monkeypatch):
    """At 40k ports each holds the loop for ~0.1-0.5 s (bench_cluster): every scrape and SNMP answer
    would wait. They run on a worker thread, with the cyclic GC on (paused, the allocations of every
    thread pile into one long young-generation pass); the poll's result is the same."""
    from fabric_exporter.collectors.infiniband import collector as ib_collector

    threads: dict[str, int] = {}
    gc_on: list[bool] = []

    def on_thread(name, fn):
        def wrapped(*args, **kwargs):
            threads[name] = threading.get_ident()
            gc_on.append(gc.isenabled())
            return fn(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(ib_collector, "join_sweeps", on_thread("join", ib_collector.join_sweeps))
    monkeypatch.setattr(ib_collector, "samples_from_sweep", on_thread("map", ib_collector.samples_from_sweep))
    harness = CollectorHarness(ndr_group(tmp_path))
    loop_thread = threading.get_ident()  # the harness runs its loop on this thread
    polled = harness.poll()
    assert set(threads) == {"join", "map"} and loop_thread not in threads.values()
    assert gc_on == [True, True]
    assert polled.problems == [] and index(polled)[("fabric_ib_symbol_error_total", LEAF, "65")]["value"] == 12


def test_complete_and_64bit_error_counters(result):
    assert result.problems == []
    idx = index(result)
    assert idx[("fabric_ib_symbol_error_total", LEAF, "65")]["value"] == 12
    assert idx[("fabric_ib_port_transmit_wait_total", LEAF, "65")]["value"] == 4831250982  # > 32 bits
    assert idx[("fabric_ib_symbol_error_total", SPINE, "33")]["value"] == 0
    assert idx[("fabric_ib_port_data_transmitted_bytes_total", LEAF, "1")]["value"] == 38716281036442 * 4


def test_ca_errors_are_attributed_through_the_port_guid(result):
    # errors mode prints CAs as 'Errors for "name"' with the PORT GUID: the topology maps it to the node
    idx = index(result)
    assert idx[("fabric_ib_port_transmit_discards_total", DGX, "1")]["value"] == 41
    labels = idx[("fabric_ib_port_transmit_discards_total", DGX, "1")]["labels"]
    assert labels["node_guid"] == "0xa088c20300c1a5b6" and (labels["peer_node_name"], labels["peer_port"]) == (LEAF, "1")


def test_latched_only_where_a_fixed_width_counter_is_at_its_maximum(result):
    latched = values(result, "fabric_ib_port_latched")
    # old QDR HCA: 4 data fields (32-bit PortCounters) with PortXmitData at 2^32-1, LinkDowned (8 bit)
    # at 255 and PortXmitWait (32-bit path: no rendering) at 2^32-1
    assert latched[(OLD, "1")] == 1.0
    # the leaf's port 9 PortRcvData is 2^32-1 too, but from 64-bit PortCountersExtended: counting on
    assert latched[(LEAF, "9")] == 0.0
    assert {k for k, v in latched.items() if v} == {(OLD, "1")}
    ext = values(result, "fabric_ib_port_extended_counters")
    assert ext[(OLD, "1")] == 0.0 and ext[(LEAF, "9")] == 1.0 and ext[(DGX, "1")] == 1.0


def test_split_port_degraded_and_rates(result):
    degraded = values(result, "fabric_ib_port_degraded")
    assert {k for k, v in degraded.items() if v} == {(LEAF, "65"), (SPINE, "33")}
    rate = values(result, "fabric_ib_port_rate_bytes_per_second")
    assert rate[(LEAF, "65")] == 2 * 100e9 / 8  # NDR 2X
    assert rate[(DGX, "1")] == 4 * 100e9 / 8  # NDR 4X
    assert rate[(OLD, "1")] == 4 * 8e9 / 8  # QDR 4X
    assert values(result, "fabric_ib_port_supported_width_lanes")[(LEAF, "65")] == 4
    idx = index(result)
    assert idx[("fabric_ib_port_state_id", LEAF, "2")]["value"] == 1  # Down
    assert idx[("fabric_ib_port_physical_state_id", LEAF, "2")]["value"] == 3  # Disabled
    assert idx[("fabric_ib_port_link_down_unexpected", LEAF, "2")]["value"] == 0  # never linked
    info = idx[("fabric_ib_port_info", LEAF, "65")]["labels"]
    assert (info["active_width"], info["active_speed"], info["supported_width"], info["peer_node_guid"]) == (
        "2X", "NDR", "4X", "0xa088c20300f3f000")
    old_info = idx[("fabric_ib_port_info", OLD, "1")]["labels"]
    assert (old_info["port_guid"], old_info["active_speed"], old_info["lid"]) == ("0x0002c903004a7b11", "QDR", "90")
