"""NIC-only RoCE metrics (``roce_nic`` collector: ``ethtool -S`` and RDMA hardware counters).

Meanings a switch shares (PFC pause frames per priority, port bytes/packets/discards, ECN-marked
packets) use the names in ``roce.py``. Everything here is seen only on a host's NIC port.

Vendor counters (mlx5, bnxt_en/bnxt_re, irdma) map onto these vendor-neutral names; ``origin``
lists every raw name a metric can come from. Time counters the drivers keep in microseconds are
published in seconds. Values are the drivers' raw monotonic counters: a driver reload resets them
and Prometheus' ``rate()`` handles the reset.
"""

from .labels import NIC_PORT, NIC_PORT_PRIORITY
from .spec import MetricSpec

NIC = "roce_nic"

# bnxt_en counts some drops per CoS queue (rx_discard_packets_cos{q}), not per priority.
NIC_PORT_QUEUE = NIC_PORT + ("queue",)
# A counter the catalog does not know, exposed only when the ``expose_unmapped`` option is on.
NIC_PORT_RAW = NIC_PORT + ("source", "counter")
# Port identity facts carried as labels.
NIC_PORT_INFO = NIC_PORT + ("driver",)


def _c(name: str, unit: str, help_text: str, labels: tuple, origin: tuple[str, ...]) -> MetricSpec:
    return MetricSpec(name, "counter", unit, help_text, (labels,), (NIC,), origin)


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
       "Time the port was paused by received PFC frames per priority (mlx5 rx_prio{p}_pause_duration, "
       "bnxt pfc_pri{p}_rx_duration_us; microseconds / 1e6). rate() is the fraction of time paused.",
       NIC_PORT_PRIORITY, ("rx_prio{p}_pause_duration", "pfc_pri{p}_rx_duration_us")),
    _c("fabric_roce_nic_pfc_tx_pause_seconds_total", "seconds",
       "Time the port asked its peer to pause per priority (mlx5 tx_prio{p}_pause_duration, "
       "bnxt pfc_pri{p}_tx_duration_us; microseconds / 1e6).",
       NIC_PORT_PRIORITY, ("tx_prio{p}_pause_duration", "pfc_pri{p}_tx_duration_us")),
    _c("fabric_roce_nic_pfc_rx_pause_transitions_total", "transitions",
       "Pause-state transitions of received PFC per priority (mlx5 rx_prio{p}_pause_transition counts XOFF to "
       "XON; bnxt pfc_pri{p}_rx_transitions counts both directions, so about twice as many); long pause time "
       "with few transitions is a storm, not bursts.",
       NIC_PORT_PRIORITY, ("rx_prio{p}_pause_transition", "pfc_pri{p}_rx_transitions")),
    _c("fabric_roce_nic_pfc_tx_pause_transitions_total", "transitions",
       "XON/XOFF transitions of the PFC the port sent per priority, both directions (bnxt pfc_pri{p}_tx_transitions).",
       NIC_PORT_PRIORITY, ("pfc_pri{p}_tx_transitions",)),
    _c("fabric_roce_nic_pause_storm_warning_events_total", "events",
       "The NIC sent pause frames for longer than the storm warning threshold (mlx5 tx_pause_storm_warning_events).",
       NIC_PORT, ("tx_pause_storm_warning_events",)),
    _c("fabric_roce_nic_pause_storm_error_events_total", "events",
       "The NIC's stall watchdog stopped sending pause frames after a storm (mlx5 tx_pause_storm_error_events).",
       NIC_PORT, ("tx_pause_storm_error_events",)),
    _c("fabric_roce_nic_continuous_pause_events_total", "events",
       "The port was paused continuously on the RoCE priority past the NIC's threshold "
       "(bnxt continuous_roce_pause_events).",
       NIC_PORT, ("continuous_roce_pause_events",)),
    _c("fabric_roce_nic_continuous_pause_resume_events_total", "events",
       "The RoCE priority resumed after a continuous pause (bnxt resume_roce_pause_events): fewer resumes than "
       "continuous-pause events means the port is still stuck.",
       NIC_PORT, ("resume_roce_pause_events",)),
    _c("fabric_roce_nic_port_continuous_pause_events_total", "events",
       "The port was paused continuously past the NIC's threshold, any traffic class, not only RoCE's "
       "(bnxt continuous_pause_events).",
       NIC_PORT, ("continuous_pause_events",)),
    _c("fabric_roce_nic_port_continuous_pause_resume_events_total", "events",
       "The port resumed after a continuous pause, any traffic class (bnxt resume_pause_events).",
       NIC_PORT, ("resume_pause_events",)),
    # --- per-priority traffic -------------------------------------------------------------------
    _c("fabric_roce_nic_priority_rx_bytes_total", "bytes",
       "Bytes received per priority (mlx5 rx_prio{p}_bytes).", NIC_PORT_PRIORITY, ("rx_prio{p}_bytes",)),
    _c("fabric_roce_nic_priority_tx_bytes_total", "bytes",
       "Bytes sent per priority (mlx5 tx_prio{p}_bytes).", NIC_PORT_PRIORITY, ("tx_prio{p}_bytes",)),
    _c("fabric_roce_nic_priority_rx_packets_total", "packets",
       "Packets received per priority (mlx5 rx_prio{p}_packets).", NIC_PORT_PRIORITY, ("rx_prio{p}_packets",)),
    _c("fabric_roce_nic_priority_tx_packets_total", "packets",
       "Packets sent per priority (mlx5 tx_prio{p}_packets).", NIC_PORT_PRIORITY, ("tx_prio{p}_packets",)),
    _c("fabric_roce_nic_priority_rx_discards_total", "packets",
       "Received packets dropped per priority for lack of port buffer (mlx5 rx_prio{p}_discards).",
       NIC_PORT_PRIORITY, ("rx_prio{p}_discards",)),
    _c("fabric_roce_nic_queue_rx_discards_total", "packets",
       "Received packets dropped per CoS queue (bnxt rx_discard_packets_cos{q}; queue = q, a hardware queue "
       "that one or more priorities map to, not a priority).",
       NIC_PORT_QUEUE, ("rx_discard_packets_cos{q}",)),
    _c("fabric_roce_nic_queue_rx_discard_bytes_total", "bytes",
       "Bytes of received packets dropped per CoS queue (bnxt rx_discard_bytes_cos{q}; queue = q, a hardware "
       "queue, not a priority).",
       NIC_PORT_QUEUE, ("rx_discard_bytes_cos{q}",)),
    # --- drops by cause -------------------------------------------------------------------------
    _c("fabric_roce_nic_rx_out_of_buffer_packets_total", "packets",
       "Packets dropped because the host's receive queue had no buffer posted (mlx5 ethtool rx_out_of_buffer, "
       "bnxt rx_total_discard_pkts / rx_total_ring_discards: ring drops summed over rings): a host-side drop, "
       "not the fabric's.",
       NIC_PORT, ("rx_out_of_buffer", "rx_total_discard_pkts", "rx_total_ring_discards")),
    _c("fabric_roce_nic_rx_buffer_passed_threshold_events_total", "events",
       "The port's receive buffer passed its fill threshold, 85% by default (mlx5 rx_buffer_passed_thres_phy, "
       "bnxt rx_buffer_passed_threshold): early warning of drops or pause.",
       NIC_PORT, ("rx_buffer_passed_thres_phy", "rx_buffer_passed_threshold")),
    _c("fabric_roce_nic_rdma_out_of_buffer_total", "packets",
       "RDMA packets dropped because the receive queue had no WQE posted (hw counter out_of_buffer; bnxt_re "
       "rx_out_of_buffer or res_oob_drop_count).",
       NIC_PORT, ("out_of_buffer", "rx_out_of_buffer", "res_oob_drop_count")),
    # --- link-level (802.3x) pause --------------------------------------------------------------
    _c("fabric_roce_nic_link_pause_rx_frames_total", "frames",
       "Link-level 802.3x pause frames received (mlx5 rx_global_pause; bnxt "
       "rx_pause_frames; ice link_xoff_rx.nic / port-rx-xoff_events): any rise on a RoCE port means a "
       "misconfigured peer.",
       NIC_PORT, ("rx_global_pause", "rx_pause_frames", "link_xoff_rx.nic", "port-rx-xoff_events")),
    _c("fabric_roce_nic_link_pause_tx_frames_total", "frames",
       "Link-level 802.3x pause frames sent (mlx5 tx_global_pause; bnxt tx_pause_frames; "
       "ice link_xoff_tx.nic / port-tx-xoff_events).",
       NIC_PORT, ("tx_global_pause", "tx_pause_frames", "link_xoff_tx.nic", "port-tx-xoff_events")),
    _c("fabric_roce_nic_link_pause_rx_seconds_total", "seconds",
       "Time paused by received link-level pause frames (mlx5 rx_global_pause_duration; microseconds / 1e6).",
       NIC_PORT, ("rx_global_pause_duration",)),
    _c("fabric_roce_nic_link_pause_tx_seconds_total", "seconds",
       "Time the port paused its peer with link-level pause (mlx5 tx_global_pause_duration; microseconds / 1e6).",
       NIC_PORT, ("tx_global_pause_duration",)),
    _c("fabric_roce_nic_link_pause_rx_transitions_total", "transitions",
       "XOFF to XON transitions of received link-level pause (mlx5 rx_global_pause_transition).",
       NIC_PORT, ("rx_global_pause_transition",)),
    # --- link quality ---------------------------------------------------------------------------
    _c("fabric_roce_nic_link_down_events_total", "events",
       "Times the physical link went down (mlx5 link_down_events_phy, bnxt link_down_events).",
       NIC_PORT, ("link_down_events_phy", "link_down_events")),
    _c("fabric_roce_nic_rx_symbol_errors_total", "packets",
       "Received packets dropped for physical coding (symbol) errors (mlx5 rx_symbol_err_phy).",
       NIC_PORT, ("rx_symbol_err_phy",)),
    _c("fabric_roce_nic_rx_pcs_symbol_errors_total", "errors",
       "PCS symbol errors after FEC (mlx5 rx_pcs_symbol_err_phy, bnxt rx_pcs_symbol_err): bit errors FEC could "
       "not fix.",
       NIC_PORT, ("rx_pcs_symbol_err_phy", "rx_pcs_symbol_err")),
    _c("fabric_roce_nic_rx_fec_corrected_errors_total", "errors",
       "Errors corrected by FEC (mlx5 rx_corrected_bits_phy and bnxt rx_corrected_bits: one per bit; older bnxt "
       "without it: rx_fec_corrected_blocks, one per FEC block): a rising rate is a degrading link.",
       NIC_PORT, ("rx_corrected_bits_phy", "rx_corrected_bits", "rx_fec_corrected_blocks")),
    _c("fabric_roce_nic_rx_fec_uncorrectable_errors_total", "blocks",
       "FEC blocks the receiver could not correct (bnxt rx_fec_uncorrectable_blocks): each loses the frame in it.",
       NIC_PORT, ("rx_fec_uncorrectable_blocks",)),
    _c("fabric_roce_nic_rx_crc_errors_total", "packets",
       "Received packets with a bad FCS (mlx5 rx_crc_errors_phy, bnxt rx_fcs_err_frames, ice rx_crc_errors.nic "
       "/ port-rx-crc_errors).",
       NIC_PORT, ("rx_crc_errors_phy", "rx_fcs_err_frames", "rx_crc_errors.nic", "port-rx-crc_errors")),
    _c("fabric_roce_nic_rx_icrc_errors_total", "packets",
       "RoCE packets received with a bad invariant CRC (mlx5 RDMA hw counter rx_icrc_encapsulated): corruption "
       "the Ethernet FCS did not catch, or a mangling middlebox.",
       NIC_PORT, ("rx_icrc_encapsulated",)),
    # --- congestion control (DCQCN) -------------------------------------------------------------
    _c("fabric_roce_nic_cnp_sent_total", "packets",
       "Congestion notification packets sent back by this receiver (mlx5 np_cnp_sent, bnxt_re np_cnp_pkts or "
       "tx_cnp_pkts, irdma cnpSent).",
       NIC_PORT, ("np_cnp_sent", "np_cnp_pkts", "tx_cnp_pkts", "cnpSent")),
    _c("fabric_roce_nic_cnp_received_total", "packets",
       "Congestion notification packets received (older bnxt_re rx_cnp_pkts; mlx5 and irdma count them as "
       "handled + ignored instead).",
       NIC_PORT, ("rx_cnp_pkts",)),
    _c("fabric_roce_nic_cnp_handled_total", "packets",
       "CNPs on which this sender reduced its rate (mlx5 and newer bnxt_re rp_cnp_handled, irdma cnpHandled).",
       NIC_PORT, ("rp_cnp_handled", "cnpHandled")),
    _c("fabric_roce_nic_cnp_ignored_total", "packets",
       "CNPs this sender received and did not act on (mlx5 rp_cnp_ignored, irdma cnpIgnored): usually congestion "
       "control or priority misconfiguration.",
       NIC_PORT, ("rp_cnp_ignored", "cnpIgnored")),
    # --- transport errors and retransmission ----------------------------------------------------
    _c("fabric_roce_nic_out_of_sequence_packets_total", "packets",
       "Received packets dropped as out of sequence (mlx5 out_of_sequence, bnxt_re oos_drop_count): "
       "loss or reordering upstream.",
       NIC_PORT, ("out_of_sequence", "oos_drop_count")),
    _c("fabric_roce_nic_packet_sequence_errors_total", "packets",
       "Sequence-error NAKs received by the requester (mlx5 packet_seq_err, bnxt_re seq_err_naks_rcvd): "
       "go-back-N retransmits.",
       NIC_PORT, ("packet_seq_err", "seq_err_naks_rcvd")),
    _c("fabric_roce_nic_implied_nak_sequence_errors_total", "events",
       "Implied NAK sequence errors: a read response or ACK skipped PSNs (mlx5 and newer bnxt_re "
       "implied_nak_seq_err, older bnxt_re missing_resp).",
       NIC_PORT, ("implied_nak_seq_err", "missing_resp")),
    _c("fabric_roce_nic_local_ack_timeouts_total", "events",
       "Retransmissions after the local ACK timer expired (mlx5 local_ack_timeout_err, bnxt_re to_retransmits): "
       "tail-latency spikes.",
       NIC_PORT, ("local_ack_timeout_err", "to_retransmits")),
    _c("fabric_roce_nic_adaptive_retransmits_total", "events",
       "Adaptive retransmissions (mlx5 roce_adp_retrans).", NIC_PORT, ("roce_adp_retrans",)),
    _c("fabric_roce_nic_adaptive_retransmit_timeouts_total", "events",
       "Adaptive retransmission timeouts (mlx5 roce_adp_retrans_to).", NIC_PORT, ("roce_adp_retrans_to",)),
    _c("fabric_roce_nic_slow_restarts_total", "events",
       "Slow-restart events of the adaptive retransmission logic (mlx5 roce_slow_restart).",
       NIC_PORT, ("roce_slow_restart",)),
    _c("fabric_roce_nic_slow_restart_cnps_total", "packets",
       "CNPs sent during slow restart (mlx5 roce_slow_restart_cnps).", NIC_PORT, ("roce_slow_restart_cnps",)),
    _c("fabric_roce_nic_slow_restart_transitions_total", "transitions",
       "Transitions into slow restart (mlx5 roce_slow_restart_trans).", NIC_PORT, ("roce_slow_restart_trans",)),
    _c("fabric_roce_nic_duplicate_requests_total", "packets",
       "Duplicate requests received: the peer retransmitted (mlx5 duplicate_request, bnxt_re dup_req/dup_reqs).",
       NIC_PORT, ("duplicate_request", "dup_req", "dup_reqs")),
    _c("fabric_roce_nic_rnr_nak_retry_errors_total", "events",
       "Receiver-not-ready NAKs the requester received while its retry limit was not yet exceeded: the peer had "
       "no receive posted (mlx5 and newer bnxt_re rnr_nak_retry_err, older bnxt_re rnr_naks_rcvd).",
       NIC_PORT, ("rnr_nak_retry_err", "rnr_naks_rcvd")),
    _c("fabric_roce_nic_transport_retries_exceeded_total", "events",
       "Requests whose transport retries ran out, so the QP went to error (mlx5 req_transport_retries_exceeded, "
       "bnxt_re max_retry_exceeded).",
       NIC_PORT, ("req_transport_retries_exceeded", "max_retry_exceeded")),
    # --- RDMA work completions with an error status (mlx5, bnxt_re RDMA hw counters) ------------
    _c("fabric_roce_nic_requester_cqe_errors_total", "completions",
       "Completions with an error status seen by the requester, i.e. the side that sent the request "
       "(mlx5 and newer bnxt_re req_cqe_error); flushes are counted apart.",
       NIC_PORT, ("req_cqe_error",)),
    _c("fabric_roce_nic_requester_cqe_flush_errors_total", "completions",
       "Requester work requests flushed because their QP had gone to the error state (mlx5 req_cqe_flush_error): "
       "follows a QP error or a process exiting; read it beside the error counts, not as one.",
       NIC_PORT, ("req_cqe_flush_error",)),
    _c("fabric_roce_nic_responder_cqe_errors_total", "completions",
       "Completions with an error status seen by the responder, the side that received the request "
       "(mlx5 and newer bnxt_re resp_cqe_error); flushes are counted apart.",
       NIC_PORT, ("resp_cqe_error",)),
    _c("fabric_roce_nic_responder_cqe_flush_errors_total", "completions",
       "Responder work requests flushed because their QP had gone to the error state (mlx5 resp_cqe_flush_error).",
       NIC_PORT, ("resp_cqe_flush_error",)),
    _c("fabric_roce_nic_requester_remote_access_errors_total", "errors",
       "Remote access errors the requester was told of: the peer refused the memory key or range "
       "(mlx5 and newer bnxt_re req_remote_access_errors, older bnxt_re remote_access_err).",
       NIC_PORT, ("req_remote_access_errors", "remote_access_err")),
    _c("fabric_roce_nic_requester_remote_invalid_requests_total", "errors",
       "Remote invalid request errors the requester was told of (mlx5 and newer bnxt_re req_remote_invalid_request, older bnxt_re remote_invalid_req_err).",
       NIC_PORT, ("req_remote_invalid_request", "remote_invalid_req_err")),
    _c("fabric_roce_nic_responder_local_length_errors_total", "errors",
       "Responder local length errors: an incoming message did not fit the posted receive buffer "
       "(mlx5 and newer bnxt_re resp_local_length_error, older bnxt_re res_length_mismatch).",
       NIC_PORT, ("resp_local_length_error", "res_length_mismatch")),
    _c("fabric_roce_nic_responder_remote_access_errors_total", "errors",
       "Remote access errors the responder detected in incoming requests (mlx5 and newer bnxt_re "
       "resp_remote_access_errors).",
       NIC_PORT, ("resp_remote_access_errors",)),
    # --- counters the catalog does not know (option expose_unmapped, off by default) ------------
    MetricSpec("fabric_roce_nic_unmapped_value", "gauge", "",
               "A driver counter with no catalog name, as read (label counter = its original name, source = "
               "ethtool or hw_counters); only with option expose_unmapped. Typed gauge: its semantics are unknown.",
               (NIC_PORT_RAW,), (NIC,), ()),
]
