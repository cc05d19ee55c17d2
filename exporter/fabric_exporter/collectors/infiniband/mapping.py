"""From the joined sweeps and the fabric state to catalog samples: no I/O, no clock, no tools.

``samples_from_sweep`` reads the state; the only thing it writes is the per-port memo
``state.port_static`` (a port's labels and link/health/info samples, reused while the link is
unchanged: most ports, most polls). The collector records the sweep in the state first
(``FabricState.record_sweep`` / ``forget_gone``)."""

from __future__ import annotations

from collections.abc import Mapping

from ...hostnames import NameRule
from ...parsers import ib_queryerrors
from ...parsers.ib_common import SPEEDS, WIDTH_LANES, guid_str
from ...samples import KeptSample, LabelSet, Sample
from .counters import DATA_METRICS, ERROR_METRICS, QP1_DROPPED, data_counters_64bit
from .join import PortKey, SweptPort
from .options import DEFAULT_HOST_RULE
from .state import FabricState, link_up

SPEED_NAMES = {key: gen for key, (gen, _rate) in SPEEDS.items()}
_NODE_TYPES = ("switch", "ca", "router")
_new = tuple.__new__  # Sample(...) without the NamedTuple's Python-level __new__: ~60k per poll

Peer = tuple  # (peer node GUID | None, peer node type | None, peer name, peer port as text)


class PortMemo:
    """What the mapping keeps of a port between polls (``FabricState.port_static``), reused while
    its ``signature`` holds: most ports, most polls. The labels dict and the kept samples are
    handed to the renderer poll after poll and are never changed: a port whose signature changed
    gets a new PortMemo, with new ones."""

    __slots__ = ("signature", "labels", "static", "up", "zero_errors", "last", "link", "epoch", "settled",
                 "layout", "layout_specs")

    def __init__(self, signature: tuple, labels: Mapping[str, str], static: list[Sample], up: bool) -> None:
        # (node name, peer, was linked, latched, extended counters, the LinkInfo): what the rest is made of
        self.signature = signature
        self.labels = labels  # the port's labels: shared by all its series but the info one
        self.static = static  # its link/health gauges and its info series (KeptSamples)
        self.up = up
        self.zero_errors: list[Sample] | None = None  # its error counters at 0 (KeptSamples), once made
        self.last: tuple | None = None  # (data counters as read, their samples) of the last poll
        self.link: ib_queryerrors.LinkInfo | None = None  # the link this memo was last checked against
        self.epoch = -1  # FabricState.inputs_epoch it was last checked in
        # linked to a known peer, or never seen linked: while link and epoch hold, so does the signature
        self.settled = False
        self.layout: tuple[str, ...] | None = None  # the counter line layout (parser's names) last mapped
        self.layout_specs: list | None = None  # and its (metric, scale) by position


def samples_from_sweep(ports: dict[PortKey, SweptPort], latched: dict[PortKey, list[str]], state: FabricState,
                       durations: dict[str, float], now: float, problems: list[str],
                       host_rule: NameRule = DEFAULT_HOST_RULE) -> list[Sample]:
    """Every sample of one poll: ports swept, ports missing, nodes (and the hosts of the CAs, by
    ``host_rule``), and the sweep's own figures."""
    out: list[Sample] = []
    state_counts = {"up": 0, "down": 0, "missing": 0}
    for key in sorted(ports):
        up = _port_samples(key, ports[key], bool(latched.get(key)), state, now, out)
        state_counts["up" if up else "down"] += 1
    state_counts["missing"] = _missing_port_samples(state, ports, out, problems)
    _node_samples(state, {guid for guid, _port in ports}, host_rule, out, problems)
    _sweep_samples(state, durations, state_counts, out)
    return out


# -- a swept port ---------------------------------------------------------------------------------

