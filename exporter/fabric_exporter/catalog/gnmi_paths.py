"""The gNMI containers whose fields and leaves the catalog's rows name (RawCounter ``source``).

A row names a value the way the switch sends it below one container: a SONiC COUNTERS_DB field
(``SAI_PORT_STAT_IF_IN_OCTETS`` in a ``COUNTERS/Ethernet*`` entry), or an OpenConfig leaf below a
keyed list's ``state`` (``counters/in-octets``, ``in-pause-duration``). ``vendor`` is the schema
family (sonic, openconfig); ``families`` the dialects of the gnmi_switch collector a row holds for
when not all of its family's (NVIDIA Cumulus' own leaves: ``cumulus``); ``labels`` what a row's
values carry besides the container's keys (region="headroom"). The collector's lookup tables, its
subscription paths and the path tables of docs/collectors/gnmi_switch.md are built from these rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from .spec import GNMI_SOURCE, RawCounter

SONIC, OPENCONFIG = "sonic", "openconfig"  # the schema families (RawCounter.vendor)
SHOWN = {SONIC: "gNMI SONiC", OPENCONFIG: "gNMI OpenConfig"}  # how HELP names them
CUMULUS = frozenset({"cumulus"})  # NVIDIA Cumulus' leaves: its dialect only (RawCounter.families)
OPENCONFIG_ONLY = frozenset({"openconfig"})  # a standard leaf Cumulus answers otherwise


@dataclass(frozen=True)
class GnmiContainer:
    """One container a switch sends values under: ``xpath`` below ``target`` (the prefix's target,
    SONiC's DB name); ``word`` the collector's ``tables`` option word (SONiC) or record kind
    (OpenConfig: interface, queue, priority, pg)."""
    vendor: str
    word: str
    target: str
    xpath: str

    @property
    def source(self) -> str:
        """A row's ``source`` for this container."""
        return f"{GNMI_SOURCE}{self.target}:{self.xpath}" if self.target else f"{GNMI_SOURCE}{self.xpath}"

    def field(self, name: str, scale: float = 1.0, dialects: frozenset[str] | None = None,
              labels: tuple[tuple[str, str], ...] = ()) -> RawCounter:
        """The value ``name`` of this container (a field, or a leaf path below it)."""
        return RawCounter(name, self.source, scale=scale, vendor=self.vendor, families=dialects, labels=labels,
                          shown=SHOWN[self.vendor])


# sonic-gnmi's COUNTERS_DB tables (sonic-net/sonic-gnmi testdata/COUNTERS:*): SAI stat names
SONIC_PORTS = GnmiContainer(SONIC, "ports", "COUNTERS_DB", "COUNTERS/Ethernet*")
SONIC_QUEUES = GnmiContainer(SONIC, "queues", "COUNTERS_DB", "COUNTERS/Ethernet*/Queues")
SONIC_PFCWD = GnmiContainer(SONIC, "pfcwd", "COUNTERS_DB", "COUNTERS/Ethernet*/Pfcwd")
SONIC_PG_WATERMARKS = GnmiContainer(SONIC, "pg_watermarks", "COUNTERS_DB",
                                    "PERIODIC_WATERMARKS/Ethernet*/PriorityGroups")
# OpenConfig (openconfig-interfaces, openconfig-qos) and NVIDIA Cumulus' leaves under the same lists
OC_INTERFACE = GnmiContainer(OPENCONFIG, "interface", "", "/interfaces/interface[name=*]/state")
OC_QUEUE = GnmiContainer(OPENCONFIG, "queue", "",
                         "/qos/interfaces/interface[interface-id=*]/output/queues/queue[name=*]/state")
OC_PRIORITY = GnmiContainer(OPENCONFIG, "priority", "",
                            "/qos/interfaces/interface[interface-id=*]/switch-priority[priority=*]/state")
OC_PG = GnmiContainer(OPENCONFIG, "pg", "", "/qos/interfaces/interface[interface-id=*]/input/priority-group[pg-id=*]/state")

CONTAINERS = (SONIC_PORTS, SONIC_QUEUES, SONIC_PFCWD, SONIC_PG_WATERMARKS, OC_INTERFACE, OC_QUEUE, OC_PRIORITY, OC_PG)
SOURCES = tuple(c.source for c in CONTAINERS)
