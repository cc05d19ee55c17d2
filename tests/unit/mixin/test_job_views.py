"""Every host and port panel of the generated dashboards honours the selected job (issue #22).

Two checks:

- structural, over the generated JSON: every selector of a series that belongs to a host or port
  (labels host, node_guid, switch, source/destination) carries the job filter of its kind, or sits
  in the LLDP join, and the two halves of the either-end filters are both there;
- behavioural, against a real Prometheus whose TSDB is backfilled with series for two jobs' hosts
  (gpu-a runs job 101, gpu-b ran job 102 and ended halfway): every host/port panel query, with the
  variables interpolated as Grafana would, returns only gpu-a's ports when job 101 is selected,
  something else with "All", and the variable queries list both jobs (the ended one too) and give
  the right hosts.

The exporter health dashboard is exempt (EXEMPT): its series are per polled target (switches, SM
nodes and hosts alike), and a job filter there would hide the switch and SM targets every job
depends on.
"""

from __future__ import annotations

import re
import time

import pytest

from fabric_exporter.catalog import CATALOG
from fabric_exporter.mixin import dashboards, job_views, rules
from fabric_exporter.mixin.panels import queries_of
from fabric_exporter.mixin.settings import Settings
from tests.harness.prometheus import backfilled_prometheus

SETTINGS = Settings()
BOARDS = dashboards.build_all(SETTINGS)
EXEMPT = {"fabric-exporter": "per-target exporter health: switches and SM nodes belong to no job"}

# The job-attribution series (issue #22) and their labels: the fabric_* ones get test data of their own
# below (a job's nodes, the LLDP cabling) rather than the generic per-entity series.
CONTRACT_LABELS = {
    "fabric_job_node_info": {"cluster", "job_id", "job_name", "user", "account", "partition", "node"},
    "fabric_roce_switch_if_neighbor_info": {"fabric", "switch", "interface", "neighbor_host", "neighbor_port"},
    "fabric:job_congestion:severity": {"cluster", "job_id"},
    "fabric:job_role:score": {"cluster", "job_id", "role"},
    "fabric:job_host_congestion:severity": {"cluster", "job_id", "host"},
}
IDENTIFYING = {"host", "node_guid", "switch", "source", "destination"}


def _labels() -> dict[str, set[str]]:
    out = {name: set(labels) for name, labels in CONTRACT_LABELS.items()}
    for spec in CATALOG.values():
        for name in spec.series_names():
            out[name] = {label for labels in spec.label_sets for label in labels} | (
                {"le"} if name.endswith("_bucket") else set())  # a histogram's buckets carry their bound
    for r in rules.build(SETTINGS).recordings():
        out[r.record] = {label for labels, _ in r.test_expect for label in labels} - {"job", "instance"}
    return out


