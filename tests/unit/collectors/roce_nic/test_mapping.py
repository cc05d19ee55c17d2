"""Vendor counters -> catalog samples, on the fixture captures: exact names, labels and values."""

from __future__ import annotations


import pytest

from fabric_exporter.catalog import CATALOG
from fabric_exporter.catalog.spec import CAPTURES
from fabric_exporter.collectors.roce_nic import RoceNicCollector, RoceNicOptions, result_from_dump
from fabric_exporter.collectors.roce_nic.docs import mapping_table_markdown
from fabric_exporter.errors import CommandError
from fabric_exporter.mapping import rows_of
from fabric_exporter.parsers.rdma import parse_host_dump
from fabric_exporter.samples import LabelSet

from tests.harness import paths

DOC = (paths.ROOT / "docs" / "collectors" / "roce_nic.md").read_text()
BASE = {"host": "gpu-001", "device": "mlx5_0", "port": "1", "netdev": "ens1f0np0"}


def dump_text(fixture_text, device, driver, netdev, hw=None, ethtool=None, ethtool_status=0, extra="") -> str:
    parts = ["@@fabric-roce 1 sysfs", f"@@device {device} {driver}", f"@@port {device} 1 {netdev} Ethernet 4: ACTIVE"]
    if hw:
        parts += [f"@@hw_counters {device} 1", fixture_text(hw).rstrip("\n")]
    if ethtool is not None:
        parts += [f"@@ethtool {netdev} {ethtool_status}", (fixture_text(ethtool) if ethtool_status == 0 else ethtool).rstrip("\n")]
    return "\n".join(parts) + "\n" + extra + "@@end\n"


def as_dict(result) -> dict[tuple[str, tuple], float]:
    out = {}
    for s in result.samples:
        key = (s.name, tuple(sorted(s.labels.items())))
        assert key not in out, f"duplicate {key}"
        out[key] = s.value
    return out


def key(name, **extra):
    return (name, tuple(sorted({**BASE, **extra}.items())))


def poll(text, **options):
    return result_from_dump(parse_host_dump(text), "gpu-001", RoceNicOptions(**options))


