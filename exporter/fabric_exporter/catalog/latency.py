"""Catalog entries for the ``latency_probe`` collector: RDMA latency measured with perftest
(``ib_write_lat`` / ``ib_send_lat`` / ``ib_read_lat``) between host pairs, pingmesh style.

Every latency series carries ``tool`` and ``message_bytes`` because write/send report half the round
trip and read the full one, and latency grows with size: mixing them in one quantile would be wrong.

Three histogram families instead of one family with several label sets, so that ``sum by (le)``
over a family never counts a probe twice:
  fabric_rdma_latency_seconds          per (source group, destination group) — always on, bounded
  fabric_rdma_latency_source_seconds   per source host
  fabric_rdma_latency_pair_seconds     per (source, destination) — optional (``per_pair_series``)
Each probe adds its ``#iterations`` exchanges to the histogram, distributed by the probe's own
min/median/p99/p99.9/max (piecewise-linear between those points), so ``histogram_quantile`` over
any window and any aggregation estimates the latency the exchanges saw.
"""

from .spec import MetricSpec

SRC = ("latency_probe",)

# Labels every latency series carries: what was measured.
_TEST = ("tool", "message_bytes")
PAIR = ("fabric", "source", "destination", "source_group", "destination_group") + _TEST
SOURCE = ("fabric", "source", "source_group") + _TEST
GROUP_PAIR = ("fabric", "source_group", "destination_group") + _TEST
# Probe bookkeeping per host; role = server (the destination, runs the perftest server) or client.
HOST_ROLE = ("fabric", "host", "host_group", "role")
# Per target group (the collector instance): round-level facts.
ROUND = ("fabric", "group")

# 1 µs .. 10 ms; finer where RDMA latency lives (1–10 µs), coarse above for tails and congestion.
LATENCY_BUCKETS = (
    1e-06, 1.25e-06, 1.5e-06, 1.75e-06, 2e-06, 2.5e-06, 3e-06, 3.5e-06, 4e-06, 5e-06, 6e-06, 8e-06,
    1e-05, 1.5e-05, 2e-05, 3e-05, 5e-05, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01,
)

_PERFTEST = "perftest report"
_HIST_HELP = ("RDMA exchange latency from perftest probes ({}); each probe adds #iterations observations "
              "spread by its t_min/t_typical/99%/99.9%/t_max.")

METRICS = [
    MetricSpec("fabric_rdma_latency_seconds", "histogram", "seconds",
               _HIST_HELP.format("per source group and destination group"),
               (GROUP_PAIR,), SRC, origin=(_PERFTEST,), buckets=LATENCY_BUCKETS),
    MetricSpec("fabric_rdma_latency_source_seconds", "histogram", "seconds",
               _HIST_HELP.format("per source host, all its destinations"),
               (SOURCE,), SRC, origin=(_PERFTEST,), buckets=LATENCY_BUCKETS),
    MetricSpec("fabric_rdma_latency_pair_seconds", "histogram", "seconds",
               _HIST_HELP.format("per source and destination host; only with per-pair series on"),
               (PAIR,), SRC, origin=(_PERFTEST,), buckets=LATENCY_BUCKETS),
    # Last probe of each pair (only with per-pair series on; withheld once older than keep_results_for).
    MetricSpec("fabric_rdma_latency_min_seconds", "gauge", "seconds",
               "Minimum latency of the pair's last probe (perftest t_min[usec]).",
               (PAIR,), SRC, origin=("t_min[usec]",)),
    MetricSpec("fabric_rdma_latency_median_seconds", "gauge", "seconds",
               "Median latency of the pair's last probe (perftest t_typical[usec]).",
               (PAIR,), SRC, origin=("t_typical[usec]",)),
    MetricSpec("fabric_rdma_latency_avg_seconds", "gauge", "seconds",
               "Mean latency of the pair's last probe (perftest t_avg[usec]).",
               (PAIR,), SRC, origin=("t_avg[usec]",)),
    MetricSpec("fabric_rdma_latency_p99_seconds", "gauge", "seconds",
               "99th percentile latency of the pair's last probe (perftest 99% percentile[usec]).",
               (PAIR,), SRC, origin=("99% percentile[usec]",)),
    MetricSpec("fabric_rdma_latency_p999_seconds", "gauge", "seconds",
               "99.9th percentile latency of the pair's last probe (perftest 99.9% percentile[usec]).",
               (PAIR,), SRC, origin=("99.9% percentile[usec]",)),
    MetricSpec("fabric_rdma_latency_max_seconds", "gauge", "seconds",
               "Maximum latency of the pair's last probe (perftest t_max[usec]; the 2 largest samples are dropped).",
               (PAIR,), SRC, origin=("t_max[usec]",)),
    MetricSpec("fabric_rdma_latency_last_probe_timestamp_seconds", "gauge", "seconds",
               "Unix time the pair's last successful probe ended (the age of the gauges above).",
               (PAIR,), SRC),
    # Probe accounting: a probe that gives no result is counted here and never published as a latency.
    MetricSpec("fabric_rdma_latency_probes_total", "counter", "",
               "Probes a host took part in, by role (client = source, server = destination).",
               (HOST_ROLE,), SRC),
    MetricSpec("fabric_rdma_latency_probe_failures_total", "counter", "",
               "Probes that gave no latency, by the host and role that failed and the reason "
               "(connect, auth, host_key, timeout, host_check, server_failed, client_failed, parse).",
               (HOST_ROLE + ("reason",),), SRC),
    MetricSpec("fabric_rdma_latency_round_probes", "gauge", "",
               "Probes of the last round by outcome (ok, failed, not_run: left out by the round deadline).",
               (ROUND + ("outcome",),), SRC),
    MetricSpec("fabric_rdma_latency_plan_pairs", "gauge", "",
               "Ordered host pairs the probe plan covers over its rotation.", (ROUND,), SRC),
    MetricSpec("fabric_rdma_latency_plan_cover_rounds", "gauge", "",
               "Rounds the plan needs to probe every planned pair at least once.", (ROUND,), SRC),
]
