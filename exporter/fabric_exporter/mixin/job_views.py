"""Job attribution on the dashboards (issue #22): the ``cluster``, ``job`` and hidden ``job_hosts``
variables every dashboard carries, the filters that narrow every host and port panel to the selected
job's hosts, and the per-job row.

How the variables work together (Grafana):

- ``job`` lists every job seen in the dashboard's range (``max_over_time(...[$__range])``, so a job
  that ended inside the range is still listed), shown as "name #id" and keyed by ``job_id``; its
  "All" is the catch-all ``.*``.
- ``job_hosts`` is hidden, multi and always "All" (no custom all value), so ``${job_hosts:pipe}``
  expands to every option: the job's nodes from ``fabric_job_node_info``. When ``job`` is "All" its
  query returns one option, ``.*``, instead: every panel then shows everything, as without a job.
  The ``pipe`` format leaves values unescaped (the ``regex`` format would turn that ``.*`` into
  ``\\.\\*``); scheduler node names are letters, digits, ``-``, ``_`` and ``.``, and a ``.`` matching
  any one character can only widen a match to a name differing in that place.

Filters, per kind of series (``H`` = ``(${job_hosts:pipe})``):

- host series (RoCE NIC ports, probe hosts): ``host=~"H"``;
- InfiniBand ports: the job's HCA ports ``node_name=~"H( .*)?"`` (a NodeDescription starts with the
  host name: "gpu-node-017 mlx5_0") or the switch ports facing them ``peer_node_name=~"H( .*)?"``;
- RoCE switch interfaces: those whose LLDP neighbour (``fabric_roce_switch_if_neighbor_info``) is one
  of the job's hosts; ``or`` the same expression with ``switch=~"H"``, which is every interface when
  ``H`` is ``.*`` (no job: interfaces without an LLDP neighbour still shown) and none otherwise;
- probe host pairs: either end is one of the job's hosts.
"""

from __future__ import annotations

from collections.abc import Callable

from .panels import Query as Q
from .panels import query_variable, row, table, timeseries
from .settings import Settings

JOB_HOSTS = "${job_hosts:pipe}"
HOSTS = f"({JOB_HOSTS})"
HOST = f'host=~"{HOSTS}"'
IB_NODE = f'node_name=~"{HOSTS}( .*)?"'
IB_PEER = f'peer_node_name=~"{HOSTS}( .*)?"'
SWITCH_NAMED = f'switch=~"{HOSTS}"'
PAIR_SOURCE = f'source=~"{HOSTS}"'
PAIR_DESTINATION = f'destination=~"{HOSTS}"'
JOB = 'cluster=~"$cluster",job_id=~"$job"'
NEIGHBOR_INFO = "fabric_roce_switch_if_neighbor_info"
SWITCH_IF_KEY = "fabric, switch, interface"
SWITCH_KEY = "fabric, switch"

# Series the slurm_jobs collector, the host maps and the job rules publish (CONTRACT.md, issue #22).
JOB_NODE_INFO = "fabric_job_node_info"
JOB_SEVERITY = "fabric:job_congestion:severity"
JOB_ROLE_SCORE = "fabric:job_role:score"
JOB_HOST_SEVERITY = "fabric:job_host_congestion:severity"

Build = Callable[[str], str]  # selector ("{...}") -> a per-series expression


def with_matcher(sel: str, matcher: str) -> str:
    """``{a="b"}`` + ``c=~"d"`` -> ``{a="b",c=~"d"}``."""
    inner = sel.strip()[1:-1]
    return "{" + ",".join(x for x in (inner, matcher) if x) + "}"


def hosts(build: Build, sel: str) -> str:
    return build(with_matcher(sel, HOST))


def ib_ports(build: Build, sel: str) -> str:
    return f"({build(with_matcher(sel, IB_NODE))} or {build(with_matcher(sel, IB_PEER))})"


def switch_ifs(s: Settings, build: Build, sel: str) -> str:
    neighbours = NEIGHBOR_INFO + s.sel(f'fabric=~"$fabric",neighbor_host=~"{HOSTS}"')
    return (f"(({build(sel)}) and on ({SWITCH_IF_KEY}) {neighbours}"
            f" or {build(with_matcher(sel, SWITCH_NAMED))})")


