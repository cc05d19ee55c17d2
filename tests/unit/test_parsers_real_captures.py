"""Every capture in tests/fixtures/real (published by others, provenance in its README) goes through the
collector-level path -- the parser and the collector's mapping to catalog samples -- and a value read by
hand from the file is checked. The samples must also pass the store's catalog validation.

A capture is never edited to make it pass: a file the code cannot read is a code fix or, when the tool's
layout is not ours to read, a line in the README's "cannot be read" list.
"""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from fabric_exporter.collectors.base import PollContext
from fabric_exporter.collectors.infiniband import InfinibandCollector, SweptPort, join_sweeps
from fabric_exporter.collectors.infiniband.counters import latched_counters
from fabric_exporter.collectors.infiniband.ibdiagnet import ibdiagnet_samples
from fabric_exporter.collectors.infiniband.tools import IbPoll
from fabric_exporter.collectors.roce_nic import RoceNicOptions, result_from_dump
from fabric_exporter.collectors.switch_cli import SwitchCliCollector
from tests.harness import paths
from tests.harness.configs import parse_config
from fabric_exporter.parsers import ib_netdiscover, ib_queryerrors
from fabric_exporter.parsers.rdma import parse_host_dump
from fabric_exporter.serving.store import build_snapshot
from fabric_exporter.transport.base import CommandResult
from tests.harness.captures import REAL, real_capture as text

README = (REAL / "README.md").read_text()


def find(samples, metric: str, **labels) -> list[float]:
    return [s.value for s in samples if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items())]


def valid(samples) -> None:
    build_snapshot("lab", samples, 60.0)  # raises UnknownMetricError for anything outside the catalog


# -- RoCE NIC: ethtool -S and hw_counters through the roce_nic collector's dump path --------------

def nic_poll(name: str, driver: str, *, hw: bool = False, expose_unmapped: bool = False):
    device, netdev = ("mlx5_0", "ib0") if hw else ("roce0", "eth0")
    parts = ["@@fabric-roce 1 sysfs", f"@@device {device} {driver}", f"@@port {device} 1 {netdev} Ethernet 4: ACTIVE"]
    if hw:
        parts += [f"@@hw_counters {device} 1", text(name).rstrip("\n")]
    else:
        parts += [f"@@ethtool {netdev} 0", text(name).rstrip("\n")]
    dump = "\n".join(parts) + "\n@@end\n"
    result = result_from_dump(parse_host_dump(dump), "host-a", RoceNicOptions(expose_unmapped=expose_unmapped))
    valid(result.samples)
    return result


# file, driver, metric, extra labels, hand-read value
NIC_CASES = [
    ("ethtool_ethq_bnxt_en.txt", "bnxt_en", "fabric_roce_rx_discards_total", {}, 49337),  # rx_stat_discard
    ("ethtool_ethq_bnxt_en.txt", "bnxt_en", "fabric_roce_nic_rx_out_of_buffer_packets_total", {}, 655430134),
    ("ethtool_ethq_bnxt_en.txt", "bnxt_en", "fabric_roce_rx_bytes_total", {}, 577687185962088),
    ("ethtool_ethq_ice.txt", "ice", "fabric_roce_rx_bytes_total", {}, 848255752),  # rx_bytes.nic
    ("ethtool_ethq_ice.txt", "ice", "fabric_roce_rx_discards_total", {}, 0),  # rx_dropped.nic
    ("hw_counters_procfs_mlx5_0.txt", "mlx5_core", "fabric_roce_nic_local_ack_timeouts_total", {}, 131),
    # mlx5 `ethtool -S` with its `NIC statistics:` header (linux bpf list, an XDP_DROP/XDP_TX test port)
    ("ethtool_mlx5_xdp_kernel5.15.txt", "mlx5_core", "fabric_roce_rx_discards_total", {}, 58591428329),
    ("ethtool_mlx5_xdp_kernel5.15.txt", "mlx5_core", "fabric_roce_nic_rx_out_of_buffer_packets_total", {}, 990473555),
    ("ethtool_mlx5_xdp_kernel6.5.txt", "mlx5_core", "fabric_roce_nic_priority_rx_discards_total", {"priority": "0"},
     441063206498),
    ("ethtool_mlx5_xdp_kernel6.5.txt", "mlx5_core", "fabric_roce_nic_link_pause_tx_frames_total", {}, 44414017),
    ("hw_counters_procfs_mlx5_0.txt", "mlx5_core", "fabric_roce_nic_duplicate_requests_total", {}, 41),
    # issue 26: counters that were parsed but dropped (hand-read from the same captures)
    ("ethtool_ethq_bnxt_en.txt", "bnxt_en", "fabric_roce_nic_rx_buffer_passed_threshold_events_total", {}, 417),
    ("ethtool_ethq_bnxt_en.txt", "bnxt_en", "fabric_roce_nic_queue_rx_discard_bytes_total", {"queue": "7"}, 0),
    ("ethtool_ethq_bnxt_en.txt", "bnxt_en", "fabric_roce_nic_port_continuous_pause_events_total", {}, 0),
    ("ethtool_ethq_bnxt_en.txt", "bnxt_en", "fabric_roce_nic_port_continuous_pause_resume_events_total", {}, 0),
    ("ethtool_ethq_bnxt_en.txt", "bnxt_en", "fabric_roce_nic_continuous_pause_resume_events_total", {}, 0),
    ("hw_counters_procfs_mlx5_0.txt", "mlx5_core", "fabric_roce_nic_requester_cqe_errors_total", {}, 3481),
    ("hw_counters_procfs_mlx5_0.txt", "mlx5_core", "fabric_roce_nic_requester_cqe_flush_errors_total", {}, 80),
    ("hw_counters_procfs_mlx5_0.txt", "mlx5_core", "fabric_roce_nic_responder_cqe_errors_total", {}, 8109),
    ("hw_counters_procfs_mlx5_0.txt", "mlx5_core", "fabric_roce_nic_responder_cqe_flush_errors_total", {}, 4708),
    ("hw_counters_procfs_mlx5_0.txt", "mlx5_core", "fabric_roce_nic_requester_remote_access_errors_total", {}, 0),
    ("hw_counters_procfs_mlx5_0.txt", "mlx5_core", "fabric_roce_nic_requester_remote_invalid_requests_total", {}, 0),
    ("hw_counters_procfs_mlx5_0.txt", "mlx5_core", "fabric_roce_nic_responder_local_length_errors_total", {}, 0),
    ("hw_counters_procfs_mlx5_0.txt", "mlx5_core", "fabric_roce_nic_responder_remote_access_errors_total", {}, 0),
]
# Drivers with no RoCE mapping: the capture still reads, every counter under its own name (expose_unmapped).
UNMAPPED_CASES = [
    ("ethtool_ethq_i40e-v2.3.2k.txt", "i40e", "port.rx_bytes", 35954341339678),
    ("ethtool_ethq_iavf.txt", "iavf", "rx_bytes", 7042004),
    ("ethtool_ethq_sfc.txt", "sfc", "port_rx_bytes", 410901),
    ("ethtool_ethq_vmxnet3.txt", "vmxnet3", "tx timeout count", 0),
    ("ethtool_ethq_r8169.txt", "r8169", "tx_underrun", 0),
    ("ethtool_ethq_fsl_dpaa2_eth.txt", "fsl_dpaa2_eth", "[hw] rx frames", 92343581),
    ("ethtool_node_exporter_eth0.txt", "e1000e", "port.rx_dropped", 12028),
]


