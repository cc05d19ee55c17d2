"""Tests written for mutants that survived the RoCE NIC tests (issue 16, "Test strength"): the
ethtool parser's line-by-line path taken by valid CRLF output, 64-bit boundaries, and the vendor
mapping's "a preferred counter wins over its fallback" rule, driver families and scales."""

from __future__ import annotations

import pytest

from fabric_exporter.collectors.roce_nic import RoceNicOptions, result_from_dump
from fabric_exporter.errors import ParseError
from fabric_exporter.parsers.ethtool import U64_MAX, parse_ethtool_stats, parse_u64
from fabric_exporter.parsers.rdma import parse_host_dump

BASE = {"host": "gpu-001", "device": "mlx5_0", "port": "1", "netdev": "eth0"}

# -- ethtool -S ---------------------------------------------------------------------------------------

LF = "NIC statistics:\n     rx_packets: 10\n     tx_bytes_phy: 0\n     [0]: rx_ucast_packets: 7\n"


def test_crlf_output_takes_the_line_by_line_path_and_reads_the_same():
    lf = parse_ethtool_stats(LF)
    crlf = parse_ethtool_stats(LF.replace("\n", "\r\n"))
    assert lf.counters == crlf.counters == {"rx_packets": 10, "tx_bytes_phy": 0, "[0]: rx_ucast_packets": 7}
    assert lf.ambiguous == crlf.ambiguous == frozenset()


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_u64_boundaries_on_both_paths(newline):
    ok = f"NIC statistics:{newline}  big: {U64_MAX}{newline}  zero: 0{newline}"
    assert parse_ethtool_stats(ok).counters == {"big": 2**64 - 1, "zero": 0}
    with pytest.raises(ParseError, match="64 bits"):
        parse_ethtool_stats(f"NIC statistics:{newline}  big: {2**64}{newline}")


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_duplicate_names_with_different_values_are_ambiguous_not_guessed(newline):
    text = newline.join(["NIC statistics:", "  a: 1", "  a: 2", "  b: 5", "  b: 5", "  c: 3", ""])
    stats = parse_ethtool_stats(text)
    assert stats.counters == {"b": 5, "c": 3} and stats.ambiguous == frozenset({"a"})


@pytest.mark.parametrize("text", ["", "\n\n", "stats:\n a: 1\n",
                                  "NIC statistics:\n a: -1\n", "NIC statistics:\n a: 1x\n", 12])
def test_bad_ethtool_text_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_ethtool_stats(text)


@pytest.mark.parametrize("line", ["a 1", ": 1"])
def test_a_line_that_is_not_a_counter_is_skipped_and_counted(line):
    skipped: list = []
    stats = parse_ethtool_stats(f"NIC statistics:\n {line}\n  b: 2\n", skipped=skipped)
    assert stats.counters == {"b": 2}
    assert [s.text for s in skipped] == [line]


def test_parse_u64_boundaries():
    assert parse_u64("0", "x") == 0 and parse_u64(str(U64_MAX), "x") == U64_MAX
    assert parse_u64("0" * 20, "x") == 0
    for bad in (str(2**64), "1" * 21, "", "-1", " 1", "1.0"):
        with pytest.raises(ParseError):
            parse_u64(bad, "x")


# -- the mapping -----------------------------------------------------------------------------------------

def dump(driver: str, ethtool: str = "", hw: str = "") -> str:
    parts = ["@@fabric-roce 1 sysfs", f"@@device mlx5_0 {driver}", "@@port mlx5_0 1 eth0 Ethernet 4: ACTIVE"]
    if hw:
        parts += ["@@hw_counters mlx5_0 1", hw.rstrip("\n")]
    if ethtool:
        parts += ["@@ethtool eth0 0", "NIC statistics:", ethtool.rstrip("\n")]
    return "\n".join(parts) + "\n@@end\n"


def values(text: str, **options) -> dict:
    result = result_from_dump(parse_host_dump(text), "gpu-001", RoceNicOptions(**options))
    return {(s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k not in BASE))): s.value
            for s in result.samples if s.labels.get("device") == "mlx5_0"}


