"""A simulated switch's buffer watermarks and PFC history: what SONiC's ``watermarkstat`` and
``pfcstat --history`` show, kept the way the switch keeps them.

A watermark is the peak occupancy since it was last cleared: each tick of the lab's traffic model
hands in the peak occupancy that tick reached (``lab.traffic.TrafficModel.switch_buffer_peaks``)
and every watermark keeps the larger of the two. ``user`` watermarks are reset by ``clear("user")``
(SONiC: anyone's ``sonic-clear ... watermark``), ``persistent`` ones only by ``clear("persistent")``.
PFC history accumulates the received pause time per priority (microseconds), the pause
transitions, and the last pause's duration and start time.

Pure state: no I/O. ``lab.sonic_cli`` renders it in sonic-utilities' layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

KINDS = ("user", "persistent")
REGIONS = ("shared", "headroom")
POOLS = ("egress_lossless_pool", "egress_lossy_pool", "ingress_lossless_pool", "ingress_lossy_pool")
HEADROOM_POOLS = ("ingress_lossless_pool",)  # watermarkstat shows the headroom pool of ingress_lossless only


@dataclass
class PortBuffers:
    # kind -> unicast queue (0-based) -> peak bytes
    queue: dict[str, dict[int, int]] = field(default_factory=dict)
    # kind -> region -> priority group -> peak bytes
    pg: dict[str, dict[str, dict[int, int]]] = field(default_factory=dict)
    # per priority 0..7: received pause time (µs), XON->XOFF transitions, last pause (µs) and its start (µs since epoch)
    pause_us: list[int] = field(default_factory=lambda: [0] * 8)
    transitions: list[int] = field(default_factory=lambda: [0] * 8)
    recent_pause_us: list[int | None] = field(default_factory=lambda: [None] * 8)
    recent_pause_at_us: list[int | None] = field(default_factory=lambda: [None] * 8)


@dataclass
class SwitchBuffers:
    ports: list[PortBuffers]
    queues: int
    pool: dict[str, dict[str, int]] = field(default_factory=dict)  # kind -> pool -> peak bytes
    headroom_pool: dict[str, dict[str, int]] = field(default_factory=dict)

    @classmethod
    def build(cls, ports: int, queues: int, seed: int) -> SwitchBuffers:
        """Quiet-fabric starting values: a few KB, different per port and queue."""
        out = []
        for i in range(ports):
            base = 1000 + 37 * ((seed * 131 + i) % 29)
            pb = PortBuffers()
            for kind in KINDS:
                pb.queue[kind] = {q: base + 64 * q for q in range(queues)}
                pb.pg[kind] = {"shared": {g: base + 32 * g for g in range(8)}, "headroom": {g: 0 for g in range(8)}}
            out.append(pb)
        return cls(out, queues,
                   {k: {p: 4096 * (n + 1) for n, p in enumerate(POOLS)} for k in KINDS},
                   {k: {p: 0 for p in HEADROOM_POOLS} for k in KINDS})

    def tick(self, port: int, priority: int, peaks: dict[str, float], dt: float, now_us: int) -> None:
        """One tick of traffic through port ``port``: ``peaks`` (from the traffic model) holds the
        peak occupancy of the lossless queue/PG (``queue``, ``pg_shared``, ``pg_headroom``), of the
        other queues (``other_queue``) and the fraction of time the lossless priority was paused
        (``paused``); pools take the sum of their ports' peaks (a crude but monotone picture)."""
        pb = self.ports[port]
        for kind in KINDS:
            for q in pb.queue[kind]:
                peak = peaks["queue"] if q == priority else peaks["other_queue"]
                pb.queue[kind][q] = max(pb.queue[kind][q], int(peak))
            for region in REGIONS:
                peak = peaks[f"pg_{region}"] if region == "headroom" else peaks["pg_shared"]
                g = pb.pg[kind][region]
                g[priority] = max(g[priority], int(peak))
            self.pool[kind]["ingress_lossless_pool"] = max(self.pool[kind]["ingress_lossless_pool"],
                                                           int(peaks["pg_shared"] * len(self.ports) / 2))
            self.pool[kind]["egress_lossless_pool"] = max(self.pool[kind]["egress_lossless_pool"],
                                                          int(peaks["queue"] * len(self.ports) / 2))
            self.headroom_pool[kind]["ingress_lossless_pool"] = max(
                self.headroom_pool[kind]["ingress_lossless_pool"], int(peaks["pg_headroom"] * len(self.ports) / 2))
        paused_us = int(peaks["paused"] * dt * 1e6)
        if paused_us > 0:
            pb.pause_us[priority] += paused_us
            pb.transitions[priority] += max(1, int(peaks["paused"] * dt * 100))
            pb.recent_pause_us[priority] = paused_us
            pb.recent_pause_at_us[priority] = now_us - paused_us

    def clear(self, kind: str) -> None:
        """sonic-clear ... [persistent-]watermark: that kind's watermarks start over at 0."""
        for pb in self.ports:
            pb.queue[kind] = {q: 0 for q in pb.queue[kind]}
            pb.pg[kind] = {r: {g: 0 for g in v} for r, v in pb.pg[kind].items()}
        self.pool[kind] = {p: 0 for p in self.pool[kind]}
        self.headroom_pool[kind] = {p: 0 for p in self.headroom_pool[kind]}