@pytest.mark.parametrize("name,driver,metric,labels,value", NIC_CASES)
def test_nic_captures(name, driver, metric, labels, value):
    result = nic_poll(name, driver, hw=name.startswith("hw_counters"))
    assert find(result.samples, metric, **labels) == [value]


@pytest.mark.parametrize("name,driver,counter,value", UNMAPPED_CASES)
def test_nic_captures_of_drivers_without_a_mapping(name, driver, counter, value):
    result = nic_poll(name, driver, expose_unmapped=True)
    assert find(result.samples, "fabric_roce_nic_unmapped_value", counter=counter) == [value]


def test_vmxnet3_per_queue_names_repeat_and_are_withheld_not_guessed():
    # "TSO pkts tx" appears once per queue with different values: which queue is not in the name
    result = nic_poll("ethtool_ethq_vmxnet3.txt", "vmxnet3", expose_unmapped=True)
    assert not find(result.samples, "fabric_roce_nic_unmapped_value", counter="TSO pkts tx")
    assert any("TSO pkts tx" in p for p in result.problems)


# -- SONiC through the switch_cli collector's own mapping -----------------------------------------

def sonic_samples(command: str, name: str):
    json_mode = "always" if name.endswith(".json") else "never"
    group = parse_config({"targets": [{
        "name": "sonic", "fabric": "lab", "collector": "switch_cli", "transport": "local",
        "options": {"json": json_mode, "commands": ["pfc", "queue", "wred", "pfcwd", "queue_watermark", "pg_watermark",
                                                    "buffer_pool_watermark", "pfc_history", "lldp"],
                    "queue_watermark_types": ["unicast", "multicast", "all"],
                    "watermark_kind": "persistent" if "persistent" in command else "user"}}]}).targets[0]
    collector = SwitchCliCollector(PollContext(group, group.hosts[0], None))
    assert command in collector.options.sections
    collector._skipped = []
    samples = collector._samples(command, text(name))
    valid(samples)
    return samples, collector._skipped


