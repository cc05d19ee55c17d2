"""RoCE NIC counters of a GPU host, over SSH (or locally for a DaemonSet pod / host service).

One poll is ONE remote command, whatever the number of NICs: a small POSIX ``sh`` script
(``REMOTE_SCRIPT``) discovers the RDMA devices, ports and netdevs in sysfs (or with ``rdma link
show``), dumps every port's ``hw_counters`` with one ``grep``, runs ``ethtool -S`` per netdev and
frames it all with ``@@`` section lines ending in ``@@end`` (see parsers/rdma.py). The collector
parses the dump with pure parsers and maps vendor counter names (mlx5, bnxt_en/bnxt_re,
ice/irdma) onto the catalog's vendor-neutral names.

Values are the drivers' raw monotonic counters (microseconds scaled to seconds): a driver reload
resets them and Prometheus' counter-reset handling copes; nothing is carried across polls.
A counter a driver does not have is simply absent. A garbled dump fails the host's poll
(reason parse); a missing tool or device makes the data partial and says which.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..commands import Command, Files, Script, Shape, Value
from ..errors import CommandError, ParseError
from ..hostnames import NameRule, read_name_rule
from ..parsers import ethtool as ethtool_parser
from ..parsers import rdma as rdma_parser
from ..parsers.ethtool import EthtoolStats, parse_ethtool_stats
from ..parsers.rdma import (HW_COUNTER_SETTINGS, HostDump, parse_host_dump, parse_hw_counters, parse_rdma_link,
                            parse_rdma_statistic)
from ..parsers.skipped import sources_of
from ..samples import PollResult, Sample
from .base import Collector, ErrorSink, parse_off_loop
from .options import OptionReader

if TYPE_CHECKING:  # the burst sampler is imported only when a config turns it on
    from .burst import BurstOptions

# ---------------------------------------------------------------------------------------------
# The one remote command. POSIX sh (dash, busybox): builtins where possible (read, globbing), one
# grep per port, one ethtool per netdev. $1 = sysfs|rdma, $2 = 1 to run ethtool, $3 = mapped|all
# (mapped: the host drops the counters no rule maps, see FILTER_AWK), $4... = devices; without
# arguments (installed as an sshd forced command): sysfs, ethtool, all counters, every device.

_SCRIPT_BODY = r"""
mode=${1:-sysfs}; with_ethtool=${2:-1}; counters=${3:-all}
if [ $# -ge 3 ]; then shift 3; else set --; fi
sys=/sys/class/infiniband
dump() {
echo "@@fabric-roce 1 $mode"
netdevs=""
add_netdev() { case " $netdevs " in *" $1 "*) ;; *) netdevs="$netdevs $1" ;; esac; }
if [ "$mode" = rdma ]; then
  out=$(rdma link show 2>&1); rc=$?
  echo "@@rdma_link $rc"; printf '%s\n' "$out"
  if [ $rc -eq 0 ]; then
    for nd in $(printf '%s\n' "$out" | sed -n 's/.* netdev \([^ ]*\).*/\1/p'); do add_netdev "$nd"; done
  fi
  out=$(rdma -j statistic show 2>/dev/null); rc=$?
  if [ $rc -ne 0 ]; then out=$(rdma statistic show 2>&1); rc=$?; fi
  echo "@@rdma_statistic $rc"; printf '%s\n' "$out"
else
  if [ $# -eq 0 ] && [ -d "$sys" ]; then
    for d in "$sys"/*; do [ -e "$d" ] && set -- "$@" "${d##*/}"; done
  fi
  for dev in "$@"; do
    d="$sys/$dev"
    if [ ! -d "$d" ]; then echo "@@missing $dev"; continue; fi
    drv=$(readlink "$d/device/driver" 2>/dev/null); drv=${drv##*/}
    echo "@@device $dev ${drv:--}"
    for p in "$d"/ports/*; do
      [ -d "$p" ] || continue
      port=${p##*/}; nd=""; ll=""; st=""
      read -r nd 2>/dev/null < "$p/gid_attrs/ndevs/0" || nd=""
      if [ -z "$nd" ]; then
        n=0; for f in "$d"/device/net/*; do [ -e "$f" ] && { n=$((n+1)); nd=${f##*/}; }; done
        [ $n -eq 1 ] || nd=""
      fi
      read -r ll 2>/dev/null < "$p/link_layer" || ll=""
      read -r st 2>/dev/null < "$p/state" || st=""
      echo "@@port $dev $port ${nd:--} ${ll:--} ${st:--}"
      if [ -d "$p/hw_counters" ]; then
        echo "@@hw_counters $dev $port"
        (cd "$p/hw_counters" && grep -s -H . -- * 2>/dev/null)
      fi
      [ -n "$nd" ] && [ "$ll" != InfiniBand ] && add_netdev "$nd"
    done
  done