def test_mlx5_pfc_priority_3_exact(fixture_text):
    r = poll(dump_text(fixture_text, "mlx5_0", "mlx5_core", "ens1f0np0", "hw_counters_mlx5.txt", "ethtool_mlx5_pfc3.txt"))
    got = as_dict(r)
    expected = {
        key("fabric_roce_nic_port_info", driver="mlx5_core"): 1,
        key("fabric_roce_nic_port_active"): 1,
        key("fabric_roce_pfc_rx_pause_frames_total", priority="3"): 190344,
        key("fabric_roce_pfc_tx_pause_frames_total", priority="3"): 77120,
        key("fabric_roce_nic_pfc_rx_pause_seconds_total", priority="3"): 8.412377,
        key("fabric_roce_nic_pfc_tx_pause_seconds_total", priority="3"): 2.21045,
        key("fabric_roce_nic_pfc_rx_pause_transitions_total", priority="3"): 95170,
        key("fabric_roce_rx_bytes_total"): 35234134930113,
        key("fabric_roce_tx_bytes_total"): 36757237102004,
        key("fabric_roce_rx_packets_total"): 8821767290,
        key("fabric_roce_tx_packets_total"): 9102390114,
        key("fabric_roce_rx_discards_total"): 31,
        key("fabric_roce_tx_discards_total"): 0,
        key("fabric_roce_nic_pause_storm_warning_events_total"): 1,
        key("fabric_roce_nic_pause_storm_error_events_total"): 0,
        key("fabric_roce_nic_rx_out_of_buffer_packets_total"): 57,
        key("fabric_roce_nic_rx_buffer_passed_threshold_events_total"): 412,
        key("fabric_roce_nic_rx_icrc_errors_total"): 0,  # RDMA hw counter rx_icrc_encapsulated
        key("fabric_roce_nic_link_down_events_total"): 3,
        key("fabric_roce_nic_rx_symbol_errors_total"): 4,
        key("fabric_roce_nic_rx_pcs_symbol_errors_total"): 0,
        key("fabric_roce_nic_rx_fec_corrected_errors_total"): 18271,
        key("fabric_roce_nic_rx_crc_errors_total"): 2,
        key("fabric_roce_ecn_marked_packets_total"): 1290455,
        key("fabric_roce_nic_cnp_sent_total"): 884312,
        key("fabric_roce_nic_cnp_handled_total"): 801223,
        key("fabric_roce_nic_cnp_ignored_total"): 3,
        key("fabric_roce_nic_out_of_sequence_packets_total"): 93,
        key("fabric_roce_nic_packet_sequence_errors_total"): 88,
        key("fabric_roce_nic_implied_nak_sequence_errors_total"): 7,
        key("fabric_roce_nic_local_ack_timeouts_total"): 12,
        key("fabric_roce_nic_adaptive_retransmits_total"): 19,
        key("fabric_roce_nic_adaptive_retransmit_timeouts_total"): 2,
        key("fabric_roce_nic_slow_restarts_total"): 1,
        key("fabric_roce_nic_slow_restart_cnps_total"): 4,
        key("fabric_roce_nic_slow_restart_transitions_total"): 1,
        key("fabric_roce_nic_duplicate_requests_total"): 41,
        key("fabric_roce_nic_rnr_nak_retry_errors_total"): 0,
        key("fabric_roce_nic_rdma_out_of_buffer_total"): 0,
        key("fabric_roce_nic_transport_retries_exceeded_total"): 0,
        # completion errors (req_cqe_error ... resp_remote_access_errors): all 0 in this dump
        **{key(f"fabric_roce_nic_{n}_total"): 0 for n in (
            "requester_cqe_errors", "requester_cqe_flush_errors", "responder_cqe_errors",
            "responder_cqe_flush_errors", "requester_remote_access_errors", "requester_remote_invalid_requests",
            "responder_local_length_errors", "responder_remote_access_errors")},
    }
    for p in range(8):
        prio = {0: (9872301, 113420, 0, 9901115, 113871), 3: (35198822745211, 8821651603, 31, 36720005497096, 9102273890),
                6: (1190, 11, 0, 0, 0)}.get(p, (0, 0, 0, 0, 0))
        for metric, value in zip(("rx_bytes", "rx_packets", "rx_discards", "tx_bytes", "tx_packets"), prio):
            expected[key(f"fabric_roce_nic_priority_{metric}_total", priority=str(p))] = value
    assert got == pytest.approx(expected)
    assert r.problems == []
    # the renderer keys lines on labels objects: immutable ones, the same objects on the next poll
    assert all(type(s.labels) is LabelSet for s in r.samples)
    again = poll(dump_text(fixture_text, "mlx5_0", "mlx5_core", "ens1f0np0", "hw_counters_mlx5.txt", "ethtool_mlx5_pfc3.txt"))
    assert [s.labels for s in again.samples] == [s.labels for s in r.samples]
    assert all(a.labels is b.labels for a, b in zip(again.samples, r.samples))
    # PFC is enabled on priority 3 only: no pause series for other priorities (absent, not 0)
    assert not [k for k in got if "pause" in k[0] and ("priority", "3") not in k[1] and "priority" in dict(k[1])]


def test_mlx5_pfc_off_reports_link_level_pause_and_no_pfc(fixture_text):
    got = as_dict(poll(dump_text(fixture_text, "mlx5_0", "mlx5_core", "ens1f0np0", None, "ethtool_mlx5_nopfc.txt")))
    assert not [k for k in got if k[0].startswith(("fabric_roce_pfc_", "fabric_roce_nic_pfc_"))]
    assert got[key("fabric_roce_nic_link_pause_rx_frames_total")] == 88
    assert got[key("fabric_roce_nic_link_pause_tx_frames_total")] == 0
    assert got[key("fabric_roce_nic_link_pause_rx_seconds_total")] == pytest.approx(0.00512)
    assert got[key("fabric_roce_rx_discards_total")] == 5