LABELS = _labels()
_SELECTOR = re.compile(r'([A-Za-z_:][A-Za-z0-9_:]*)\{((?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
LLDP_JOIN = re.compile(rf"and on \(({job_views.SWITCH_IF_KEY}|{job_views.SWITCH_KEY})\) {job_views.NEIGHBOR_INFO}")
FILTERS = (job_views.HOST, job_views.IB_NODE, job_views.IB_PEER, job_views.SWITCH_NAMED, job_views.PAIR_SOURCE,
           job_views.PAIR_DESTINATION, 'job_id=~"$job"', f'neighbor_host=~"{job_views.HOSTS}"')
PAIRED = {job_views.IB_NODE: job_views.IB_PEER, job_views.PAIR_SOURCE: job_views.PAIR_DESTINATION}


def host_panel_queries():
    """(board, panel title, expr) of every panel query that reads a host or port series."""
    for name, board in sorted(BOARDS.items()):
        for title, expr in queries_of(board):
            if name in EXEMPT or title.startswith("variable "):
                continue
            if any(LABELS.get(m, set()) & IDENTIFYING for m, _ in _SELECTOR.findall(expr)):
                yield name, title, expr


def _lldp_spans(expr: str) -> list[tuple[int, int]]:
    """Spans of the ``( ... )`` groups that are joined with the LLDP neighbour map."""
    spans = []
    for m in LLDP_JOIN.finditer(expr):
        close = expr.rstrip()[:m.start()].rstrip()
        end = len(close) - 1
        assert close.endswith(")"), expr
        depth, i = 0, end
        while i >= 0:
            depth += {")": 1, "(": -1}.get(expr[i], 0)
            if depth == 0:
                break
            i -= 1
        spans.append((i, end))
    return spans


def unfiltered(expr: str) -> list[str]:
    """The host/port selectors of ``expr`` that no job filter narrows (empty: the query honours the job)."""
    problems = []
    spans = _lldp_spans(expr)
    by_filter: dict[str, set[str]] = {}
    for m in _SELECTOR.finditer(expr):
        metric, matchers = m.group(1), m.group(2)
        if not LABELS.get(metric, set()) & IDENTIFYING:
            continue
        found = [f for f in FILTERS if f in matchers]
        for f in found:
            by_filter.setdefault(f, set()).add(metric)
        joined = any(a <= m.start() < b for a, b in spans)
        if not found and not joined:
            problems.append(f"{metric}{{{matchers}}}")
        if job_views.SWITCH_NAMED in found and not any(
                metric in expr[a:b] for a, b in spans):
            problems.append(f"{metric}: switch=~ half without its LLDP join")
    for one, other in PAIRED.items():
        for metric in by_filter.get(one, set()) - by_filter.get(other, set()):
            problems.append(f"{metric}: {one} without {other}")
    return problems


def test_every_dashboard_has_the_job_variables():
    for name, board in BOARDS.items():
        variables = {v["name"]: v for v in board["templating"]["list"]}
        names = [v["name"] for v in board["templating"]["list"]]
        assert names[:5] == ["datasource", "fabric", "cluster", "job", "job_hosts"], (name, names)
        job, hosts = variables["job"], variables["job_hosts"]
        assert "max_over_time(" in job["query"] and "[$__range]" in job["query"], name  # ended jobs listed
        assert "(?<text>" in job["regex"] and "(?<value>" in job["regex"] and not job["multi"], name
        assert job["includeAll"] and job["allValue"] == ".*", name
        # hidden, and "All" expands to every option (the job's nodes) rather than a catch-all
        assert hosts["hide"] == 2 and hosts["includeAll"] and hosts["allValue"] is None, name
        assert hosts["current"]["value"] == ["$__all"], name


def test_every_host_and_port_panel_honours_the_job():
    queries = list(host_panel_queries())
    boards = {b for b, _, _ in queries}
    assert boards == set(BOARDS) - set(EXEMPT), boards
    assert len(queries) >= 60, len(queries)
    bad = [(b, t, unfiltered(e)) for b, t, e in queries if unfiltered(e)]
    assert not bad, bad


@pytest.mark.parametrize("breakage", [
    lambda e: e.replace("," + job_views.HOST, "", 1),
    lambda e: e.replace("," + job_views.IB_PEER, "", 1),
    lambda e: LLDP_JOIN.sub(lambda m: m.group(0).replace(job_views.NEIGHBOR_INFO, "fabric_roce_switch_if_info"),
                            e, count=1),
    lambda e: re.sub(LLDP_JOIN.pattern + r'\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}', "", e, count=1),
    lambda e: e.replace(job_views.PAIR_DESTINATION, 'destination=~".*"', 1),
])
def test_the_check_notices_a_panel_that_ignores_the_job(breakage):
    """Each breakage removes one filter from the first query it changes; the check must say so."""
    for _, _, expr in host_panel_queries():
        broken = breakage(expr)
        if broken != expr:
            assert unfiltered(broken), broken
            return
    pytest.fail("no query has what this breakage removes")


# --- behaviour, on a real Prometheus ---------------------------------------------------------------

STEP = 15
T0 = (int(time.time()) // 3600 - 3) * 3600  # three hours ago: backfilled blocks, outside the head
SAMPLES = 241  # an hour
END = T0 + (SAMPLES - 1) * STEP
JOB = 'job="fabric-exporter"'
DEFAULTS = {"fabric": "lab", "priority": "3", "direction": "rx", "queue": "UC3", "counter": "x", "kind": "sent",
            "role": "client", "group": "g", "collector": "roce_nic", "host_group": "hg", "tool": "ib_write_lat",
            "message_bytes": "2", "source_group": "r1", "destination_group": "r2", "device": "mlx5_0",
            "netdev": "eth0", "port": "1", "peer_port": "1", "le": "+Inf", "cluster": "c1", "neighbor_port": "eth0",
            "pg": "3", "region": "shared", "pool": "ingress_lossless_pool", "signal": "pfc_rx_pause_time"}
# one entity per host: its identifying labels, and how much bigger the other host's values are
ENTITIES = {
    "gpu-a": {"host": "gpu-a", "node_guid": "0xa", "node_name": "gpu-a mlx5_0", "peer_node_name": "leaf-1",
              "switch": "leaf-1", "interface": "Ethernet0", "source": "gpu-a", "destination": "gpu-c",
              "job_id": "101"},
    "gpu-b": {"host": "gpu-b", "node_guid": "0xb", "node_name": "leaf-1", "peer_node_name": "gpu-b mlx5_0",
              "switch": "leaf-1", "interface": "Ethernet4", "source": "gpu-d", "destination": "gpu-b",
              "job_id": "102"},
    # no job: a switch uplink (no LLDP host neighbour), a switch-to-switch IB link
    "uplink": {"host": "", "node_guid": "0xc", "node_name": "leaf-1", "peer_node_name": "spine-1",
               "switch": "leaf-1", "interface": "Ethernet48", "source": "gpu-d", "destination": "gpu-c",
               "job_id": "103"},
}
SCALE = {"gpu-a": 1, "gpu-b": 10, "uplink": 100}


def _series_lines() -> list[str]:
    lines = []
    names = sorted({m for b, board in BOARDS.items() if b not in EXEMPT for _, e in queries_of(board)
                    for m, _ in _SELECTOR.findall(e) if LABELS.get(m, set()) & IDENTIFYING})
    for name in names:
        if name in CONTRACT_LABELS and name.startswith("fabric_"):
            continue  # written below, with their own meaning
        labels = LABELS[name]
        for entity, ident in ENTITIES.items():
            values = {**DEFAULTS, **{k: v for k, v in ident.items() if k in labels}}
            if "host" in labels and not values.get("host") and "switch" not in labels and "node_guid" not in labels:
                continue
            # a histogram gets two buckets, so histogram_quantile has something to interpolate
            for le in ("0.5", "+Inf") if name.endswith("_bucket") else (values.get("le"),):
                text = ",".join(f'{k}="{le if k == "le" else values[k]}"' for k in sorted(labels) if k in values)
                lines += [f"{name}{{{JOB},{text}}} {SCALE[entity] * (i + 1)} {T0 + i * STEP}" for i in range(SAMPLES)]
    for host, job, name, last in (("gpu-a", "101", "llama", SAMPLES), ("gpu-b", "102", "bert", SAMPLES // 2)):
        lines += [f'fabric_job_node_info{{{JOB},cluster="c1",job_id="{job}",job_name="{name}",user="u",account="a",'
                  f'partition="p",node="{host}"}} 1 {T0 + i * STEP}' for i in range(last)]
    for host, interface in (("gpu-a", "Ethernet0"), ("gpu-b", "Ethernet4")):
        lines += [f'fabric_roce_switch_if_neighbor_info{{{JOB},fabric="lab",switch="leaf-1",interface="{interface}",'
                  f'neighbor_host="{host}",neighbor_port="eth0"}} 1 {T0 + i * STEP}' for i in range(SAMPLES)]
    return lines


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    from fabric_exporter.report.prom import PrometheusClient

    work = tmp_path_factory.mktemp("jobviews")
    server = backfilled_prometheus(work, "\n".join(_series_lines()) + "\n# EOF\n").start()
    try:
        yield PrometheusClient(server.base)
    finally:
        server.stop()


def interpolate(expr: str, job: str, hosts: list[str]) -> str:
    """What Grafana sends: ``${job_hosts:pipe}`` joins the options, ``$job`` is the id or ``.*``."""
    expr = expr.replace(job_views.JOB_HOSTS, "|".join(hosts))
    expr = expr.replace("$__rate_interval", "2m").replace("$__range", f"{SAMPLES * STEP}s")
    expr = expr.replace("$job", job)
    expr = re.sub(r"\$[a-z_]+", ".*", expr)  # every other variable: All
    return expr


def _options(client, query: str, regex: str, job: str) -> list[tuple[str, str]]:
    """The variable's (value, text) options, from query_result's text the way Grafana writes it."""
    inner = re.fullmatch(r"query_result\((.*)\)", query).group(1)
    pattern = re.compile(regex.strip("/").replace("(?<", "(?P<"))
    out = []
    for s in client.query(interpolate(inner, job, []), END):
        text = "{" + ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items())) + "}"
        m = pattern.search(text)
        if m:
            out.append((m.group("value"), m.groupdict().get("text") or m.group("value")))
    return sorted(out)


def test_the_roce_host_list_is_the_jobs_hosts(prom):
    query = next(v["query"] for v in BOARDS["fabric-roce"]["templating"]["list"] if v["name"] == "host")
    selector = re.fullmatch(r"label_values\((.*), host\)", query).group(1)

    def hosts(job, job_hosts):
        return sorted({s.labels["host"] for s in prom.query(interpolate(selector, job, job_hosts), END)})

    assert hosts("101", ["gpu-a"]) == ["gpu-a"]
    assert hosts(".*", [".*"]) == ["gpu-a", "gpu-b"]


def test_the_variables_list_ended_jobs_by_name_and_give_their_hosts(prom):
    v = {x["name"]: x for x in BOARDS["fabric-roce"]["templating"]["list"]}
    jobs = _options(prom, v["job"]["query"], v["job"]["regex"], "")
    assert jobs == [("101", "llama #101"), ("102", "bert #102")]  # 102 ended halfway through the range
    hosts = v["job_hosts"]
    assert _options(prom, hosts["query"], hosts["regex"], "101") == [("gpu-a", "gpu-a")]
    assert _options(prom, hosts["query"], hosts["regex"], "102") == [("gpu-b", "gpu-b")]
    assert _options(prom, hosts["query"], hosts["regex"], ".*") == [(".*", ".*")]  # All: no filter


def _belongs_to_a(labels: dict) -> bool:
    if "job_id" in labels:
        return labels["job_id"] == "101"
    if labels.get("host"):
        return labels["host"] == "gpu-a"
    if "node_name" in labels:
        return "gpu-a mlx5_0" in (labels["node_name"], labels.get("peer_node_name"))
    if "switch" in labels and "interface" not in labels:  # a whole switch (a buffer pool) facing gpu-a
        return labels["switch"] == "leaf-1"
    if "switch" in labels:
        return (labels["switch"], labels.get("interface")) == ("leaf-1", "Ethernet0")
    if "source" in labels:
        return "gpu-a" in (labels["source"], labels["destination"])
    return True  # an aggregate: compared with "All" below


def test_every_host_and_port_panel_shows_only_the_jobs_ports(prom):
    checked = uplinks = 0
    for board, title, expr in host_panel_queries():
        job = prom.query(interpolate(expr, "101", ["gpu-a"]), END)
        everything = prom.query(interpolate(expr, ".*", [".*"]), END)
        assert job, (board, title, "nothing for the job", interpolate(expr, "101", ["gpu-a"]))
        assert [s.labels for s in job if not _belongs_to_a(s.labels)] == [], (board, title)
        shown = sorted((sorted(s.labels.items()), s.samples[0][1]) for s in job)
        if all("switch" in s.labels and "interface" not in s.labels for s in everything):
            # whole-switch series: the test data has one switch, which faces gpu-a, so the job and "All"
            # agree; a switch facing none of the job's hosts is dropped (test_a_switch_facing_none_of_the_jobs_hosts_is_dropped).
            checked += 1
            continue
        assert shown != sorted((sorted(s.labels.items()), s.samples[0][1]) for s in everything), (board, title)
        interfaces = {s.labels["interface"] for s in everything if "interface" in s.labels}
        if interfaces:  # "All" keeps the interfaces without an LLDP host neighbour (uplinks)
            assert "Ethernet48" in interfaces, (board, title, interfaces)
            uplinks += 1
        checked += 1
    assert checked >= 60 and uplinks >= 5, (checked, uplinks)


def test_a_switch_facing_none_of_the_jobs_hosts_is_dropped(prom):
    """Whole-switch panels (buffer pools) keep the switches that face one of the job's hosts only."""
    whole = [(b, t, e) for b, t, e in host_panel_queries() if "on (fabric, switch) " in e]
    assert whole, "no whole-switch panel"
    for board, title, expr in whole:
        assert prom.query(interpolate(expr, "101", ["gpu-a"]), END), (board, title)
        assert prom.query(interpolate(expr, "999", ["gpu-z"]), END) == [], (board, title)
