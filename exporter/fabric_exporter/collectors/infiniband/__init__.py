"""InfiniBand fabric collector: the whole fabric from one management/SM node, with the stock tools.

Modules: options (the options block), tools (running the tools: argv, retries, the sweeps,
perfquery batches), join (the two sweeps -> one record per port), state (topology, expected ports,
node facts, name map), mapping (records + state -> samples, pure), ibdiagnet (ibdiagnet2 files),
counters (raw counter tables built from the catalog), focus (the focus set: a few ports read every
focus_interval between sweeps by a background task the collector owns; the sweep publishes what it
saw), collector (the entry point).

A poll never starts a process per port. A steady-state poll runs two fabric-wide sweeps side by side:

* ``ibqueryerrors --counters --report-port``, live (it discovers the fabric itself): data/packet
  counters (64-bit where the device has them) and link info (state, physical state, width, speed,
  peer, "Could be" = what both ends support) for every port, down ports included. Live because a
  sweep that loads a discovery cache prints the cached links: a link taken down would not show;
* ``ibqueryerrors --load-cache <file> --threshold-file /dev/null``: every non-zero error counter and
  PortXmitWait. An empty threshold file makes the threshold 0, so a port the sweep checked and did
  not list has all its error counters at exactly 0. Exit status 1 means "errors found", not a failure.

``ibnetdiscover --cache <file>`` rewrites that cache every ``topology_interval`` and on the poll after
the live sweep differs from the topology (a node or link appeared or went, a LID moved). It runs
beside the live counter sweep (which does not read the cache); the error sweep starts after it.

Without the cache (``use_discovery_cache: false``) both sweeps discover live and ``ibnetdiscover``
runs on the same interval and triggers.

Every port seen (in a discovery or a sweep) is remembered: one the sweep no longer returns is
reported missing (its counters withheld, the poll partial) instead of vanishing as if healthy, and a
port seen linked that is now down is flagged.

A crashed tool (killed by a signal, ibsim's occasional segfault) or empty output is retried once,
then fails the poll; it is never read as "no errors". Counters are never reset unless
``reset_latched_counters`` is set, and then only the latched ones, with ``perfquery -R``.
"""

from __future__ import annotations

from .collector import InfinibandCollector
from .counters import DATA_COUNTERS, ERROR_COUNTERS, QP1_DROPPED, RESET_BITS
from .join import SweptPort, join_sweeps
from .mapping import samples_from_sweep
from .options import TOOLS, InfinibandOptions
from .state import FabricState

__all__ = ["DATA_COUNTERS", "ERROR_COUNTERS", "QP1_DROPPED", "RESET_BITS", "TOOLS", "FabricState",
           "InfinibandCollector", "InfinibandOptions", "SweptPort", "join_sweeps", "samples_from_sweep"]
