"""What every dashboard shares: uids and drill-down links, the board frame (fabric and job
variables, tags, refresh), rate expressions and the legends naming a series in each domain."""

from __future__ import annotations

from .. import job_views as J
from ..panels import Query as Q
from ..panels import dashboard, query_variable
from ..settings import Settings


RI = "$__rate_interval"

# Legends naming a series by the labels that identify it in each domain.
IB_PORT = "{{node_name}}:{{port}}"
NIC = "{{host}} {{netdev}}"
RDMA_DEVICE = "{{host}} {{device}}"
SWITCH_IF = "{{switch}} {{interface}}"
GROUP_PAIR = "{{source_group}} -> {{destination_group}}"
TARGET = "{{group}}/{{host}}"


def uid(s: Settings, name: str) -> str:
    return f"{s['dashboard_uid_prefix']}{name}"


def link(s: Settings, name: str, params: str) -> str:
    return f"/d/{uid(s, name)}?${{__url_time_range}}&${{datasource:queryparam}}&{params}"


def _fabric_var(s: Settings):
    return query_variable("fabric", "Fabric", f"label_values(fabric_up{s.sel()}, fabric)")


def board(s: Settings, name: str, title: str, description: str, panels: list, variables: list = ()) -> dict:
    """A dashboard with the house uid, tags and refresh; its variables follow the fabric and job variables."""
    return dashboard(uid(s, name), title, description, panels, [_fabric_var(s), *J.variables(s), *variables],
                     tags=s["dashboard_tags"], refresh=s["dashboard_refresh"])


def rate(metric: str, selector: str, fn: str = "rate") -> str:
    """``fn`` (rate, increase, changes) of a metric over Grafana's rate interval."""
    return f"{fn}({metric}{selector}[{RI}])"


def R(metric: str, fn: str = "rate"):  # noqa: N802  (reads like S in the panel lists)
    """``fn`` of a metric as a job_views Build: selector -> expression."""
    return lambda sel: rate(metric, sel, fn)


def fabric_total(metric: str, selector: str, scope, legend: str = "", fn: str = "rate") -> Q:
    """The overview's view of a per-port counter: its rate summed per fabric, over the ports ``scope``
    (a job_views filter: hosts, ib_ports, switch_ifs) keeps."""
    expr = scope(R(metric, fn), selector)
    return Q(f"sum by (fabric) ({expr})", "{{fabric}}" + (f" {legend}" if legend else ""))

