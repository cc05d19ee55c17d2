"""One host's parsed dump -> its ports -> catalog samples (no I/O; the label sets kept across polls
are the collector's ``PortLabels``).

Values are the drivers' raw monotonic counters (microseconds scaled to seconds): a driver reload
resets them and Prometheus' counter-reset handling copes; nothing is carried across polls.
A counter a driver does not have is simply absent. A garbled dump fails the host's poll
(reason parse); a missing tool or device makes the data partial and says which.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import CommandError, ParseError
from ...parsers.ethtool import EthtoolStats, parse_ethtool_stats
from ...parsers.rdma import HostDump, parse_hw_counters, parse_rdma_link, parse_rdma_statistic
from ...samples import LabelSet, PollResult, Sample
from .mapping import ETHTOOL_MAPPER, HW_MAPPER, driver_family
from .options import RoceNicOptions


@dataclass
class PortData:
    device: str
    port: int
    netdev: str | None
    driver: str | None
    link_layer: str | None
    active: bool | None
    hw_counters: dict[str, int] | None = None
    ethtool: EthtoolStats | None = None
    dropped: int = 0  # counters the host read but left out as unmapped (FILTER_AWK)


def result_from_dump(dump: HostDump, host: str, options: RoceNicOptions,
                     labels: PortLabels | None = None) -> PollResult:
    """The catalog samples of one host's parsed dump; raises CommandError when nothing was read.
    ``labels``: the host's kept PortLabels (its collector's; new ones when not given)."""
    return _result_and_ports(dump, host, options, labels)[0]


def _result_and_ports(dump: HostDump, host: str, options: RoceNicOptions,
                      labels: PortLabels | None = None) -> tuple[PollResult, list[PortData]]:
    """``result_from_dump`` and the ports it was made of (for the burst sampler's plan)."""
    problems: list[str] = []
    skipped: list = []  # lines the parsers skipped (skip-and-count rule)
    ports = _ports(dump, options, problems, skipped)
    result = _samples(ports, labels if labels is not None else PortLabels(host), options, problems)
    result.skipped = skipped
    return result, ports


def _ports(dump: HostDump, o: RoceNicOptions, problems: list[str], skipped: list | None = None) -> list[PortData]:
    if dump.missing_devices:
        problems.append("RDMA devices not found on host: " + ", ".join(dump.missing_devices))
    ports: list[PortData] = []
    if dump.mode == "rdma":
        ports = _ports_from_rdma_tool(dump, skipped)
        absent = sorted(set(o.devices) - {p.device for p in ports})
        if absent:  # the sysfs script reports these itself (@@missing)
            problems.append("RDMA devices not found on host: " + ", ".join(absent))
    else:
        for dp in dump.ports:
            raw = dump.hw_counters.get((dp.device, dp.port))
            ports.append(PortData(
                dp.device, dp.port, dp.netdev, dump.devices.get(dp.device), dp.link_layer,
                None if dp.state is None else dp.state.split(":")[-1].strip() == "ACTIVE",
                _parse_in(parse_hw_counters, raw, f"{dp.device}/{dp.port} hw_counters", skipped)
                if raw is not None else None,
                dropped=dump.dropped.get(("hw_counters", (dp.device, dp.port)), 0) if raw is not None else 0))
        if not ports and not dump.missing_devices:
            raise CommandError("no RDMA devices under /sys/class/infiniband "
                                "(driver not loaded, or /sys not visible to this user/container?)")
    if not o.include_infiniband_ports:
        ports = [p for p in ports if p.link_layer != "InfiniBand"]
    if o.devices:
        wanted = set(o.devices)
        ports = [p for p in ports if p.device in wanted]
    by_netdev = {p.netdev: p for p in ports if p.netdev}
    missing_tool = []
    for netdev, out in dump.ethtool.items():
        port = by_netdev.get(netdev)
        if port is None:
            continue
        if out.exit_status == 0:
            port.ethtool = _parse_in(parse_ethtool_stats, out.text, f"{netdev}", skipped)
            port.dropped += dump.dropped.get(("ethtool", netdev), 0)
        elif out.exit_status == 127:
            missing_tool.append(netdev)
        else:
            tail = " | ".join(line for line in out.text.strip().splitlines()[-2:]) or "no output"
            problems.append(f"ethtool -S {netdev}: exit status {out.exit_status}: {tail[:200]}")
    if missing_tool:
        problems.append("ethtool: command not found on host (install ethtool or set option ethtool: false)")
    return ports


def _parse_in(parse, text: str, where: str, skipped: list | None = None):
    """Run a parser; a ParseError names the device or netdev it came from."""
    try:
        return parse(text, skipped=skipped)
    except ParseError as e:
        raise ParseError(f"{where}: {e}") from None


def _ports_from_rdma_tool(dump: HostDump, skipped: list | None = None) -> list[PortData]:
    for what, out in (("rdma link show", dump.rdma_link), ("rdma statistic show", dump.rdma_statistic)):
        if out is None:
            raise ParseError(f"roce dump: no {what} section")
        if out.exit_status == 127:
            raise CommandError("rdma: command not found on host (install iproute2, "
                                "or use hw_counters_from: sysfs)")
        if out.exit_status != 0:
            tail = " | ".join(out.text.strip().splitlines()[-2:]) or "no output"
            raise CommandError(f"{what}: exit status {out.exit_status}: {tail[:200]}")
    links = parse_rdma_link(dump.rdma_link.text, skipped=skipped)
    stats = parse_rdma_statistic(dump.rdma_statistic.text, skipped=skipped)
    if not links:
        raise CommandError("rdma link show lists no RDMA ports")
    ports = []
    for link in links:
        # iproute2 prints a LID only for InfiniBand ports
        ports.append(PortData(link.device, link.port, link.netdev, None, "InfiniBand" if link.lid is not None else None,
                              None if link.state is None else link.state == "ACTIVE",
                              stats.get((link.device, link.port))))
    return ports


class PortLabels:
    """One host's port label sets, kept across polls by its collector: per (device, port, netdev)
    the port's LabelSet and its label sets with extra labels (extra label pairs -> LabelSet,
    CounterMapper.map's ``labels_of``). One LabelSet per label set of a port, shared by its samples,
    so the render formats each one's text once (704 samples of an 8-NIC host: ~80 label sets, not
    704); immutable, so no later change can leave a stale line keyed on one; and looked up, not
    built, on the next poll (building ~80 LabelSets cost ~0.1 ms of a 3 ms host poll). Cleared when
    full: LabelSets are interned, so the ones made again are the objects the snapshots hold."""

    __slots__ = ("host", "_ports")
    MAX = 4096  # ports kept (a host has a few dozen)

    def __init__(self, host: str):
        self.host = host
        self._ports: dict[tuple, tuple[LabelSet, dict[tuple, LabelSet]]] = {}

    def of(self, p: PortData) -> tuple[LabelSet, dict[tuple, LabelSet]]:
        key = (p.device, p.port, p.netdev)
        kept = self._ports.get(key)
        if kept is None:
            if len(self._ports) >= self.MAX:
                self._ports.clear()
            base = LabelSet({"host": self.host, "device": p.device, "port": str(p.port), "netdev": p.netdev or ""})
            kept = self._ports[key] = (base, {})
        return kept


def _samples(ports: list[PortData], labels: PortLabels, o: RoceNicOptions, problems: list[str]) -> PollResult:
    samples: list[Sample] = []
    counters_read = 0
    expose = o.expose_unmapped
    for p in ports:
        counters_read += p.dropped  # read on the host, left out there as unmapped
        base, labels_of = labels.of(p)
        family = driver_family(p.driver, p.device)
        if p.driver:
            info = labels_of.get((("driver", p.driver),))
            if info is None:
                info = labels_of[(("driver", p.driver),)] = base.merged({"driver": p.driver})
            samples.append(Sample("fabric_roce_nic_port_info", info, 1))
        if p.active is not None:
            samples.append(Sample("fabric_roce_nic_port_active", base, 1 if p.active else 0))
        for source, table, mapper in (("hw_counters", p.hw_counters, HW_MAPPER),
                                      ("ethtool", p.ethtool.counters if p.ethtool else None, ETHTOOL_MAPPER)):
            if not table:
                continue
            counters_read += len(table)
            unmapped: list[str] | None = [] if expose else None
            samples.extend(mapper.map(table, family, base, unmapped, labels_of))
            for name in unmapped or ():
                samples.append(Sample("fabric_roce_nic_unmapped_value",
                                      base.merged({"source": source, "counter": name}), table[name]))
        if p.ethtool and p.ethtool.ambiguous:
            problems.append(f"ethtool -S {p.netdev}: counters printed twice with different values, "
                            f"not published: {', '.join(sorted(p.ethtool.ambiguous))}")
    if counters_read == 0 and problems:
        # Nothing at all was read: a failed host, not a partial one.
        raise CommandError("; ".join(problems))
    return PollResult(samples, problems)

