"""A GPU cluster's fabric series over a window, as OpenMetrics text for ``promtool tsdb
create-blocks-from openmetrics``: the series ``fabric-exporter report`` reads, named and labelled as
the catalog's (exporter/fabric_exporter/catalog/), with planted events the report must find.

Shape at ``scale`` 1.0 (a 10,000-GPU cluster): fabric ``roce`` — 1,250 hosts x 8 NIC ports (the
roce_nic collector over SSH) and 800 switches x 64 interfaces (snmp_switch); fabric ``ib`` — 10,000
HCA ports and 750 switches x 40 ports (~40k ports, one infiniband target). A smaller ``scale`` keeps
the shape with fewer hosts, switches and ports (at least one of each).

What moves: transmit counters at a per-port rate with a daily cycle (monotone, whole bytes); error
counters flat except on a few ports; planted congestion episodes (the fabrics' recorded worst-port
severity above 1, the congested-ports count, a higher p99 and more transmit on the ports involved)
and link flaps (IB LinkDowned +1 and the unexpected-down gauge, NIC link-down events, a switch
interface's oper status going down for two scrapes). The recorded series (``fabric:...``) are
written here as a Prometheus running the mixin's rules would have recorded them at each
evaluation: the report reads them, and a week of rule evaluations cannot be replayed here.

Pure: ``write(path, cluster)`` streams the text; ``Cluster.planted`` says what the report must find.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

JOB = 'job="fabric-exporter",instance="fabric-exporter:9315"'
GBPS = 1e9 / 8


@dataclass
class Cluster:
    scale: float
    start: int  # first sample, Unix seconds
    end: int  # last sample at or before
    interval: int = 30  # scrape interval of the raw series, seconds
    rule_interval: int = 60  # evaluation interval of the recorded series
    hosts: int = field(init=False)
    nics_per_host: int = 8
    switches: int = field(init=False)
    switch_ports: int = 64
    hcas: int = field(init=False)
    ib_switches: int = field(init=False)
    ib_switch_ports: int = 40

    def __post_init__(self):
        self.hosts = max(1, round(1250 * self.scale))
        self.switches = max(1, round(800 * self.scale))
        self.hcas = max(1, round(10000 * self.scale))
        self.ib_switches = max(1, round(750 * self.scale))

    @property
    def times(self) -> range:
        return range(self.start, self.end + 1, self.interval)

    # -- planted events, at fixed fractions of the window ------------------------------------------

    def at(self, fraction: float, every: int | None = None) -> int:
        every = every or self.interval
        t = self.start + fraction * (self.end - self.start)
        return int(self.start + (t - self.start) // every * every)

    @property
    def episodes(self) -> dict[str, list[tuple[int, int]]]:
        """Per fabric: congestion episodes [start, end) in seconds (20-60 min long)."""
        return {"roce": [(self.at(0.2, self.rule_interval), self.at(0.2, self.rule_interval) + 1800),
                         (self.at(0.55, self.rule_interval), self.at(0.55, self.rule_interval) + 3600),
                         (self.at(0.8, self.rule_interval), self.at(0.8, self.rule_interval) + 1200)],
                "ib": [(self.at(0.35, self.rule_interval), self.at(0.35, self.rule_interval) + 2400),
                       (self.at(0.7, self.rule_interval), self.at(0.7, self.rule_interval) + 1800)]}

    @property
    def ib_flaps(self) -> dict[int, list[int]]:
        """IB switch-port index -> times its LinkDowned counts one more (the first port flaps twice)."""
        return {0: [self.at(0.3), self.at(0.31)], 3: [self.at(0.6)]}

    @property
    def nic_flaps(self) -> dict[int, list[int]]:
        return {1: [self.at(0.45)]}

    @property
    def switch_flaps(self) -> dict[int, list[int]]:
        """Switch-interface index -> times it is down for two scrapes."""
        return {2: [self.at(0.25)], 5: [self.at(0.65), self.at(0.9)]}

    @property
    def planted(self) -> dict:
        return {"episodes": {f: len(e) for f, e in self.episodes.items()},
                "ib_link_downs": sum(len(v) for v in self.ib_flaps.values()),
                "roce_link_downs": sum(len(v) for v in self.nic_flaps.values())
                + sum(len(v) for v in self.switch_flaps.values()),
                "ib_flapping_ports": sum(1 for v in self.ib_flaps.values() if len(v) > 1),
                "roce_flapping_ports": sum(1 for v in self.switch_flaps.values() if len(v) > 1)}

    def congested(self, fabric: str, t: float) -> bool:
        return any(a <= t < b for a, b in self.episodes[fabric])

    # -- the ports ---------------------------------------------------------------------------------

    def ib_ports(self):
        """(index, labels, is_hca, link rate bytes/s)"""
        i = 0
        for h in range(self.hcas):
            leaf = h // 32
            yield i, (f'fabric="ib",node_guid="0x0002c903{h:08x}",node_name="gpu{h // 8:05d} mlx5_{h % 8}",port="1",'
                      f'peer_node_name="ib-leaf-{leaf:03d}",peer_port="{h % 32 + 1}"'), True, 400 * GBPS
            i += 1
        for s in range(self.ib_switches):
            for p in range(1, self.ib_switch_ports + 1):
                yield i, (f'fabric="ib",node_guid="0x7cfe9003{s:08x}",node_name="ib-sw-{s:03d}",port="{p}",'
                          f'peer_node_name="ib-sw-{(s + p) % self.ib_switches:03d}",peer_port="{p}"'), False, 400 * GBPS
                i += 1

    def nic_ports(self):
        i = 0
        for h in range(self.hosts):
            for d in range(self.nics_per_host):
                yield i, f'fabric="roce",host="gpu{h:05d}",device="mlx5_{d}",port="1",netdev="eth{d}"', 400 * GBPS
                i += 1

    def switch_ports_(self):
        i = 0
        for s in range(self.switches):
            for p in range(self.switch_ports):
                yield i, f'fabric="roce",switch="leaf-{s:03d}",interface="Ethernet{p * 8}"', 400 * GBPS
                i += 1


def _rate(cluster: Cluster, fabric: str, index: int, link: float, t: float) -> float:
    """Bytes/s a port sends at t: 5-40 % of its link with a daily cycle, 85 % during an episode for
    every 7th port (the congested ones)."""
    base = 0.05 + 0.35 * ((index * 2654435761) % 1000) / 1000
    day = 0.5 + 0.5 * math.sin(2 * math.pi * t / 86400 + index)
    if index % 7 == 0 and cluster.congested(fabric, t):
        return 0.85 * link
    return link * base * (0.6 + 0.4 * day)


def _counter_lines(out, name: str, labels: str, times, rate_at) -> None:
    """A monotone counter: the integral of rate_at over the scrape intervals, whole numbers."""
    value, prev = 0.0, None
    for t in times:
        if prev is not None:
            value += rate_at(prev) * (t - prev)
        out.append(f"{name}{{{JOB},{labels}}} {int(value)} {t}\n")
        prev = t


def _steps(out, name: str, labels: str, times, value_at) -> None:
    for t in times:
        out.append(f"{name}{{{JOB},{labels}}} {value_at(t)} {t}\n")


def _flat(out, name: str, labels: str, times, value) -> None:
    text = f"{name}{{{JOB},{labels}}} {value} "
    out.extend(f"{text}{t}\n" for t in times)


def _events_counter(out, name, labels, times, events, start=0):
    _steps(out, name, labels, times, lambda t: start + sum(1 for e in events if e <= t))


def _family(f, name: str, kind: str, series) -> None:
    """One metric family: its TYPE line and each series' samples (a list of lines per call)."""
    f.write(f"# TYPE {name} {kind}\n")
    for lines in series:
        f.writelines(lines)