def _port_samples(key: PortKey, p: SweptPort, is_latched: bool, state: FabricState, now: float,
                  out: list[Sample]) -> bool:
    """Append the port's samples; True if its link is up."""
    link = p.entry.link
    extended = data_counters_64bit(p.entry)
    # The link/health gauges and the info series change only with the link: reuse last poll's
    # samples (and labels dict) while everything they are made of is the same.
    # (The parser shares one LinkInfo per unchanged Link info line: compared by identity first.)
    memo = state.port_static.get(key)
    if (memo is None or memo.link is not link or memo.epoch != state.inputs_epoch or not memo.settled
            or memo.signature[3] != is_latched or memo.signature[4] != extended):
        memo = _port_static(key, p, link, is_latched, extended, state, now, memo)
    # else: a linked port as last poll (the very same link, nothing its names and peer come from
    # changed, so it was linked at this sweep too): its signature holds without being rebuilt.
    out += memo.static  # first: the renderer then knows the shared labels' text before the counters
    _counter_samples(p, memo, out)
    return memo.up


def _port_static(key: PortKey, p: SweptPort, link: ib_queryerrors.LinkInfo | None, is_latched: bool,
                 extended: bool, state: FabricState, now: float, memo: PortMemo | None) -> PortMemo:
    """The port's memo, checked again (and made anew when its signature changed)."""
    node_name = state.node_name(p.node_guid)
    was_linked = state.was_linked(key, now)
    peer = _peer(key, link, was_linked, state)
    signature = (node_name, peer, was_linked, is_latched, extended, link)
    if memo is None or memo.signature != signature:
        # interned: a memo made again with the same labels (after a rediscovery) hands out the same object
        labels = LabelSet({"node_guid": guid_str(p.node_guid), "node_name": node_name, "port": str(p.port),
                           "peer_node_name": peer[2], "peer_port": peer[3]})
        static = _link_samples(labels, link, was_linked, is_latched, extended)
        static.append(_port_info(labels, p, link, peer, state))
        memo = state.port_static[key] = PortMemo(signature, labels, static, link_up(link))
    # Up with a peer the state knows: FabricState.record_sweep marked it linked at this sweep; or
    # never seen linked (only a topology, which moves the epoch, or a link of its own that is up,
    # another LinkInfo, can change that). Either way, while its link and the state's inputs stay
    # the same, so does its signature (was_linked included, though it reads the clock).
    memo.link, memo.epoch = link, state.inputs_epoch
    if memo.up and was_linked and link.peer_port_guid is not None and peer[0] is not None:
        memo.settled = True
    else:
        expected = state.expected_ports.get(key)
        memo.settled = not was_linked and (expected is None or expected.last_up is None)
    return memo


def _peer(key: PortKey, link: ib_queryerrors.LinkInfo | None, was_linked: bool, state: FabricState) -> Peer:
    if link is not None and link.peer_port_guid is not None:
        peer_guid = state.peer_node(link.peer_port_guid)
        return (peer_guid, state.node_type(peer_guid), state.name(peer_guid, link.peer_name or ""),
                str(link.peer_port))
    if was_linked:
        # Down now: keep the peer the link had, so the series keep their identity and a
        # dashboard can still say which link is down.
        exp = state.expected_ports[key]
        peer_guid = exp.peer_guid
        facts = state.nodes.get(peer_guid) if peer_guid is not None else None
        return (peer_guid, facts.type if facts else None,
                state.name(peer_guid, state.sweep_names.get(peer_guid) or (facts.description if facts else "")),
                str(exp.peer_port) if exp.peer_port is not None else "")
    return (None, None, "", "")


def _counter_samples(p: SweptPort, memo: PortMemo, out: list[Sample]) -> None:
    labels = memo.labels
    counters = p.entry.counters
    last = memo.last
    # An idle port: the same values (the very same dict when the parser reused the line), the
    # same sample objects, nothing to render.
    if last is not None and (last[0] is counters or last[0] == counters):
        out += last[1]
    else:
        names = p.entry.names
        if names is not None and names is memo.layout:
            # the same line layout as last poll, every counter mapped: (metric, scale) by position
            data = [_new(Sample, (spec[0], labels, float(value * spec[1])))
                    for spec, value in zip(memo.layout_specs, counters.values())]
        else:
            metrics = DATA_METRICS
            data = [_new(Sample, (spec[0], labels, float(value * spec[1])))
                    for raw, value in counters.items() if (spec := metrics.get(raw)) is not None]
            if names is not None and len(data) == len(names):
                memo.layout, memo.layout_specs = names, [DATA_METRICS[raw] for raw in names]
        memo.last = (counters, data)
        out += data
    errors = p.errors
    if errors:
        get = errors.get
        out += [_new(Sample, (metric, labels, float(get(raw, 0)))) for raw, metric in ERROR_METRICS]
    elif errors is not None:  # every error counter 0 (most ports, most polls): reuse those samples
        if memo.zero_errors is None:
            memo.zero_errors = [_new(KeptSample, (metric, labels, 0.0)) for _raw, metric in ERROR_METRICS]
        out += memo.zero_errors
    if p.qp1_dropped is not None:
        out.append(Sample(QP1_DROPPED[0], labels, float(p.qp1_dropped)))


