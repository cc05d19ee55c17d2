"""Switch metrics only gNMI gives (``gnmi_switch``): PFC pause durations, transmit-wait and buffer
occupancy peaks. NVIDIA Cumulus 5.x serves these over gNMI only (no SNMP object, no CLI table);
SONiC serves its PERIODIC_WATERMARKS table. Meanings shared with SNMP and the CLI keep their names
in ``roce.py`` and ``roce_switch.py`` (with ``gnmi_switch`` among their sources).

The received-pause seconds and the queue/PG watermarks are declared once, in ``roce_switch.py``, with
the SONiC CLI (watermarkstat, pfcstat --history): one meaning, one name, whichever path reads it.
"""

from .gnmi_paths import CUMULUS, OC_INTERFACE, OC_PRIORITY, OC_QUEUE
from .labels import SWITCH_IF, SWITCH_IF_PRIORITY, SWITCH_IF_QUEUE
from .spec import MetricSpec

GNMI = "gnmi_switch"

METRICS = [
    MetricSpec("fabric_roce_switch_pfc_tx_pause_seconds_total", "counter", "seconds",
               "Time the interface asked its peer to pause on the priority ({raw}).",
               (SWITCH_IF_PRIORITY,), (GNMI,),
               raw=(OC_PRIORITY.field("out-pause-duration", scale=1e-6, dialects=CUMULUS),)),
    MetricSpec("fabric_roce_switch_if_tx_wait_byte_times_total", "counter", "byte_times",
               "Wire-speed one-byte time intervals the interface had data to send but sent none "
               "({raw}, Cumulus); divide a rate by the speed in bytes per second for the stalled fraction.",
               (SWITCH_IF,), (GNMI,), raw=(OC_INTERFACE.field("counters/tx-wait", dialects=CUMULUS),)),
    MetricSpec("fabric_roce_switch_queue_occupancy_bytes", "gauge", "bytes",
               "Egress queue depth when the switch sampled it ({raw}, Cumulus).",
               (SWITCH_IF_QUEUE,), (GNMI,), raw=(OC_QUEUE.field("instant-queue-len", dialects=CUMULUS),)),
    MetricSpec("fabric_roce_switch_gnmi_stream_updates", "gauge", "",
               "Notifications the gNMI stream (mode stream) delivered since it (re)subscribed; 0 after a "
               "resubscribe. A value that stops growing while the target is up means a stalled stream.",
               (("fabric", "switch"),), (GNMI,)),
    MetricSpec("fabric_roce_switch_gnmi_resubscribes_total", "counter", "events",
               "Times the gNMI stream was (re)started after a failure or because the watchdog saw no "
               "update within 3 sample intervals.",
               (("fabric", "switch"),), (GNMI,)),
]