fi
if [ "$with_ethtool" = 1 ]; then
  for nd in $netdevs; do
    out=$(ethtool -S "$nd" 2>&1); rc=$?
    echo "@@ethtool $nd $rc"; printf '%s\n' "$out"
  done
fi
echo "@@end"
}
if [ "$counters" = mapped ] && command -v awk >/dev/null 2>&1; then
  dump "$@" | LC_ALL=C awk '@FILTER@'
else
  dump "$@"
fi
""".strip() + "\n"

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


def mapping_table_markdown() -> str:
    """The per-vendor raw-name -> metric tables of docs/collectors/roce_nic.md (a test keeps the doc equal)."""
    out = []
    for title, rules in (("From `ethtool -S <netdev>`", ETHTOOL_RULES),
                         ("From the RDMA hardware counters (sysfs `hw_counters/*` or `rdma statistic show`)", HW_RULES)):
        out += [f"### {title}", ""]
        vendors = list(dict.fromkeys(rule.vendor for rule in rules))
        for vendor in vendors:
            out += [f"#### {vendor}", "", "| raw counter | metric | extra label | note |", "|---|---|---|---|"]
            for rule in rules:
                if rule.vendor != vendor:
                    continue
                extra = "priority" if "{p}" in rule.pattern else ("queue" if "{q}" in rule.pattern else "")
                same = [r.pattern for r in ETHTOOL_RULES + HW_RULES if r.metric == rule.metric]
                notes = []
                if rule.scale != 1.0:
                    notes.append("µs → s")
                if rule.families:
                    notes.append(f"{'/'.join(sorted(rule.families))} driver only")
                if len(same) > 1 and same.index(rule.pattern) > 0:
                    earlier = [f"`{x}`" for x in same[:same.index(rule.pattern)]
                               if any(r.pattern == x and r.vendor == vendor for r in rules)]
                    if earlier:
                        notes.append("used when " + ", ".join(earlier) + " is absent")
                out.append(f"| `{rule.pattern}` | `{rule.metric}` | {extra} | {'; '.join(notes)} |")
            out.append("")
    return "\n".join(out)


ETHTOOL_MAPPER = CounterMapper(ETHTOOL_RULES)
HW_MAPPER = CounterMapper(HW_RULES)


# ---------------------------------------------------------------------------------------------
# The host's side of "send back only what is mapped": an awk filter the script's output goes
# through when the daemon asks for ``mapped`` counters (every poll, unless expose_unmapped). A real
# mlx5 ``ethtool -S`` prints hundreds of per-channel counters no rule reads; dropping them on the
# host saves the daemon ciphering, splitting and parsing them.
#
# It drops a line only when the daemon's parsers would read it as a counter no rule maps, so the
# published series, problems and skipped lines are those of the whole dump (tests/roce_nic/
# test_mapped_only.py runs this program on every real capture and compares):
# - only in ``@@hw_counters`` sections and in ``@@ethtool`` sections that exited 0 (an error's text
#   is kept for the problem it becomes), there only after the ``NIC statistics:`` header;
# - only lines of the parsers' one-pass counter shape (``name:digits``, ``  name: digits``) with a
#   value under 20 digits (so it fits in 64 bits: a longer one is the daemon's error to report);
# - a name seen twice in a section is printed every time (the first one too): duplicates are the
#   parsers' to judge (an error in hw_counters, an ambiguous ethtool counter);
# - the number dropped per section follows it as ``@@dropped KIND KEY... N``, so a host whose
#   counters are all unmapped is still one that was read (a partial poll, not a failed one).
# Names are the rules' (every vendor's: a superset of the host driver's) and hw_counters' settings.
# POSIX awk (mawk, gawk, busybox); LC_ALL=C so [!-~] is bytes. Without awk on the host, the script
# sends everything, which reads the same.


def _filter_awk(rules: list[Rule]) -> str:
    exact = sorted({r.pattern for r in rules if "{" not in r.pattern} | set(HW_COUNTER_SETTINGS))
    patterns = sorted({re.sub(r"[.]", r"\\.", r.pattern).replace("{p}", "[0-7]").replace("{q}", "[0-9][0-9]?")
                       for r in rules if "{" in r.pattern})
    for name in exact + patterns:
        if not re.fullmatch(r"[A-Za-z0-9_.\-\\\[\]?]+", name):  # nothing the sh quoting or awk string could see
            raise ValueError(f"rule name unfit for the host filter: {name!r}")
    return (
        'BEGIN { n = split("' + " ".join(exact) + '", w, " "); for (i = 1; i <= n; i++) keep[w[i]] = 1 }\n'
        'function done() { if (kind != "" && cut > 0) print "@@dropped " key " " cut }\n'
        '/^@@/ { done(); kind = ""; cut = 0; split("", seen)\n'
        '  if ($1 == "@@hw_counters" && NF == 3) { kind = "hw"; key = "hw_counters " $2 " " $3; head = 1 }\n'
        '  else if ($1 == "@@ethtool" && NF == 3 && $3 == "0") { kind = "eth"; key = "ethtool " $2; head = 0 }\n'
        '  print; next }\n'
        'kind == "" { print; next }\n'
        '{ nm = ""; v = ""\n'
        '  if (kind == "hw") {\n'
        '    i = index($0, ":")\n'
        '    if (i > 1) { nm = substr($0, 1, i - 1); v = substr($0, i + 1)\n'
        '      if (nm !~ /^[A-Za-z0-9_.-]+$/ || length(nm) > 128) nm = "" }\n'
        '  } else {\n'
        '    if (head == 0) { if ($0 !~ /^[ \\t]*$/) head = ($0 ~ /^[ \\t]*NIC statistics:[ \\t]*$/) ? 1 : -1; print; next }\n'
        '    if (match($0, /:[^:]*$/)) { nm = substr($0, 1, RSTART - 1); v = substr($0, RSTART + 1)\n'
        '      sub(/^[ \\t]+/, "", nm); sub(/[ \\t]+$/, "", nm); sub(/^[ \\t]+/, "", v); sub(/[ \\t]+$/, "", v)\n'
        '      if (nm !~ /^[!-~]+( [!-~]+)*$/) nm = "" }\n'
        '  }\n'
        '  if (nm == "") { print; next }\n'
        '  if (nm in seen) { if (seen[nm] != "") { print seen[nm]; seen[nm] = ""; cut-- } print; next }\n'
        '  if (head > 0 && v ~ /^[0-9]+$/ && length(v) < 20 && !(nm in keep) && nm !~ /^(' + "|".join(patterns) + ')$/) {\n'
        '    seen[nm] = $0; cut++; next }\n'
        '  seen[nm] = ""; print }\n'
    )


FILTER_AWK = _filter_awk(ETHTOOL_RULES + HW_RULES)
REMOTE_SCRIPT = _SCRIPT_BODY.replace("@FILTER@", FILTER_AWK)


def driver_family(driver: str | None, device: str) -> str | None:
    """mlx5 | bnxt | intel from the PCI driver, else from the RDMA device name the driver chose."""
    probe = driver or device
    for prefix, family in (("mlx5", "mlx5"), ("bnxt", "bnxt"), ("ice", "intel"), ("irdma", "intel"),
                           ("i40", "intel")):
        if probe.startswith(prefix):
            return family
    return None


# ---------------------------------------------------------------------------------------------
# Options

_DEVICE_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


@dataclass(frozen=True)
class RoceNicOptions:
    devices: tuple[str, ...] = ()  # empty: every RDMA device the host has
    hw_counters_from: str = "sysfs"  # sysfs | rdma (iproute2 ``rdma statistic show``)
    ethtool: bool = True
    expose_unmapped: bool = False
    include_infiniband_ports: bool = False
    # the configured host name -> the scheduler's node name (the ``host`` label); None: as configured
    node_name: NameRule | None = None

    def host_label(self, configured: str) -> str:
        """The ``host`` label of a host configured as ``configured``: its scheduler node name when
        ``node_name`` is set and matches, else the name as configured."""
        if self.node_name is None:
            return configured
        return self.node_name.apply(configured) or configured

    burst: BurstOptions | None = None  # the sub-second sampler (collectors/burst.py), off by default


@dataclass
class PortData:
    device: str
    port: int
    netdev: str | None
    driver: str | None
    link_layer: str | None
    active: bool | None
    hw_counters: dict[str, int] | None = None
    ethtool: EthtoolStats | None = None
    dropped: int = 0  # counters the host read but left out as unmapped (FILTER_AWK)


def _burst_probe() -> str:
    from .burst import PROBE_SOURCE  # imported only when needed, as the sampler itself is

    return PROBE_SOURCE


_READ_FLAGS = ("-j", "--json", "-p", "--pretty", "-d", "--details")
# What roce_nic runs over SSH (the SSH guard's allow-list is generated from this): its one script
# (``command()``) and the burst sampler's probe, each pinned by its digest; and, one at a time, the
# reads the script makes (ethtool -S, rdma statistic/link show, cat of sysfs counters), all read-only.
SSH_COMMANDS = (
    Script("sh", "fabric-roce", lambda: REMOTE_SCRIPT),
    Script("python3", "fabric-burst", _burst_probe),
    *(Shape("ethtool", (stat, Value("name")), leading_flags=("--json",)) for stat in ("-S", "--statistics")),
    *(Shape("rdma", (*words, *rest), leading_flags=_READ_FLAGS)
      for words in (("statistic", "show"), ("stat", "show")) for rest in ((), ("link", Value("device_port")))),
    *(Shape("rdma", ("link", "show", *rest), leading_flags=_READ_FLAGS) for rest in ((), (Value("device_port"),))),
    *(Shape("cat", (*dashes, Value("rdma_counter_file"))) for dashes in ((), ("--",))),
    Files("rdma_counter_file", ("/sys/class/infiniband/*/ports/*/hw_counters/*",
                                "/sys/class/infiniband/*/ports/*/counters/*")),
)


class RoceNicCollector(Collector):
    name: ClassVar[str] = "roce_nic"
    transports: ClassVar[tuple[str, ...]] = ("ssh", "local")
    parse_sources: ClassVar[tuple[str, ...]] = sources_of(ethtool_parser, rdma_parser)
    ssh_commands: ClassVar[tuple[Command, ...]] = SSH_COMMANDS

    @classmethod
    def parse_options(cls, raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> RoceNicOptions:
        r = OptionReader(raw, path, err, base_dir)
        devices = r.string_list("devices")
        for i, dev in enumerate(devices):
            if not _DEVICE_NAME.fullmatch(dev):
                err(f"{path}.devices[{i}]", f"not an RDMA device name: {dev!r} (e.g. mlx5_0)")
        from .burst import parse_burst_options

        raw_burst = r.mapping("burst")
        burst = parse_burst_options(raw_burst or {}, f"{path}.burst", err, base_dir)  # read even when absent: the schema
        options = RoceNicOptions(
            devices=devices,
            hw_counters_from=r.string("hw_counters_from", "sysfs", choices=("sysfs", "rdma")) or "sysfs",
            ethtool=r.boolean("ethtool", True),
            expose_unmapped=r.boolean("expose_unmapped", False),
            include_infiniband_ports=r.boolean("include_infiniband_ports", False),
            node_name=read_name_rule(r, "node_name"),
            burst=burst if raw_burst is not None else None,
        )
        r.done()
        return options

    def __init__(self, ctx):
        super().__init__(ctx)
        if self.options is None:
            self.options = RoceNicOptions()
        self._burst = None  # BurstAccumulator, from the first poll with burst: on
        self._burst_runner = None  # burst.LocalRunner | StreamRunner

    def command(self) -> list[str]:
        o = self.options
        return ["sh", "-c", REMOTE_SCRIPT, "fabric-roce", o.hw_counters_from, "1" if o.ethtool else "0",
                "all" if o.expose_unmapped else "mapped", *o.devices]

    async def poll(self) -> PollResult:
        runner = self.ctx.runner()
        result = await runner.run(self.command(), timeout=self.ctx.remaining())
        if not result.stdout.startswith("@@fabric-roce"):
            if result.exit_status != 0:
                raise CommandError(f"roce_nic script failed: {result.describe_failure()}")
            raise ParseError(f"roce_nic script printed no @@fabric-roce header: {result.stdout[:80]!r}")
        host = self.options.host_label(self.host.name if self.host else "localhost")
        if self.options.burst is None:
            return await parse_off_loop(lambda text: result_from_dump(parse_host_dump(text), host, self.options),
                                        result.stdout)
        polled, ports = await parse_off_loop(lambda text: _result_and_ports(parse_host_dump(text), host, self.options),
                                             result.stdout)
        await self._burst_poll(ports, host, polled)
        return polled

    async def _burst_poll(self, ports: list[PortData], host: str, polled: PollResult) -> None:
        """Keep the burst sampler running on this poll's ports and add what it saw since the last poll."""
        from . import burst

        o = self.options.burst
        if self._burst is None:
            self._burst = burst.BurstAccumulator()
        columns = burst.plan_columns(ports, host, o, HW_MAPPER, ETHTOOL_MAPPER, driver_family)
        runner = self._burst_runner
        if runner is not None and runner.done() and runner.error:
            polled.problems.append(runner.error)
        if runner is None or runner.done() or runner.columns != columns:
            if runner is not None:
                await runner.close()
            self._burst_runner = None
            if columns:
                if self.group.transport == "local":
                    runner = burst.LocalRunner(columns, o, self._burst)
                else:
                    runner = burst.StreamRunner(columns, o, self._burst, self.ctx.runner(),
                                                self.group.credentials.connect_timeout)
                try:
                    runner.start()
                    self._burst_runner = runner
                except OSError as e:
                    polled.problems.append(f"burst sampler: cannot start: {e.strerror or e}")
            else:
                polled.problems.append("burst sampler: no port has a counter for the configured signals")
        elif runner.missing:
            polled.problems.append("burst sampler: cannot read " + "; ".join(sorted(runner.missing.values())[:5]))
        target = {"group": self.group.name, "host": host, "collector": self.name}
        polled.samples.extend(self._burst.samples(self._burst.take_peaks(), target))

    async def close(self) -> None:
        if self._burst_runner is not None:
            await self._burst_runner.close()
            self._burst_runner = None


