"""Joining the two ibqueryerrors sweeps into one record per port (pure: records in, records out).

The counter sweep (``--counters --report-port``) lists every port; the error sweep lists only ports
with a non-zero error counter. A port the error sweep did not list has all its error counters at 0,
but only if that sweep checked its node: anything less and the port's error counters are withheld
(``errors`` None), never published as zero."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ParseError
from ...parsers import ib_queryerrors
from .counters import ERROR_NAMES, error_counters

PortKey = tuple[int, int]  # (node GUID, port number)


@dataclass(slots=True)  # no __dict__: one per port per poll
class SweptPort:
    """One swept port, assembled from both sweeps."""

    node_guid: int
    port: int
    entry: ib_queryerrors.PortCounters  # counter sweep: data counters and link info
    errors: dict[str, int] | None = None  # None: error counters unknown for this port
    errors_extended: frozenset[str] = frozenset()  # error counters read from 64-bit fields
    qp1_dropped: int | None = None


@dataclass
class JoinedSweeps:
    ports: dict[PortKey, SweptPort]
    sweep_names: dict[int, str]  # node GUID -> NodeDescription as the counter sweep printed it


def join_sweeps(counters: ib_queryerrors.QueryErrorsReport, errors: ib_queryerrors.QueryErrorsReport,
                errors_stderr: str, owners: dict[int, tuple[int, int]], problems: list[str],
                cached_nodes: frozenset[int] | None = None) -> JoinedSweeps:
    """Join the two sweeps. ``owners``: port GUID -> (node GUID, port) from the topology;
    ``cached_nodes``: the nodes of the discovery cache the error sweep loaded (None: it discovered
    live, like the counter sweep)."""
    joined = _counter_ports(counters)
    names: dict[str, set[int]] = {}
    for guid, name in joined.sweep_names.items():
        names.setdefault(name, set()).add(guid)
    checked = _error_sweep_complete(counters, errors, joined.ports, problems, cached_nodes)
    failed_nodes, checked = _failed_nodes(errors, errors_stderr, names, problems, checked)
    if checked:
        for p in joined.ports.values():
            if p.node_guid not in failed_nodes and (cached_nodes is None or p.node_guid in cached_nodes):
                p.errors = {}
    _apply_errors(errors, joined.ports, owners, names, problems)
    return joined


def _counter_ports(counters: ib_queryerrors.QueryErrorsReport) -> JoinedSweeps:
    ports: dict[PortKey, SweptPort] = {}
    sweep_names: dict[int, str] = {}
    for node in counters.nodes:
        if node.kind != "data" or node.guid is None:
            raise ParseError("counter sweep printed an errors block")
        sweep_names[node.guid] = node.name
        for pc in node.ports:
            if pc.port is not None:
                ports[(node.guid, pc.port)] = SweptPort(node.guid, pc.port, pc)
    return JoinedSweeps(ports, sweep_names)


def _error_sweep_complete(counters, errors, ports: dict[PortKey, SweptPort], problems: list[str],
                          cached_nodes: frozenset[int] | None) -> bool:
    """Did the error sweep check every node the counter sweep returned?"""
    if cached_nodes is None:
        complete = errors.summary.nodes_checked == counters.summary.nodes_checked
        if not complete:
            problems.append(f"error sweep checked {errors.summary.nodes_checked} nodes, counter sweep "
                            f"{counters.summary.nodes_checked}: error counters withheld for ports it did not list")
        return complete
    # The error sweep checked the cache's nodes (an unreachable one as failed queries); a node the
    # live counter sweep found that the cache lacks was not checked at all.
    complete = errors.summary.nodes_checked == len(cached_nodes)
    if not complete:
        problems.append(f"error sweep checked {errors.summary.nodes_checked} nodes of the "
                        f"{len(cached_nodes)} in the discovery cache: error counters withheld for ports "
                        "it did not list")
    new_nodes = {guid for guid, _port in ports if guid not in cached_nodes}
    if new_nodes:
        problems.append(f"{len(new_nodes)} node(s) not yet in the discovery cache: their error counters "
                        "are withheld until the next discovery")
    return complete


def _failed_nodes(errors, errors_stderr: str, names: dict[str, set[int]], problems: list[str],
                  complete: bool) -> tuple[set[int], bool]:
    """Nodes with a failed PMA query (named on stderr), and whether the sweep is still complete."""
    failed_nodes: set[int] = set()
    failures = ib_queryerrors.failed_queries(errors_stderr)
    for name, _lid, _port in failures:
        failed_nodes |= names.get(name, set())
    # A failure on a node the counter sweep did not return concerns no published port; a failure
    # count the warnings do not account for could concern any node.
    if len(failures) < errors.summary.pma_failures:
        complete = False
        problems.append(f"error sweep: {errors.summary.pma_failures} PMA queries failed, "
                        f"{errors.summary.pma_failures - len(failures)} without naming the node: "
                        "error counters withheld for ports it did not list")
    elif failed_nodes:
        problems.append(f"error sweep: PMA queries failed on {len(failed_nodes)} node(s): "
                        "their error counters are withheld")
    return failed_nodes, complete


def _apply_errors(errors, ports: dict[PortKey, SweptPort], owners: dict[int, tuple[int, int]],
                  names: dict[str, set[int]], problems: list[str]) -> None:
    unattributed = 0
    for node in errors.nodes:
        if node.kind != "errors":
            raise ParseError("error sweep printed a data counters block")
        for pc in node.ports:
            if pc.port is None:
                continue  # "port ALL": the switch aggregate, not a port
            guid = node.guid
            if guid is None:  # CAs print no GUID in errors mode: map the port GUID
                owner = owners.get(pc.port_guid)
                if owner is None:
                    candidates = names.get(node.name, set())
                    guid = next(iter(candidates)) if len(candidates) == 1 else None
                else:
                    guid = owner[0]
            p = ports.get((guid, pc.port)) if guid is not None else None
            if p is None:
                unattributed += 1
                continue
            p.errors = error_counters(pc.counters)
            # error mode: only the 64-bit path prints the "(12.000)" rendering
            p.errors_extended = pc.suffixed & ERROR_NAMES
    if unattributed:
        problems.append(f"error sweep listed {unattributed} port(s) the counter sweep did not return")