def _link_samples(labels: Mapping[str, str], link: ib_queryerrors.LinkInfo | None, was_linked: bool,
                  is_latched: bool, extended: bool) -> list[Sample]:
    """The port's link and health gauges (kept: reused while the link is unchanged)."""
    out: list[Sample] = []
    add = out.append
    up = link_up(link)
    width = WIDTH_LANES.get(link.width, 0) if up else 0
    lane_rate = SPEEDS[link.speed][1] * 1e9 / 8 if up and link.speed else 0.0
    if link is not None:
        add(KeptSample("fabric_ib_port_state_id", labels, float(link.state_id)))
        add(KeptSample("fabric_ib_port_physical_state_id", labels, float(link.phys_state_id)))
    add(KeptSample("fabric_ib_port_active_width_lanes", labels, float(width)))
    add(KeptSample("fabric_ib_port_active_lane_rate_bytes_per_second", labels, lane_rate))
    add(KeptSample("fabric_ib_port_rate_bytes_per_second", labels, width * lane_rate))
    degraded = False
    if up and link.peer_port_guid is not None:
        sup_width = WIDTH_LANES.get(link.could_be_width or link.width, 0)
        sup_rate = (SPEEDS[link.could_be_speed or link.speed][1] * 1e9 / 8) if link.speed else 0.0
        add(KeptSample("fabric_ib_port_supported_width_lanes", labels, float(sup_width)))
        add(KeptSample("fabric_ib_port_supported_lane_rate_bytes_per_second", labels, sup_rate))
        degraded = link.could_be_width is not None or link.could_be_speed is not None
    add(KeptSample("fabric_ib_port_degraded", labels, 1.0 if degraded else 0.0))
    # Down, but linked in the topology or a sweep within forget_missing_after: unexpected.
    add(KeptSample("fabric_ib_port_link_down_unexpected", labels, 1.0 if (not up) and was_linked else 0.0))
    add(KeptSample("fabric_ib_port_latched", labels, 1.0 if is_latched else 0.0))
    add(KeptSample("fabric_ib_port_extended_counters", labels, 1.0 if extended else 0.0))
    add(KeptSample("fabric_ib_port_sweep_missing", labels, 0.0))
    return out


def _port_info(labels: Mapping[str, str], p: SweptPort, link: ib_queryerrors.LinkInfo | None, peer: Peer,
               state: FabricState) -> Sample:
    up = link_up(link)
    peer_guid, peer_type = peer[0], peer[1]
    linked = up and link.peer_port_guid is not None
    return KeptSample("fabric_ib_port_info", LabelSet({
        **labels, "lid": str(link.lid) if link is not None else "",
        "port_guid": state.port_guid(p.node_guid, p.port),
        "peer_node_guid": guid_str(peer_guid) if peer_guid is not None else "",
        "peer_node_type": peer_type or "",
        "active_width": link.width if up and link.width else "",
        "active_speed": SPEED_NAMES.get(link.speed, "") if up and link.speed else "",
        "supported_width": (link.could_be_width or link.width or "") if up and peer_guid is not None else "",
        "supported_speed": SPEED_NAMES.get(link.could_be_speed or link.speed or "", "") if linked else "",
    }), 1.0)


# -- ports the sweep did not return, nodes, the sweep itself ---------------------------------------