def test_bnxt_en_and_bnxt_re(fixture_text):
    base = {"device": "bnxt_re0", "netdev": "ens1f0np0"}
    got = as_dict(poll(dump_text(fixture_text, "bnxt_re0", "bnxt_en", "ens1f0np0", "hw_counters_bnxt_re.txt",
                                 "ethtool_bnxt.txt")))
    k = lambda name, **x: key(name, **base, **x)  # noqa: E731
    assert got[k("fabric_roce_pfc_rx_pause_frames_total", priority="3")] == 120455
    assert got[k("fabric_roce_pfc_tx_pause_frames_total", priority="3")] == 60117
    assert got[k("fabric_roce_pfc_rx_pause_frames_total", priority="0")] == 0
    assert got[k("fabric_roce_nic_pfc_rx_pause_seconds_total", priority="3")] == pytest.approx(3.310922)
    assert got[k("fabric_roce_nic_pfc_tx_pause_seconds_total", priority="3")] == pytest.approx(1.20441)
    assert got[k("fabric_roce_nic_continuous_pause_events_total")] == 1
    assert got[k("fabric_roce_nic_queue_rx_discards_total", queue="3")] == 14
    assert got[k("fabric_roce_rx_bytes_total")] == 17889322194410  # bnxt_en port rx_bytes
    assert got[k("fabric_roce_rx_packets_total")] == 4417390212
    assert got[k("fabric_roce_nic_link_pause_rx_frames_total")] == 0
    assert got[k("fabric_roce_nic_link_down_events_total")] == 2
    assert got[k("fabric_roce_nic_rx_crc_errors_total")] == 6
    assert got[k("fabric_roce_ecn_marked_packets_total")] == 412290
    assert got[k("fabric_roce_nic_cnp_sent_total")] == 301224
    assert got[k("fabric_roce_nic_cnp_received_total")] == 220133
    assert got[k("fabric_roce_nic_out_of_sequence_packets_total")] == 29
    assert got[k("fabric_roce_nic_packet_sequence_errors_total")] == 25
    assert got[k("fabric_roce_nic_local_ack_timeouts_total")] == 9
    assert got[k("fabric_roce_nic_duplicate_requests_total")] == 17
    assert not [x for x in got if x[0] == "fabric_roce_nic_cnp_handled_total"]  # bnxt_re has no such counter


def test_ice_and_irdma(fixture_text):
    base = {"device": "irdma0", "netdev": "ens1f0"}
    got = as_dict(poll(dump_text(fixture_text, "irdma0", "ice", "ens1f0", "hw_counters_irdma.txt", "ethtool_ice.txt")))
    k = lambda name, **x: key(name, **base, **x)  # noqa: E731
    assert got[k("fabric_roce_pfc_rx_pause_frames_total", priority="3")] == 11834
    assert got[k("fabric_roce_pfc_tx_pause_frames_total", priority="3")] == 9033
    assert got[k("fabric_roce_rx_bytes_total")] == 9012339004471
    assert got[k("fabric_roce_nic_rx_crc_errors_total")] == 1
    assert got[k("fabric_roce_ecn_marked_packets_total")] == 55120
    assert got[k("fabric_roce_nic_cnp_sent_total")] == 51004
    assert got[k("fabric_roce_nic_cnp_handled_total")] == 40112
    assert got[k("fabric_roce_nic_cnp_ignored_total")] == 0
    # ice's netdev rx_bytes is not the port's: only rx_bytes.nic maps
    assert len([x for x in got if x[0] == "fabric_roce_rx_bytes_total"]) == 1


def test_unmapped_counters_only_behind_the_option(fixture_text):
    text = dump_text(fixture_text, "mlx5_0", "mlx5_core", "ens1f0np0", "hw_counters_mlx5.txt", "ethtool_mlx5_pfc3.txt")
    assert not [s for s in poll(text).samples if s.name == "fabric_roce_nic_unmapped_value"]
    raw = {(s.labels["source"], s.labels["counter"]): s.value
           for s in poll(text, expose_unmapped=True).samples if s.name == "fabric_roce_nic_unmapped_value"}
    assert raw[("ethtool", "ch0_events")] == 1320977
    assert raw[("hw_counters", "rx_write_requests")] == 90122381
    assert ("ethtool", "rx_prio3_pause") not in raw  # mapped counters are not repeated raw
    assert ("ethtool", "rx_pause_ctrl_phy") in raw  # PFC frames may be in it: never read as link pause
    assert ("hw_counters", "lifespan") not in raw  # a setting, not a counter


