"""Vendor counter names -> catalog samples: the rules of ``ethtool -S`` and the RDMA hw counters,
and the mapper that runs them on one NIC's table (plans cached per set of names)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...samples import Sample

# ---------------------------------------------------------------------------------------------
# Vendor name -> catalog name. Within one metric (and priority/queue), the first rule whose
# counter exists wins, so a preferred counter shadows a fallback. ``families`` limits a rule to
# drivers where the raw name means what the metric says (bnxt_en's rx_bytes is the port's;
# mlx5's is the netdev's software count, so mlx5 uses rx_bytes_phy).

US = 1e-6  # microseconds -> seconds
_new = tuple.__new__  # Sample(...) without the NamedTuple's Python-level __new__ (~700 per host poll)


@dataclass(frozen=True)
class Rule:
    metric: str
    pattern: str  # raw name; "{p}" = priority 0-7, "{q}" = queue number
    scale: float = 1.0
    families: frozenset[str] | None = None
    vendor: str = ""  # whose driver prints this name (docs/collectors/roce_nic.md groups by it)

    def regex(self) -> re.Pattern:
        text = re.escape(self.pattern).replace(r"\{p\}", "(?P<priority>[0-7])").replace(r"\{q\}", "(?P<queue>[0-9]{1,2})")
        return re.compile(text)


def _r(metric: str, *patterns: str, scale: float = 1.0, families: tuple[str, ...] | None = None,
       vendor: str = "") -> list[Rule]:
    fam = frozenset(families) if families else None
    return [Rule(metric, p, scale, fam, vendor) for p in patterns]


# Sources: each driver's counter documentation -- mlx5: kernel Documentation/networking/device_drivers/
# ethernet/mellanox/mlx5/counters.rst; bnxt_en: bnxt_ethtool.c string tables (bnxt_port_stats_arr,
# bnxt_port_stats_ext_arr, bnxt_ring_err_stats_arr) and Broadcom's NetXtreme-E tuning guide; ice:
# Documentation/networking/device_drivers/ethernet/intel/ice.rst and ice_ethtool.c (in-tree names) /
# Intel's out-of-tree ice driver (the "port-..." names); RDMA: mlx5 counters.rst (RDMA section),
# bnxt_re hw_counters.c, irdma hw stats. Every counter that answers congestion, loss, errors or link
# stability and has a catalog metric with the same meaning is mapped.
MLX5, BNXT_EN, ICE = "mlx5", "bnxt_en", "ice"
BNXT = ("bnxt",)
ETHTOOL_RULES: list[Rule] = [
    *_r("fabric_roce_pfc_rx_pause_frames_total", "rx_prio{p}_pause", vendor=MLX5),
    *_r("fabric_roce_pfc_rx_pause_frames_total", "rx_pfc_ena_frames_pri{p}", vendor=BNXT_EN),
    *_r("fabric_roce_pfc_rx_pause_frames_total", "rx_priority_{p}_xoff.nic", "port-rx-xoff_prio-{p}_events", vendor=ICE),
    *_r("fabric_roce_pfc_tx_pause_frames_total", "tx_prio{p}_pause", vendor=MLX5),
    *_r("fabric_roce_pfc_tx_pause_frames_total", "tx_pfc_ena_frames_pri{p}", vendor=BNXT_EN),
    *_r("fabric_roce_pfc_tx_pause_frames_total", "tx_priority_{p}_xoff.nic", "port-tx-xoff_prio-{p}_events", vendor=ICE),
    *_r("fabric_roce_rx_bytes_total", "rx_bytes_phy", vendor=MLX5),
    *_r("fabric_roce_rx_bytes_total", "rx_bytes.nic", "port-rx_bytes", vendor=ICE),
    *_r("fabric_roce_rx_bytes_total", "rx_bytes", families=BNXT, vendor=BNXT_EN),
    *_r("fabric_roce_tx_bytes_total", "tx_bytes_phy", vendor=MLX5),
    *_r("fabric_roce_tx_bytes_total", "tx_bytes.nic", "port-tx_bytes", vendor=ICE),
    *_r("fabric_roce_tx_bytes_total", "tx_bytes", families=BNXT, vendor=BNXT_EN),
    *_r("fabric_roce_rx_packets_total", "rx_packets_phy", vendor=MLX5),
    *_r("fabric_roce_rx_packets_total", "rx_total_frames", families=BNXT, vendor=BNXT_EN),
    *_r("fabric_roce_tx_packets_total", "tx_packets_phy", vendor=MLX5),
    *_r("fabric_roce_tx_packets_total", "tx_total_frames", families=BNXT, vendor=BNXT_EN),
    *_r("fabric_roce_rx_discards_total", "rx_discards_phy", vendor=MLX5),
    # bnxt_en: the port MAC's own discard count; ice: the port's Rx drops for lack of buffer
    # (PRTRPB_RDPC, "rx_dropped.nic"; not "rx_dropped", the netdev's software count).
    *_r("fabric_roce_rx_discards_total", "rx_stat_discard", families=BNXT, vendor=BNXT_EN),
    *_r("fabric_roce_rx_discards_total", "rx_dropped.nic", "port-rx-dropped_pkts", vendor=ICE),
    *_r("fabric_roce_tx_discards_total", "tx_discards_phy", vendor=MLX5),
    *_r("fabric_roce_tx_discards_total", "tx_stat_discard", families=BNXT, vendor=BNXT_EN),
    *_r("fabric_roce_tx_discards_total", "tx_dropped_link_down.nic", "port-tx-dropped_link-down_pkts", vendor=ICE),
    *_r("fabric_roce_nic_pfc_rx_pause_seconds_total", "rx_prio{p}_pause_duration", scale=US, vendor=MLX5),
    *_r("fabric_roce_nic_pfc_rx_pause_seconds_total", "pfc_pri{p}_rx_duration_us", scale=US, vendor=BNXT_EN),
    *_r("fabric_roce_nic_pfc_tx_pause_seconds_total", "tx_prio{p}_pause_duration", scale=US, vendor=MLX5),
    *_r("fabric_roce_nic_pfc_tx_pause_seconds_total", "pfc_pri{p}_tx_duration_us", scale=US, vendor=BNXT_EN),
    *_r("fabric_roce_nic_pfc_rx_pause_transitions_total", "rx_prio{p}_pause_transition", vendor=MLX5),
    *_r("fabric_roce_nic_pfc_rx_pause_transitions_total", "pfc_pri{p}_rx_transitions", vendor=BNXT_EN),
    *_r("fabric_roce_nic_pfc_tx_pause_transitions_total", "pfc_pri{p}_tx_transitions", vendor=BNXT_EN),
    *_r("fabric_roce_nic_pause_storm_warning_events_total", "tx_pause_storm_warning_events", vendor=MLX5),
    *_r("fabric_roce_nic_pause_storm_error_events_total", "tx_pause_storm_error_events", vendor=MLX5),
    # bnxt_en pause-storm indicators (Broadcom's descriptions: "num times [roce] pause events" and
    # "... pause events resumes"): the RoCE class's and any traffic's, each with its resume count.
    *_r("fabric_roce_nic_continuous_pause_events_total", "continuous_roce_pause_events", vendor=BNXT_EN),
    *_r("fabric_roce_nic_continuous_pause_resume_events_total", "resume_roce_pause_events", vendor=BNXT_EN),
    *_r("fabric_roce_nic_port_continuous_pause_events_total", "continuous_pause_events", vendor=BNXT_EN),
    *_r("fabric_roce_nic_port_continuous_pause_resume_events_total", "resume_pause_events", vendor=BNXT_EN),
    *_r("fabric_roce_nic_priority_rx_bytes_total", "rx_prio{p}_bytes", vendor=MLX5),
    *_r("fabric_roce_nic_priority_tx_bytes_total", "tx_prio{p}_bytes", vendor=MLX5),
    *_r("fabric_roce_nic_priority_rx_packets_total", "rx_prio{p}_packets", vendor=MLX5),
    *_r("fabric_roce_nic_priority_tx_packets_total", "tx_prio{p}_packets", vendor=MLX5),
    *_r("fabric_roce_nic_priority_rx_discards_total", "rx_prio{p}_discards", vendor=MLX5),
    # bnxt_en drops per CoS queue: the index is a hardware queue (several priorities may share one),
    # not a priority, and the driver prints no per-priority drop count -- so label queue. (Its
    # "*_pri{p}" traffic counters are not mapped: each is the whole count of the priority's CoS
    # queue, so priorities sharing a queue repeat one value and a sum over priorities overcounts.)
    *_r("fabric_roce_nic_queue_rx_discards_total", "rx_discard_packets_cos{q}", vendor=BNXT_EN),
    *_r("fabric_roce_nic_queue_rx_discard_bytes_total", "rx_discard_bytes_cos{q}", vendor=BNXT_EN),
    *_r("fabric_roce_nic_rx_out_of_buffer_packets_total", "rx_out_of_buffer", vendor=MLX5),
    # bnxt_en: Rx ring drops summed over rings (no buffer posted by the host); renamed in 6.x kernels
    *_r("fabric_roce_nic_rx_out_of_buffer_packets_total", "rx_total_discard_pkts", "rx_total_ring_discards",
        families=BNXT, vendor=BNXT_EN),
    *_r("fabric_roce_nic_rx_buffer_passed_threshold_events_total", "rx_buffer_passed_thres_phy", vendor=MLX5),
    # bnxt_en: "num of events port buffer was over 85%" (Broadcom), the same threshold as mlx5's default
    *_r("fabric_roce_nic_rx_buffer_passed_threshold_events_total", "rx_buffer_passed_threshold", families=BNXT,
        vendor=BNXT_EN),
    # mlx5: not rx/tx_pause_ctrl_phy -- published captures show it rising with PFC on and global
    # pause off, so it is PFC + link pause together; no catalog metric means that (docs say why).
    *_r("fabric_roce_nic_link_pause_rx_frames_total", "rx_global_pause", vendor=MLX5),
    *_r("fabric_roce_nic_link_pause_rx_frames_total", "link_xoff_rx.nic", "port-rx-xoff_events", vendor=ICE),
    *_r("fabric_roce_nic_link_pause_rx_frames_total", "rx_pause_frames", families=BNXT, vendor=BNXT_EN),
    *_r("fabric_roce_nic_link_pause_tx_frames_total", "tx_global_pause", vendor=MLX5),
    *_r("fabric_roce_nic_link_pause_tx_frames_total", "link_xoff_tx.nic", "port-tx-xoff_events", vendor=ICE),
    *_r("fabric_roce_nic_link_pause_tx_frames_total", "tx_pause_frames", families=BNXT, vendor=BNXT_EN),
    *_r("fabric_roce_nic_link_pause_rx_seconds_total", "rx_global_pause_duration", scale=US, vendor=MLX5),
    *_r("fabric_roce_nic_link_pause_tx_seconds_total", "tx_global_pause_duration", scale=US, vendor=MLX5),
    *_r("fabric_roce_nic_link_pause_rx_transitions_total", "rx_global_pause_transition", vendor=MLX5),
    *_r("fabric_roce_nic_link_down_events_total", "link_down_events_phy", vendor=MLX5),
    *_r("fabric_roce_nic_link_down_events_total", "link_down_events", families=BNXT, vendor=BNXT_EN),
    *_r("fabric_roce_nic_rx_symbol_errors_total", "rx_symbol_err_phy", vendor=MLX5),
    *_r("fabric_roce_nic_rx_pcs_symbol_errors_total", "rx_pcs_symbol_err_phy", vendor=MLX5),
    *_r("fabric_roce_nic_rx_pcs_symbol_errors_total", "rx_pcs_symbol_err", families=BNXT, vendor=BNXT_EN),
    *_r("fabric_roce_nic_rx_fec_corrected_errors_total", "rx_corrected_bits_phy", vendor=MLX5),
    *_r("fabric_roce_nic_rx_fec_corrected_errors_total", "rx_corrected_bits", "rx_fec_corrected_blocks",
        families=BNXT, vendor=BNXT_EN),
    *_r("fabric_roce_nic_rx_fec_uncorrectable_errors_total", "rx_fec_uncorrectable_blocks", families=BNXT,
        vendor=BNXT_EN),
    *_r("fabric_roce_nic_rx_crc_errors_total", "rx_crc_errors_phy", vendor=MLX5),
    *_r("fabric_roce_nic_rx_crc_errors_total", "rx_crc_errors.nic", "port-rx-crc_errors", vendor=ICE),
    *_r("fabric_roce_nic_rx_crc_errors_total", "rx_fcs_err_frames", families=BNXT, vendor=BNXT_EN),
]

MLX5_RDMA, BNXT_RE, IRDMA = "mlx5 (RDMA)", "bnxt_re", "irdma"
HW_RULES: list[Rule] = [
    *_r("fabric_roce_ecn_marked_packets_total", "np_ecn_marked_roce_packets", vendor=MLX5_RDMA),
    *_r("fabric_roce_ecn_marked_packets_total", "rx_ecn_marked_pkts", vendor=BNXT_RE),
    *_r("fabric_roce_ecn_marked_packets_total", "RxECNMrkd", vendor=IRDMA),
    # bnxt_re renamed tx_cnp_pkts/rx_cnp_pkts/rx_ecn_marked_pkts to np_cnp_pkts/rp_cnp_handled/
    # np_ecn_marked_roce_packets in later kernels: both generations are listed.
    *_r("fabric_roce_nic_cnp_sent_total", "np_cnp_sent", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_cnp_sent_total", "np_cnp_pkts", "tx_cnp_pkts", vendor=BNXT_RE),
    *_r("fabric_roce_nic_cnp_sent_total", "cnpSent", vendor=IRDMA),
    *_r("fabric_roce_nic_cnp_received_total", "rx_cnp_pkts", vendor=BNXT_RE),
    *_r("fabric_roce_nic_cnp_handled_total", "rp_cnp_handled", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_cnp_handled_total", "cnpHandled", vendor=IRDMA),
    *_r("fabric_roce_nic_cnp_ignored_total", "rp_cnp_ignored", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_cnp_ignored_total", "cnpIgnored", vendor=IRDMA),
    *_r("fabric_roce_nic_out_of_sequence_packets_total", "out_of_sequence", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_out_of_sequence_packets_total", "oos_drop_count", vendor=BNXT_RE),
    *_r("fabric_roce_nic_packet_sequence_errors_total", "packet_seq_err", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_packet_sequence_errors_total", "seq_err_naks_rcvd", vendor=BNXT_RE),
    *_r("fabric_roce_nic_implied_nak_sequence_errors_total", "implied_nak_seq_err", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_implied_nak_sequence_errors_total", "missing_resp", vendor=BNXT_RE),
    *_r("fabric_roce_nic_local_ack_timeouts_total", "local_ack_timeout_err", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_local_ack_timeouts_total", "to_retransmits", vendor=BNXT_RE),
    *_r("fabric_roce_nic_adaptive_retransmits_total", "roce_adp_retrans", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_adaptive_retransmit_timeouts_total", "roce_adp_retrans_to", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_slow_restarts_total", "roce_slow_restart", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_slow_restart_cnps_total", "roce_slow_restart_cnps", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_slow_restart_transitions_total", "roce_slow_restart_trans", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_duplicate_requests_total", "duplicate_request", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_duplicate_requests_total", "dup_req", "dup_reqs", vendor=BNXT_RE),
    *_r("fabric_roce_nic_rnr_nak_retry_errors_total", "rnr_nak_retry_err", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_rnr_nak_retry_errors_total", "rnr_naks_rcvd", vendor=BNXT_RE),
    *_r("fabric_roce_nic_rdma_out_of_buffer_total", "out_of_buffer", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_rdma_out_of_buffer_total", "rx_out_of_buffer", "res_oob_drop_count", vendor=BNXT_RE),
    *_r("fabric_roce_nic_transport_retries_exceeded_total", "req_transport_retries_exceeded", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_transport_retries_exceeded_total", "max_retry_exceeded", vendor=BNXT_RE),
    *_r("fabric_roce_nic_rx_icrc_errors_total", "rx_icrc_encapsulated", vendor=MLX5_RDMA),
    # Work completions with an error status, as the requester (sender) or the responder saw them.
    # A flush error is every WQE still queued when a QP went to the error state (often a process
    # exiting or a peer's QP dying): counted apart, so real errors are not drowned by flushes.
    *_r("fabric_roce_nic_requester_cqe_errors_total", "req_cqe_error", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_requester_cqe_flush_errors_total", "req_cqe_flush_error", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_responder_cqe_errors_total", "resp_cqe_error", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_responder_cqe_flush_errors_total", "resp_cqe_flush_error", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_requester_remote_access_errors_total", "req_remote_access_errors", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_requester_remote_invalid_requests_total", "req_remote_invalid_request", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_responder_local_length_errors_total", "resp_local_length_error", vendor=MLX5_RDMA),
    *_r("fabric_roce_nic_responder_remote_access_errors_total", "resp_remote_access_errors", vendor=MLX5_RDMA),
    # Older bnxt_re names of the same counters: Broadcom renamed them to the mlx5 names above ("RDMA/bnxt_re:
    # RoCE related hardware counters update", linux-rdma 2025-08-14), which newer kernels print, so the mlx5
    # rows cover those. Its older per-cause requester errors have no single req_cqe_error to map.
    *_r("fabric_roce_nic_requester_remote_access_errors_total", "remote_access_err", vendor=BNXT_RE),
    *_r("fabric_roce_nic_requester_remote_invalid_requests_total", "remote_invalid_req_err", vendor=BNXT_RE),
    *_r("fabric_roce_nic_responder_local_length_errors_total", "res_length_mismatch", vendor=BNXT_RE),
]


class CounterMapper:
    """Maps one source's raw counter names to (rule order, metric, extra labels, scale).

    Each distinct raw name is matched against the rules once per process (names repeat on every
    poll and every NIC), so a poll costs dictionary lookups, not regex scans.
    """

    def __init__(self, rules: list[Rule]):
        self.rules = rules
        self._exact: dict[str, list[tuple[int, Rule]]] = {}
        self._patterns: list[tuple[int, Rule, re.Pattern]] = []
        for order, rule in enumerate(rules):
            if "{" in rule.pattern:
                self._patterns.append((order, rule, rule.regex()))
            else:
                self._exact.setdefault(rule.pattern, []).append((order, rule))
        self._cache: dict[str, tuple[tuple[int, Rule, tuple[tuple[str, str], ...]], ...]] = {}
        self._plans: dict[tuple, tuple[tuple, tuple[str, ...]]] = {}
        # map()'s form of a plan: steps with the index of their labels dict, the extra label sets
        self._compiled: dict[tuple, tuple[tuple, tuple, tuple[str, ...]]] = {}

    def matches(self, name: str) -> tuple[tuple[int, Rule, tuple[tuple[str, str], ...]], ...]:
        found = self._cache.get(name)
        if found is None:
            hits = [(order, rule, ()) for order, rule in self._exact.get(name, ())]
            for order, rule, rx in self._patterns:
                m = rx.fullmatch(name)
                if m:
                    hits.append((order, rule, tuple(sorted(m.groupdict().items()))))
            found = tuple(sorted(hits, key=lambda h: h[0]))
            if len(self._cache) < 100_000:  # bounded: names come from the remote side
                self._cache[name] = found
        return found

    def plan(self, names: tuple[str, ...], family: str | None) -> tuple[tuple, tuple[str, ...]]:
        """For a set of raw names (one NIC's table): which name feeds which (metric, extra labels),
        and which names no rule knows. Cached: a NIC prints the same names on every poll."""
        key = (names, family)
        found = self._plans.get(key)
        if found is not None:
            return found
        chosen: dict[tuple[str, tuple], tuple[int, Rule, str]] = {}
        unmapped = []
        for name in names:
            known = False
            for order, rule, extra in self.matches(name):
                if rule.families is not None and family not in rule.families:
                    continue
                known = True
                slot = (rule.metric, extra)
                if slot not in chosen or chosen[slot][0] > order:
                    chosen[slot] = (order, rule, name)
            if not known:
                unmapped.append(name)
        steps = tuple((name, metric, extra, rule.scale) for (metric, extra), (_, rule, name) in chosen.items())
        found = (steps, tuple(unmapped))
        if len(self._plans) < 4096:
            self._plans[key] = found
        return found

    def map(self, counters: dict[str, int], family: str | None, base: dict[str, str],
            unmapped: list[str] | None, labels_of: dict[tuple, dict[str, str]] | None = None) -> list[Sample]:
        """Samples for ``counters``; names no rule knows are appended to ``unmapped`` if given.

        Samples with the same extra labels share one labels dict (``base`` itself when there are
        none), kept in ``labels_of`` (extra labels -> dict; the port's, when given): the renderer
        formats each dict's text once."""
        names = tuple(counters)
        compiled = self._compiled.get((names, family))
        if compiled is None:
            steps, unknown = self.plan(names, family)
            extras = tuple(dict.fromkeys(extra for _n, _m, extra, _s in steps if extra))
            slot_of = {extra: i for i, extra in enumerate(extras, 1)}
            compiled = (tuple((name, metric, slot_of.get(extra, 0), scale) for name, metric, extra, scale in steps),
                        extras, unknown)
            if len(self._compiled) < 4096:
                self._compiled[(names, family)] = compiled
        steps, extras, unknown = compiled
        if unmapped is not None:
            unmapped.extend(unknown)
        if labels_of is None:
            labels_of = {}
        slots = [base]  # slot 0: no extra labels
        for extra in extras:
            labels = labels_of.get(extra)
            if labels is None:
                labels = labels_of[extra] = {**base, **dict(extra)}
            slots.append(labels)
        value = counters.__getitem__
        return [_new(Sample, (metric, slots[slot], value(name) if scale == 1.0 else value(name) * scale))
                for name, metric, slot, scale in steps]


ETHTOOL_MAPPER = CounterMapper(ETHTOOL_RULES)
HW_MAPPER = CounterMapper(HW_RULES)

def driver_family(driver: str | None, device: str) -> str | None:
    """mlx5 | bnxt | intel from the PCI driver, else from the RDMA device name the driver chose."""
    probe = driver or device
    for prefix, family in (("mlx5", "mlx5"), ("bnxt", "bnxt"), ("ice", "intel"), ("irdma", "intel"),
                           ("i40", "intel")):
        if probe.startswith(prefix):
            return family
    return None
