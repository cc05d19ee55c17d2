"""The roce_nic collector's burst sampler (option ``burst:``): sub-second views of the lossless
priority's congestion signals, per NIC port and signal (collectors/burst.py).

A 200 ms PFC storm is 0.7 % of a 30 s rate; these series keep it visible. ``signal`` is one of
pfc_rx_pause_time, pfc_tx_pause_time (fractions of the window paused, 0..1), pfc_rx_pause,
pfc_tx_pause (pause frames per second), ecn_marked, cnp_sent, rx_discards (packets per second).
"""

from .labels import NIC_PORT
from .spec import MetricSpec

NIC = "roce_nic"
NIC_PORT_SIGNAL = NIC_PORT + ("signal",)

#: one bucket set for fractions (<= 1) and rates (per second): a histogram family has one set
BURST_BUCKETS = (0.05, 0.25, 0.5, 0.9, 1.0, 100.0, 1e4, 1e6)

_RAW = ("rx_prio{p}_pause_duration", "tx_prio{p}_pause_duration", "rx_prio{p}_pause", "tx_prio{p}_pause",
        "np_ecn_marked_roce_packets", "np_cnp_sent", "rx_prio{p}_discards", "rx_discards_phy")

METRICS = [
    MetricSpec("fabric_roce_nic_burst_peak_ratio", "gauge", "",
               "Highest windowed value of the signal among the sampler's windows (option burst.window, e.g. "
               "100 ms) that ended during the collector's last poll interval: the fraction of the window paused "
               "(pfc_*_pause_time) or the rate per second (counted signals). Held until the next poll, not reset "
               "when scraped; compare with the rate() of the same counter to see the burst an average hides.",
               (NIC_PORT_SIGNAL,), (NIC,), _RAW),
    MetricSpec("fabric_roce_nic_burst_window_ratio", "histogram", "",
               "Every sampler window's value of the signal (fraction paused or rate per second, as the peak), "
               "so histogram_quantile over ports and hosts shows how often windows are congested.",
               (NIC_PORT_SIGNAL,), (NIC,), _RAW, buckets=BURST_BUCKETS),
    MetricSpec("fabric_roce_nic_bursts_total", "counter", "",
               "Bursts of the signal: maximal runs of sampler windows at or above its threshold "
               "(option burst.thresholds; default 0.5 of the window paused), counted when they start.",
               (NIC_PORT_SIGNAL,), (NIC,), _RAW),
    MetricSpec("fabric_roce_nic_burst_seconds_total", "counter", "seconds",
               "Time the signal spent in bursts (the summed windows of fabric_roce_nic_bursts_total's runs).",
               (NIC_PORT_SIGNAL,), (NIC,), _RAW),
]
