"""``report --job ID``: one scheduler job's section — its hosts, congestion episodes and recovery,
roles and worst hosts over the window (issue #22).

What it reads (CONTRACT.md; published by the slurm_jobs collector and the job recording rules):

- ``fabric_job_node_info{cluster, job_id, job_name, user, account, partition, node}``: the hosts the
  job held at any time in the window (``max_over_time`` over the window, so a job that ended, or
  started, inside it is found), and the span of the window it was seen running in;
- ``fabric:job_congestion:severity{cluster, job_id}``: the worst severity over its hosts. An
  *episode* is a run of samples above 1, bridged over ``congestion.bridge_gap``, as the fabric
  episodes are (``episodes.py``); its *recovery* is the time from its end until the severity is back
  within ``congestion.recovery_margin`` of the job's baseline (its median outside every episode) for
  two samples — judged on the severity alone: there is no per-job latency probe;
- ``fabric:job_role:score{cluster, job_id, role}``: per role (victim, contributor, incast_target),
  its peak, median and time above 1; each episode names the role with the highest mean score in it;
- ``fabric:job_host_congestion:severity{cluster, job_id, host}``: the hosts ranked by their worst
  severity in the window, with the time each spent above 1.

A job id may repeat across clusters (each scheduler counts its own): with more than one cluster in
the window the report asks for ``--cluster``. Bounded like the rest of the report: one range query
per series kind at the report's step (at most ``collect.MAX_POINTS`` points), the host ranking
computed by Prometheus (``topk``) so a 2,000-node job is still one small answer.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from ..mixin.rules import duration_seconds
from ..mixin.settings import Settings
from ..promql import quote
from . import episodes as ep
from .collect import Window, _round, _values, iso
from .prom import PrometheusClient, ReportError

JOB_NODE_INFO = "fabric_job_node_info"
JOB_SEVERITY = "fabric:job_congestion:severity"
JOB_ROLE_SCORE = "fabric:job_role:score"
JOB_HOST_SEVERITY = "fabric:job_host_congestion:severity"
ROLES = ("victim", "contributor", "incast_target")
WORST_HOSTS = 10
HOSTS_LISTED = 200  # summary.json lists at most this many hosts by name (the count is always exact)


@dataclass
class JobReport:
    job_id: str
    cluster: str
    figures: dict  # summary.json's "job" entry
    plots: dict = field(default_factory=dict)


class JobCollector:
    def __init__(self, client: PrometheusClient, settings: Settings, window: Window):
        self.c, self.s, self.w = client, settings, window

    def sel(self, job_id: str, cluster: str | None = None, extra: str = "") -> str:
        parts = [f"job_id={quote(job_id)}"] + ([f"cluster={quote(cluster)}"] if cluster is not None else [])
        return self.s.sel(",".join(parts + ([extra] if extra else [])))

    def _cluster(self, job_id: str, cluster: str | None) -> str:
        w = self.w
        found = sorted({s.labels.get("cluster", "") for s in self.c.query(
            f"group by (cluster) (max_over_time({JOB_NODE_INFO}{self.sel(job_id, cluster)}[{w.range}]))", w.end)})
        where = f" in cluster {cluster!r}" if cluster is not None else ""
        if not found:
            raise ReportError(
                f"job {job_id!r}{where} held no node between {iso(w.start)} and {iso(w.end)} (no {JOB_NODE_INFO} "
                "series: is the slurm_jobs collector polling this cluster, and is the id right?)")
        if len(found) > 1:
            raise ReportError(f"job id {job_id!r} ran in more than one cluster in the window "
                              f"({', '.join(map(repr, found))}): choose one with --cluster")
        return found[0]

    def job(self, job_id: str, cluster: str | None = None) -> JobReport:
        if not job_id:
            raise ReportError("--job needs a job id")
        cluster = self._cluster(job_id, cluster)
        sel = self.sel(job_id, cluster)
        w = self.w
        nodes = self.c.query(
            f"max by (job_name, user, account, partition, node) (max_over_time({JOB_NODE_INFO}{sel}[{w.range}]))",
            w.end)
        hosts = sorted({s.labels.get("node", "") for s in nodes} - {""})
        first = nodes[0].labels if nodes else {}
        running = self.c.query_range(f"max({JOB_NODE_INFO}{sel})", w.start, w.end, w.step)
        seen = [t for s in running for t, _ in s.samples]
        start_time = self.c.query(f"max(last_over_time(fabric_job_start_time_seconds{sel}[{w.range}]))", w.end)
        congestion, severity, found = self._episodes(sel)
        roles, role_series = self._roles(sel, found)
        figures = {
            "job_id": job_id, "cluster": cluster,
            "job_name": first.get("job_name", ""), "user": first.get("user", ""),
            "account": first.get("account", ""), "partition": first.get("partition", ""),
            "start_time": iso(start_time[0].samples[0][1]) if start_time else None,
            "first_seen": iso(min(seen)) if seen else None, "last_seen": iso(max(seen)) if seen else None,
            "running_at_window_end": bool(seen) and max(seen) >= w.end - w.step,
            "hosts_count": len(hosts), "hosts": hosts[:HOSTS_LISTED],
            "congestion": congestion, "roles": roles, "worst_hosts": self._worst_hosts(sel),
        }
        return JobReport(job_id, cluster, figures, {"severity": severity, "episodes": found, "roles": role_series})

    def _episodes(self, sel: str):
        w = self.w
        severity = sorted((t, v) for s in self.c.query_range(f"max({JOB_SEVERITY}{sel})", w.start, w.end, w.step)
                          for t, v in s.samples)
        bridge = duration_seconds(self.s["congestion.bridge_gap"])
        found = ep.find_episodes(severity, w.step, bridge)
        base = ep.baseline(severity, found)
        found = ep.with_recovery(found, severity, [], w.step, self.s["congestion.recovery_margin"],
                                 severity_baseline=base)
        congested = sum(1 for v in _values(severity) if v > 1)
        recoveries = [e.recovery_seconds for e in found if e.recovery_seconds is not None]
        figures = {
            "episodes_count": len(found),
            "episodes_unrecovered_count": sum(1 for e in found if e.recovered_at is None),
            "time_congested_seconds": _round(congested * w.step),
            "severity_max_ratio": _round(max(_values(severity))) if severity else None,
            "baseline_severity_ratio": _round(base),
            "recovery_median_seconds": _round(statistics.median(recoveries)) if recoveries else None,
            "recovery_max_seconds": _round(max(recoveries)) if recoveries else None,
            "severity_samples_count": len(severity),
            "episodes": [{"start": iso(e.start), "end": iso(e.end), "duration_seconds": _round(e.duration_seconds),
                          "end_observed": e.end_observed,
                          "recovered_at": iso(e.recovered_at) if e.recovered_at else None,
                          "recovery_seconds": _round(e.recovery_seconds), "peak_severity_ratio": _round(e.peak_severity)}
                         for e in found],
        }
        return figures, severity, found

    def _roles(self, sel: str, found: list[ep.Episode]):
        w = self.w
        series = {s.labels.get("role", ""): s.samples for s in self.c.query_range(
            f"max by (role) ({JOB_ROLE_SCORE}{sel})", w.start, w.end, w.step)}
        roles = {}
        for role in sorted(set(ROLES) | set(series) - {""}):
            values = _values(series.get(role, []))
            roles[role] = {"max_score": _round(max(values)) if values else None,
                           "median_score": _round(statistics.median(values)) if values else None,
                           "time_above_one_seconds": _round(sum(1 for v in values if v > 1) * w.step)}
        return {"by_role": roles, "episode_dominant_roles": self._episode_roles(series, found)}, series

    @staticmethod
    def _episode_roles(series: dict, found: list[ep.Episode]) -> list[str | None]:
        """Per episode, the role with the highest mean score inside it (None: no score in it)."""
        out = []
        for e in found:
            means = {}
            for role, samples in series.items():
                inside = [v for t, v in samples if e.start <= t < e.end]
                if inside:
                    means[role] = statistics.fmean(inside)
            out.append(max(sorted(means), key=lambda r: means[r]) if means else None)
        return out

    def _worst_hosts(self, sel: str) -> list[dict]:
        w = self.w
        per_host = f"max by (host) ({JOB_HOST_SEVERITY}{sel})"
        window = f"[{w.range}:{max(1, round(w.step * 1000))}ms]"  # a PromQL duration has no fractions: 2.5s is 2500ms
        peaks = self.c.query(f"topk({WORST_HOSTS}, max_over_time({per_host}{window}))", w.end)
        congested = {s.labels.get("host", ""): s.samples[0][1] for s in self.c.query(
            f"count_over_time(({per_host} > 1){window})", w.end)}
        hosts = [{"host": s.labels.get("host", ""), "max_severity_ratio": _round(s.samples[0][1]),
                  "time_congested_seconds": _round(congested.get(s.labels.get("host", ""), 0) * w.step)}
                 for s in peaks]
        return sorted(hosts, key=lambda h: (-h["max_severity_ratio"], h["host"]))
