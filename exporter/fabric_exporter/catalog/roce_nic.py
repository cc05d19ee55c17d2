"""NIC-only RoCE metrics (``roce_nic`` collector: ``ethtool -S`` and RDMA hardware counters).

Meanings a switch shares (PFC pause frames per priority, port bytes/packets/discards, ECN-marked
packets) use the names in ``roce.py``. Everything here is seen only on a host's NIC port.

Each metric's raw sources are declared here once, as ``RawCounter`` rows (source ``ethtool`` or
``hw_counters``, vendor, scale, driver families): the collector's lookup tables, the host-side filter,
``origin``, the raw-name part of HELP and the per-vendor tables of docs/collectors/roce_nic.md are
all built from them. Within one metric the first row whose counter a port prints wins, so a
preferred counter shadows a fallback; ``families`` limits a row to drivers where the name means what
the metric says (bnxt_en's rx_bytes is the port's; mlx5's is the netdev's software count, so mlx5
uses rx_bytes_phy). Time counters the drivers keep in microseconds are published in seconds. Values
are the drivers' raw monotonic counters: a driver reload resets them and Prometheus' ``rate()``
handles the reset.

Sources: each driver's counter documentation -- mlx5: kernel Documentation/networking/device_drivers/
ethernet/mellanox/mlx5/counters.rst; bnxt_en: bnxt_ethtool.c string tables (bnxt_port_stats_arr,
bnxt_port_stats_ext_arr, bnxt_ring_err_stats_arr) and Broadcom's NetXtreme-E tuning guide; ice:
Documentation/networking/device_drivers/ethernet/intel/ice.rst and ice_ethtool.c (in-tree names) /
Intel's out-of-tree ice driver (the "port-..." names); RDMA: mlx5 counters.rst (RDMA section),
bnxt_re hw_counters.c, irdma hw stats. Every counter that answers congestion, loss, errors or link
stability and has a catalog metric with the same meaning is mapped.
"""

from .labels import NIC_PORT, NIC_PORT_PRIORITY
from .spec import MICROSECONDS, NIC_SOURCES, MetricSpec, RawCounter

NIC = "roce_nic"
ETHTOOL, HW_COUNTERS = NIC_SOURCES  # the two sources of the collector's dump
US = MICROSECONDS  # microseconds -> seconds
BNXT = frozenset({"bnxt"})  # driver families (collectors/roce_nic/mapping.py driver_family)

# bnxt_en counts some drops per CoS queue (rx_discard_packets_cos{q}), not per priority.
NIC_PORT_QUEUE = NIC_PORT + ("queue",)
# A counter the catalog does not know, exposed only when the ``expose_unmapped`` option is on.
NIC_PORT_RAW = NIC_PORT + ("source", "counter")
# Port identity facts carried as labels.
NIC_PORT_INFO = NIC_PORT + ("driver",)


def _rows(source: str, vendor: str, names: tuple[str, ...], scale: float, families: frozenset[str] | None
          ) -> tuple[RawCounter, ...]:
    return tuple(RawCounter(n, source, scale=scale, vendor=vendor, families=families) for n in names)


# One helper per (source, vendor): ``mlx5("rx_prio{p}_pause")``; ``{p}`` = priority 0-7, ``{q}`` = queue.
def mlx5(*names: str, scale: float = 1.0, families: frozenset[str] | None = None) -> tuple[RawCounter, ...]:
    return _rows(ETHTOOL, "mlx5", names, scale, families)


def bnxt_en(*names: str, scale: float = 1.0, families: frozenset[str] | None = None) -> tuple[RawCounter, ...]:
    return _rows(ETHTOOL, "bnxt_en", names, scale, families)


def ice(*names: str, scale: float = 1.0, families: frozenset[str] | None = None) -> tuple[RawCounter, ...]:
    return _rows(ETHTOOL, "ice", names, scale, families)


def mlx5_rdma(*names: str) -> tuple[RawCounter, ...]:
    return _rows(HW_COUNTERS, "mlx5", names, 1.0, None)


