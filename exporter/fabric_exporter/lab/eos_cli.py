"""A fake Arista EOS CLI for the lab and the tests: the commands switch_cli's ``eos`` dialect runs,
answered from a ``lab.snmp.SimulatedSwitch`` (the same counters its SNMP agent serves).

EOS's SSH lands in its CLI, not a shell: each exec request is one CLI line, matched here as a whole
(``| json`` included); any other line is refused as EOS does (``% Invalid input``, exit status 1),
so a shell script, a ``timeout`` wrapper or a quoted argument sent by mistake fails the command.

Layouts follow the published captures in tests/fixtures/real (eos_*): the ``Egress Queue Counters``
table (title, a two-line header, EOS's abbreviated names ``Et1``), and the JSON of
``show interfaces counters discards``, ``show priority-flow-control counters`` and ``show qos
interfaces ecn counters queue`` (long names, ECN counts as strings, ``"-"`` for a queue that does
not count ECN marks).

Values: discards are IF-MIB's ifIn/OutDiscards; the egress queue's enqueued counts are the queue's
unicast packets/bytes (``uc_*``; multicast ``mc_*``) and its drops ``uc_drop_*``; PFC frames are
the per-priority counts summed (EOS's command has no per-priority column); ECN marks are the
queue's ``ecn_pkts`` on the queues that count them (``ecn_queues``: the lossless ones), ``"-"`` on
the others.
"""

from __future__ import annotations

import json

from .snmp import SimulatedSwitch

DISCARDS = "show interfaces counters discards | json"
QUEUE = "show interfaces counters queue"
PFC = "show priority-flow-control counters | json"
ECN = "show qos interfaces ecn counters queue | json"
INVALID = "% Invalid input\n"


def short_name(name: str) -> str:
    """EOS's abbreviation in its tables: 'Ethernet3/1' -> 'Et3/1'."""
    return "Et" + name[len("Ethernet"):] if name.startswith("Ethernet") else name


def render_discards_json(sw: SimulatedSwitch) -> str:
    interfaces = {i.name: {"inDiscards": i.counters["ifInDiscards"], "outDiscards": i.counters["ifOutDiscards"]}
                  for i in sw.interfaces}
    return json.dumps({"interfaces": interfaces,
                       "inDiscardsTotal": sum(v["inDiscards"] for v in interfaces.values()),
                       "outDiscardsTotal": sum(v["outDiscards"] for v in interfaces.values())}, indent=2) + "\n"


def render_queue_counters(sw: SimulatedSwitch) -> str:
    header = ("Port", "Traffic", "DropPrec", "DestType", "OutEnqPkts", "OutEnqOctets", "OutDropPkts", "OutDropOctets")
    widths = (20, 7, 10, 8, 20, 17, 17, 17)
    left = 4  # the first four columns are left-aligned, the counts right-aligned

    def row(cells) -> str:
        return " ".join(str(c).ljust(w) if k < left else str(c).rjust(w)
                        for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = ["Egress Queue Counters", row(header), " " * 21 + "Class"]
    for i in sw.interfaces:
        for dest in ("UC", "MC"):
            p = dest.lower()
            for tc, q in sorted(i.queues.items()):
                lines.append(row((short_name(i.name), f"TC{tc}", "DP0-3", dest, q[f"{p}_pkts"], q[f"{p}_bytes"],
                                  q[f"{p}_drop_pkts"], q[f"{p}_drop_bytes"])))
    return "\n".join(lines) + "\n"


def render_pfc_counters_json(sw: SimulatedSwitch) -> str:
    # SimInterface.pfc[p] = [sent (tx), received (rx)]
    return json.dumps({"interfaceCounters": {
        i.name: {"rxFrames": sum(p[1] for p in i.pfc), "txFrames": sum(p[0] for p in i.pfc)}
        for i in sw.interfaces}}, indent=2) + "\n"


def render_ecn_counters_json(sw: SimulatedSwitch, ecn_queues: frozenset[int]) -> str:
    return json.dumps({"intfQueueCounters": {
        i.name: {"queueCounters": {str(q): str(s["ecn_pkts"]) if q in ecn_queues else "-"
                                   for q, s in sorted(i.queues.items())}}
        for i in sw.interfaces}}, indent=2) + "\n"


def answer(sw: SimulatedSwitch, line: str, ecn_queues: frozenset[int] = frozenset({3, 4})) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of one CLI line, as the switch's CLI answers an exec request."""
    renders = {DISCARDS: render_discards_json, QUEUE: render_queue_counters, PFC: render_pfc_counters_json,
               ECN: lambda s: render_ecn_counters_json(s, ecn_queues)}
    render = renders.get(line)
    if render is None:
        return 1, INVALID, ""
    return 0, render(sw), ""
