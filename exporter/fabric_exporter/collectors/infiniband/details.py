"""The error-detail read (option ``error_details``): PortRcvErrorDetails (``perfquery -E``) and
PortXmitDiscardDetails (``perfquery -D``) of the ports whose aggregate counter is non-zero.

perfquery prints these attributes for one port per run (``-l`` loops only the basic counters;
verified on ibsim), so a read is one process per port and attribute. Only ports whose PortRcvErrors
(for ``-E``) or PortXmitDiscards (for ``-D``) the error sweep saw non-zero are read: the details
split that aggregate by cause, so the cost follows the number of erroring ports, not the fabric's
size, and ``error_details_max_ports`` bounds it in an error storm. A port never read publishes no
detail series (nothing is invented for it); a failed read publishes none for that port this poll.
"""

from __future__ import annotations

from ...catalog import infiniband_detail as catalog
from ...catalog.infiniband import RCV_ERRORS, XMIT_DISCARDS
from ...errors import ParseError, PollError
from ...parsers import ib_perfquery
from ...parsers.skipped import SkippedLine
from ...samples import Sample
from .join import PortKey, SweptPort
from .state import FabricState
from .tools import IbPoll

# perfquery flag, the aggregate counter it details, the header kind the parser files it under,
# and raw name -> metric (from the catalog).
READS = tuple(
    (flag, aggregate, kind, {raw.name: spec.name for spec in catalog.METRICS for raw in spec.raw
                             if raw.source == source})
    for flag, aggregate, kind, source in (
        ("-E", RCV_ERRORS.name, "portrcverrordetails counters", catalog.RCV_ERROR_DETAILS),
        ("-D", XMIT_DISCARDS.name, "portxmitdiscarddetails counters", catalog.XMIT_DISCARD_DETAILS),
    )
)


def ports_to_read(ports: dict[PortKey, SweptPort], aggregate: str) -> list[PortKey]:
    """Ports with a LID whose aggregate error counter is non-zero this poll, in port order."""
    return [key for key in sorted(ports)
            if (p := ports[key]).errors and p.errors.get(aggregate, 0) > 0
            and p.entry.link is not None and p.entry.link.lid]


def read_block(text: str, port: int, kind: str, metrics: dict[str, str],
               skipped: list[SkippedLine] | None) -> dict[str, float]:
    """One perfquery -E/-D output -> metric -> value; ParseError if it is not that port's whole block."""
    blocks = [b for b in ib_perfquery.parse(text, skipped=skipped) if b.kind == kind and b.port == port]
    if len(blocks) != 1:
        raise ParseError(f"expected one {kind} block for port {port}, got {len(blocks)}")
    values = blocks[0].values
    missing = [raw for raw in metrics if raw not in values]
    if missing:
        raise ParseError(f"{kind} without {', '.join(missing)}")
    return {metric: float(values[raw]) for raw, metric in metrics.items()}


async def read_error_details(tools, ports: dict[PortKey, SweptPort], max_ports: int,
                             poll: IbPoll) -> dict[PortKey, dict[str, float]]:
    """perfquery -E / -D on the erroring ports (at most max_ports per attribute): port -> metric -> value."""
    out: dict[PortKey, dict[str, float]] = {}
    for flag, aggregate, kind, metrics in READS:
        keys = ports_to_read(ports, aggregate)
        if len(keys) > max_ports:
            poll.problems.append(f"error details ({flag}): {len(keys)} ports with {aggregate}, read the first "
                            f"{max_ports} (error_details_max_ports)")
            keys = keys[:max_ports]
        jobs = [(key, tools.argv("perfquery", flag, str(ports[key].entry.link.lid), str(key[1]))) for key in keys]
        results = await tools.batch(jobs, poll, f"perfquery_{flag.lstrip('-')}")
        failed = 0
        for key, res in results.items():
            try:
                if isinstance(res, PollError) or res.exit_status != 0:
                    raise ParseError("perfquery failed")
                out.setdefault(key, {}).update(read_block(res.stdout, key[1], kind, metrics, poll.skipped))
            except ParseError:
                failed += 1
        if failed:
            poll.problems.append(f"error details ({flag}): perfquery failed on {failed} of {len(jobs)} port(s)")
    return out


def detail_samples(details: dict[PortKey, dict[str, float]], state: FabricState) -> list[Sample]:
    """The samples, with the labels the sweep's mapping gave each port (state.port_static)."""
    out: list[Sample] = []
    for key in sorted(details):
        cached = state.port_static.get(key)
        if cached is not None:
            labels = cached.labels
            out += [Sample(metric, labels, value) for metric, value in details[key].items()]
    return out