def test_missing_counters_are_normal_and_missing_tools_are_partial(fixture_text):
    text = dump_text(fixture_text, "mlx5_0", "mlx5_core", "ens1f0np0", "hw_counters_mlx5.txt",
                     "sh: 1: ethtool: not found", ethtool_status=127)
    r = poll(text)
    assert any(s.name == "fabric_roce_nic_cnp_sent_total" for s in r.samples)
    assert r.problems == ["ethtool: command not found on host (install ethtool or set option ethtool: false)"]
    # nothing read at all: the host failed, with the reason
    with pytest.raises(CommandError, match="ethtool: command not found"):
        poll(dump_text(fixture_text, "mlx5_0", "mlx5_core", "ens1f0np0", None, "sh: 1: ethtool: not found",
                       ethtool_status=127))


def test_no_rdma_devices_is_a_failure():
    with pytest.raises(CommandError, match="no RDMA devices"):
        poll("@@fabric-roce 1 sysfs\n@@end\n")


def test_missing_configured_device_is_partial(fixture_text):
    text = dump_text(fixture_text, "mlx5_0", "mlx5_core", "ens1f0np0", "hw_counters_mlx5.txt", None,
                     extra="@@missing mlx5_9\n")
    r = poll(text, devices=("mlx5_0", "mlx5_9"))
    assert r.problems == ["RDMA devices not found on host: mlx5_9"]
    assert r.samples


def test_rdma_tool_mode(fixture_text):
    text = ("@@fabric-roce 1 rdma\n@@rdma_link 0\n" + fixture_text("rdma_link.txt") + "@@rdma_statistic 0\n"
            + fixture_text("rdma_statistic_mlx5.json") + "@@end\n")
    got = as_dict(poll(text))
    assert got[key("fabric_roce_nic_cnp_sent_total")] == 884312
    assert got[key("fabric_roce_nic_port_active")] == 1
    assert got[key("fabric_roce_nic_port_active", device="mlx5_1", netdev="ens2f0np0")] == 0
    assert got[key("fabric_roce_nic_rdma_out_of_buffer_total", device="mlx5_1", netdev="ens2f0np0")] == 2
    assert not [k for k in got if ("device", "mlx5_2") in k[1]]  # the InfiniBand port (it has a LID) is skipped


def test_every_nic_row_names_a_metric_of_this_collector_with_its_capture_labels():
    rows = rows_of("ethtool", "hw_counters")
    assert len(rows) >= 120
    for metric, row in rows:
        spec = CATALOG[metric]
        assert "roce_nic" in spec.sources, metric
        extra = tuple(label for key, (label, _rx) in CAPTURES.items() if "{" + key + "}" in row.name)
        assert spec.allows_labels(spec.name, ("fabric", "host", "device", "port", "netdev") + extra), row
        assert row.vendor and row.name in spec.origin and row.name in spec.help, row  # origin and HELP generated


@pytest.mark.parametrize("raw, problem", [
    ({"devices": ["mlx5_0", "bad name"]}, "devices[1]"),
    ({"hw_counters_from": "netlink"}, "hw_counters_from"),
    ({"expose_unmaped": True}, "expose_unmaped"),
])
def test_option_errors_name_the_key(raw, problem):
    errors = []
    RoceNicCollector.parse_options(raw, "targets[0].options", lambda path, msg: errors.append(f"{path}: {msg}"))
    assert any(problem in e for e in errors), errors


def test_rdma_tool_mode_reports_configured_devices_it_does_not_list(fixture_text):
    text = ("@@fabric-roce 1 rdma\n@@rdma_link 0\n" + fixture_text("rdma_link.json") + "@@rdma_statistic 0\n"
            + fixture_text("rdma_statistic_mlx5.txt") + "@@end\n")
    r = poll(text, devices=("mlx5_1", "mlx5_5"))
    assert r.problems == ["RDMA devices not found on host: mlx5_5"]
    assert {s.labels["device"] for s in r.samples} == {"mlx5_1"}


def test_rdma_tool_missing_is_a_clear_failure():
    text = "@@fabric-roce 1 rdma\n@@rdma_link 127\nsh: 1: rdma: not found\n@@rdma_statistic 127\nsh: 1: rdma: not found\n@@end\n"
    with pytest.raises(CommandError, match="rdma: command not found"):
        poll(text)


def test_docs_mapping_tables_are_generated_from_the_rules():
    assert mapping_table_markdown() in DOC, "regenerate the tables in docs/collectors/roce_nic.md " \
        "from fabric_exporter.collectors.roce_nic.docs.mapping_table_markdown()"


