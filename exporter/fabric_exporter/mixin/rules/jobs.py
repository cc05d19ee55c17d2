"""Job attribution (issue 22): which scheduler job a congested port hurts or is caused by.

Every join goes through one series per host first, so jobs sharing nodes never meet a
many-to-many match:

1. ``fabric:host_congestion:severity{host}``: the worst congestion severity of every port that
   belongs to the host, over both fabrics: its RoCE NIC ports (label ``host``), its IB HCA ports
   (``fabric_ib_node_host_info`` on node_guid), the IB switch port facing it (its ``peer_node_name``
   is the HCA's node_name) and the RoCE switch interface facing it (LLDP,
   ``fabric_roce_switch_if_neighbor_info`` neighbor_host). A node GUID, node name or switch
   interface that maps to two hosts is left out rather than attributed to either.
2. ``fabric:job_host:info{cluster, job_id, host}``: the hosts each running job holds
   (``fabric_job_node_info``, ``node`` renamed ``host``), one series per job and host.
3. ``fabric:job_host_congestion:severity`` = (2) x (1) on host (many jobs to one host series),
   ``fabric:job_congestion:severity{cluster, job_id}`` its max over the job's hosts.
4. Roles, per host then per job: ``fabric:host_role:score{host, role}`` and
   ``fabric:job_role:score{cluster, job_id, role}``, each scaled so 1 is the threshold:
   victim (PFC pause received, transport retransmit timeouts, IB HCA transmit-wait), contributor
   (CNPs handled: its senders are being throttled), incast_target (CNPs sent, PFC pauses sent,
   transmit-wait / ECN on the switch egress port facing it).

Alert ``FabricJobCongested`` (labels cluster, job_id) fires when a job's severity stays above 1.
"""

from __future__ import annotations

from ...promql import quote
from .base import WARNING, AlertRule, Ctx, Recording, Scenario, fmt, labels_text

HOST_SEVERITY = "fabric:host_congestion:severity"
JOB_HOST_SEVERITY = "fabric:job_host_congestion:severity"
JOB_SEVERITY = "fabric:job_congestion:severity"
JOB_ROLE = "fabric:job_role:score"
HOST_ROLE = "fabric:host_role:score"
JOB_HOST = "fabric:job_host:info"
IB_HOST = "fabric:ib_node_host:info"
NEIGHBOR = "fabric:roce_switch_if_neighbor:info"
ROLES = ("victim", "contributor", "incast_target")
JOB_LABELS = ("cluster", "job_id")

# Example series of the test scenarios: host gpu-01 has RoCE NICs, gpu-02 an IB HCA (guid G2) on
# leaf-1 port 1, gpu-03 sits behind RoCE switch leaf-1 Ethernet8 (LLDP). Job 100 holds gpu-01 and
# gpu-02; job 200 holds gpu-02 (shared) and gpu-03; job 300 holds gpu-04, which has no fabric data.
G2, G_LEAF = "0x0002c90300000002", "0x0002c90300001000"
JOB_NODES = {"100": ("gpu-01", "gpu-02"), "200": ("gpu-02", "gpu-03"), "300": ("gpu-04",)}


def _tag(expr: str, label: str, value: str) -> str:
    return f'label_replace({expr}, "{label}", "{value}", "", "")'


def _max_of(branches: list[tuple[str, str]], by: str) -> str:
    """``max by (by)`` over branches each tagged with its own ``signal`` (so ``or`` keeps them all)."""
    return f"max by ({by}) (" + " or ".join(_tag(e, "signal", name) for name, e in branches) + ")"


def _unambiguous(info: str, key: str, value_label: str) -> str:
    """``info`` without the keys (``fabric, node_name`` ...) that map to more than one ``value_label``."""
    return (f"({info} unless on({key}) (count by ({key}) (max by ({key}, {value_label}) ({info})) > 1))")