PFC_RX, PFC_TX = "fabric_roce_pfc_rx_pause_frames_total", "fabric_roce_pfc_tx_pause_frames_total"
QPKTS, QDROP = "fabric_roce_switch_queue_tx_packets_total", "fabric_roce_switch_queue_dropped_packets_total"
WRED, ECN = "fabric_roce_switch_queue_wred_dropped_packets_total", "fabric_roce_ecn_marked_packets_total"
STORMS = "fabric_roce_switch_pfcwd_storms_detected_total"
QWM, PGWM = "fabric_roce_switch_queue_watermark_bytes", "fabric_roce_switch_pg_watermark_bytes"
POOLWM, HDRMWM = "fabric_roce_switch_buffer_pool_watermark_bytes", "fabric_roce_switch_headroom_pool_watermark_bytes"
PAUSE_S = "fabric_roce_switch_pfc_rx_pause_seconds_total"
NEIGHBOR = "fabric_roce_switch_if_neighbor_info"
SONIC_CASES = [
    ("pfc", "sonic_pfc_counters.txt", PFC_RX, {"interface": "Ethernet0", "priority": "0"}, 1200),
    ("pfc", "sonic_pfc_counters_all.txt", PFC_RX, {"interface": "Ethernet-BP256", "priority": "0"}, 1900),
    ("pfc", "sonic_pfc_counters_all_na.txt", PFC_TX, {"interface": "Ethernet-BP4", "priority": "7"}, 817),
    ("pfc", "sonic_pfc_counters_asic0_frontend.txt", PFC_TX, {"interface": "Ethernet4", "priority": "1"}, 411),
    ("queue", "sonic_queue_counters.txt", QPKTS, {"interface": "Ethernet0", "queue": "UC0"}, 0),
    ("queue", "sonic_queue_counters_nonzero.txt", QDROP, {"interface": "Ethernet0", "queue": "UC1"}, 39),
    ("queue", "sonic_queue_counters_port.txt", QPKTS, {"interface": "Ethernet8", "queue": "UC0"}, 0),
    ("queue", "sonic_queue_counters_port_nonzero.txt", QPKTS, {"interface": "Ethernet8", "queue": "UC1"}, 38),
    ("queue", "sonic_queue_counters_multi_asic.txt", QDROP, {"interface": "Ethernet0", "queue": "UC1"}, 55),
    ("queue", "sonic_queue_counters_all_asics.txt", QPKTS, {"interface": "Ethernet0", "queue": "MC8"}, 76),
    ("queue", "sonic_queue_counters.json", QPKTS, {"interface": "Ethernet0", "queue": "UC1"}, 60),
    ("queue", "sonic_queue_counters_nonzero.json", QDROP, {"interface": "Ethernet0", "queue": "UC1"}, 39),
    ("queue", "sonic_queue_counters_port.json", QPKTS, {"interface": "Ethernet8", "queue": "UC1"}, 38),
    ("wred", "sonic_wred_counters.txt", WRED, {"interface": "Ethernet0", "queue": "UC2"}, 82),
    ("wred", "sonic_wred_counters_nonzero.txt", ECN, {"interface": "Ethernet0", "queue": "UC2"}, 39),
    ("wred", "sonic_wred_counters_port.txt", ECN, {"interface": "Ethernet8", "queue": "UC1"}, 68),
    ("wred", "sonic_wred_counters_port_nonzero.txt", WRED, {"interface": "Ethernet8", "queue": "UC7"}, 2),
    ("pfcwd", "sonic_pfcwd_stats.txt", STORMS, {"interface": "Ethernet8", "queue": "UC4"}, 3),
    ("pfcwd", "sonic_pfcwd_stats_masic.txt", "fabric_roce_switch_pfcwd_tx_dropped_packets_total",
     {"interface": "Ethernet0", "queue": "UC1"}, 13),
    # watermarks (bytes; the kind/region label comes from the command that printed them)
    ("queue_watermark_unicast", "sonic_queue_watermark_unicast.txt", QWM,
     {"interface": "Ethernet0", "queue": "UC1", "kind": "user"}, 2056704),
    ("queue_watermark_unicast", "sonic_queue_watermark_unicast.json", QWM,
     {"interface": "Ethernet4", "queue": "UC4", "kind": "user"}, 2567),
    ("queue_persistent_watermark_unicast", "sonic_queue_persistent_watermark_unicast.txt", QWM,
     {"interface": "Ethernet8", "queue": "UC8", "kind": "persistent"}, 9528),
    ("queue_persistent_watermark_unicast", "sonic_queue_persistent_watermark_unicast.json", QWM,
     {"interface": "Ethernet0", "queue": "UC7", "kind": "persistent"}, 3704),
    ("queue_watermark_all", "sonic_queue_watermark_all.txt", QWM,
     {"interface": "Ethernet0", "queue": "ALL21", "kind": "user"}, 7654321),
    ("queue_watermark_all", "sonic_queue_watermark_all.json", QWM,
     {"interface": "Ethernet8", "queue": "ALL29", "kind": "user"}, 7696),
    ("queue_watermark_unicast", "sonic_queue_watermark_unicast_masic_all.txt", QWM,
     {"interface": "Ethernet-BP256", "queue": "UC7", "kind": "user"}, 28),
    ("queue_watermark_unicast", "sonic_queue_watermark_unicast_masic_asic1.txt", QWM,
     {"interface": "Ethernet-BP256", "queue": "UC0", "kind": "user"}, 2057328),
    ("queue_watermark_multicast", "sonic_queue_watermark_multicast_masic_all.txt", QWM,
     {"interface": "Ethernet-BP256", "queue": "MC14", "kind": "user"}, 228),
    ("pg_watermark_shared", "sonic_pg_watermark_shared.txt", PGWM,
     {"interface": "Ethernet4", "pg": "3", "region": "shared"}, 403),
    ("pg_watermark_shared", "sonic_pg_watermark_shared.json", PGWM,
     {"interface": "Ethernet8", "pg": "7", "region": "shared"}, 807),
    ("pg_watermark_headroom", "sonic_pg_watermark_headroom.txt", PGWM,
     {"interface": "Ethernet0", "pg": "3", "region": "headroom"}, 103),
    ("pg_watermark_headroom", "sonic_pg_watermark_headroom.json", PGWM,
     {"interface": "Ethernet4", "pg": "4", "region": "headroom"}, 404),
    ("pg_persistent_watermark_shared", "sonic_pg_persistent_watermark_shared.txt", PGWM,
     {"interface": "Ethernet8", "pg": "0", "region": "shared"}, 900),
    ("pg_persistent_watermark_headroom", "sonic_pg_persistent_watermark_headroom.json", PGWM,
     {"interface": "Ethernet4", "pg": "6", "region": "headroom"}, 506),
    ("pg_watermark_shared", "sonic_pg_watermark_shared_masic_all.txt", PGWM,
     {"interface": "Ethernet-BP260", "pg": "15", "region": "shared"}, 215),
    ("pg_watermark_headroom", "sonic_pg_watermark_headroom_masic_all.txt", PGWM,
     {"interface": "Ethernet4", "pg": "10", "region": "headroom"}, 210),
    ("pg_persistent_watermark_headroom", "sonic_pg_persistent_watermark_headroom_masic_all.txt", PGWM,
     {"interface": "Ethernet-BP256", "pg": "9", "region": "headroom"}, 501),
    ("buffer_pool_watermark", "sonic_buffer_pool_watermark.txt", POOLWM, {"pool": "egress_lossy_pool"}, 2000),
    ("buffer_pool_persistent_watermark", "sonic_buffer_pool_persistent_watermark.txt", POOLWM,
     {"pool": "ingress_lossless_pool"}, 4000),
    ("buffer_pool_watermark", "sonic_buffer_pool_watermark_masic_all.txt", POOLWM,
     {"pool": "asic1/ingress_lossless_pool"}, 3000),
    ("headroom_pool_watermark", "sonic_headroom_pool_watermark.txt", HDRMWM, {"pool": "ingress_lossless_pool"}, 432640),
    ("headroom_pool_persistent_watermark", "sonic_headroom_pool_persistent_watermark.txt", HDRMWM,
     {"pool": "ingress_lossless_pool"}, 863616),
    ("headroom_pool_watermark", "sonic_headroom_pool_watermark_masic_all.txt", HDRMWM,
     {"pool": "asic1/ingress_lossless_pool"}, 432640),
    # PFC history: microseconds -> seconds
    ("pfc_history", "sonic_pfc_counters_history.txt", PAUSE_S, {"interface": "Ethernet4", "priority": "3"}, 40.000003),
    ("pfc_history", "sonic_pfc_counters_history_after_clear.txt", PAUSE_S,
     {"interface": "Ethernet8", "priority": "7"}, 0),
    ("pfc_history", "sonic_pfc_counters_history_all.txt", "fabric_roce_switch_pfc_rx_pause_transitions_total",
     {"interface": "Ethernet-BP4", "priority": "2"}, 82),
    ("pfc_history", "sonic_pfc_counters_history_asic0_all.txt", PAUSE_S,
     {"interface": "Ethernet-BP0", "priority": "0"}, 16.0),
    ("lldp", "sonic_lldp_table.txt", NEIGHBOR,
     {"interface": "Ethernet116", "neighbor_host": "T1-2", "neighbor_port": "hundredGigE1/2"}, 1),
    # a MAC port ID: the description names the port
    ("lldp", "sonic_lldp_table_two_macs.txt", NEIGHBOR,
     {"interface": "Ethernet0", "neighbor_host": "dummy", "neighbor_port": "Second MAC"}, 1),
]
# nothing published: every value N/A, or no multicast queues configured
SONIC_EMPTY = [("queue_watermark_multicast", "sonic_queue_watermark_multicast_na.txt"),
               ("queue_watermark_multicast", "sonic_queue_watermark_multicast_na.json"),
               ("queue_watermark_multicast", "sonic_queue_watermark_multicast_unconfigured.txt")]


@pytest.mark.parametrize("command,name", SONIC_EMPTY)
def test_sonic_watermarks_all_na_give_no_series(command, name):
    samples, skipped = sonic_samples(command, name)
    assert samples == [] and skipped == []


def test_sonic_watermark_na_rows_are_absent_and_multi_asic_pools_kept_apart():
    samples, _ = sonic_samples("pg_persistent_watermark_headroom", "sonic_pg_persistent_watermark_headroom_masic_all.txt")
    assert find(samples, PGWM, interface="Ethernet4") == [] and len(samples) == 4 * 16
    pools, _ = sonic_samples("buffer_pool_watermark", "sonic_buffer_pool_watermark_masic_all.txt")
    assert [s.labels["pool"] for s in pools] == ["asic1/ingress_lossless_pool"]  # asic0's is N/A
    history, _ = sonic_samples("pfc_history", "sonic_pfc_counters_history_all.txt")
    assert find(history, PAUSE_S, interface="Ethernet-BP256") == []


@pytest.mark.parametrize("command,name,metric,labels,value", SONIC_CASES)
def test_sonic_captures(command, name, metric, labels, value):
    samples, skipped = sonic_samples(command, name)
    assert find(samples, metric, **labels) == [value]
    assert skipped == []  # every line of these captures is one we know


def test_sonic_lldp_tables_whole():
    """Every neighbour of both captures, as read by hand: cells with spaces and empty cells kept in
    their columns, a MAC port ID replaced by the description, an empty description leaving the ID."""
    def neighbors(name):
        samples, skipped = sonic_samples("lldp", name)
        assert skipped == []
        return sorted((s.labels["interface"], s.labels["neighbor_host"], s.labels["neighbor_port"])
                      for s in samples if s.name == NEIGHBOR)
    assert neighbors("sonic_lldp_table.txt") == [
        ("Ethernet112", "T1-1", "hundredGigE1/2"), ("Ethernet116", "T1-2", "hundredGigE1/2"),
        ("eth0", "swtor-b2lab2-1610", "GigabitEthernet 0/2")]
    assert neighbors("sonic_lldp_table_two_macs.txt") == [
        ("Ethernet0", "dummy", "First MAC"), ("Ethernet0", "dummy", "Second MAC")]


