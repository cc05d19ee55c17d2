"""The switch CLI commands whose output the catalog's rows name (RawCounter ``source``), and who prints them.

A row names a counter the way the command prints it (a table header, a JSON key, an ``ethtool``
name, an NVUE path); the switch_cli collector maps its parsers' records through these rows
(``fabric_exporter.mapping``), and the per-dialect table of docs/collectors/switch_cli.md is
generated from them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .spec import MICROSECONDS, RawCounter

SONIC_PFC_RX = "show pfc counters: Port Rx"
SONIC_PFC_TX = "show pfc counters: Port Tx"
SONIC_PFC_HISTORY = "show pfc counters --history"
SONIC_QUEUE = "show queue counters"
SONIC_QUEUE_JSON = "show queue counters --json"
SONIC_WRED = "show queue wredcounters"
SONIC_WRED_JSON = "show queue wredcounters --json"
SONIC_PFCWD = "show pfcwd stats"
SONIC_QUEUE_WATERMARK = "show queue [persistent-]watermark unicast|multicast|all [--json]"
SONIC_PG_WATERMARK = "show priority-group [persistent-]watermark shared|headroom [--json]"
SONIC_BUFFER_POOL_WATERMARK = "show buffer_pool [persistent-]watermark"
SONIC_HEADROOM_POOL_WATERMARK = "show headroom-pool [persistent-]watermark"
EOS_DISCARDS = "show interfaces counters discards | json"
EOS_PFC = "show priority-flow-control counters | json"
EOS_ECN = "show qos interfaces ecn counters queue | json"  # one count per tx-queue under queueCounters
EOS_QUEUE = "show interfaces counters queue: Egress Queue Counters"
EOS_VOQ = "show interfaces counters queue: Aggregate VoQ Counters"
CUMULUS_ETHTOOL = "ethtool -S swp<n>"
NVUE_ROCE = "nv show interface <swp> qos roce counters"


@dataclass(frozen=True)
class Printed:
    """Names a command prints one counter under (several: spellings of one metric), in ``scale``."""
    names: tuple[str, ...]
    scale: float = 1


@dataclass(frozen=True)
class CliDialect:
    """A switch OS's part of the catalog: how HELP and the docs name it, and what its commands print:
    source -> metric -> the counter's name as printed (a ``Printed`` for several, or a scale)."""
    shown: str
    prints: dict[str, dict[str, str | Printed]]