# ---------------------------------------------------------------------------------------------
# dump -> ports -> samples (pure)


def result_from_dump(dump: HostDump, host: str, options: RoceNicOptions) -> PollResult:
    """The catalog samples of one host's parsed dump; raises CommandError when nothing was read."""
    problems: list[str] = []
    skipped: list = []  # lines the parsers skipped (skip-and-count rule)
    ports = _ports(dump, options, problems, skipped)
    result = _samples(ports, host, options, problems)
    result.skipped = skipped
    return result


def _result_and_ports(dump: HostDump, host: str, options: RoceNicOptions) -> tuple[PollResult, list[PortData]]:
    """``result_from_dump`` and the ports it was made of (for the burst sampler's plan)."""
    problems: list[str] = []
    skipped: list = []
    ports = _ports(dump, options, problems, skipped)
    result = _samples(ports, host, options, problems)
    result.skipped = skipped
    return result, ports


def _ports(dump: HostDump, o: RoceNicOptions, problems: list[str], skipped: list | None = None) -> list[PortData]:
    if dump.missing_devices:
        problems.append("RDMA devices not found on host: " + ", ".join(dump.missing_devices))
    ports: list[PortData] = []
    if dump.mode == "rdma":
        ports = _ports_from_rdma_tool(dump, skipped)
        absent = sorted(set(o.devices) - {p.device for p in ports})
        if absent:  # the sysfs script reports these itself (@@missing)
            problems.append("RDMA devices not found on host: " + ", ".join(absent))
    else:
        for dp in dump.ports:
            raw = dump.hw_counters.get((dp.device, dp.port))
            ports.append(PortData(
                dp.device, dp.port, dp.netdev, dump.devices.get(dp.device), dp.link_layer,
                None if dp.state is None else dp.state.split(":")[-1].strip() == "ACTIVE",
                _parse_in(parse_hw_counters, raw, f"{dp.device}/{dp.port} hw_counters", skipped)
                if raw is not None else None,
                dropped=dump.dropped.get(("hw_counters", (dp.device, dp.port)), 0) if raw is not None else 0))
        if not ports and not dump.missing_devices:
            raise CommandError("no RDMA devices under /sys/class/infiniband "
                                "(driver not loaded, or /sys not visible to this user/container?)")
    if not o.include_infiniband_ports:
        ports = [p for p in ports if p.link_layer != "InfiniBand"]
    if o.devices:
        wanted = set(o.devices)
        ports = [p for p in ports if p.device in wanted]
    by_netdev = {p.netdev: p for p in ports if p.netdev}
    missing_tool = []
    for netdev, out in dump.ethtool.items():
        port = by_netdev.get(netdev)
        if port is None:
            continue
        if out.exit_status == 0:
            port.ethtool = _parse_in(parse_ethtool_stats, out.text, f"{netdev}", skipped)
            port.dropped += dump.dropped.get(("ethtool", netdev), 0)
        elif out.exit_status == 127:
            missing_tool.append(netdev)
        else:
            tail = " | ".join(line for line in out.text.strip().splitlines()[-2:]) or "no output"
            problems.append(f"ethtool -S {netdev}: exit status {out.exit_status}: {tail[:200]}")
    if missing_tool:
        problems.append("ethtool: command not found on host (install ethtool or set option ethtool: false)")
    return ports