@pytest.mark.parametrize("order", [1, -1])
def test_a_preferred_ethtool_counter_wins_over_its_fallback_in_any_order(order):
    lines = ["  rx_prio3_pause: 100", "  rx_pfc_ena_frames_pri3: 999", "  rx_bytes_phy: 5", "  rx_bytes.nic: 777"][::order]
    v = values(dump("mlx5_core", "\n".join(lines)))
    assert v[("fabric_roce_pfc_rx_pause_frames_total", (("priority", "3"),))] == 100
    assert v[("fabric_roce_rx_bytes_total", ())] == 5


def test_a_fallback_counter_is_used_when_the_preferred_one_is_absent():
    v = values(dump("ice", "  rx_pfc_ena_frames_pri3: 999\n  rx_priority_5_xoff.nic: 4\n  rx_bytes.nic: 777\n"))
    assert v[("fabric_roce_pfc_rx_pause_frames_total", (("priority", "3"),))] == 999
    assert v[("fabric_roce_pfc_rx_pause_frames_total", (("priority", "5"),))] == 4
    assert v[("fabric_roce_rx_bytes_total", ())] == 777


@pytest.mark.parametrize("order", [1, -1])
def test_a_preferred_hw_counter_wins_over_its_fallback(order):
    hw = ["np_ecn_marked_roce_packets:11", "rx_ecn_marked_pkts:22", "np_cnp_sent:3", "tx_cnp_pkts:44"][::order]
    v = values(dump("mlx5_core", hw="\n".join(hw)))
    assert v[("fabric_roce_ecn_marked_packets_total", ())] == 11
    assert v[("fabric_roce_nic_cnp_sent_total", ())] == 3


def test_driver_families_limit_a_rule():
    eth = "  rx_bytes: 50\n  rx_pause_frames: 6\n  link_down_events: 2\n"
    mlx = values(dump("mlx5_core", eth))
    bnxt = values(dump("bnxt_en", eth))
    assert ("fabric_roce_rx_bytes_total", ()) not in mlx  # mlx5's rx_bytes is the netdev's software count
    assert bnxt[("fabric_roce_rx_bytes_total", ())] == 50
    assert bnxt[("fabric_roce_nic_link_pause_rx_frames_total", ())] == 6
    assert bnxt[("fabric_roce_nic_link_down_events_total", ())] == 2


def test_microsecond_counters_are_scaled_to_seconds_and_labels_extracted():
    v = values(dump("mlx5_core", "  rx_prio3_pause_duration: 2500000\n  rx_global_pause_duration: 1000000\n"
                                 "  rx_discard_packets_cos12: 9\n  rx_prio7_bytes: 0\n"))
    assert v[("fabric_roce_nic_pfc_rx_pause_seconds_total", (("priority", "3"),))] == pytest.approx(2.5)
    assert v[("fabric_roce_nic_link_pause_rx_seconds_total", ())] == pytest.approx(1.0)
    assert v[("fabric_roce_nic_queue_rx_discards_total", (("queue", "12"),))] == 9
    assert v[("fabric_roce_nic_priority_rx_bytes_total", (("priority", "7"),))] == 0  # a counter of 0 is published


def test_patterns_match_whole_names_only():
    v = values(dump("mlx5_core", "  rx_prio8_pause: 1\n  rx_prio3_pause_x: 2\n  xrx_prio3_pause: 3\n"
                                 "  rx_discard_packets_cos123: 4\n"))
    assert not any(name.startswith(("fabric_roce_pfc", "fabric_roce_nic_queue")) for name, _ in v)


@pytest.mark.parametrize("driver,device,family", [
    ("mlx5_core", "mlx5_0", "mlx5"), ("bnxt_en", "bnxt_re0", "bnxt"), ("ice", "irdma0", "intel"),
    ("irdma", "x", "intel"), ("i40e", "x", "intel"), (None, "mlx5_3", "mlx5"), (None, "irdma1", "intel"),
    ("virtio_net", "rxe0", None), (None, "rxe0", None),
])
def test_driver_family(driver, device, family):
    from fabric_exporter.collectors.roce_nic import driver_family

    assert driver_family(driver, device) == family