def bnxt_re(*names: str) -> tuple[RawCounter, ...]:
    return _rows(HW_COUNTERS, "bnxt_re", names, 1.0, None)


def irdma(*names: str) -> tuple[RawCounter, ...]:
    return _rows(HW_COUNTERS, "irdma", names, 1.0, None)


def nic_help(help_text: str, raw: tuple[RawCounter, ...]) -> str:
    """``help_text``, which must name its ``{raw}`` place (the spec fills it from the rows: spec.raw_text)."""
    if "{raw}" not in help_text or not raw:
        raise ValueError(f"NIC help text names no {{raw}} place: {help_text!r}")
    return help_text


def _c(name: str, unit: str, help_text: str, labels: tuple, raw: tuple[RawCounter, ...]) -> MetricSpec:
    return MetricSpec(name, "counter", unit, nic_help(help_text, raw), (labels,), (NIC,), raw=raw)


METRICS = [
    # --- the port itself ------------------------------------------------------------------------
    MetricSpec("fabric_roce_nic_port_info", "info", "",
               "RDMA port identity: the kernel driver bound to the device (sysfs device/driver); value 1.",
               (NIC_PORT_INFO,), (NIC,), ("/sys/class/infiniband/<dev>/device/driver",)),
    MetricSpec("fabric_roce_nic_port_active", "gauge", "",
               "1 if the RDMA port state is ACTIVE, else 0 (sysfs ports/<port>/state, rdma link show state).",
               (NIC_PORT,), (NIC,), ("state",)),
    # --- PFC, per priority ----------------------------------------------------------------------
    _c("fabric_roce_nic_pfc_rx_pause_seconds_total", "seconds",
       "Time the port was paused by received PFC frames per priority ({raw}). rate() is the fraction of time paused.",
       NIC_PORT_PRIORITY, (*mlx5("rx_prio{p}_pause_duration", scale=US), *bnxt_en("pfc_pri{p}_rx_duration_us", scale=US))),
    _c("fabric_roce_nic_pfc_tx_pause_seconds_total", "seconds",
       "Time the port asked its peer to pause per priority ({raw}).",
       NIC_PORT_PRIORITY, (*mlx5("tx_prio{p}_pause_duration", scale=US), *bnxt_en("pfc_pri{p}_tx_duration_us", scale=US))),
    _c("fabric_roce_nic_pfc_rx_pause_transitions_total", "transitions",
       "Pause-state transitions of received PFC per priority ({raw}; mlx5 counts XOFF to XON, bnxt_en both "
       "directions, so about twice as many); long pause time with few transitions is a storm, not bursts.",
       NIC_PORT_PRIORITY, (*mlx5("rx_prio{p}_pause_transition"), *bnxt_en("pfc_pri{p}_rx_transitions"))),
    _c("fabric_roce_nic_pfc_tx_pause_transitions_total", "transitions",
       "XON/XOFF transitions of the PFC the port sent per priority, both directions ({raw}).",
       NIC_PORT_PRIORITY, bnxt_en("pfc_pri{p}_tx_transitions")),
    _c("fabric_roce_nic_pause_storm_warning_events_total", "events",
       "The NIC sent pause frames for longer than the storm warning threshold ({raw}).",
       NIC_PORT, mlx5("tx_pause_storm_warning_events")),
    _c("fabric_roce_nic_pause_storm_error_events_total", "events",
       "The NIC's stall watchdog stopped sending pause frames after a storm ({raw}).",
       NIC_PORT, mlx5("tx_pause_storm_error_events")),
    # bnxt_en pause-storm indicators (Broadcom's descriptions: "num times [roce] pause events" and
    # "... pause events resumes"): the RoCE class's and any traffic's, each with its resume count.
    _c("fabric_roce_nic_continuous_pause_events_total", "events",
       "The port was paused continuously on the RoCE priority past the NIC's threshold ({raw}).",
       NIC_PORT, bnxt_en("continuous_roce_pause_events")),
    _c("fabric_roce_nic_continuous_pause_resume_events_total", "events",
       "The RoCE priority resumed after a continuous pause ({raw}): fewer resumes than continuous-pause events "
       "means the port is still stuck.",
       NIC_PORT, bnxt_en("resume_roce_pause_events")),
    _c("fabric_roce_nic_port_continuous_pause_events_total", "events",
       "The port was paused continuously past the NIC's threshold, any traffic class, not only RoCE's ({raw}).",
       NIC_PORT, bnxt_en("continuous_pause_events")),
    _c("fabric_roce_nic_port_continuous_pause_resume_events_total", "events",
       "The port resumed after a continuous pause, any traffic class ({raw}).",
       NIC_PORT, bnxt_en("resume_pause_events")),
    # --- per-priority traffic -------------------------------------------------------------------
    _c("fabric_roce_nic_priority_rx_bytes_total", "bytes",
       "Bytes received per priority ({raw}).", NIC_PORT_PRIORITY, mlx5("rx_prio{p}_bytes")),
    _c("fabric_roce_nic_priority_tx_bytes_total", "bytes",
       "Bytes sent per priority ({raw}).", NIC_PORT_PRIORITY, mlx5("tx_prio{p}_bytes")),
    _c("fabric_roce_nic_priority_rx_packets_total", "packets",
       "Packets received per priority ({raw}).", NIC_PORT_PRIORITY, mlx5("rx_prio{p}_packets")),
    _c("fabric_roce_nic_priority_tx_packets_total", "packets",
       "Packets sent per priority ({raw}).", NIC_PORT_PRIORITY, mlx5("tx_prio{p}_packets")),
    _c("fabric_roce_nic_priority_rx_discards_total", "packets",
       "Received packets dropped per priority for lack of port buffer ({raw}).",
       NIC_PORT_PRIORITY, mlx5("rx_prio{p}_discards")),
    # bnxt_en drops per CoS queue: the index is a hardware queue (several priorities may share one),
    # not a priority, and the driver prints no per-priority drop count -- so label queue. (Its
    # "*_pri{p}" traffic counters are not mapped: each is the whole count of the priority's CoS
    # queue, so priorities sharing a queue repeat one value and a sum over priorities overcounts.)
    _c("fabric_roce_nic_queue_rx_discards_total", "packets",
       "Received packets dropped per CoS queue ({raw}; queue = q, a hardware queue that one or more priorities "
       "map to, not a priority).",
       NIC_PORT_QUEUE, bnxt_en("rx_discard_packets_cos{q}")),
    _c("fabric_roce_nic_queue_rx_discard_bytes_total", "bytes",
       "Bytes of received packets dropped per CoS queue ({raw}; queue = q, a hardware queue, not a priority).",
       NIC_PORT_QUEUE, bnxt_en("rx_discard_bytes_cos{q}")),
    # --- drops by cause -------------------------------------------------------------------------
    # bnxt_en: Rx ring drops summed over rings (no buffer posted by the host); renamed in 6.x kernels
    _c("fabric_roce_nic_rx_out_of_buffer_packets_total", "packets",
       "Packets dropped because the host's receive queue had no buffer posted ({raw}; bnxt_en sums its rings' "
       "drops): a host-side drop, not the fabric's.",
       NIC_PORT, (*mlx5("rx_out_of_buffer"), *bnxt_en("rx_total_discard_pkts", "rx_total_ring_discards",
                                                      families=BNXT))),
    # bnxt_en: "num of events port buffer was over 85%" (Broadcom), the same threshold as mlx5's default
    _c("fabric_roce_nic_rx_buffer_passed_threshold_events_total", "events",
       "The port's receive buffer passed its fill threshold, 85% by default ({raw}): early warning of drops or "
       "pause.",
       NIC_PORT, (*mlx5("rx_buffer_passed_thres_phy"), *bnxt_en("rx_buffer_passed_threshold", families=BNXT))),
    _c("fabric_roce_nic_rdma_out_of_buffer_total", "packets",
       "RDMA packets dropped because the receive queue had no WQE posted (RDMA hw counters {raw}).",
       NIC_PORT, (*mlx5_rdma("out_of_buffer"), *bnxt_re("rx_out_of_buffer", "res_oob_drop_count"))),
    # --- link-level (802.3x) pause --------------------------------------------------------------
    # mlx5: not rx/tx_pause_ctrl_phy -- published captures show it rising with PFC on and global
    # pause off, so it is PFC + link pause together; no catalog metric means that (docs say why).
    _c("fabric_roce_nic_link_pause_rx_frames_total", "frames",
       "Link-level 802.3x pause frames received ({raw}): any rise on a RoCE port means a misconfigured peer.",
       NIC_PORT, (*mlx5("rx_global_pause"), *ice("link_xoff_rx.nic", "port-rx-xoff_events"),
                  *bnxt_en("rx_pause_frames", families=BNXT))),
    _c("fabric_roce_nic_link_pause_tx_frames_total", "frames",
       "Link-level 802.3x pause frames sent ({raw}).",
       NIC_PORT, (*mlx5("tx_global_pause"), *ice("link_xoff_tx.nic", "port-tx-xoff_events"),
                  *bnxt_en("tx_pause_frames", families=BNXT))),
    _c("fabric_roce_nic_link_pause_rx_seconds_total", "seconds",
       "Time paused by received link-level pause frames ({raw}).",
       NIC_PORT, mlx5("rx_global_pause_duration", scale=US)),
    _c("fabric_roce_nic_link_pause_tx_seconds_total", "seconds",
       "Time the port paused its peer with link-level pause ({raw}).",
       NIC_PORT, mlx5("tx_global_pause_duration", scale=US)),
    _c("fabric_roce_nic_link_pause_rx_transitions_total", "transitions",
       "XOFF to XON transitions of received link-level pause ({raw}).",
       NIC_PORT, mlx5("rx_global_pause_transition")),
    # --- link quality ---------------------------------------------------------------------------
    _c("fabric_roce_nic_link_down_events_total", "events",
       "Times the physical link went down ({raw}).",
       NIC_PORT, (*mlx5("link_down_events_phy"), *bnxt_en("link_down_events", families=BNXT))),
    _c("fabric_roce_nic_rx_symbol_errors_total", "packets",
       "Received packets dropped for physical coding (symbol) errors ({raw}).",
       NIC_PORT, mlx5("rx_symbol_err_phy")),
    _c("fabric_roce_nic_rx_pcs_symbol_errors_total", "errors",
       "PCS symbol errors after FEC ({raw}): bit errors FEC could not fix.",
       NIC_PORT, (*mlx5("rx_pcs_symbol_err_phy"), *bnxt_en("rx_pcs_symbol_err", families=BNXT))),
    _c("fabric_roce_nic_rx_fec_corrected_errors_total", "errors",
       "Errors corrected by FEC ({raw}): one per bit, or one per FEC block from older bnxt_en drivers that count "
       "only blocks (the last name); a rising rate is a degrading link.",
       NIC_PORT, (*mlx5("rx_corrected_bits_phy"), *bnxt_en("rx_corrected_bits", "rx_fec_corrected_blocks",
                                                           families=BNXT))),
    _c("fabric_roce_nic_rx_fec_uncorrectable_errors_total", "blocks",
       "FEC blocks the receiver could not correct ({raw}): each loses the frame in it.",
       NIC_PORT, bnxt_en("rx_fec_uncorrectable_blocks", families=BNXT)),
    _c("fabric_roce_nic_rx_crc_errors_total", "packets",
       "Received packets with a bad FCS ({raw}).",
       NIC_PORT, (*mlx5("rx_crc_errors_phy"), *ice("rx_crc_errors.nic", "port-rx-crc_errors"),
                  *bnxt_en("rx_fcs_err_frames", families=BNXT))),
    _c("fabric_roce_nic_rx_icrc_errors_total", "packets",
       "RoCE packets received with a bad invariant CRC (RDMA hw counter {raw}): corruption the Ethernet FCS did "
       "not catch, or a mangling middlebox.",
       NIC_PORT, mlx5_rdma("rx_icrc_encapsulated")),
    # --- congestion control (DCQCN) -------------------------------------------------------------
    # bnxt_re renamed tx_cnp_pkts/rx_cnp_pkts/rx_ecn_marked_pkts to np_cnp_pkts/rp_cnp_handled/
    # np_ecn_marked_roce_packets in later kernels: both generations are listed.
    _c("fabric_roce_nic_cnp_sent_total", "packets",
       "Congestion notification packets sent back by this receiver ({raw}).",
       NIC_PORT, (*mlx5_rdma("np_cnp_sent"), *bnxt_re("np_cnp_pkts", "tx_cnp_pkts"), *irdma("cnpSent"))),
    _c("fabric_roce_nic_cnp_received_total", "packets",
       "Congestion notification packets received (older {raw}; mlx5 and irdma count them as handled + ignored "
       "instead).",
       NIC_PORT, bnxt_re("rx_cnp_pkts")),
    _c("fabric_roce_nic_cnp_handled_total", "packets",
       "CNPs on which this sender reduced its rate ({raw}; newer bnxt_re prints the mlx5 name).",
       NIC_PORT, (*mlx5_rdma("rp_cnp_handled"), *irdma("cnpHandled"))),
    _c("fabric_roce_nic_cnp_ignored_total", "packets",
       "CNPs this sender received and did not act on ({raw}): usually congestion control or priority "
       "misconfiguration.",
       NIC_PORT, (*mlx5_rdma("rp_cnp_ignored"), *irdma("cnpIgnored"))),
    # --- transport errors and retransmission ----------------------------------------------------
    _c("fabric_roce_nic_out_of_sequence_packets_total", "packets",
       "Received packets dropped as out of sequence ({raw}): loss or reordering upstream.",
       NIC_PORT, (*mlx5_rdma("out_of_sequence"), *bnxt_re("oos_drop_count"))),
    _c("fabric_roce_nic_packet_sequence_errors_total", "packets",
       "Sequence-error NAKs received by the requester ({raw}): go-back-N retransmits.",
       NIC_PORT, (*mlx5_rdma("packet_seq_err"), *bnxt_re("seq_err_naks_rcvd"))),
    _c("fabric_roce_nic_implied_nak_sequence_errors_total", "events",
       "Implied NAK sequence errors: a read response or ACK skipped PSNs ({raw}; newer bnxt_re prints the mlx5 "
       "name).",
       NIC_PORT, (*mlx5_rdma("implied_nak_seq_err"), *bnxt_re("missing_resp"))),
    _c("fabric_roce_nic_local_ack_timeouts_total", "events",
       "Retransmissions after the local ACK timer expired ({raw}): tail-latency spikes.",
       NIC_PORT, (*mlx5_rdma("local_ack_timeout_err"), *bnxt_re("to_retransmits"))),
    _c("fabric_roce_nic_adaptive_retransmits_total", "events",
       "Adaptive retransmissions ({raw}).", NIC_PORT, mlx5_rdma("roce_adp_retrans")),
    _c("fabric_roce_nic_adaptive_retransmit_timeouts_total", "events",
       "Adaptive retransmission timeouts ({raw}).", NIC_PORT, mlx5_rdma("roce_adp_retrans_to")),
    _c("fabric_roce_nic_slow_restarts_total", "events",
       "Slow-restart events of the adaptive retransmission logic ({raw}).",
       NIC_PORT, mlx5_rdma("roce_slow_restart")),
    _c("fabric_roce_nic_slow_restart_cnps_total", "packets",
       "CNPs sent during slow restart ({raw}).", NIC_PORT, mlx5_rdma("roce_slow_restart_cnps")),
    _c("fabric_roce_nic_slow_restart_transitions_total", "transitions",
       "Transitions into slow restart ({raw}).", NIC_PORT, mlx5_rdma("roce_slow_restart_trans")),
    _c("fabric_roce_nic_duplicate_requests_total", "packets",
       "Duplicate requests received: the peer retransmitted ({raw}).",
       NIC_PORT, (*mlx5_rdma("duplicate_request"), *bnxt_re("dup_req", "dup_reqs"))),
    _c("fabric_roce_nic_rnr_nak_retry_errors_total", "events",
       "Receiver-not-ready NAKs the requester received while its retry limit was not yet exceeded: the peer had "
       "no receive posted ({raw}; newer bnxt_re prints the mlx5 name).",
       NIC_PORT, (*mlx5_rdma("rnr_nak_retry_err"), *bnxt_re("rnr_naks_rcvd"))),
    _c("fabric_roce_nic_transport_retries_exceeded_total", "events",
       "Requests whose transport retries ran out, so the QP went to error ({raw}).",
       NIC_PORT, (*mlx5_rdma("req_transport_retries_exceeded"), *bnxt_re("max_retry_exceeded"))),
    # --- RDMA work completions with an error status, as the requester (sender) or the responder saw
    # them. A flush error is every WQE still queued when a QP went to the error state (often a process
    # exiting or a peer's QP dying): counted apart, so real errors are not drowned by flushes.
    # Older bnxt_re names: Broadcom renamed them to the mlx5 names ("RDMA/bnxt_re: RoCE related
    # hardware counters update", linux-rdma 2025-08-14), which newer kernels print, so the mlx5 rows
    # cover those. Its older per-cause requester errors have no single req_cqe_error to map.
    _c("fabric_roce_nic_requester_cqe_errors_total", "completions",
       "Completions with an error status seen by the requester, i.e. the side that sent the request ({raw}; "
       "newer bnxt_re prints the same name); flushes are counted apart.",
       NIC_PORT, mlx5_rdma("req_cqe_error")),
    _c("fabric_roce_nic_requester_cqe_flush_errors_total", "completions",
       "Requester work requests flushed because their QP had gone to the error state ({raw}): follows a QP "
       "error or a process exiting; read it beside the error counts, not as one.",
       NIC_PORT, mlx5_rdma("req_cqe_flush_error")),
    _c("fabric_roce_nic_responder_cqe_errors_total", "completions",
       "Completions with an error status seen by the responder, the side that received the request ({raw}; "
       "newer bnxt_re prints the same name); flushes are counted apart.",
       NIC_PORT, mlx5_rdma("resp_cqe_error")),
    _c("fabric_roce_nic_responder_cqe_flush_errors_total", "completions",
       "Responder work requests flushed because their QP had gone to the error state ({raw}).",
       NIC_PORT, mlx5_rdma("resp_cqe_flush_error")),
    _c("fabric_roce_nic_requester_remote_access_errors_total", "errors",
       "Remote access errors the requester was told of: the peer refused the memory key or range ({raw}; "
       "newer bnxt_re prints the mlx5 name).",
       NIC_PORT, (*mlx5_rdma("req_remote_access_errors"), *bnxt_re("remote_access_err"))),
    _c("fabric_roce_nic_requester_remote_invalid_requests_total", "errors",
       "Remote invalid request errors the requester was told of ({raw}; newer bnxt_re prints the mlx5 name).",
       NIC_PORT, (*mlx5_rdma("req_remote_invalid_request"), *bnxt_re("remote_invalid_req_err"))),
    _c("fabric_roce_nic_responder_local_length_errors_total", "errors",
       "Responder local length errors: an incoming message did not fit the posted receive buffer ({raw}; "
       "newer bnxt_re prints the mlx5 name).",
       NIC_PORT, (*mlx5_rdma("resp_local_length_error"), *bnxt_re("res_length_mismatch"))),
    _c("fabric_roce_nic_responder_remote_access_errors_total", "errors",
       "Remote access errors the responder detected in incoming requests ({raw}; newer bnxt_re prints the same "
       "name).",
       NIC_PORT, mlx5_rdma("resp_remote_access_errors")),
    # --- counters the catalog does not know (option expose_unmapped, off by default) ------------
    MetricSpec("fabric_roce_nic_unmapped_value", "gauge", "",
               "A driver counter with no catalog name, as read (label counter = its original name, source = "
               "ethtool or hw_counters); only with option expose_unmapped. Typed gauge: its semantics are unknown.",
               (NIC_PORT_RAW,), (NIC,), ()),
]