def _parse_in(parse, text: str, where: str, skipped: list | None = None):
    """Run a parser; a ParseError names the device or netdev it came from."""
    try:
        return parse(text, skipped=skipped)
    except ParseError as e:
        raise ParseError(f"{where}: {e}") from None


def _ports_from_rdma_tool(dump: HostDump, skipped: list | None = None) -> list[PortData]:
    for what, out in (("rdma link show", dump.rdma_link), ("rdma statistic show", dump.rdma_statistic)):
        if out is None:
            raise ParseError(f"roce dump: no {what} section")
        if out.exit_status == 127:
            raise CommandError("rdma: command not found on host (install iproute2, "
                                "or use hw_counters_from: sysfs)")
        if out.exit_status != 0:
            tail = " | ".join(out.text.strip().splitlines()[-2:]) or "no output"
            raise CommandError(f"{what}: exit status {out.exit_status}: {tail[:200]}")
    links = parse_rdma_link(dump.rdma_link.text, skipped=skipped)
    stats = parse_rdma_statistic(dump.rdma_statistic.text, skipped=skipped)
    if not links:
        raise CommandError("rdma link show lists no RDMA ports")
    ports = []
    for link in links:
        # iproute2 prints a LID only for InfiniBand ports
        ports.append(PortData(link.device, link.port, link.netdev, None, "InfiniBand" if link.lid is not None else None,
                              None if link.state is None else link.state == "ACTIVE",
                              stats.get((link.device, link.port))))
    return ports


