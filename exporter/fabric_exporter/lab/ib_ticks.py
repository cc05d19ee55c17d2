"""Time passing on the InfiniBand side: the traffic model's port counters written into ibsim through
its console (one batch per tick), the link-flap scenario's uplink unlinked and relinked, and ibsim
(with its opensm) brought back when it dies by itself."""

from __future__ import annotations

import asyncio
import logging

from .traffic import TrafficModel

log = logging.getLogger("fabric_exporter.lab")

CONGESTED_LEAF = "leaf-01"  # without a host set, an IB incast congests this leaf's host ports
FLAPPING_LEAF = "leaf-01"  # the link-flap scenario takes down this leaf's first spine uplink
BIT_ERRORS_LEAF = "leaf-02"  # the bit-errors scenario hits this leaf's spine uplinks


class IbTicks:
    """The counters of every cabled port of one ibsim fabric (``lab.ibsim.IbsimFabric``), moved by
    the traffic model and written to ibsim, and the fabric's supervision."""

    MAX_IBSIM_RESTARTS = 5

    def __init__(self, ib, model: TrafficModel):
        self.ib = ib
        self.model = model
        self.counters: dict[tuple[str, int], dict[str, float]] = {}
        for link in ib.topology.links:
            for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
                self.counters[(node, port)] = {}
        self.given_up = False  # ibsim died more often than MAX_IBSIM_RESTARTS
        self.link_down = False  # the flapping uplink is unlinked now

    async def supervised_tick(self, dt: float, congested_hosts: frozenset[str] | None, flap_down: bool) -> None:
        """``tick``, and ibsim (with its opensm) brought back when it died by itself, so one
        ibsim panic does not end a lab that runs for hours: the daemon's IB target fails for the
        polls in between, as it would on a real fabric whose SM restarts. After
        MAX_IBSIM_RESTARTS the IB target is left down and everything else keeps running."""
        if self.given_up:
            return
        from .ibsim import IbsimError

        try:
            if self.ib.exited() is None:
                await self.tick(dt, congested_hosts, flap_down)
                return
        except IbsimError:
            if self.ib.exited() is None:
                raise
        why = self.ib.exited()
        if self.ib.restarts >= self.MAX_IBSIM_RESTARTS:
            log.error("ibsim died again; not restarting it any more, the IB target stays down",
                      extra={"fields": {"restarts": self.ib.restarts, "why": why}})
            self.given_up = True
            return
        log.error("ibsim died; restarting it", extra={"fields": {"restarts": self.ib.restarts, "why": why}})
        n = await asyncio.to_thread(self.ib.restart, 90)
        self.link_down = False  # a fresh fabric has every link up
        # the counters' totals again at once, so no poll reads a fresh fabric's zeros
        await self.tick(0.0, congested_hosts, flap_down)
        log.warning("ibsim restarted", extra={"fields": {"restarts": n}})

    async def tick(self, dt: float, congested_hosts: frozenset[str] | None, flap_down: bool) -> None:
        """Move every port's counters by ``dt`` seconds of traffic: an incast congests the
        ``congested_hosts``' HCA ports and the leaf ports facing them (None: CONGESTED_LEAF's host
        ports); ``flap_down``: the link-flap scenario wants its uplink down now."""
        tree = self.ib.topology
        lines = []
        for (node, port), totals in self.counters.items():
            peer = tree.peer(node, port)
            if congested_hosts is not None:  # the hosts' HCA ports and the leaf ports facing them
                host_port = node in congested_hosts or (peer is not None and peer[0] in congested_hosts)
            else:
                host_port = node == CONGESTED_LEAF and peer is not None and peer[0].startswith("gpu")
            lines += self._port_lines(node, port, totals, dt, host_port)
            if self.model.on("bit_errors") and node == BIT_ERRORS_LEAF and peer and peer[0].startswith("spine"):
                totals["SymbolErrorCounter"] = min(totals.get("SymbolErrorCounter", 0) + 3 * dt, 0xFFFF)
                lines.append(f'PerformanceSet "{node}"[{port}] PortCounters.SymbolErrorCounter='
                             f'{int(totals["SymbolErrorCounter"])}')
        # One console write for the whole batch: ibsim applies the lines in order.
        await asyncio.to_thread(self.ib.command, "\n".join(lines), 30.0)
        await self._flap(flap_down)

    def _port_lines(self, node: str, port: int, totals: dict[str, float], dt: float, host_port: bool) -> list[str]:
        """The console lines setting one port's traffic counters to their new totals."""
        lines = []
        for field_name, rate in self.model.ib_port_rates(host_port_of_congested_leaf=host_port).items():
            totals[field_name] = totals.get(field_name, 0) + rate * dt
            if field_name == "PortXmitWait":
                value = min(int(totals[field_name]), 0xFFFFFFFF)
                lines.append(f'PerformanceSet "{node}"[{port}] PortCounters.{field_name}={value}')
            else:
                lines.append(f'PerformanceSet "{node}"[{port}] PortCountersExtended.{field_name}='
                             f'{int(totals[field_name])}')
        return lines

    async def _flap(self, want_down: bool) -> None:
        """The link-flap scenario's uplink unlinked or relinked through ibsim's console, on a change."""
        tree = self.ib.topology
        uplink = next(((n, p) for (n, p) in self.counters if n == FLAPPING_LEAF and (tree.peer(n, p) or ("",))[0]
                       .startswith("spine")), None)
        if uplink is not None:
            want_down = self.model.on("link_flap") and want_down
            if want_down != self.link_down:
                await asyncio.to_thread(self.ib.unlink if want_down else self.ib.relink, *uplink)
                self.link_down = want_down