class JobExamples:
    """The scenarios' input series and the severities they must give (module docstring's hosts and jobs):
    made once, read by every builder below so their promtool cases agree."""

    def __init__(self, c: Ctx):
        self.c = c
        p = c.p
        self.t_pfc = c.s["congestion.pfc_pause_fraction"]
        self.t_retrans = c.s["thresholds.retransmit_timeouts_per_second"]
        self.t_cnp = c.s["jobs.cnp_per_second"]
        s = self.s
        self.nic = nic = {"fabric": "roce", "host": "gpu-01", "device": "mlx5_0", "port": "1", "netdev": "eth2"}
        hca = {"fabric": "ib", "node_guid": G2, "node_name": "gpu-02 mlx5_0", "port": "1",
               "peer_node_name": "leaf-1", "peer_port": "1"}
        leaf = {"fabric": "ib", "node_guid": G_LEAF, "node_name": "leaf-1", "port": "1",
                "peer_node_name": "gpu-02 mlx5_0", "peer_port": "1"}
        self.sw = sw = {"fabric": "roce", "switch": "leaf-1", "interface": "Ethernet8"}
        q = c.s["lossless_queue"]
        # gpu-01: paused 30 s a minute (0.5) and 10% CE-marked -> NIC severity max(0.5/t_pfc, 0.1/t_ecn)
        nic_series = (
            (s("fabric_roce_nic_pfc_rx_pause_seconds_total", **nic, priority=p), "0+30x20"),
            (s("fabric_roce_ecn_marked_packets_total", **nic), "0+600x20"),
            (s("fabric_roce_rx_packets_total", **nic), "0+6000x20"))
        self.nic_severity = max(0.5 / self.t_pfc, 0.1 / c.s["congestion.ecn_marked_ratio"])
        # gpu-02: its HCA port stalls 0.25 of the time, the leaf port facing it 0.5 (100 B/s links)
        t_ib = c.s["congestion.ib_xmit_wait_ratio"]
        self.ib_series = (
            (s("fabric_ib_port_transmit_wait_total", **hca), "0+1500x20"),
            (s("fabric_ib_port_rate_bytes_per_second", **hca), "100x20"),
            (s("fabric_ib_port_transmit_wait_total", **leaf), "0+3000x20"),
            (s("fabric_ib_port_rate_bytes_per_second", **leaf), "100x20"),
            (s("fabric_ib_node_host_info", fabric="ib", node_guid=G2, node_name="gpu-02 mlx5_0", host="gpu-02"),
             "1x20"),
            # a node name two CAs claim for different hosts: attributed to neither
            (s("fabric_ib_node_host_info", fabric="ib", node_guid="0x0002c90300000007", node_name="dup",
               host="gpu-07"), "1x20"),
            (s("fabric_ib_node_host_info", fabric="ib", node_guid="0x0002c90300000008", node_name="dup",
               host="gpu-08"), "1x20"),
            (s("fabric_ib_port_transmit_wait_total", **{**leaf, "port": "2", "peer_node_name": "dup"}), "0+3000x20"),
            (s("fabric_ib_port_rate_bytes_per_second", **{**leaf, "port": "2", "peer_node_name": "dup"}), "100x20"))
        self.hca_severity, self.leaf_severity = 0.25 / t_ib, 0.5 / t_ib
        # gpu-03: behind leaf-1 Ethernet8 (LLDP), whose lossless queue sends 60 of 240 packets CE-marked
        self.sw_series = (
            (s("fabric_roce_ecn_marked_packets_total", **sw, queue=q), "0+60x20"),
            (s("fabric_roce_switch_queue_tx_packets_total", **sw, queue=q), "0+240x20"),
            (s("fabric_roce_switch_if_neighbor_info", **sw, neighbor_host="gpu-03", neighbor_port="eth2"), "1x20"))
        self.sw_severity = 0.25 / c.s["congestion.ecn_marked_ratio"]
        # a selector that pins a cluster label (site setting) pins the job series' cluster too
        self.cluster = cluster = c.base.get("cluster", "c1")
        jobs_series = tuple(
            (s("fabric_job_node_info", fabric="slurm", cluster=cluster, job_id=job, job_name=f"train-{job}", user="u",
               account="a", partition="gpu", node=node), "1x20")
            for job, nodes in JOB_NODES.items() for node in nodes)
        self.jobs_series = jobs_series
        self.all_series = nic_series + self.ib_series + self.sw_series + jobs_series
        self.host_values = {"gpu-01": self.nic_severity, "gpu-02": max(self.hca_severity, self.leaf_severity),
                            "gpu-03": self.sw_severity}

    def s(self, name: str, **labels: str) -> str:
        return f"{name}{labels_text({**self.c.base, **labels})}"