def write(path: str, c: Cluster) -> dict:
    """Write the OpenMetrics text; returns counts (series, samples)."""
    times = list(c.times)
    counts = {"series": 0, "samples": 0}

    def each(gen):
        for fn in gen:
            out: list[str] = []
            fn(out)
            counts["series"] += 1
            counts["samples"] += len(out)
            yield out

    ib = list(c.ib_ports())
    nics = list(c.nic_ports())
    sws = list(c.switch_ports_())
    ib_switch_ports = [p for p in ib if not p[2]]
    with open(path, "w", buffering=1 << 20) as f:
        # InfiniBand
        _family(f, "fabric_ib_port_data_transmitted_bytes", "counter", each(
            (lambda out, i=i, lb=lb, r=r: _counter_lines(out, "fabric_ib_port_data_transmitted_bytes_total", lb, times,
                                                          lambda t: _rate(c, "ib", i, r, t))) for i, lb, _, r in ib))
        _family(f, "fabric_ib_port_rate_bytes_per_second", "gauge", each(
            (lambda out, lb=lb, r=r: _flat(out, "fabric_ib_port_rate_bytes_per_second", lb, times, int(r)))
            for _, lb, _, r in ib))
        nodes = {}
        for _, lb, is_hca, _ in ib:
            guid = lb.split('node_guid="')[1].split('"')[0]
            name = lb.split('node_name="')[1].split('"')[0]
            nodes[guid] = (name, "ca" if is_hca else "switch")
        _family(f, "fabric_ib_node", "info", each(
            (lambda out, g=g, n=n, k=k: _flat(out, "fabric_ib_node_info",
                                              f'fabric="ib",node_guid="{g}",node_name="{n}",node_type="{k}"', times, 1))
            for g, (n, k) in nodes.items()))
        # symbol errors on one port in 500, counting up slowly; the other error counters flat at 0
        _family(f, "fabric_ib_symbol_error", "counter", each(
            (lambda out, i=i, lb=lb: _counter_lines(out, "fabric_ib_symbol_error_total", lb, times,
                                                    lambda t: 0.01 if i % 500 == 0 else 0.0)) for i, lb, _, _ in ib))
        for err in ("fabric_ib_port_receive_errors", "fabric_ib_port_receive_remote_physical_errors",
                    "fabric_ib_local_link_integrity_errors", "fabric_ib_excessive_buffer_overrun_errors",
                    "fabric_ib_link_error_recovery"):
            _family(f, err, "counter", each(
                (lambda out, lb=lb, err=err: _flat(out, f"{err}_total", lb, times, 0)) for _, lb, _, _ in ib))
        flaps = {ib_switch_ports[k][0]: v for k, v in c.ib_flaps.items() if k < len(ib_switch_ports)}
        _family(f, "fabric_ib_link_downed", "counter", each(
            (lambda out, i=i, lb=lb: _events_counter(out, "fabric_ib_link_downed_total", lb, times, flaps.get(i, ())))
            for i, lb, _, _ in ib))
        _family(f, "fabric_ib_port_link_down_unexpected", "gauge", each(
            (lambda out, i=i, lb=lb: _steps(out, "fabric_ib_port_link_down_unexpected", lb, times,
                                            lambda t: int(any(e <= t < e + 2 * c.interval for e in flaps.get(i, ())))))
            for i, lb, _, _ in ib))
        # RoCE NIC ports
        _family(f, "fabric_roce_tx_bytes", "counter", each(
            [(lambda out, i=i, lb=lb, r=r: _counter_lines(out, "fabric_roce_tx_bytes_total", lb, times,
                                                          lambda t: _rate(c, "roce", i, r, t))) for i, lb, r in nics]
            + [(lambda out, i=i, lb=lb, r=r: _counter_lines(out, "fabric_roce_tx_bytes_total", lb, times,
                                                            lambda t: _rate(c, "roce", i + 3, r, t))) for i, lb, r in sws]))
        _family(f, "fabric_roce_nic_rx_crc_errors", "counter", each(
            (lambda out, i=i, lb=lb: _counter_lines(out, "fabric_roce_nic_rx_crc_errors_total", lb, times,
                                                    lambda t: 0.02 if i % 97 == 0 else 0.0)) for i, lb, _ in nics))
        _family(f, "fabric_roce_nic_link_down_events", "counter", each(
            (lambda out, i=i, lb=lb: _events_counter(out, "fabric_roce_nic_link_down_events_total", lb, times,
                                                     c.nic_flaps.get(i, ()))) for i, lb, _ in nics))
        _family(f, "fabric_roce_pfc_rx_pause_frames", "counter", each(
            (lambda out, i=i, lb=lb: _counter_lines(out, "fabric_roce_pfc_rx_pause_frames_total", lb + ',priority="3"',
                                                    times, lambda t: 500.0 if c.congested("roce", t) else 1.0))
            for i, lb, _ in nics))
        _family(f, "fabric_roce_nic_pause_storm_error_events", "counter", each(
            (lambda out, lb=lb: _flat(out, "fabric_roce_nic_pause_storm_error_events_total", lb, times, 0))
            for _, lb, _ in nics))
        # RoCE switch interfaces
        _family(f, "fabric_roce_switch_if_speed_bytes_per_second", "gauge", each(
            (lambda out, lb=lb, r=r: _flat(out, "fabric_roce_switch_if_speed_bytes_per_second", lb, times, int(r)))
            for _, lb, r in sws))
        for err in ("fabric_roce_switch_if_rx_errors", "fabric_roce_switch_if_tx_errors"):
            _family(f, err, "counter", each(
                (lambda out, lb=lb, err=err: _flat(out, f"{err}_total", lb, times, 0)) for _, lb, _ in sws))
        _family(f, "fabric_roce_switch_if_oper_status", "gauge", each(
            (lambda out, i=i, lb=lb: _steps(out, "fabric_roce_switch_if_oper_status", lb, times,
                                            lambda t: 2 if any(e <= t < e + 2 * c.interval
                                                               for e in c.switch_flaps.get(i, ())) else 1))
            for i, lb, _ in sws))
        # targets: one per NIC host and switch, one IB sweep
        targets = ([f'fabric="roce",group="gpu-nics",host="gpu{h:05d}",collector="roce_nic"' for h in range(c.hosts)]
                   + [f'fabric="roce",group="leaves",host="leaf-{s:03d}",collector="snmp_switch"'
                      for s in range(c.switches)]
                   + ['fabric="ib",group="ib",host="",collector="infiniband"'])
        _family(f, "fabric_up", "gauge", each((lambda out, lb=lb: _flat(out, "fabric_up", lb, times, 1))
                                              for lb in targets))
        # latency probes between two host groups per fabric: probes counted by each client host
        _family(f, "fabric_rdma_latency_probes", "counter", each(
            (lambda out, h=h: _counter_lines(out, "fabric_rdma_latency_probes_total",
                                             f'fabric="roce",host="gpu{h:05d}",host_group="g{h % 2}",role="client"',
                                             times, lambda t: 1.0)) for h in range(c.hosts)))
        # recorded by the mixin's rules, every rule_interval
        rtimes = list(range(c.start, c.end + 1, c.rule_interval))
        recorded = 'job="fabric-exporter"'

        def severity(fabric):
            def at(t):
                return 2.5 if c.congested(fabric, t) else 0.3 + 0.1 * math.sin(t / 3600)
            return at

        f.write("# TYPE fabric:fabric_congestion:severity gauge\n")
        for fabric in ("ib", "roce"):
            sev = severity(fabric)
            f.writelines(f'fabric:fabric_congestion:severity{{{recorded},fabric="{fabric}"}} {sev(t):.4f} {t}\n'
                         for t in rtimes)
        f.write("# TYPE fabric:fabric_congested_ports:count gauge\n")
        for fabric, ports in (("ib", len(ib)), ("roce", len(nics) + len(sws))):
            f.writelines(f'fabric:fabric_congested_ports:count{{{recorded},fabric="{fabric}"}} '
                         f'{(ports + 6) // 7 if c.congested(fabric, t) else 0} {t}\n' for t in rtimes)
        f.write("# TYPE fabric:rdma_latency_seconds:p99 gauge\n")
        for fabric in ("ib", "roce"):
            for src, dst in (("g0", "g1"), ("g1", "g0")):
                f.writelines(
                    f'fabric:rdma_latency_seconds:p99{{{recorded},fabric="{fabric}",source_group="{src}",'
                    f'destination_group="{dst}",tool="ib_write_lat",message_bytes="2"}} '
                    f'{(40e-6 if c.congested(fabric, t) else 4e-6):.3g} {t}\n' for t in rtimes)
        counts["series"] += 8
        counts["samples"] += 8 * len(rtimes)
        f.write("# EOF\n")
    return counts