# A new dialect is one entry here (its sources above it); its rows join the named metrics when the
# catalog is built (catalog/__init__.py), so the metric modules need no edit.
DIALECT_COUNTERS: dict[str, CliDialect] = {
    "sonic": CliDialect("SONiC", {
        SONIC_PFC_RX: {"fabric_roce_pfc_rx_pause_frames_total": "PFC{p}"},
        SONIC_PFC_TX: {"fabric_roce_pfc_tx_pause_frames_total": "PFC{p}"},
        SONIC_PFC_HISTORY: {"fabric_roce_switch_pfc_rx_pause_seconds_total": Printed(("Total RX Pause Time US",),
                                                                                      MICROSECONDS),
                            "fabric_roce_switch_pfc_rx_pause_transitions_total": "RX Pause Transitions"},
        SONIC_QUEUE_WATERMARK: {"fabric_roce_switch_queue_watermark_bytes": Printed(("UC{w}", "MC{w}", "ALL{w}"))},
        SONIC_PG_WATERMARK: {"fabric_roce_switch_pg_watermark_bytes": "PG{g}"},
        SONIC_BUFFER_POOL_WATERMARK: {"fabric_roce_switch_buffer_pool_watermark_bytes": "Bytes"},
        SONIC_HEADROOM_POOL_WATERMARK: {"fabric_roce_switch_headroom_pool_watermark_bytes": "Bytes"},
        SONIC_QUEUE: {"fabric_roce_switch_queue_tx_packets_total": "Counter/pkts",
                      "fabric_roce_switch_queue_tx_bytes_total": "Counter/bytes",
                      "fabric_roce_switch_queue_dropped_packets_total": "Drop/pkts",
                      "fabric_roce_switch_queue_dropped_bytes_total": "Drop/bytes"},
        SONIC_QUEUE_JSON: {"fabric_roce_switch_queue_tx_packets_total": "totalpacket",
                           "fabric_roce_switch_queue_tx_bytes_total": "totalbytes",
                           "fabric_roce_switch_queue_dropped_packets_total": "droppacket",
                           "fabric_roce_switch_queue_dropped_bytes_total": "dropbytes"},
        SONIC_WRED: {"fabric_roce_ecn_marked_packets_total": "EcnMarked/pkts",
                     "fabric_roce_switch_queue_wred_dropped_packets_total": "WredDrp/pkts",
                     "fabric_roce_switch_queue_wred_dropped_bytes_total": "WredDrp/bytes",
                     "fabric_roce_switch_queue_ecn_marked_bytes_total": "EcnMarked/bytes"},
        SONIC_WRED_JSON: {"fabric_roce_ecn_marked_packets_total": "ecnmarkedpacket",
                          "fabric_roce_switch_queue_wred_dropped_packets_total": "wreddroppacket",
                          "fabric_roce_switch_queue_wred_dropped_bytes_total": "wreddropbytes",
                          "fabric_roce_switch_queue_ecn_marked_bytes_total": "ecnmarkedbytes"},
        SONIC_PFCWD: {"fabric_roce_switch_pfcwd_storms_detected_total": "STORM DETECTED",
                      "fabric_roce_switch_pfcwd_storms_restored_total": "STORM RESTORED",
                      "fabric_roce_switch_pfcwd_tx_dropped_packets_total": "TX DROP",
                      "fabric_roce_switch_pfcwd_rx_dropped_packets_total": "RX DROP"},
    }),
    "eos": CliDialect("EOS", {
        EOS_DISCARDS: {"fabric_roce_rx_discards_total": "inDiscards",
                       "fabric_roce_tx_discards_total": "outDiscards"},
        EOS_PFC: {"fabric_roce_switch_pfc_rx_frames_total": "rxFrames",
                  "fabric_roce_switch_pfc_tx_frames_total": "txFrames"},
        EOS_ECN: {"fabric_roce_ecn_marked_packets_total": "queueCounters"},
        EOS_QUEUE: {"fabric_roce_switch_queue_dropped_packets_total": "OutDropPkts",
                    "fabric_roce_switch_queue_dropped_bytes_total": "OutDropOctets",
                    "fabric_roce_switch_queue_enqueued_packets_total": "OutEnqPkts",
                    "fabric_roce_switch_queue_enqueued_bytes_total": "OutEnqOctets"},
        EOS_VOQ: {"fabric_roce_switch_voq_packets_total": "Pkts",
                  "fabric_roce_switch_voq_bytes_total": "Octets",
                  "fabric_roce_switch_voq_dropped_packets_total": "DropPkts",
                  "fabric_roce_switch_voq_dropped_bytes_total": "DropOctets"},
    }),
    "cumulus": CliDialect("Cumulus", {
        CUMULUS_ETHTOOL: {"fabric_roce_pfc_rx_pause_frames_total": "HwIfInPfc{p}Pkt",
                          "fabric_roce_pfc_tx_pause_frames_total": "HwIfOutPfc{p}Pkt",
                          "fabric_roce_rx_discards_total": "HwIfInDiscards",
                          "fabric_roce_tx_discards_total": "HwIfOutDiscards",
                          "fabric_roce_switch_if_rx_buffer_drops_total": "HwIfInBufferDrops",
                          "fabric_roce_switch_if_tx_queue_drops_total": "HwIfOutQDrops",
                          "fabric_roce_switch_queue_wred_dropped_packets_total": "HwIfOutQ{q}WredDrops"},
    }),
    "nvue": CliDialect("NVUE", {
        NVUE_ROCE: {
            "fabric_roce_switch_if_ecn_marked_packets_total": "tx-stats/tx-ecn-stats/ecn-marked-packets",
            "fabric_roce_switch_if_rx_traffic_packets_total": Printed((
                "rx-stats/rx-roce-stats/roce-packets", "rx-stats/rx-non-roce-stats/non-roce-packets")),
            "fabric_roce_switch_if_tx_traffic_packets_total": Printed((
                "tx-stats/tx-roce-stats/roce-packets", "tx-stats/tx-cnp-stats/cnp-packets")),
            "fabric_roce_switch_if_rx_no_buffer_discards_total": Printed((
                "rx-stats/rx-roce-stats/no-buffer-discard", "rx-stats/rx-non-roce-stats/no-buffer-discard")),
            "fabric_roce_switch_if_tx_no_buffer_discards_total": Printed((
                "tx-stats/tx-roce-stats/unicast-no-buffer-discard", "tx-stats/tx-cnp-stats/unicast-no-buffer-discard")),
        },
    }),
}