class _Joins:
    """PromQL that attributes a port-level series to the host it belongs to, one form per port kind."""

    def __init__(self, c: Ctx):
        self.sel = c.sel
        self.by_guid = f"* on(fabric, node_guid) group_left(host) {IB_HOST}"
        self.by_peer = f"* on(fabric, node_name) group_left(host) {_unambiguous(IB_HOST, 'fabric, node_name', 'host')}"

    def hca_ports(self, metric: str) -> str:
        return f"max by (host) ({metric}{self.sel()} {self.by_guid})"

    def ib_switch_ports_facing(self, metric: str) -> str:
        has_peer = self.sel('peer_node_name!=""')
        peer = f'label_replace({metric}{has_peer}, "node_name", "$1", "peer_node_name", "(.+)")'
        return f"max by (host) ({peer} {self.by_peer})"

    def roce_switch_ifs_facing(self, metric: str) -> str:
        joined = f"{metric}{self.sel()} * on(fabric, switch, interface) group_left(neighbor_host) {NEIGHBOR}"
        return f'max by (host) (label_replace({joined}, "host", "$1", "neighbor_host", "(.+)"))'


def host_vocabulary(c: Ctx, ex: JobExamples) -> list[Recording]:
    """One series per key, ambiguous keys dropped."""
    sel = c.sel
    has_host = sel('host!=""')
    ib_info = f"max by (fabric, node_guid, node_name, host) (fabric_ib_node_host_info{has_host})"
    has_neighbor = sel('neighbor_host!=""')
    neighbor = f"max by (fabric, switch, interface, neighbor_host) (fabric_roce_switch_if_neighbor_info{has_neighbor})"
    return [
        Recording(
            IB_HOST, _unambiguous(ib_info, "fabric, node_guid", "host"), ex.ib_series, 10,
            tuple(({"fabric": "ib", "node_guid": g, "node_name": n, "host": h}, 1.0)
                  for g, n, h in ((G2, "gpu-02 mlx5_0", "gpu-02"), ("0x0002c90300000007", "dup", "gpu-07"),
                                  ("0x0002c90300000008", "dup", "gpu-08")))),
        Recording(
            NEIGHBOR, _unambiguous(neighbor, "fabric, switch, interface", "neighbor_host"), ex.sw_series, 10,
            (({**ex.sw, "neighbor_host": "gpu-03"}, 1.0),)),
    ]


def host_severity(c: Ctx, ex: JobExamples, joins: _Joins) -> list[Recording]:
    has_host = c.sel('host!=""')
    expr = _max_of([
        ("roce_nic", f"max by (host) (fabric:roce_nic_port_congestion:severity{has_host})"),
        ("ib_hca", joins.hca_ports("fabric:ib_port_congestion:severity")),
        ("ib_switch", joins.ib_switch_ports_facing("fabric:ib_port_congestion:severity")),
        ("roce_switch", joins.roce_switch_ifs_facing("fabric:roce_switch_queue_congestion:severity")),
    ], "host")
    return [Recording(HOST_SEVERITY, expr, ex.all_series, 10,
                      tuple(({"host": h}, v) for h, v in ex.host_values.items()))]


