"""gnmi_switch: RoCE switch counters over gNMI (SONiC COUNTERS_DB; OpenConfig and NVIDIA Cumulus paths).

gRPC through ``grpcio`` and the published gNMI stubs ``gnmi-pb`` (optional extra ``[gnmi]``), on
``grpc.aio``: no thread, no blocking call. Only ``Subscribe`` is used (Cumulus has no Get):

* ``mode: poll`` (the default for SONiC, whose SAMPLE streams have stalled in releases: sonic-net/
  sonic-buildimage#22201, #28586): each poll is one Subscribe ONCE of the dialect's paths, read up
  to its ``sync_response`` within the poll's deadline.
* ``mode: stream``: one long-lived Subscribe STREAM per switch, SAMPLE at ``sample_interval``
  (>= 1 s: SONiC refuses less) and ON_CHANGE for oper status. A background task keeps the latest
  value of every path; a poll turns those values into samples (no I/O), so the scheduler, the store
  and /metrics work as for every other collector: a scrape joins pre-rendered bytes. A watchdog
  restarts the subscription when no update came within 3 sample intervals, and until the new
  subscription has synced the target's polls fail, so its series go stale instead of freezing.

Dialects are a table (``DIALECTS``): the paths a switch OS serves and how their values become the
catalog's samples. Names and labels are those of ``snmp_switch`` and ``switch_cli`` for the same
meaning (``interface`` = the SONiC port name / ifName; queues ``UC<n>``/``MC<n>``), so dashboards
and rules work unchanged, and one switch must take each series from one source only (``tables``).

Security: TLS verified against ``ca_file`` (or the system's roots) by default; ``insecure: true``
only when said. Username and password come from files and travel as gRPC metadata, as SONiC and
Cumulus expect. gRPC status codes become the exporter's reasons: UNAVAILABLE connect (a failed TLS
handshake: auth), UNAUTHENTICATED / PERMISSION_DENIED auth, DEADLINE_EXCEEDED timeout,
INVALID_ARGUMENT / NOT_FOUND / UNIMPLEMENTED config.

Which field or leaf feeds which metric is declared once, as catalog rows (``catalog/gnmi_paths.py``'s
containers, rows on the metrics' specs); ``dialects`` compiles them at import.

Modules: options (the options block), dialects (the dialect table: paths, and the catalog rows
compiled into lookup tables), docs (docs/collectors/gnmi_switch.md's tables, from the rows), decode
(notifications -> a switch's latest values, pure), emit (values -> samples), session (the channel,
credentials, requests, Subscribe ONCE and gRPC status -> reasons), stream (stream mode's background
subscription and its watchdog), collector (the entry point).
"""

from .collector import GnmiSwitchCollector
from .decode import OcShapes, OcState, SonicState, _key, elems_of, typed_value
from .dialects import (CUMULUS_PATHS, DIALECTS, OC_PATHS, OPER_STATUS, PFCWD_STATUS, QUEUE_CAST, SONIC_NAME_MAPS,
                       SONIC_PATHS, TEXT_ENUMS, ContainerTable, Dialect, GnmiPath, compile_container)
from .emit import OcEmit, oc_samples, sonic_samples
from .options import DEFAULT_PORT, MIN_SAMPLE_INTERVAL, GnmiSwitchOptions
from .session import CORE_WRITE_RACE, GnmiSession, error_from_status, to_path
from .stream import WATCHDOG_INTERVALS, GnmiStream

__all__ = ["GnmiSwitchCollector", "GnmiSwitchOptions", "DIALECTS", "error_from_status", "sonic_samples",
           "oc_samples", "SonicState", "OcState", "OcShapes", "OcEmit", "GnmiSession", "GnmiStream", "to_path",
           "typed_value", "elems_of", "Dialect", "GnmiPath", "ContainerTable", "compile_container", "DEFAULT_PORT",
           "MIN_SAMPLE_INTERVAL", "WATCHDOG_INTERVALS", "CORE_WRITE_RACE", "QUEUE_CAST", "OPER_STATUS", "PFCWD_STATUS",
           "TEXT_ENUMS", "SONIC_PATHS", "SONIC_NAME_MAPS", "OC_PATHS", "CUMULUS_PATHS", "_key"]