def switches(s: Settings, build: Build, sel: str) -> str:
    """A whole-switch series (a buffer pool): the switches with an interface facing one of the job's
    hosts, or every switch when no job is selected (as ``switch_ifs``)."""
    neighbours = NEIGHBOR_INFO + s.sel(f'fabric=~"$fabric",neighbor_host=~"{HOSTS}"')
    return (f"(({build(sel)}) and on ({SWITCH_KEY}) {neighbours}"
            f" or {build(with_matcher(sel, SWITCH_NAMED))})")


def nic_or_switch(s: Settings, build: Build, sel: str) -> str:
    """A recorded series with NIC ports (host) and switch interfaces (switch) under one name."""
    nics = with_matcher(with_matcher(sel, 'host!=""'), HOST)
    switches = with_matcher(sel, 'switch!=""')
    return f"({build(nics)} or {switch_ifs(s, build, switches)})"


def host_pairs(build: Build, sel: str) -> str:
    return f"({build(with_matcher(sel, PAIR_SOURCE))} or {build(with_matcher(sel, PAIR_DESTINATION))})"


def variables(s: Settings) -> list:
    cluster = query_variable("cluster", "Cluster", f"label_values({JOB_NODE_INFO}{s.sel()}, cluster)")
    in_cluster = s.sel('cluster=~"$cluster"')
    jobs = f"max by (job_id, job_name) (max_over_time({JOB_NODE_INFO}{in_cluster}[$__range]))"
    job = query_variable(
        "job", "Job", f'query_result(label_join({jobs}, "display", " #", "job_name", "job_id"))', multi=False,
        regex='/display="(?<text>(?:[^"\\\\]|\\\\.)*)".*job_id="(?<value>(?:[^"\\\\]|\\\\.)*)"/')
    # ".*" exactly when $job is All: label_replace sets node only if the interpolated $job is ".*".
    all_marker = ('(label_replace(label_replace(vector(1), "job_selected", "$job", "", ""), "node", ".*", '
                  '"job_selected", `\\.\\*`) and on (node) label_replace(vector(1), "node", ".*", "", ""))')
    nodes = f"max by (node) (max_over_time({JOB_NODE_INFO}{s.sel(JOB)}[$__range]))"
    job_hosts = query_variable(
        "job_hosts", "Job hosts", f"query_result(({nodes} unless on () {all_marker}) or {all_marker})",
        all_value=None, regex='/node="(?<value>(?:[^"\\\\]|\\\\.)*)"/', hidden=True)
    return [cluster, job, job_hosts]


def job_row(s: Settings) -> list:
    """Overview row for the selected job (or the worst jobs when "All")."""
    n = s["top_n"]
    j = s.sel(JOB)
    return [
        row("Job: $job"),
        timeseries("Job congestion severity (1 = threshold)", [
            Q(f"topk({n}, {JOB_SEVERITY}{j})", "{{cluster}} {{job_id}}")],
            "short", thresholds=[1], width=12,
            description="The worst congestion severity over the job's hosts (fabric:job_congestion:severity: "
                        "NIC ports, HCA ports, and the switch ports facing them); above 1 the job's traffic is "
                        "congested. With \"All\": the worst jobs."),
        timeseries("Job role scores", [
            Q(f"max by (cluster, job_id, role) ({JOB_ROLE_SCORE}{j})", "{{job_id}} {{role}}")],
            "short", thresholds=[1], width=12,
            description="victim: its hosts are paused, retransmit or wait for credits; contributor: its senders "
                        "are throttled by CNPs; incast_target: its hosts send CNPs and pauses, or the switch "
                        "ports facing them wait (fabric:job_role:score)."),
        table(f"Job hosts ranked by congestion (worst over dashboard range, top {n})", [
            Q(f"topk({n}, max by (cluster, job_id, host) (max_over_time({JOB_HOST_SEVERITY}{j}[$__range])))")],
            "short", width=24, link_field="host",
            links=[("Open this host in RoCE congestion",
                    f"/d/{s['dashboard_uid_prefix']}roce?${{__url_time_range}}&${{datasource:queryparam}}"
                    "&var-host=${__data.fields.host}")],
            description="Each host the job holds, by its worst severity in the range "
                        "(fabric:job_host_congestion:severity)."),
    ]


def series(name: str) -> Build:
    """The plain selection of a metric, as a Build for the filters above."""
    return lambda sel: f"{name}{sel}"
