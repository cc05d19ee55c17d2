"""Issue 26: NIC counters that were parsed but not published, decided from each driver's documentation.

Each test reads a real capture from tests/fixtures/real/ (provenance in its README); where the capture's
values are all zero, one value is changed in a copy so a counter mapped to the wrong series would show.
"""

from __future__ import annotations

import re

from fabric_exporter.collectors.roce_nic import RoceNicOptions, result_from_dump
from fabric_exporter.parsers.rdma import parse_host_dump
from fabric_exporter.samples import LabelSet
from fabric_exporter.serving.store import build_snapshot
from tests.harness.captures import real_capture as text

BNXT = "ethtool_ethq_bnxt_en.txt"


def poll_ethtool(body: str, driver: str = "bnxt_en", **options):
    dump = ("@@fabric-roce 1 sysfs\n@@device bnxt_re0 " + driver + "\n@@port bnxt_re0 1 eth0 Ethernet 4: ACTIVE\n"
            "@@ethtool eth0 0\n" + body.rstrip("\n") + "\n@@end\n")
    result = result_from_dump(parse_host_dump(dump), "gpu-b", RoceNicOptions(**options))
    build_snapshot("lab", result.samples, 60.0)  # every series is a catalog metric with its labels
    return result.samples


def series(samples, metric: str) -> dict[tuple, float]:
    return {tuple(sorted((k, v) for k, v in s.labels.items() if k not in ("host", "device", "port", "netdev"))):
            s.value for s in samples if s.name == metric}


def with_value(body: str, counter: str, value: int) -> str:
    changed, n = re.subn(rf"^(\s*{re.escape(counter)}): \d+$", rf"\g<1>: {value}", body, flags=re.M)
    assert n == 1, counter
    return changed


def test_bnxt_cos_discards_are_labelled_by_queue_not_priority():
    body = with_value(with_value(text(BNXT), "rx_discard_bytes_cos5", 9000), "rx_discard_packets_cos5", 6)
    samples = poll_ethtool(body)
    got = series(samples, "fabric_roce_nic_queue_rx_discard_bytes_total")
    assert got == {(("queue", str(q)),): (9000 if q == 5 else 0) for q in range(8)}
    assert series(samples, "fabric_roce_nic_queue_rx_discards_total")[(("queue", "5"),)] == 6
    # a CoS queue index is not a priority: nothing from *_cos{q} lands in a priority-labelled series
    assert not any("priority" in s.labels for s in samples if "discard" in s.name)


def test_bnxt_per_priority_traffic_is_not_published_because_it_repeats_the_queue_count():
    samples = poll_ethtool(with_value(text(BNXT), "rx_bytes_pri3", 123))
    assert series(samples, "fabric_roce_nic_priority_rx_bytes_total") == {}
    unmapped = poll_ethtool(with_value(text(BNXT), "rx_bytes_pri3", 123), expose_unmapped=True)
    assert [s.value for s in unmapped if s.labels.get("counter") == "rx_bytes_pri3"] == [123]


def test_bnxt_pause_storm_indicators_each_have_their_own_series():
    body = text(BNXT)
    for counter, value in (("continuous_pause_events", 11), ("resume_pause_events", 12),
                           ("continuous_roce_pause_events", 13), ("resume_roce_pause_events", 14)):
        body = with_value(body, counter, value)
    samples = poll_ethtool(body)
    got = {name: series(samples, name)[()] for name in (
        "fabric_roce_nic_port_continuous_pause_events_total", "fabric_roce_nic_port_continuous_pause_resume_events_total",
        "fabric_roce_nic_continuous_pause_events_total", "fabric_roce_nic_continuous_pause_resume_events_total")}
    assert got == {"fabric_roce_nic_port_continuous_pause_events_total": 11,
                   "fabric_roce_nic_port_continuous_pause_resume_events_total": 12,
                   "fabric_roce_nic_continuous_pause_events_total": 13,
                   "fabric_roce_nic_continuous_pause_resume_events_total": 14}


def test_bnxt_buffer_threshold_name_is_bnxt_only():
    assert series(poll_ethtool(text(BNXT)), "fabric_roce_nic_rx_buffer_passed_threshold_events_total") == {(): 417}
    # another driver printing the same name is not trusted with bnxt's meaning
    assert series(poll_ethtool(text(BNXT), driver="i40e"),
                  "fabric_roce_nic_rx_buffer_passed_threshold_events_total") == {}


def test_mlx5_completion_errors_from_rdma_statistic_text():
    """The OCI captures (rdma link + rdma statistic) read through the rdma tool path: all eight series present."""
    line = text("rdma_statistic_oci_mlx5_2.txt").replace("resp_cqe_error 0", "resp_cqe_error 5")
    link = text("rdma_link_oci_bm_optimized3.txt")
    dump = f"@@fabric-roce 1 rdma\n@@rdma_link 0\n{link}@@rdma_statistic 0\n{line}@@end\n"
    result = result_from_dump(parse_host_dump(dump), "gpu-o", RoceNicOptions(hw_counters_from="rdma"))
    samples = [s for s in result.samples if s.labels["device"] == "mlx5_2"]
    names = ("requester_cqe_errors", "requester_cqe_flush_errors", "responder_cqe_errors",
             "responder_cqe_flush_errors", "requester_remote_access_errors", "requester_remote_invalid_requests",
             "responder_local_length_errors", "responder_remote_access_errors")
    got = {n: series(samples, f"fabric_roce_nic_{n}_total").get(()) for n in names}
    assert got == {n: (5 if n == "responder_cqe_errors" else 0) for n in names}


def test_bnxt_re_completion_errors_under_both_generations_of_names():
    """Broadcom renamed bnxt_re's counters to the mlx5 names ("RDMA/bnxt_re: RoCE related hardware counters
    update", linux-rdma 2025-08-14): newer kernels print req_cqe_error etc., older ones the names on the left."""
    from fabric_exporter.collectors.roce_nic import HW_MAPPER
    older = {"remote_access_err": 3, "remote_invalid_req_err": 4, "res_length_mismatch": 5, "rnr_naks_rcvd": 6,
             "missing_resp": 7, "bad_resp_err": 8}
    got = {s.name: s.value for s in HW_MAPPER.map(older, "bnxt", LabelSet({}), None)}
    assert got == {"fabric_roce_nic_requester_remote_access_errors_total": 3,
                   "fabric_roce_nic_requester_remote_invalid_requests_total": 4,
                   "fabric_roce_nic_responder_local_length_errors_total": 5,
                   "fabric_roce_nic_rnr_nak_retry_errors_total": 6,
                   "fabric_roce_nic_implied_nak_sequence_errors_total": 7}  # bad_resp_err: one cause of many
    newer = {"req_cqe_error": 9, "resp_cqe_error": 10, "resp_remote_access_errors": 11,
             "req_remote_access_errors": 12, "remote_access_err": 99}
    got = {s.name: s.value for s in HW_MAPPER.map(newer, "bnxt", LabelSet({}), None)}
    assert got == {"fabric_roce_nic_requester_cqe_errors_total": 9, "fabric_roce_nic_responder_cqe_errors_total": 10,
                   "fabric_roce_nic_responder_remote_access_errors_total": 11,
                   "fabric_roce_nic_requester_remote_access_errors_total": 12}  # the newer name wins