def job_severity(c: Ctx, ex: JobExamples) -> list[Recording]:
    has_node, cluster, host_values = c.sel('node!=""'), ex.cluster, ex.host_values
    return [
        Recording(
            JOB_HOST,
            f'max by (cluster, job_id, host) (label_replace(fabric_job_node_info{has_node}, '
            f'"host", "$1", "node", "(.+)"))',
            ex.jobs_series, 10,
            tuple(({"cluster": cluster, "job_id": j, "host": h}, 1.0) for j, hosts in JOB_NODES.items() for h in hosts)),
        Recording(
            JOB_HOST_SEVERITY, f"{JOB_HOST} * on(host) group_left() {HOST_SEVERITY}", ex.all_series, 10,
            tuple(({"cluster": cluster, "job_id": j, "host": h}, host_values[h])
                  for j, hosts in JOB_NODES.items() for h in hosts if h in host_values)),
        Recording(
            JOB_SEVERITY, f"max by (cluster, job_id) ({JOB_HOST_SEVERITY})", ex.all_series, 10,
            (({"cluster": cluster, "job_id": "100"}, max(ex.nic_severity, host_values["gpu-02"])),
             ({"cluster": cluster, "job_id": "200"}, max(host_values["gpu-02"], ex.sw_severity)))),
    ]


def roles(c: Ctx, ex: JobExamples, joins: _Joins) -> list[Recording]:
    sel, s = c.sel, ex.s
    t_pfc, t_retrans, t_cnp, nic = ex.t_pfc, ex.t_retrans, ex.t_cnp, ex.nic
    prio = quote(c.p)
    timeouts = sel('host!="",kind=~"local_ack_timeout|adaptive_retransmit_timeout"')
    cnp_handled, cnp_sent = sel('host!="",kind="handled"'), sel('host!="",kind="sent"')
    pause = "clamp_max(fabric:roce_pfc_pause_time:fraction{sel}, 1) / " + fmt(t_pfc)
    victim = _max_of([
        ("pfc_rx", pause.format(sel=sel(f'priority={prio},direction="rx",host!=""'))),
        ("retransmit_timeouts",
         f"sum by (host) (fabric:roce_retransmits:rate{timeouts}) / {fmt(t_retrans)}"),
        ("ib_hca_xmit_wait", joins.hca_ports("fabric:ib_port_congestion:severity")),
    ], "host")
    contributor = f"sum by (host) (fabric:roce_cnp:rate{cnp_handled}) / {fmt(t_cnp)}"
    incast = _max_of([
        ("cnp_sent", f"sum by (host) (fabric:roce_cnp:rate{cnp_sent}) / {fmt(t_cnp)}"),
        ("pfc_tx", pause.format(sel=sel(f'priority={prio},direction="tx",host!=""'))),
        ("ib_switch_xmit_wait", joins.ib_switch_ports_facing("fabric:ib_port_congestion:severity")),
        ("roce_switch_ecn", joins.roce_switch_ifs_facing("fabric:roce_switch_queue_congestion:severity")),
    ], "host")
    # role inputs: gpu-01 handles 2*t_cnp CNPs/s (contributor 2) and its NIC is paused 0.5 (victim);
    # gpu-02's HCA stalls (victim) and the leaf port facing it stalls more (incast target);
    # gpu-03 sends t_cnp/2 CNPs/s and its switch port marks (incast target), handles none (no
    # contributor series); gpu-04 (no port data otherwise) times out 5x the threshold (victim)
    timeouts_per_min = float(fmt(t_retrans * 300))  # 5x the threshold, as the series text spells it
    role_series = ex.all_series + (
        (s("fabric_roce_nic_cnp_handled_total", **nic), f"0+{fmt(2 * t_cnp * 60)}x20"),
        (s("fabric_roce_nic_cnp_sent_total", **{**nic, "host": "gpu-03"}), f"0+{fmt(t_cnp * 30)}x20"),
        (s("fabric_roce_nic_local_ack_timeouts_total", **{**nic, "host": "gpu-04"}), f"0+{fmt(timeouts_per_min)}x20"))
    host_roles = {
        ("gpu-01", "victim"): 0.5 / t_pfc, ("gpu-01", "contributor"): 2.0,
        ("gpu-02", "victim"): ex.hca_severity, ("gpu-02", "incast_target"): ex.leaf_severity,
        ("gpu-03", "incast_target"): max(0.5, ex.sw_severity),
        ("gpu-04", "victim"): timeouts_per_min / 60 / t_retrans,
    }
    # one role at a time: per role there is one series per host, so jobs x hosts stays many-to-one
    job_role = " or ".join(
        f'max by (cluster, job_id, role) ({JOB_HOST} * on(host) group_left(role) {HOST_ROLE}{{role="{r}"}})'
        for r in ROLES)
    expect = {}
    for job, hosts in JOB_NODES.items():
        for (h, r), v in host_roles.items():
            if h in hosts:
                key = (job, r)
                expect[key] = max(expect.get(key, v), v)
    return [
        Recording(
            HOST_ROLE,
            " or ".join(_tag(e, "role", r) for r, e in (("victim", victim), ("contributor", contributor),
                                                         ("incast_target", incast))),
            role_series, 10, tuple(({"host": h, "role": r}, v) for (h, r), v in host_roles.items())),
        Recording(JOB_ROLE, job_role, role_series, 10,
                  tuple(({"cluster": ex.cluster, "job_id": j, "role": r}, v) for (j, r), v in expect.items())),
    ]


