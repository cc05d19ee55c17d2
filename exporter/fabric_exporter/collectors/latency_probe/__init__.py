"""RDMA latency probes between host pairs with perftest over SSH, pingmesh style.

Modules: options (the options block), plan (the pair plan and the round runner: which pairs each
round probes, with how much concurrency), ports (TCP ports for perftest servers), histogram
(probe reports folded into cumulative histograms), collector (the entry point: one round per poll).
"""

from .collector import LatencyProbeCollector
from .options import LatencyProbeOptions

__all__ = ["LatencyProbeCollector", "LatencyProbeOptions"]
