"""snmp_switch: RoCE switch counters over SNMP (IF-MIB, PFC and queue MIBs), one poll per switch.

Modules: ``options`` (what to walk), ``collector`` (the poll: walks, names, restarts),
``rows`` (rows to samples, kept across polls), ``series`` (per-row state and Counter32 extension).

Each poll: one GET (sysUpTime.0, ifNumber.0), then every column of the selected modules walked with
GETBULK, several at once (``max_concurrent_walks``), then rows mapped to catalog samples through
the declarative tables in ``snmp_modules``.

* Interface names (ifName, ifAlias) are walked once and cached; the cache is refreshed when
  sysUpTime goes back (agent restart), ifNumber changes, or a table names an ifIndex it lacks.
* Counter32 columns are extended to 64 bits across polls (a wrap adds 2^32) while the agent stays
  up, so a wrap is never mistaken for a reset. A decrease that cannot be a wrap (the delta would be
  more than half the range) is passed through as the reset it is. An agent restart, seen as
  sysUpTime going back, drops that state.
* A table whose walk fails, or whose columns disagree on their rows, makes the poll partial: the
  problem is reported and the table is never presented as complete. If every table fails the poll
  fails with the first error.
* Modules ``lldp`` (LLDP-MIB) and ``lldp_v2`` (LLDP-V2-MIB) walk the LLDP remote table beside the
  counters: each interface's neighbour (host and port), ``fabric_roce_switch_if_neighbor_info``
  (collectors/lldp.py); the host through the option ``neighbor_name`` (the scheduler's node name).
"""

from .collector import SnmpSwitchCollector
from .options import SnmpSwitchOptions

__all__ = ["SnmpSwitchCollector", "SnmpSwitchOptions"]
