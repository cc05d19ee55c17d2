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
from ...samples import KeptSample, LabelSet, PollResult, Sample
from .mapping import ETHTOOL_MAPPER, HW_MAPPER, Kept, driver_family
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
    full: LabelSets are interned, so the ones made again are the objects the snapshots hold.

    ``keep_samples`` (the collector's): each port's samples are KeptSamples kept to the next poll,
    and a counter that did not move hands out its very sample again (CounterMapper.map_kept): the
    store keeps its rendered line instead of formatting it (issue 27). Only the samples are kept
    (the render cache holds them anyway), no section text or parse; a port missing from a poll is
    forgotten with them."""

    __slots__ = ("host", "keep_samples", "_ports")
    MAX = 4096  # ports kept (a host has a few dozen)

    def __init__(self, host: str, keep_samples: bool = False):
        self.host = host
        self.keep_samples = keep_samples
        self._ports: dict[tuple, KeptPort] = {}

    def of(self, p: PortData) -> KeptPort:
        key = (p.device, p.port, p.netdev)
        kept = self._ports.get(key)
        if kept is None:
            if len(self._ports) >= self.MAX:
                self._ports.clear()
            kept = self._ports[key] = KeptPort(
                LabelSet({"host": self.host, "device": p.device, "port": str(p.port), "netdev": p.netdev or ""}))
        return kept

    def keep_only(self, ports: list[PortData]) -> None:
        """Forget the ports not among ``ports`` (this poll's), with their kept samples."""
        if len(self._ports) > len(ports):
            seen = {(p.device, p.port, p.netdev) for p in ports}
            self._ports = {key: kept for key, kept in self._ports.items() if key in seen}


class KeptPort:
    """One port's kept state: its LabelSet, its label sets with extra labels (extra label pairs ->
    LabelSet), and with ``keep_samples`` its mapped samples per source (``mapping.Kept``) and its
    info and active samples (``(metric, label value or state)`` -> KeptSample)."""

    __slots__ = ("base", "labels_of", "sources", "static")

    def __init__(self, base: LabelSet):
        self.base = base
        self.labels_of: dict[tuple, LabelSet] = {}
        self.sources: dict[str, Kept] = {}
        self.static: dict[tuple, KeptSample] = {}

    def static_sample(self, metric: str, labels: LabelSet, value: int, key: tuple) -> KeptSample:
        sample = self.static.get(key)
        if sample is None:
            if len(self.static) >= 8:  # a driver changing again and again: bounded
                self.static.clear()
            sample = self.static[key] = KeptSample(metric, labels, value)
        return sample


def _samples(ports: list[PortData], labels: PortLabels, o: RoceNicOptions, problems: list[str]) -> PollResult:
    samples: list[Sample] = []
    counters_read = 0
    expose = o.expose_unmapped
    keep = labels.keep_samples
    for p in ports:
        counters_read += p.dropped  # read on the host, left out there as unmapped
        port = labels.of(p)
        base, labels_of = port.base, port.labels_of
        family = driver_family(p.driver, p.device)
        if p.driver:
            info = labels_of.get((("driver", p.driver),))
            if info is None:
                info = labels_of[(("driver", p.driver),)] = base.merged({"driver": p.driver})
            samples.append(port.static_sample("fabric_roce_nic_port_info", info, 1, ("info", p.driver)) if keep
                           else Sample("fabric_roce_nic_port_info", info, 1))
        if p.active is not None:
            value = 1 if p.active else 0
            samples.append(port.static_sample("fabric_roce_nic_port_active", base, value, ("active", value)) if keep
                           else Sample("fabric_roce_nic_port_active", base, value))
        for source, table, mapper in (("hw_counters", p.hw_counters, HW_MAPPER),
                                      ("ethtool", p.ethtool.counters if p.ethtool else None, ETHTOOL_MAPPER)):
            if not table:
                continue
            counters_read += len(table)
            unmapped: list[str] | None = [] if expose else None
            if keep:
                kept = port.sources[source] = mapper.map_kept(table, family, base, unmapped, labels_of,
                                                              port.sources.get(source))
                samples += kept.samples
            else:
                samples += mapper.map(table, family, base, unmapped, labels_of)
            for name in unmapped or ():
                samples.append(Sample("fabric_roce_nic_unmapped_value",
                                      base.merged({"source": source, "counter": name}), table[name]))
        if p.ethtool and p.ethtool.ambiguous:
            problems.append(f"ethtool -S {p.netdev}: counters printed twice with different values, "
                            f"not published: {', '.join(sorted(p.ethtool.ambiguous))}")
    labels.keep_only(ports)
    if counters_read == 0 and problems:
        # Nothing at all was read: a failed host, not a partial one.
        raise CommandError("; ".join(problems))
    return PollResult(samples, problems)