def test_vendor_counters_from_the_driver_documentation():
    """Names from each driver's counter documentation, mapped onto existing meanings (one port each)."""
    bnxt = {"rx_stat_discard": 5, "tx_stat_discard": 6, "rx_total_discard_pkts": 7, "pfc_pri3_rx_transitions": 8,
            "pfc_pri3_tx_transitions": 9, "rx_pcs_symbol_err": 10, "rx_fec_corrected_blocks": 11,
            "rx_fec_uncorrectable_blocks": 12}
    from fabric_exporter.collectors.roce_nic import ETHTOOL_MAPPER, HW_MAPPER
    got = {(s.name, s.labels.get("priority")): s.value for s in ETHTOOL_MAPPER.map(bnxt, "bnxt", LabelSet({}), None)}
    assert got == {("fabric_roce_rx_discards_total", None): 5, ("fabric_roce_tx_discards_total", None): 6,
                   ("fabric_roce_nic_rx_out_of_buffer_packets_total", None): 7,
                   ("fabric_roce_nic_pfc_rx_pause_transitions_total", "3"): 8,
                   ("fabric_roce_nic_pfc_tx_pause_transitions_total", "3"): 9,
                   ("fabric_roce_nic_rx_pcs_symbol_errors_total", None): 10,
                   ("fabric_roce_nic_rx_fec_corrected_errors_total", None): 11,
                   ("fabric_roce_nic_rx_fec_uncorrectable_errors_total", None): 12}
    # bits where the driver has them: rx_corrected_bits shadows the block count
    got = {s.name: s.value for s in ETHTOOL_MAPPER.map({"rx_corrected_bits": 99, "rx_fec_corrected_blocks": 11},
                                                      "bnxt", LabelSet({}), None)}
    assert got == {"fabric_roce_nic_rx_fec_corrected_errors_total": 99}
    # bnxt-only names mean something else elsewhere: not mapped for another driver
    assert ETHTOOL_MAPPER.map({"rx_stat_discard": 5}, "mlx5", LabelSet({}), None) == []
    ice = {"rx_dropped.nic": 3, "rx_dropped": 999, "tx_dropped_link_down.nic": 4, "port-rx-xoff_prio-3_events": 5,
           "port-rx_bytes": 6}
    got = {(s.name, s.labels.get("priority")): s.value for s in ETHTOOL_MAPPER.map(ice, "intel", LabelSet({}), None)}
    assert got == {("fabric_roce_rx_discards_total", None): 3, ("fabric_roce_tx_discards_total", None): 4,
                   ("fabric_roce_pfc_rx_pause_frames_total", "3"): 5, ("fabric_roce_rx_bytes_total", None): 6}
    mlx5 = {"rx_global_pause_transition": 7, "rx_pause_ctrl_phy": 8, "tx_pause_ctrl_phy": 9}
    got = {s.name: s.value for s in ETHTOOL_MAPPER.map(mlx5, "mlx5", LabelSet({}), None)}
    assert got == {"fabric_roce_nic_link_pause_rx_transitions_total": 7}  # pause_ctrl_phy counts PFC too
    assert {s.name: s.value for s in HW_MAPPER.map({"rx_icrc_encapsulated": 2}, "mlx5", LabelSet({}), None)} == {
        "fabric_roce_nic_rx_icrc_errors_total": 2}


def test_rdma_tool_mode_with_older_iproute2_link_output():
    text = ("@@fabric-roce 1 rdma\n@@rdma_link 0\n0/1: mlx5_0/1: state ACTIVE physical_state LINK_UP\n"
            "@@rdma_statistic 0\nlink mlx5_0/1 rx_write_requests 0 out_of_buffer 135 np_cnp_sent 4\n@@end\n")
    r = poll(text)
    got = {s.name: s.value for s in r.samples}
    assert got["fabric_roce_nic_rdma_out_of_buffer_total"] == 135 and got["fabric_roce_nic_port_active"] == 1
    assert {s.labels["netdev"] for s in r.samples} == {""}  # no netdev printed: none invented
    assert r.problems == [] and r.skipped == []

# -- the edges the mutation run (scripts/mutation roce_nic) found untested (issue 16) ----------------