_SNMPWALK_LINE = re.compile(r"^(IF-MIB|LLDP-MIB)::(\w+)\.([0-9.]+) = (\w+): ?(.*)$")
# OIDs from the MIB texts (IF-MIB RFC 2863, LLDP-MIB IEEE 802.1AB-2005), not from the code under test
_MIB_NAMES = {"ifName": (1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 1),
              "lldpLocPortIdSubtype": (1, 0, 8802, 1, 1, 2, 1, 3, 7, 1, 2),
              "lldpLocPortId": (1, 0, 8802, 1, 1, 2, 1, 3, 7, 1, 3),
              "lldpLocPortDesc": (1, 0, 8802, 1, 1, 2, 1, 3, 7, 1, 4),
              "lldpRemChassisIdSubtype": (1, 0, 8802, 1, 1, 2, 1, 4, 1, 1, 4),
              "lldpRemChassisId": (1, 0, 8802, 1, 1, 2, 1, 4, 1, 1, 5),
              "lldpRemPortIdSubtype": (1, 0, 8802, 1, 1, 2, 1, 4, 1, 1, 6),
              "lldpRemPortId": (1, 0, 8802, 1, 1, 2, 1, 4, 1, 1, 7),
              "lldpRemPortDesc": (1, 0, 8802, 1, 1, 2, 1, 4, 1, 1, 8),
              "lldpRemSysName": (1, 0, 8802, 1, 1, 2, 1, 4, 1, 1, 9),
              "lldpRemSysDesc": (1, 0, 8802, 1, 1, 2, 1, 4, 1, 1, 10)}


def snmpwalk_varbinds(name: str) -> dict[tuple[int, ...], list]:
    """net-snmp's named walk output -> varbinds per column (INTEGER: ``local(7)`` -> 7; STRING: the
    text without net-snmp's quotes, as bytes), the way an agent would send them."""
    from fabric_exporter.transport.snmp_ber import Varbind

    walks: dict[tuple[int, ...], list] = {}
    for line in text(name).splitlines():
        m = _SNMPWALK_LINE.match(line)
        if not m or m.group(2) not in _MIB_NAMES:
            continue
        _mib, obj, index, kind, value = m.groups()
        column = _MIB_NAMES[obj]
        if kind == "INTEGER":
            v: object = int(re.search(r"(\d+)\)?$", value).group(1))
        else:
            v = value[1:-1].encode() if value.startswith('"') and value.endswith('"') else value.encode()
        walks.setdefault(column, []).append(Varbind(column + tuple(map(int, index.split("."))), kind, v))
    return walks


def test_snmp_lldp_scalance_x204irt():
    """A real switch's LLDP-MIB walk: the local port ID is 'local' (port-001), so the interface is
    the ifName of the same number; the neighbour without lldpRemSysName names no host and is left
    out; the other one's port ID (subtype local) is its port."""
    from fabric_exporter.collectors import lldp

    walks = snmpwalk_varbinds("snmpwalk_lldp_scalance_x204irt.txt")
    if_names = {vb.oid[-1]: vb.value.decode() for vb in walks.pop(_MIB_NAMES["ifName"])}
    problems: list[str] = []
    neighbors = lldp.neighbors_from_walks(lldp.LLDP_MIB, walks, if_names, problems)
    assert problems == []
    assert neighbors == [lldp.Neighbor("Siemens, SIMATIC NET, Ethernet Port, X1 P1", "(REMOVED)", "port-001")]
    samples = lldp.neighbor_samples("x204irt", neighbors, lambda _n: True, None)
    valid(samples)


def test_sonic_na_is_absent_not_zero():
    samples, _ = sonic_samples("pfc", "sonic_pfc_counters_all_na.txt")
    assert find(samples, PFC_RX, interface="Ethernet-BP256") == []
    stormed, _ = sonic_samples("pfcwd", "sonic_pfcwd_stats.txt")
    assert find(stormed, "fabric_roce_switch_pfcwd_storm_active", interface="Ethernet0", queue="UC3") == [1.0]


# -- Arista EOS through the switch_cli collector's own mapping (eos dialect) -----------------------

def eos_samples(command: str, name: str):
    group = parse_config({"targets": [{
        "name": "eos", "fabric": "lab", "collector": "switch_cli", "transport": "local",
        "options": {"dialect": "eos"}}]}).targets[0]
    collector = SwitchCliCollector(PollContext(group, group.hosts[0], None))
    collector._skipped = []
    samples = collector._samples(command, text(name))
    valid(samples)
    return samples, collector._skipped