def _samples(ports: list[PortData], host: str, o: RoceNicOptions, problems: list[str]) -> PollResult:
    samples: list[Sample] = []
    counters_read = 0
    expose = o.expose_unmapped
    for p in ports:
        counters_read += p.dropped  # read on the host, left out there as unmapped
        # One labels dict per label set of the port, shared by its samples: the snapshot render
        # formats each dict's text once (704 samples of an 8-NIC host: ~80 dicts, not 704).
        base = {"host": host, "device": p.device, "port": str(p.port), "netdev": p.netdev or ""}
        labels_of: dict[tuple, dict[str, str]] = {}
        family = driver_family(p.driver, p.device)
        if p.driver:
            samples.append(Sample("fabric_roce_nic_port_info", {**base, "driver": p.driver}, 1))
        if p.active is not None:
            samples.append(Sample("fabric_roce_nic_port_active", base, 1 if p.active else 0))
        for source, table, mapper in (("hw_counters", p.hw_counters, HW_MAPPER),
                                      ("ethtool", p.ethtool.counters if p.ethtool else None, ETHTOOL_MAPPER)):
            if not table:
                continue
            counters_read += len(table)
            unmapped: list[str] | None = [] if expose else None
            samples.extend(mapper.map(table, family, base, unmapped, labels_of))
            for name in unmapped or ():
                samples.append(Sample("fabric_roce_nic_unmapped_value",
                                      {**base, "source": source, "counter": name}, table[name]))
        if p.ethtool and p.ethtool.ambiguous:
            problems.append(f"ethtool -S {p.netdev}: counters printed twice with different values, "
                            f"not published: {', '.join(sorted(p.ethtool.ambiguous))}")
    if counters_read == 0 and problems:
        # Nothing at all was read: a failed host, not a partial one.
        raise CommandError("; ".join(problems))
    return PollResult(samples, problems)


if __name__ == "__main__":  # print the remote script, e.g. to install it as a forced command
    import sys

    sys.stdout.write("#!/bin/sh\n# fabric-exporter roce_nic remote script (usage: sysfs|rdma 1|0 [DEVICE...])\n"
                     + REMOTE_SCRIPT)