def _missing_port_samples(state: FabricState, ports: dict[PortKey, SweptPort], out: list[Sample],
                          problems: list[str]) -> int:
    """Ports the topology (or an earlier sweep) had that this sweep did not return."""
    missing_nodes: set[int] = set()
    missing = sorted(state.expected_ports.keys() - ports.keys())
    for key in missing:
        exp = state.expected_ports[key]
        guid, port = key
        missing_nodes.add(guid)
        facts = state.nodes.get(guid)
        peer_facts = state.nodes.get(exp.peer_guid) if exp.peer_guid is not None else None
        labels = {"node_guid": guid_str(guid), "node_name": state.name(guid, facts.description if facts else ""),
                  "port": str(port),
                  "peer_node_name": state.name(exp.peer_guid, peer_facts.description if peer_facts else ""),
                  "peer_port": str(exp.peer_port) if exp.peer_port is not None else ""}
        out.append(Sample("fabric_ib_port_sweep_missing", labels, 1.0))
    if missing:
        examples = ", ".join(sorted(state.name(g, state.nodes[g].description if g in state.nodes else guid_str(g))
                                    for g in missing_nodes)[:5])
        problems.append(f"{len(missing)} port(s) on {len(missing_nodes)} node(s) missing from the sweep "
                        f"(e.g. {examples}): their series are withheld")
    return len(missing)


def _node_samples(state: FabricState, swept_nodes: set[int], host_rule: NameRule, out: list[Sample],
                  problems: list[str]) -> None:
    hostless: list[str] = []
    memo = state.node_static
    for guid, facts in sorted(state.nodes.items()):
        desc = (state.sweep_names.get(guid) or facts.description) if guid in swept_nodes else facts.description
        name = state.name(guid, desc)
        tick = state.ticks.get(guid)
        # A node's samples change only with these: reuse last poll's (no rule applied, no dict built).
        key = (name, desc, facts.type, facts.ports_count, facts.system_guid, tick, host_rule)
        cached = memo.get(guid)
        if cached is None or cached[0] != key:
            cached = memo[guid] = (key, *_one_node_samples(guid, facts, name, desc, tick, host_rule))
        out += cached[1]
        if cached[2] is not None:
            hostless.append(cached[2])
    if len(memo) > len(state.nodes):
        for guid in memo.keys() - state.nodes.keys():
            del memo[guid]
    if hostless:
        problems.append(f"{len(hostless)} CA node(s) have a name host_from_node_name does not match, so no "
                        f"fabric_ib_node_host_info: {', '.join(sorted(hostless)[:5])!s}")


def _one_node_samples(guid: int, facts, name: str, desc: str, tick: int | None,
                      host_rule: NameRule) -> tuple[list[Sample], str | None]:
    """The node's samples, and its name when it is a CA the host rule does not match."""
    out: list[Sample] = []
    hostless = None
    if facts.type == "ca":
        # The host of an HCA, in the scheduler's vocabulary; the switch port facing it carries the
        # same name as peer_node_name, so rules attribute both ends of the link to the host.
        host = host_rule.apply(name)
        if host is None:
            hostless = name or guid_str(guid)
        else:
            out.append(Sample("fabric_ib_node_host_info",
                              {"node_guid": guid_str(guid), "node_name": name, "host": host}, 1.0))
    out.append(Sample("fabric_ib_node_info", {
        "node_guid": guid_str(guid), "node_name": name, "node_type": facts.type,
        "node_description": desc, "ports": str(facts.ports_count),
        "system_guid": guid_str(facts.system_guid) if facts.system_guid is not None else "",
    }, 1.0))
    if tick is not None:
        out.append(Sample("fabric_ib_node_xmit_wait_tick_multiplier",
                          {"node_guid": guid_str(guid), "node_name": name}, float(tick)))
    return out, hostless


def _sweep_samples(state: FabricState, durations: dict[str, float], state_counts: dict[str, int],
                   out: list[Sample]) -> None:
    add = out.append
    for tool, seconds in sorted(durations.items()):
        add(Sample("fabric_ib_sweep_duration_seconds", {"tool": tool}, seconds))
    if state.topology is not None:
        nodes = state.topology.nodes.values()
        for ntype in _NODE_TYPES:
            count = sum(1 for n in nodes if n.type == ntype)
            add(Sample("fabric_ib_topology_nodes", {"node_type": ntype}, float(count)))
    for port_state, n in state_counts.items():
        add(Sample("fabric_ib_topology_ports", {"state": port_state}, float(n)))
    if state.topology_wall is not None:
        add(Sample("fabric_ib_topology_last_refresh_timestamp_seconds", {}, state.topology_wall))
    add(Sample("fabric_ib_topology_changes_total", {}, float(state.topology_changes)))