EOS_QUEUE = "eos_queue_counters_detail_egress_nz.txt"
EOS_QUEUE_VOQ = "eos_queue_counters_nz_7280sr3e.txt"
EOS_DISCARDS = "eos_interfaces_counters_discards_anta.json"
EOS_PFC = "eos_pfc_counters_anta.json"
EOS_ECN = "eos_qos_ecn_counters_queue_anta.json"
ENQ_PKTS, ENQ_BYTES = "fabric_roce_switch_queue_enqueued_packets_total", "fabric_roce_switch_queue_enqueued_bytes_total"
QDROP_BYTES = "fabric_roce_switch_queue_dropped_bytes_total"
EOS_CASES = [
    # read by hand from the capture's rows (Et written out as Ethernet; TC<n> + DestType UC -> UC<n>)
    ("queue", EOS_QUEUE, ENQ_PKTS, {"interface": "Ethernet3/1/1", "queue": "UC1"}, 67521),
    ("queue", EOS_QUEUE, ENQ_BYTES, {"interface": "Ethernet3/1/1", "queue": "UC1"}, 7523778),
    ("queue", EOS_QUEUE, ENQ_PKTS, {"interface": "Ethernet3/9/1", "queue": "UC7"}, 876430),
    ("queue", EOS_QUEUE, ENQ_BYTES, {"interface": "Ethernet3/9/1", "queue": "UC7"}, 238170896),
    ("queue", EOS_QUEUE, QDROP, {"interface": "Ethernet4/2/1", "queue": "UC7"}, 1),
    ("queue", EOS_QUEUE, QDROP_BYTES, {"interface": "Ethernet4/4/1", "queue": "UC7"}, 110),
    ("queue", EOS_QUEUE, QDROP, {"interface": "Ethernet3/16/1", "queue": "UC7"}, 0),
    ("queue", EOS_QUEUE_VOQ, ENQ_PKTS, {"interface": "Ethernet14", "queue": "UC7"}, 45407),
    ("queue", EOS_QUEUE_VOQ, ENQ_BYTES, {"interface": "Ethernet14", "queue": "UC7"}, 36671321),
    ("queue", EOS_QUEUE_VOQ, QDROP, {"interface": "Ethernet14", "queue": "UC7"}, 1),
    ("queue", EOS_QUEUE_VOQ, QDROP_BYTES, {"interface": "Ethernet14", "queue": "UC7"}, 241),
    ("queue", EOS_QUEUE_VOQ, ENQ_PKTS, {"interface": "Ethernet31", "queue": "UC1"}, 9453397328),
    ("queue", EOS_QUEUE_VOQ, ENQ_BYTES, {"interface": "Ethernet31", "queue": "UC1"}, 905632037460),
    ("queue", EOS_QUEUE_VOQ, ENQ_PKTS, {"interface": "Ethernet15", "queue": "UC6"}, 1510646427),
    ("queue", EOS_QUEUE_VOQ, ENQ_BYTES, {"interface": "Ethernet46/1", "queue": "UC1"}, 913369789142),
    # the Aggregate VoQ table of the same capture: where this 7280SR3E's congestion drops are
    ("queue", EOS_QUEUE_VOQ, "fabric_roce_switch_voq_dropped_packets_total", {"interface": "Ethernet15", "queue": "UC6"},
     2326123603),
    ("queue", EOS_QUEUE_VOQ, "fabric_roce_switch_voq_dropped_bytes_total", {"interface": "Ethernet31", "queue": "UC1"},
     188546446560),
    ("queue", EOS_QUEUE_VOQ, "fabric_roce_switch_voq_packets_total", {"interface": "Ethernet31", "queue": "UC1"},
     9453790962),
    ("queue", EOS_QUEUE_VOQ, "fabric_roce_switch_voq_bytes_total", {"interface": "Ethernet15", "queue": "UC6"},
     105745556037),
    ("discards", EOS_DISCARDS, "fabric_roce_rx_discards_total", {"interface": "Ethernet1"}, 42),
    ("discards", EOS_DISCARDS, "fabric_roce_tx_discards_total", {"interface": "Ethernet3"}, 40),
    ("discards", EOS_DISCARDS, "fabric_roce_tx_discards_total", {"interface": "Port-Channel2"}, 30),
    ("discards", EOS_DISCARDS, "fabric_roce_rx_discards_total", {"interface": "Ethernet2"}, 0),
    # PFC frames per interface, every priority together
    ("pfc", EOS_PFC, "fabric_roce_switch_pfc_rx_frames_total", {"interface": "Ethernet3/1/1"}, 1),
    ("pfc", EOS_PFC, "fabric_roce_switch_pfc_tx_frames_total", {"interface": "Ethernet3/2/1"}, 2),
    ("pfc", EOS_PFC, "fabric_roce_switch_pfc_rx_frames_total", {"interface": "Ethernet3/4/1"}, 0),
    # ECN marks per tx-queue ("2" is a string in the JSON; "-" is no sample)
    ("ecn", EOS_ECN, "fabric_roce_ecn_marked_packets_total", {"interface": "Ethernet10/20/1", "queue": "UC1"}, 2),
    ("ecn", EOS_ECN, "fabric_roce_ecn_marked_packets_total", {"interface": "Ethernet10/3/1", "queue": "UC2"}, 2),
    ("ecn", EOS_ECN, "fabric_roce_ecn_marked_packets_total", {"interface": "Ethernet10/16/1", "queue": "UC0"}, 0),
]


@pytest.mark.parametrize("command,name,metric,labels,value", EOS_CASES)
def test_eos_captures(command, name, metric, labels, value):
    samples, skipped = eos_samples(command, name)
    assert find(samples, metric, **labels) == [value]
    if name != EOS_QUEUE_VOQ:
        assert skipped == []


def test_eos_voq_table_is_read_and_the_two_class_row_skipped():
    samples, skipped = eos_samples("queue", EOS_QUEUE_VOQ)
    # the CPU port's 'TC3,7' egress row (two classes in one row: no one queue's count) is the only
    # line not read
    assert [s.line_no for s in skipped] == [96] and skipped[0].source == "eos_queue_counters"
    assert find(samples, ENQ_PKTS, interface="OlpFap0") == []
    # 44 VoQ rows and 43 egress rows, 4 counts each; a VoQ row never stands in for the egress row
    assert len(samples) == (44 + 43) * 4
    assert find(samples, ENQ_PKTS, interface="Ethernet1", queue="UC7") == [54354]
    assert find(samples, "fabric_roce_switch_voq_packets_total", interface="Ethernet1", queue="UC7") == [54352]
    assert find(samples, "fabric_roce_switch_voq_packets_total", interface="OlpFap0", queue="UC7") == [47]


def test_eos_queue_capture_whole():
    samples, _ = eos_samples("queue", EOS_QUEUE)
    # 20 rows (18 ports, Et3/1/1 and Et3/9/1 with two classes), 4 counters each, no row lost
    assert len(samples) == 20 * 4
    assert len({(s.labels["interface"], s.labels["queue"]) for s in samples}) == 20
    assert sum(s.value for s in samples if s.name == QDROP) == 2


# -- InfiniBand: ibnetdiscover, ibdiagnet files and perfquery through the infiniband collector -------

def ib_collector(options: dict | None = None, runner=None) -> InfinibandCollector:
    group = parse_config({"targets": [{"name": "ib", "fabric": "lab", "collector": "infiniband",
                                       "transport": "local", "options": options or {}}]}).targets[0]

    class Transports:
        def runner(self, _group, _host):
            return runner

    return InfinibandCollector(PollContext(group, group.hosts[0] if group.hosts else None, Transports()))


def ib_poll(collector: InfinibandCollector, problems: list[str], skipped: list | None = None,
            deadline: float = 0.0) -> IbPoll:
    """The poll object for the collector's parts called one by one here (deadline: loop time; the
    default leaves no time, for the parts that run no tool)."""
    return IbPoll(collector.ctx, deadline, time.monotonic(), problems=problems,
                  skipped=skipped if skipped is not None else [])


def topology_samples(name: str):
    collector = ib_collector()
    skipped: list = []
    collector.state.apply_topology(ib_netdiscover.parse(text(name), skipped=skipped))
    problems: list[str] = []
    samples = collector._samples({}, {}, ib_poll(collector, problems))
    valid(samples)
    return samples, skipped


# file, (switches, CAs) counted by hand, one node (guid) and its description read by hand, lines skipped
TOPOLOGY_CASES = [
    ("ibnetdiscover_ibtopotool_1.topo", (2, 4), "0x005442ba00003080", "ISR9024 Voltaire", 0),
    ("ibnetdiscover_ibtopotool_2.topo", (1, 2), None, None, 0),
    ("ibnetdiscover_ibtopotool_3.topo", (2, 6), "0xe41d2d030003e470", "SwitchIB Mellanox Technologies", 1),
    ("ibnetdiscover_ibtopotool_4.topo", (1, 1), None, None, 0),
    ("ibdiagnet2_2.10_quantum2.ibnetdiscover", (2, 0), "0xb0cf0e0300d33fc0", "MF0;ib-switch-sequoia:MQM9700/U1", 0),
    ("ibdiagnet2_2.10_quantum2_cas.ibnetdiscover", (0, 8), "0x5c25730300d0dc72", "h4-1-gpu HCA-1", 0),
]