#: who prints each source (RawCounter.vendor)
VENDOR = {source: vendor for vendor, dialect in DIALECT_COUNTERS.items() for source in dialect.prints}
SOURCES = tuple(VENDOR)
#: the collector that reads these rows (a metric they join is emitted by it)
ROWS_COLLECTOR = "switch_cli"


def rows_of(dialects: dict[str, CliDialect]) -> dict[str, tuple[RawCounter, ...]]:
    """metric -> the rows ``dialects`` declare for it, in declaration order."""
    rows: dict[str, list[RawCounter]] = {}
    for vendor, dialect in dialects.items():
        for source, counters in dialect.prints.items():
            shown = f"{dialect.shown} '{source}'"
            for metric, printed in counters.items():
                if isinstance(printed, str):
                    printed = Printed((printed,))
                rows.setdefault(metric, []).extend(
                    RawCounter(name, source, scale=printed.scale, vendor=vendor, shown=shown) for name in printed.names)
    return {metric: tuple(r) for metric, r in rows.items()}


#: metric -> its rows from the CLI dialects (attached to the specs when the catalog is built)
ROWS = rows_of(DIALECT_COUNTERS)


def nvue_traffic(path: str) -> str:
    """The ``traffic`` label of an NVUE RoCE counter: its group's kind (rx-non-roce-stats -> non_roce,
    tx-cnp-stats -> cnp)."""
    group = path.split("/")[1]
    return group.split("-", 1)[1].removesuffix("-stats").replace("-", "_")


#: the labels a capture of a CLI row's name becomes (docs)
CAPTURE_LABELS = {"p": "priority = {p}", "q": "queue = UC{q}", "w": "queue = the column as printed", "g": "pg = {g}"}

DOC_BEGIN = "<!-- cli counters: generated by fabric_exporter.catalog.switch_commands.markdown() -->"
DOC_END = "<!-- end of cli counters -->"


def markdown() -> str:
    """The counters each dialect's commands print and the metric each is (docs/collectors/switch_cli.md;
    a test keeps the doc equal), from the catalog's rows."""
    from . import CATALOG  # the catalog imports this module: read it when called

    out = [DOC_BEGIN, "", "| dialect | command | counter as printed | metric | labels from the counter |",
           "|---|---|---|---|---|"]
    for source in SOURCES:
        for spec in CATALOG.values():
            for row in spec.raw:
                if row.source != source:
                    continue
                labels = [text for key, text in CAPTURE_LABELS.items() if "{" + key + "}" in row.name]
                if any("traffic" in ls for ls in spec.label_sets):
                    labels.append(f"traffic = {nvue_traffic(row.name)}")
                command = source.replace("|", "\\|")
                out.append(f"| {row.vendor} | `{command}` | `{row.name}` | `{spec.name}` | {', '.join(labels)} |")
    out += ["", DOC_END]
    return "\n".join(out)