def job_congested(c: Ctx, ex: JobExamples) -> AlertRule:
    name, s, cluster = "FabricJobCongested", ex.s, ex.cluster
    job_labels = {"cluster": cluster, "job_id": "100"}
    # paused about 3x the threshold's s/s from minute 10 (never over 1 s/s, and no partial rate on
    # the threshold itself, which a threshold of 0.2 with a fixed 0.6 hit: base.Ctx.ramp_plan)
    full, onset = c.ramp_plan(10, ex.t_pfc, cap=1.0)
    length = c.length(name, onset)
    quiet_then_congested = (
        (s("fabric_roce_nic_pfc_rx_pause_seconds_total", **ex.nic, priority=c.p), c.ramp(10, full * 60, length)),
        (s("fabric_roce_rx_packets_total", **ex.nic), f"0+6000x{length}"),
        (s("fabric_job_node_info", fabric="slurm", cluster=cluster, job_id="100", job_name="train-100", user="u",
           account="a", partition="gpu", node="gpu-01"), f"1x{length}"))
    return c.alert(
        name, WARNING, f"{JOB_SEVERITY} > 1",
        "A scheduler job's hosts sit on a congested fabric path.",
        "Job {{ $labels.job_id }} of cluster {{ $labels.cluster }} has a host whose ports are congested "
        f"(severity above 1: past the congestion thresholds) for {c.s.for_(name)}. Worst hosts: "
        f"topk(3, {JOB_HOST_SEVERITY}" + '{cluster="{{ $labels.cluster }}", job_id="{{ $labels.job_id }}"}); '
        f"its role: {JOB_ROLE}" + '{job_id="{{ $labels.job_id }}"} (victim, contributor, incast_target).',
        Scenario(quiet_then_congested, onset, job_labels))


def job_rules(c: Ctx) -> tuple[list[Recording], list[AlertRule]]:
    ex, joins = JobExamples(c), _Joins(c)
    rec = host_vocabulary(c, ex) + host_severity(c, ex, joins) + job_severity(c, ex) + roles(c, ex, joins)
    return rec, [job_congested(c, ex)]