def test_options_defaults_and_values():
    from fabric_exporter.collectors.roce_nic import RoceNicCollector

    errors = []
    o = RoceNicCollector.parse_options({}, "options", lambda p, m: errors.append(p))
    assert (o.devices, o.hw_counters_from, o.ethtool, o.expose_unmapped, o.include_infiniband_ports) == (
        (), "sysfs", True, False, False)
    o = RoceNicCollector.parse_options({"devices": ["mlx5_0"], "hw_counters_from": "rdma", "ethtool": False,
                                        "expose_unmapped": True, "include_infiniband_ports": True},
                                       "options", lambda p, m: errors.append(p))
    assert (o.devices, o.hw_counters_from, o.ethtool, o.expose_unmapped, o.include_infiniband_ports) == (
        ("mlx5_0",), "rdma", False, True, True)
    assert errors == []
    RoceNicCollector.parse_options({"hw_counters_from": "magic", "devices": ["bad name"]}, "options",
                                   lambda p, m: errors.append(p))
    assert sorted(errors) == ["options.devices[0]", "options.hw_counters_from"]


def test_the_remote_command_carries_the_options():
    from fabric_exporter.collectors import PollContext
    from fabric_exporter.collectors.roce_nic import REMOTE_SCRIPT, RoceNicCollector
    from tests.harness.configs import parse_config

    def command(options):
        cfg = parse_config({"targets": [{"name": "n", "fabric": "f", "collector": "roce_nic", "transport": "local",
                                         "options": options}]})
        group = cfg.targets[0]
        return RoceNicCollector(PollContext(group, group.hosts[0], None)).command()

    assert command({}) == ["sh", "-c", REMOTE_SCRIPT, "fabric-roce", "sysfs", "1", "mapped"]
    assert command({"ethtool": False, "hw_counters_from": "rdma", "devices": ["mlx5_0", "mlx5_1"]}) == [
        "sh", "-c", REMOTE_SCRIPT, "fabric-roce", "rdma", "0", "mapped", "mlx5_0", "mlx5_1"]
    # the host filters nothing out when unmapped counters are to be published
    assert command({"expose_unmapped": True}) == ["sh", "-c", REMOTE_SCRIPT, "fabric-roce", "sysfs", "1", "all"]


def test_ethtool_of_a_port_left_out_does_not_hide_the_next_ones():
    text = ("@@fabric-roce 1 sysfs\n@@device mlx5_0 mlx5_core\n@@port mlx5_0 1 eth0 Ethernet 4: ACTIVE\n"
            "@@device mlx5_1 mlx5_core\n@@port mlx5_1 1 eth1 Ethernet 4: ACTIVE\n"
            "@@ethtool eth0 0\nNIC statistics:\n  rx_bytes_phy: 1\n@@ethtool eth1 0\nNIC statistics:\n  rx_bytes_phy: 2\n@@end\n")
    result = result_from_dump(parse_host_dump(text), "gpu-001", RoceNicOptions(devices=("mlx5_1",)))
    got = {(s.labels["device"], s.name): s.value for s in result.samples if s.name == "fabric_roce_rx_bytes_total"}
    assert got == {("mlx5_1", "fabric_roce_rx_bytes_total"): 2}


def test_rdma_link_lid_bounds():
    from fabric_exporter.parsers.rdma import parse_rdma_link

    line = "link mlx5_2/1 subnet_prefix fe80:0000:0000:0000 lid {} sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP\n"
    (link,) = parse_rdma_link(line.format(65535))
    assert link.lid == 65535
    with pytest.raises(ParseError):
        parse_rdma_link(line.format(65536))


def test_host_dump_sections_are_kept_and_short_port_lines_refused():
    dump_ = parse_host_dump("@@fabric-roce 1 rdma\n@@rdma_link 0\nlink a\n@@rdma_statistic 3\nstat b\n@@end\n")
    assert (dump_.rdma_link.exit_status, dump_.rdma_link.text) == (0, "link a\n")
    assert (dump_.rdma_statistic.exit_status, dump_.rdma_statistic.text) == (3, "stat b\n")
    with pytest.raises(ParseError):
        parse_host_dump("@@fabric-roce 1 sysfs\n@@device mlx5_0 mlx5_core\n@@port mlx5_0 1\n@@end\n")
