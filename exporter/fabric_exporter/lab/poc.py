"""``fabric-exporter lab --scenario poc``: a timed RoCE-vs-InfiniBand proof of concept on both fabrics.

Phases, in units of ``--poc-phase`` seconds (default 120 s, so the whole run takes 24 minutes):
baseline, an incast on the IB fabric, its recovery, an incast on the RoCE fabric, its recovery, a
link flap (both fabrics), a quiet stretch, a latency regression (both fabrics) and a final quiet
stretch. ``fabric-exporter report`` over the lab's Prometheus then shows every section with real
numbers: one congestion episode per fabric with its recovery, link downs, a p99 excursion.

The schedule is written to ``WORKDIR/poc-timeline.json`` (wall-clock start and end of each phase),
so the report's figures can be checked against what was done.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PHASE_SECONDS = 120.0


@dataclass(frozen=True)
class Phase:
    name: str
    scenario: str | None  # the traffic-model scenario on during the phase (None: healthy load)
    length: float  # in phase units


TIMELINE = (
    Phase("baseline", None, 2),
    Phase("incast on InfiniBand", "incast_ib", 1),
    Phase("InfiniBand recovery", None, 2),
    Phase("incast on RoCE", "incast_roce", 1),
    Phase("RoCE recovery", None, 2),
    Phase("link flap", "link_flap", 1),
    Phase("quiet", None, 1),
    Phase("latency regression", "latency_regression", 1),
    Phase("final baseline", None, 1),
)


def schedule(phase_seconds: float) -> list[dict]:
    """Each phase with its offset and length in seconds from the start of the POC."""
    out, at = [], 0.0
    for p in TIMELINE:
        out.append({"phase": p.name, "scenario": p.scenario, "offset_seconds": at,
                    "seconds": p.length * phase_seconds})
        at += p.length * phase_seconds
    return out


def total_seconds(phase_seconds: float) -> float:
    return sum(p.length for p in TIMELINE) * phase_seconds