@pytest.mark.parametrize("name,counts,guid,description,skipped_lines", TOPOLOGY_CASES)
def test_topology_captures(name, counts, guid, description, skipped_lines):
    samples, skipped = topology_samples(name)
    assert (find(samples, "fabric_ib_topology_nodes", node_type="switch"),
            find(samples, "fabric_ib_topology_nodes", node_type="ca")) == ([counts[0]], [counts[1]])
    if guid is not None:
        info = [s.labels for s in samples if s.name == "fabric_ib_node_info" and s.labels["node_guid"] == guid]
        assert [i["node_description"] for i in info] == [description]
    assert len(skipped) == skipped_lines  # 3.topo begins with a umad error line the capture kept


def test_ibdiagnet_pm_with_dash_frames_and_64bit_twins():
    samples, _ = ibdiagnet_samples("ibdiagnet2.pm", text("ibdiagnet2_2.10_quantum2.pm"), ib_collector().state,
                                   skip_pm=False)
    valid(samples)
    port1 = {"node_guid": "0xb0cf0e0300d33fc0", "port": "1"}
    # port_xmit_data=0xffffffff (32-bit, pinned) beside port_xmit_data_extended=0x00000045a9712343
    assert find(samples, "fabric_ib_ibdiagnet_pm_counter", counter="port_xmit_data_bytes", **port1) == [0x45A9712343 * 4]
    assert find(samples, "fabric_ib_ibdiagnet_pm_counter", counter="port_xmit_wait", **port1) == [0x23413832C]
    assert find(samples, "fabric_ib_ibdiagnet_pm_counter", counter="port_xmit_data", **port1) == []
    assert find(samples, "fabric_ib_ibdiagnet_port_latched", **port1) == [0.0]  # every pinned cell has a twin
    assert len({(s.labels["node_guid"], s.labels["port"]) for s in samples
                if s.name == "fabric_ib_ibdiagnet_port_latched"}) == 5  # the 5 port blocks kept


def test_ibdiagnet_db_csv_camelcase_twins_and_temperature():
    samples, had_pm = ibdiagnet_samples("ibdiagnet2.db_csv", text("ibdiagnet2_2.10_quantum2.db_csv"),
                                        ib_collector().state, skip_pm=False)
    valid(samples)
    assert had_pm
    port1 = {"node_guid": "0xb0cf0e0300d33fc0", "port": "1"}
    assert find(samples, "fabric_ib_ibdiagnet_pm_counter", counter="PortXmitDataBytes", **port1) == [299195507523 * 4]
    assert find(samples, "fabric_ib_ibdiagnet_pm_counter", counter="PortXmitWait", **port1) == [9463628588]
    assert find(samples, "fabric_ib_ibdiagnet_node_temperature_celsius", node_guid="0xb0cf0e0300d33fc0") == [46.0]


class CaptureRunner:
    """Answers every perfquery with one capture, as the tool printed it."""

    description = "capture"

    def __init__(self, stdout: str):
        self.stdout = stdout

    async def run(self, argv, timeout):
        return CommandResult(tuple(argv), 0, self.stdout, "")


# file, node GUID, ports in it, (port, QP1Dropped) read by hand
PERFQUERY_CASES = [
    ("perfquery_x_0x506b4b03005c2740.txt", 0x506B4B03005C2740, (1,), (1, 0)),
    ("perfquery_x_0x7cfe9003003b4b96.txt", 0x7CFE9003003B4B96, (1,), (1, 0)),
    ("perfquery_x_0x7cfe9003003b4bde.txt", 0x7CFE9003003B4BDE, (1,), (1, 0)),
    ("perfquery_x_0x7cfe9003009ce5b0.txt", 0x7CFE9003009CE5B0, (1, 2), (2, 0)),
]


@pytest.mark.parametrize("name,guid,ports,expected", PERFQUERY_CASES)
def test_perfquery_captures_feed_qp1_dropped(name, guid, ports, expected):
    capture = text(name)
    lid = int(re.search(r"Lid (\d+)", capture).group(1))
    collector = ib_collector({"qp1_dropped": True}, CaptureRunner(capture))
    table = {}
    for port in ports:
        link = ib_queryerrors.LinkInfo(lid, port, "Active", "LinkUp", "4X", "25.78125", None, None, None, None,
                                       None, None)
        table[(guid, port)] = SweptPort(guid, port, ib_queryerrors.PortCounters(port, guid, link=link))
    problems: list[str] = []

    async def read():
        poll = ib_poll(collector, problems, deadline=asyncio.get_running_loop().time() + 10)
        await collector.tools.read_qp1_dropped(table, collector.state, poll)
        return poll

    samples = collector._samples(table, {}, asyncio.run(read()))
    valid(samples)
    port, value = expected
    assert find(samples, "fabric_ib_qp1_dropped_total", port=str(port)) == [value]
    assert not [p for p in problems if "QP1Dropped" in p]


# file, node GUID, port: perfquery -E through the error-detail read (every field 0 in these captures)
PERFQUERY_E_CASES = [
    ("perfquery_E_0x7cfe9003009ce5b0-1.txt", 0x7CFE9003009CE5B0, 1),
    ("perfquery_E_0x7cfe9003009ce5b0-2.txt", 0x7CFE9003009CE5B0, 2),
    ("perfquery_E_0x506b4b03005c2740-1.txt", 0x506B4B03005C2740, 1),
    ("perfquery_E_0x7cfe9003003b4b96-1.txt", 0x7CFE9003003B4B96, 1),
    ("perfquery_E_0x7cfe9003003b4bde-1.txt", 0x7CFE9003003B4BDE, 1),
]


@pytest.mark.parametrize("name,guid,port", PERFQUERY_E_CASES)
def test_perfquery_rcv_error_details_captures(name, guid, port):
    from fabric_exporter.collectors.infiniband import details

    capture = text(name)
    lid = int(re.search(r"Lid (\d+)", capture).group(1))
    collector = ib_collector({"error_details": True}, CaptureRunner(capture))
    link = ib_queryerrors.LinkInfo(lid, port, "Active", "LinkUp", "4X", "25.78125", None, None, None, None,
                                   None, None)
    # the error sweep saw PortRcvErrors on the port (the read's trigger), no PortXmitDiscards
    table = {(guid, port): SweptPort(guid, port, ib_queryerrors.PortCounters(port, guid, link=link),
                                     errors={"PortRcvErrors": 3})}
    problems: list[str] = []
    skipped: list = []

    poll = ib_poll(collector, problems, skipped)

    async def read():
        poll.deadline = asyncio.get_running_loop().time() + 10
        return await details.read_error_details(collector.tools, table, 64, poll)

    found = asyncio.run(read())
    samples = collector._samples(table, {}, poll) + details.detail_samples(found, collector.state)
    valid(samples)
    assert not problems and not skipped
    for metric in ("fabric_ib_port_receive_malformed_packet_errors_total",
                   "fabric_ib_port_receive_vl_mapping_errors_total",
                   "fabric_ib_port_receive_local_physical_errors_total",
                   "fabric_ib_port_receive_looping_errors_total"):
        assert find(samples, metric, port=str(port), node_guid=f"0x{guid:016x}") == [0.0]
    # no -D was run: PortXmitDiscards is 0 on the port
    assert not find(samples, "fabric_ib_port_transmit_lifetime_limit_discards_total")

# -- perftest latency reports through the latency_probe collector's parse + record path ----------