def mlx5_0_dump(driver: str, ethtool: str = "", hw: str = "") -> str:
    parts = ["@@fabric-roce 1 sysfs", f"@@device mlx5_0 {driver}", "@@port mlx5_0 1 eth0 Ethernet 4: ACTIVE"]
    if hw:
        parts += ["@@hw_counters mlx5_0 1", hw.rstrip("\n")]
    if ethtool:
        parts += ["@@ethtool eth0 0", "NIC statistics:", ethtool.rstrip("\n")]
    return "\n".join(parts) + "\n@@end\n"


def values(text: str, **options) -> dict:
    result = poll(text, **options)
    return {(s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k not in BASE))): s.value
            for s in result.samples if s.labels.get("device") == "mlx5_0"}


@pytest.mark.parametrize("order", [1, -1])
def test_a_preferred_ethtool_counter_wins_over_its_fallback_in_any_order(order):
    lines = ["  rx_prio3_pause: 100", "  rx_pfc_ena_frames_pri3: 999", "  rx_bytes_phy: 5", "  rx_bytes.nic: 777"][::order]
    v = values(mlx5_0_dump("mlx5_core", "\n".join(lines)))
    assert v[("fabric_roce_pfc_rx_pause_frames_total", (("priority", "3"),))] == 100
    assert v[("fabric_roce_rx_bytes_total", ())] == 5


def test_a_fallback_counter_is_used_when_the_preferred_one_is_absent():
    v = values(mlx5_0_dump("ice", "  rx_pfc_ena_frames_pri3: 999\n  rx_priority_5_xoff.nic: 4\n  rx_bytes.nic: 777\n"))
    assert v[("fabric_roce_pfc_rx_pause_frames_total", (("priority", "3"),))] == 999
    assert v[("fabric_roce_pfc_rx_pause_frames_total", (("priority", "5"),))] == 4
    assert v[("fabric_roce_rx_bytes_total", ())] == 777


@pytest.mark.parametrize("order", [1, -1])
def test_a_preferred_hw_counter_wins_over_its_fallback(order):
    hw = ["np_ecn_marked_roce_packets:11", "rx_ecn_marked_pkts:22", "np_cnp_sent:3", "tx_cnp_pkts:44"][::order]
    v = values(mlx5_0_dump("mlx5_core", hw="\n".join(hw)))
    assert v[("fabric_roce_ecn_marked_packets_total", ())] == 11
    assert v[("fabric_roce_nic_cnp_sent_total", ())] == 3


def test_driver_families_limit_a_rule():
    eth = "  rx_bytes: 50\n  rx_pause_frames: 6\n  link_down_events: 2\n"
    mlx = values(mlx5_0_dump("mlx5_core", eth))
    bnxt = values(mlx5_0_dump("bnxt_en", eth))
    assert ("fabric_roce_rx_bytes_total", ()) not in mlx  # mlx5's rx_bytes is the netdev's software count
    assert bnxt[("fabric_roce_rx_bytes_total", ())] == 50
    assert bnxt[("fabric_roce_nic_link_pause_rx_frames_total", ())] == 6
    assert bnxt[("fabric_roce_nic_link_down_events_total", ())] == 2


def test_microsecond_counters_are_scaled_to_seconds_and_labels_extracted():
    v = values(mlx5_0_dump("mlx5_core", "  rx_prio3_pause_duration: 2500000\n  rx_global_pause_duration: 1000000\n"
                                 "  rx_discard_packets_cos12: 9\n  rx_prio7_bytes: 0\n"))
    assert v[("fabric_roce_nic_pfc_rx_pause_seconds_total", (("priority", "3"),))] == pytest.approx(2.5)
    assert v[("fabric_roce_nic_link_pause_rx_seconds_total", ())] == pytest.approx(1.0)
    assert v[("fabric_roce_nic_queue_rx_discards_total", (("queue", "12"),))] == 9
    assert v[("fabric_roce_nic_priority_rx_bytes_total", (("priority", "7"),))] == 0  # a counter of 0 is published


def test_patterns_match_whole_names_only():
    v = values(mlx5_0_dump("mlx5_core", "  rx_prio8_pause: 1\n  rx_prio3_pause_x: 2\n  xrx_prio3_pause: 3\n"
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
    from fabric_exporter.collectors.roce_nic import REMOTE_SCRIPT
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