def latency_samples(name: str, message_bytes: int):
    from fabric_exporter.collectors.latency_probe.plan import Probe
    from fabric_exporter.collectors.latency_probe import LatencyProbeCollector
    from fabric_exporter.parsers.perftest import parse_report

    group = parse_config({"targets": [{
        "name": "lat", "fabric": "lab", "collector": "latency_probe", "transport": "local",
        "hosts": [{"name": h, "address": "127.0.0.1"} for h in ("a", "b")],
        "options": {"message_bytes": message_bytes}}]}).targets[0]
    collector = LatencyProbeCollector(PollContext(group, None, None))
    skipped: list = []
    report = parse_report(text(name), message_bytes=message_bytes, skipped=skipped)
    collector._record(Probe("a", "b"), report, 1000.0)
    samples = collector._samples(1000.0, 1, 0, 0)
    valid(samples)
    return samples, skipped


# file, message size, {statistic: seconds} read by hand from that row (None: the report has no such column)
PERFTEST_CASES = [
    # 9 columns, tab-padded rows with blank lines between them (Soft-RoCE rxe, loopback)
    ("perftest_ib_write_lat_rxe_linux_rdma.txt", 64,
     {"min": 1.65e-6, "median": 1.84e-6, "avg": 1.99e-6, "p99": 3.92e-6, "p999": 8.58e-6, "max": 8.58e-6}),
    # 3 columns (t_min t_max t_typical), perftest of MLNX_OFED 4.5, ConnectX-5 VF on Azure HC44rs
    ("perftest_ib_send_lat_3col_azure_hc44rs.txt", 16384,
     {"min": 5.68e-6, "median": 5.88e-6, "avg": None, "p99": None, "p999": None, "max": 27.13e-6}),
    # 9 columns, "Conflicting CPU frequency" warnings printed between the header and the row (ConnectX-5 RoCE)
    ("perftest_ib_read_lat_cpufreq_spiderpool.txt", 2,
     {"min": 6.88e-6, "median": 7.04e-6, "avg": 7.06e-6, "p99": 7.38e-6, "p999": 16.81e-6, "max": 16.81e-6}),
    # the same from an SR-IOV VF, libibverbs "couldn't stat" warnings before the banner
    ("perftest_ib_read_lat_sriov_spiderpool.txt", 2,
     {"min": 6.66e-6, "median": 6.74e-6, "avg": 6.82e-6, "p99": 7.15e-6, "p999": 20.37e-6, "max": 20.37e-6}),
]


@pytest.mark.parametrize("name,size,expected", PERFTEST_CASES)
def test_perftest_captures(name, size, expected):
    samples, skipped = latency_samples(name, size)
    for stat, value in expected.items():
        got = find(samples, f"fabric_rdma_latency_{stat}_seconds", source="a", destination="b")
        assert got == ([] if value is None else [value]), stat
    has_histogram = bool(find(samples, "fabric_rdma_latency_pair_seconds_count"))
    assert has_histogram == (expected["p99"] is not None)  # no percentiles: no histogram shape, not guessed
    assert skipped == []


def test_perftest_out_json_with_unquoted_keys_is_refused_with_its_reason():
    # what perftest wrote before linux-rdma/perftest#216 was fixed: not JSON, no text report beside it
    from fabric_exporter.errors import ParseError

    with pytest.raises(ParseError, match="unquoted keys"):
        latency_samples("perftest_out_json_unquoted_issue216.json", 128)


# -- ibqueryerrors (error sweep) through the infiniband collector's assemble + sample path -----------

def error_sweep_samples(name: str, ports_by_node: dict[int, tuple[str, tuple[int, ...]]], nodes_checked: int):
    """The error sweep capture as the collector reads it, beside a counter sweep that listed these ports
    (built here as records: the capture is the error sweep, the counter sweep only names the ports)."""
    skipped: list = []
    errors = ib_queryerrors.parse(text(name), skipped=skipped)
    counters = ib_queryerrors.QueryErrorsReport(
        [ib_queryerrors.NodeCounters("data", guid, node_name,
                                     [ib_queryerrors.PortCounters(p, guid) for p in ports])
         for guid, (node_name, ports) in ports_by_node.items()],
        ib_queryerrors.Summary(nodes_checked, 0))
    collector = ib_collector()
    problems: list[str] = []
    table = join_sweeps(counters, errors, "", collector.state.owners, problems).ports
    latched = {key: latched_counters(p.entry, p.errors, p.errors_extended, p.qp1_dropped) for key, p in table.items()}
    samples = collector._samples(table, latched, ib_poll(collector, problems))
    valid(samples)
    return samples, skipped, problems


SX6036 = 0x2C903006E29B0


def test_ibqueryerrors_default_sweep_sx6036():
    samples, skipped, problems = error_sweep_samples(
        "ibqueryerrors_linux_rdma_sx6036.txt", {SX6036: ("MF0;ys23ib4:SX6036/U1", tuple(range(1, 9)))}, 4)
    assert skipped == []
    port = {"node_guid": "0x0002c903006e29b0"}
    assert find(samples, "fabric_ib_link_downed_total", port="6", **port) == [9]
    assert find(samples, "fabric_ib_port_transmit_discards_total", port="6", **port) == [14176]
    # SymbolErrorCounter 65535 is the 16-bit field pinned at all-ones: published, and flagged as latched
    assert find(samples, "fabric_ib_symbol_error_total", port="5", **port) == [65535]
    assert find(samples, "fabric_ib_port_latched", port="5", **port) == [1.0]
    assert find(samples, "fabric_ib_port_latched", port="8", **port) == [0.0]
    # a counter the error sweep did not print, on a port of a fully checked node, is 0 (threshold 0)
    assert find(samples, "fabric_ib_symbol_error_total", port="8", **port) == [0]
    # the three CA blocks (no node GUID printed in errors mode) concern nodes this counter sweep did not list
    assert any("did not return" in p for p in problems)


# -- rdma link show / rdma statistic show through the roce_nic collector's rdma-tool path -------------

def rdma_poll(link_name: str, statistic_name: str | None):
    """The collector's dump in ``hw_counters_from: rdma`` mode, its two sections holding the captures
    (an empty statistic section when only ``rdma link`` was published)."""
    statistic = text(statistic_name).rstrip("\n") if statistic_name else None
    parts = ["@@fabric-roce 1 rdma", "@@rdma_link 0", text(link_name).rstrip("\n"), "@@rdma_statistic 0"]
    parts += [statistic] if statistic else []
    result = result_from_dump(parse_host_dump("\n".join(parts) + "\n@@end\n"), "host-a",
                              RoceNicOptions(expose_unmapped=True))
    valid(result.samples)
    return result, result.skipped


def test_rdma_link_and_statistic_oci_bm_optimized3():
    result, skipped = rdma_poll("rdma_link_oci_bm_optimized3.txt", "rdma_statistic_oci_mlx5_2.txt")
    assert skipped == [] and result.problems == []
    active = {s.labels["device"]: s.value for s in result.samples if s.name == "fabric_roce_nic_port_active"}
    assert active == {"mlx5_0": 1, "mlx5_1": 1, "mlx5_2": 1, "mlx5_3": 0}  # mlx5_3/1 state DOWN
    port = {"device": "mlx5_2", "netdev": "rdma0"}
    assert find(result.samples, "fabric_roce_nic_unmapped_value", counter="rx_write_requests", **port) == [18747]
    assert find(result.samples, "fabric_roce_nic_rdma_out_of_buffer_total", **port) == [0]
    assert find(result.samples, "fabric_roce_ecn_marked_packets_total", **port) == [0]
    # the ports rdma statistic did not list (grep kept mlx5_2 only) publish no counters, not zeros
    assert find(result.samples, "fabric_roce_nic_rdma_out_of_buffer_total", device="mlx5_0") == []


def test_rdma_link_older_iproute2_without_netdev():
    # `IDX/PORT: dev/port:` prefix and no netdev field (iproute2 in a Pod of a shared-mode RoCE host)
    result, skipped = rdma_poll("rdma_link_old_format_spiderpool_pod.txt", None)
    assert skipped == []
    assert find(result.samples, "fabric_roce_nic_port_active", device="mlx5_1", port="1", netdev="") == [1]
    assert len(find(result.samples, "fabric_roce_nic_port_active")) == 2


def test_rdma_link_daocloud_connectx5():
    result, skipped = rdma_poll("rdma_link_daocloud_connectx5.txt", None)
    assert skipped == []
    assert find(result.samples, "fabric_roce_nic_port_active", device="mlx5_1", netdev="enp4s0f1np1") == [1]


# files checked by a test function of their own (above)
EXTRA_TESTED = {"ibqueryerrors_linux_rdma_sx6036.txt", "perftest_out_json_unquoted_issue216.json",
                "rdma_link_oci_bm_optimized3.txt", "rdma_statistic_oci_mlx5_2.txt",
                "rdma_link_daocloud_connectx5.txt", "rdma_link_old_format_spiderpool_pod.txt",
                "snmpwalk_lldp_scalance_x204irt.txt"}


# -- the corpus itself ------------------------------------------------------------------------------

def test_every_capture_is_tested_and_has_its_provenance():
    tested = ({c[0] for c in NIC_CASES} | {c[0] for c in UNMAPPED_CASES} | {c[1] for c in SONIC_CASES} | {c[1] for c in SONIC_EMPTY}
              | {c[1] for c in EOS_CASES} | {c[0] for c in CUMULUS_CASES} | {NVUE_ROCE}
              | {c[0] for c in TOPOLOGY_CASES} | {c[0] for c in PERFQUERY_CASES} | {c[0] for c in PERFQUERY_E_CASES}
              | {"ibdiagnet2_2.10_quantum2.pm", "ibdiagnet2_2.10_quantum2.db_csv"}
              | {c[0] for c in PERFTEST_CASES} | EXTRA_TESTED)
    files = {p.name for p in REAL.iterdir() if p.name != "README.md"}
    # a capture a parser's own test module reads (tests/unit/parsers/test_<parser>.py) needs no case here
    own = "\n".join(t.read_text() for t in (paths.ROOT / "tests/unit/parsers").glob("test_*.py"))
    tested |= {name for name in files - tested if f'"{name}"' in own}
    assert files == tested
    assert len(files) >= 40
    for name in files:
        assert f"`{name}`" in README, f"{name}: no provenance line in tests/fixtures/real/README.md"


# -- Cumulus Linux: ethtool -S swpN through the switch_cli collector's own mapping ----------------

def cumulus_samples_of(name: str):
    from fabric_exporter.collectors.switch_cli import SwitchLabels, cumulus_samples
    from fabric_exporter.parsers.sonic_cli import parse_cumulus_ethtool

    skipped: list = []
    samples = cumulus_samples(SwitchLabels("leaf1"), "swp1", parse_cumulus_ethtool(text(name), skipped=skipped))
    valid(samples)
    return samples, skipped


CUMULUS_37, CUMULUS_51 = "ethtool_cumulus_37_swp1.txt", "ethtool_cumulus_51_swp1.txt"
CUMULUS_MLAG = "ethtool_cumulus_37_mlag_swp51_trimmed.txt"
RX_DISC, TX_DISC = "fabric_roce_rx_discards_total", "fabric_roce_tx_discards_total"
RX_BUF, TX_QDROP = "fabric_roce_switch_if_rx_buffer_drops_total", "fabric_roce_switch_if_tx_queue_drops_total"
CUMULUS_CASES = [
    # read by hand: the drop counters the docs' captures print (HwIfInAclDrops 28 is not one we map)
    (CUMULUS_37, {RX_DISC: 0, TX_DISC: 0, RX_BUF: 0, TX_QDROP: 0}),
    # 5.1 prints no HwIfOutDiscards (nor SoftInDrops/SoftInFrameErrors): no tx discards series, not a 0
    (CUMULUS_51, {RX_DISC: 0, RX_BUF: 0, TX_QDROP: 0}),
    # an MLAG peer link dropping: HwIfInDiscards 2129675 (the kernel's RX_DRP beside it: 2129676);
    # the docs' author cut the output after that line, so nothing else is there to map
    (CUMULUS_MLAG, {RX_DISC: 2129675}),
]


@pytest.mark.parametrize("name,expected", CUMULUS_CASES)
def test_cumulus_ethtool_drops(name, expected):
    samples, skipped = cumulus_samples_of(name)
    assert skipped == []
    got = {s.name: s.value for s in samples}
    assert got == expected
    assert all(s.labels == {"switch": "leaf1", "interface": "swp1"} for s in samples)


NVUE_ROCE = "nvue_qos_roce_counters_swp16.txt"


def test_nvue_roce_counters_through_the_mapping():
    from fabric_exporter.collectors.switch_cli import SwitchLabels, nvue_roce_samples
    from fabric_exporter.parsers.nvue import parse_roce_counters

    skipped: list = []
    samples = nvue_roce_samples(SwitchLabels("leaf1"), "swp16", parse_roce_counters(text(NVUE_ROCE), skipped=skipped))
    valid(samples)
    assert skipped == []
    port = {"switch": "leaf1", "interface": "swp16"}
    got = {(s.name, s.labels.get("traffic")): s.value for s in samples}
    assert all({k: v for k, v in s.labels.items() if k != "traffic"} == port for s in samples)
    # read by hand from the capture (NVIDIA's Cumulus 5.6 RoCE page): a port whose RoCE traffic is
    # heavily ECN-marked and whose egress drops RoCE packets for lack of buffer
    assert got == {
        ("fabric_roce_switch_if_ecn_marked_packets_total", None): 693777677344,
        ("fabric_roce_switch_if_rx_traffic_packets_total", "roce"): 0,
        ("fabric_roce_switch_if_rx_traffic_packets_total", "non_roce"): 462975,
        ("fabric_roce_switch_if_tx_traffic_packets_total", "roce"): 803785675319,
        ("fabric_roce_switch_if_tx_traffic_packets_total", "cnp"): 0,
        ("fabric_roce_switch_if_rx_no_buffer_discards_total", "roce"): 0,
        ("fabric_roce_switch_if_rx_no_buffer_discards_total", "non_roce"): 55,
        ("fabric_roce_switch_if_tx_no_buffer_discards_total", "roce"): 663060754115,
        ("fabric_roce_switch_if_tx_no_buffer_discards_total", "cnp"): 0,
    }
