"""A window of Prometheus data -> per-fabric figures (summary.json) and the series the plots draw.

What PromQL computes (recording rules from the mixin, and the queries here): per-port congestion
severity and the per-fabric worst severity (``fabric:fabric_congestion:severity``), throughput and
utilisation rates, fabric-wide latency quantiles (``histogram_quantile`` over the fabric's buckets),
window totals of error counters and probes (``increase``). What this module computes from the
sampled series: episodes and recovery times (``episodes.py``), time congested, exact link-down
counts (counter increases with resets), medians and variation over the window, and how complete
each target's data is.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ..mixin.rules.congestion import FABRIC_CONGESTED_PORTS, FABRIC_SEVERITY
from ..mixin.rules import duration_seconds
from ..mixin.settings import Settings
from ..promql import quote
from . import episodes as ep
from .ports import port_name
from .prom import PrometheusClient, Series

MAX_POINTS = 10_000  # Prometheus refuses more than 11,000 points per series in a range query
# Port-points (ports x steps) one aggregate over every port may ask for. Prometheus evaluates such a
# range query step by step over every port (vector matching included), 2-20 us a port-point on a
# shared 2-core machine (bench/bench_report_scale.py): over a week at the rules' step (~10k points)
# a fabric of 100 ports already cost 10-20 s a utilisation query, 40k ports would be hours and past
# --query.max-samples (50M). Above the budget the aggregate is read at a coarser step.
PORT_POINTS_BUDGET = 250_000
# Series a range query fetches in full after an instant query picked them (moved, reset, born in the
# window): more than this and the selector is not narrowed (the matchers would be as long as a query).
NARROW_MAX_SERIES = 500
UTIL_BINS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
WORST_PAIRS = 5
# Error counters a stability figure sums: IB receive/link errors and symbol errors, switch interface
# errors, NIC frames with a bad FCS.
ERROR_COUNTERS = ("fabric_ib_port_receive_errors_total", "fabric_ib_symbol_error_total",
                  "fabric_ib_port_receive_remote_physical_errors_total", "fabric_ib_local_link_integrity_errors_total",
                  "fabric_ib_excessive_buffer_overrun_errors_total", "fabric_ib_link_error_recovery_total",
                  "fabric_roce_switch_if_rx_errors_total", "fabric_roce_switch_if_tx_errors_total",
                  "fabric_roce_nic_rx_crc_errors_total")
# Burst counters the congestion section counts: the roce_nic burst sampler's (catalog/roce_nic_burst.py)
# and the IB focus set's (absent from a fabric, or an exporter, without it: counted as None).
BURST_COUNTERS = ("fabric_roce_nic_bursts_total", "fabric_ib_port_bursts_total")


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    step: float

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def range(self) -> str:
        """The window as a PromQL range, for totals evaluated at its end."""
        return f"{max(1, int(round(self.seconds)))}s"


@dataclass
class FabricReport:
    name: str
    figures: dict  # summary.json's entry for this fabric
    plots: dict = field(default_factory=dict)  # section -> data the plots draw


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _median(values):
    values = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(values) if values else None


def _sum_by_time(series: list[Series]) -> list[tuple[float, float]]:
    total: dict[float, float] = defaultdict(float)
    for s in series:
        for t, v in s.samples:
            if not math.isnan(v):
                total[t] += v
    return sorted(total.items())


def _values(samples) -> list[float]:
    return [v for _, v in samples if not math.isnan(v)]


def _round(value, digits=6):
    if value is None:
        return None
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    return float(f"{value:.{digits}g}")


def choose_step(window_seconds: float, interval: float) -> float:
    step = max(interval, window_seconds / MAX_POINTS)
    return float(math.ceil(step))


def aggregate_step(window: Window, ports: int, budget: int | None = None) -> float:
    """Step of a range query that aggregates over ``ports`` series: the window's step, or coarser (a
    whole multiple of it) so that ports x points stays within ``budget`` (PORT_POINTS_BUDGET)."""
    budget = budget or PORT_POINTS_BUDGET
    points = window.seconds / window.step + 1
    if ports * points <= budget:
        return window.step
    wanted = window.seconds / max(1.0, budget / max(ports, 1) - 1)
    return float(window.step * math.ceil(wanted / window.step))


def narrowing_selector(sel: str, label_sets: list[dict]) -> str:
    """``sel`` with a regex matcher per label of ``label_sets`` (their values, "" where one lacks the
    label): it matches each of them (and perhaps a few others, a cross product of values)."""
    values: dict[str, set[str]] = defaultdict(set)
    for labels in label_sets:
        for k, v in labels.items():
            if k != "__name__":
                values[k].add(v)
    for labels in label_sets:  # a label some of them lack: "" matches the lacking ones
        for k in values.keys() - labels.keys():
            values[k].add("")
    matchers = ",".join(f'{k}=~"{"|".join(quote(v, regex=True)[1:-1] for v in sorted(vs))}"'
                        for k, vs in sorted(values.items()))
    if not matchers:
        return sel
    return f"{sel[:-1]},{matchers}}}" if sel.endswith("}") else f"{{{matchers}}}"


def steps_at(start: float, end: float, step: float) -> int:
    """How many evaluations a subquery ``[end - start:step] @ end`` makes: Prometheus aligns them to
    multiples of the step, within the range (both ends included)."""
    first = math.ceil(start / step) * step
    return int(math.floor((end - first) / step + 1e-9)) + 1 if first <= end else 0


# The collectors that measure a fabric; a scheduler target (slurm_jobs) has a fabric label too, but
# no ports: it is not a fabric of the report.
FABRIC_COLLECTORS = ("infiniband", "roce_nic", "snmp_switch", "switch_cli", "gnmi_switch", "latency_probe")


def known_fabrics(client: PrometheusClient, settings: Settings, window: Window) -> list[str]:
    fabric_targets = settings.sel(f'collector=~"{"|".join(FABRIC_COLLECTORS)}"')
    expr = f"group by (fabric) (last_over_time(fabric_up{fabric_targets}[{window.range}]))"
    return sorted({s.labels.get("fabric", "") for s in client.query(expr, window.end)} - {""})


class Collector:
    def __init__(self, client: PrometheusClient, settings: Settings, window: Window):
        self.c, self.s, self.w = client, settings, window
        self.rw = settings["rate_window"]

    def fsel(self, fabric: str, extra: str = "") -> str:
        return self.s.sel(",".join(x for x in (f"fabric={quote(fabric)}", extra) if x))

    def rng(self, expr: str, step: float | None = None) -> list[Series]:
        return self.c.query_range(expr, self.w.start, self.w.end, step or self.w.step)

    def narrowed(self, sel: str, which: str) -> str | None:
        """``sel`` narrowed to the series the instant query ``which`` (evaluated at the window's end)
        returns, by matchers on their label values; None when it returns none, ``sel`` unchanged when
        it returns more than NARROW_MAX_SERIES. A range query's cost is series x steps whatever it
        filters afterwards: link flaps, resets and series born in the window are a few of tens of
        thousands of ports. The matchers may also match a few other series (a cross product of
        values): callers must not count a series that did not move."""
        found = self.c.query(which, self.w.end)
        if not found:
            return None
        if len(found) > NARROW_MAX_SERIES:
            return sel
        return narrowing_selector(sel, [s.labels for s in found])

    def moved(self, metric: str, sel: str) -> list[Series]:
        """Every step of the series of ``metric`` that changed in the window (and perhaps a few that
        did not: see ``narrowed``)."""
        w = self.w
        only = self.narrowed(sel, f"changes({metric}{sel}[{w.range}] @ {w.end:.3f}) > 0")
        if only is None:
            return []
        return self.rng(f"{metric}{only} and changes({metric}{only}[{w.range}] @ {w.end:.3f}) > 0")

    def count_now(self, expr: str) -> int:
        """How many series ``expr`` has at once, at most, over 16 instants of the window (cheap: no
        range selector over the window; the data may end long before the window does)."""
        w = self.w
        every = max(1, int(w.seconds // 16))
        found = self.c.query(f"max_over_time(count({expr})[{w.range}:{every}s] @ {w.end:.3f})", w.end)
        return int(sum(s.samples[0][1] for s in found))

    def coarse(self, ports: int) -> tuple[float, str]:
        """(step, rate window) of an aggregate over ``ports`` series: within the budget, and a rate
        window at least as long as the step, so the windows tile the time (a mean stays exact)."""
        step = aggregate_step(self.w, ports)
        return step, self.rw if step == self.w.step else f"{int(step)}s"

    def counted(self, metrics, sel: str) -> int | None:
        """Events the counters counted in the window, as a whole number (``increase()`` extrapolates to
        the window's edges and gives 3479.04 probes). A series that was there at the start and did not
        reset: its last value in the window minus its value at the start. The others, usually few
        (born inside the window, or reset in it), are fetched at every step and counted from their
        first sample, reset-aware (``episodes.counter_increase``): a counter first seen at 1,000,014 had
        counted that before anyone looked. None when no metric has a series.

        The value at the start is the last sample in the hour up to it, not ``x @ start``: a series that
        missed scrapes around the start (a staleness marker) would otherwise look born in the window."""
        w, total, seen = self.w, 0.0, False
        def parts(sel):
            last = f"last_over_time({metric}{sel}[{w.range}] @ {w.end:.3f})"
            first = f"last_over_time({metric}{sel}[1h] @ {w.start:.3f})"
            reset = f"resets({metric}{sel}[{w.range}] @ {w.end:.3f}) > 0"
            return last, first, reset

        for metric in metrics:
            last, first, reset = parts(sel)
            for s in self.c.query(f"sum(({last} - {first}) unless {reset})", w.end):
                total, seen = total + s.samples[0][1], True
            # the others, fetched in full: only the series an instant query finds
            others = self.narrowed(sel, f"{last} unless ({first} unless {reset})")
            if others is None:
                continue
            _, first, reset = parts(others)
            for s in self.rng(f"{metric}{others} unless ({first} unless {reset})"):
                total, seen = total + ep.counter_increase(s.samples), True
        return int(round(total)) if seen else None

    # -- sections ---------------------------------------------------------------------------------

    def fabric(self, name: str) -> FabricReport:
        sel = self.s.sel(f"fabric={quote(name)}")
        with ThreadPoolExecutor(max_workers=4) as pool:
            parts = {k: pool.submit(fn, name, sel) for k, fn in (
                ("throughput", self.throughput), ("latency", self.latency), ("stability", self.stability),
                ("completeness", self.completeness))}
            results = {k: f.result() for k, f in parts.items()}
        # recovery needs the fabric's p99 series from the latency section
        results["congestion"] = self.congestion(name, sel, results["latency"][1]["p99"])
        figures = {k: results[k][0] for k in ("throughput", "latency", "congestion", "stability", "completeness")}
        plots = {k: results[k][1] for k in figures}
        figures["kind"] = self.kind(name, sel)
        return FabricReport(name, figures, plots)

    def kind(self, name: str, sel: str) -> str:
        collectors = {s.labels.get("collector") for s in self.c.query(
            f"group by (collector) (last_over_time(fabric_up{sel}[{self.w.range}]))", self.w.end)}
        ib = "infiniband" in collectors
        roce = bool(collectors & {"roce_nic", "snmp_switch", "switch_cli", "gnmi_switch"})
        return "mixed" if ib and roce else "infiniband" if ib else "roce" if roce else "unknown"

    def throughput(self, name: str, sel: str):
        rw = self.rw
        ca = self.fsel(name, 'node_type="ca"')
        nics = self.fsel(name, 'host!=""')
        # Host adapter ports: IB ports of CA nodes (HCAs), RoCE NIC ports; per step, the ports with a rate.
        # Many ports: a coarser step whose rate windows tile the window (the mean stays exact, the
        # peak is the peak of step averages).
        hosts = self.count_now(f"fabric_ib_port_data_transmitted_bytes_total{sel}") \
            + self.count_now(f"fabric_roce_tx_bytes_total{nics}")
        host_step, host_rw = self.coarse(hosts)
        port_tx = (f"rate(fabric_ib_port_data_transmitted_bytes_total{sel}[{host_rw}])"
                   f" and on (fabric, node_guid) fabric_ib_node_info{ca}",
                   f"rate(fabric_roce_tx_bytes_total{nics}[{host_rw}])")
        host_tx = _sum_by_time([x for e in port_tx for x in self.rng(f"sum({e})", host_step)])
        adapters = dict(_sum_by_time([x for e in port_tx for x in self.rng(f"count({e})", host_step)]))
        per_adapter = [(t, v / adapters[t]) for t, v in host_tx if adapters.get(t)]
        util = (f"(rate(fabric_ib_port_data_transmitted_bytes_total{sel}[{rw}]) / (fabric_ib_port_rate_bytes_per_second{sel} > 0))"
                f" or (rate(fabric_roce_tx_bytes_total{sel}[{rw}]) / "
                f"(fabric_roce_switch_if_speed_bytes_per_second{sel} > 0))")
        # Utilisation is a distribution over port-samples of the rate_window rate: with many ports it
        # is sampled at a coarser step (still rate_window rates, fewer instants).
        links = self.fsel(name, '__name__=~"fabric_ib_port_rate_bytes_per_second|'
                                'fabric_roce_switch_if_speed_bytes_per_second"')
        util_step = aggregate_step(self.w, self.count_now(f"{links} > 0"))
        quantiles = {q: _values(_sum_by_time(self.rng(f"quantile({q}, {util})", util_step))) for q in (0.5, 0.99)}
        peak = _values(_sum_by_time(self.rng(f"max({util})", util_step)))
        # One query for the histogram: each port-sample's bin index, 0..9 (the last bin takes
        # everything from 0.9 up: rates overshoot), counted per step.
        hist = [0] * (len(UTIL_BINS) - 1)
        for s in self.rng(f'count_values("bin", clamp_max(floor(({util}) * 10), 9))', util_step):
            b = s.labels.get("bin", "")
            if b.lstrip("-").isdigit() and 0 <= int(b) < len(hist):
                hist[int(b)] += sum(_values(s.samples))
        values, each = _values(host_tx), _values(per_adapter)
        figures = {
            "host_transmit_mean_bytes_per_second": _round(statistics.fmean(values)) if values else None,
            "host_transmit_peak_bytes_per_second": _round(max(values)) if values else None,
            "host_adapter_ports_count": int(max(adapters.values())) if adapters else 0,
            "host_transmit_per_adapter_port_mean_bytes_per_second": _round(statistics.fmean(each)) if each else None,
            "host_transmit_per_adapter_port_peak_bytes_per_second": _round(max(each)) if each else None,
            "link_utilisation_p50_ratio": _round(_median(quantiles[0.5])),
            "link_utilisation_p99_ratio": _round(_median(quantiles[0.99])),
            "link_utilisation_max_ratio": _round(max(peak)) if peak else None,
            "link_utilisation_histogram_port_samples": dict(
                (f"{lo:.1f}-{hi:.1f}", int(n)) for lo, hi, n in zip(UTIL_BINS, UTIL_BINS[1:], hist)),
        }
        figures["host_transmit_step_seconds"] = host_step
        figures["link_utilisation_step_seconds"] = util_step
        return figures, {"host_tx": host_tx, "per_adapter": per_adapter, "hist": hist}

    def latency(self, name: str, sel: str):
        rw = self.rw
        series = {}
        for key, q in (("p50", 0.5), ("p99", 0.99), ("p999", 0.999)):
            series[key] = _sum_by_time(self.rng(
                f"histogram_quantile({q}, sum by (le) (rate(fabric_rdma_latency_seconds_bucket{sel}[{rw}])))"))
        pairs = []
        for s in self.rng(f"fabric:rdma_latency_seconds:p99{{fabric={quote(name)}}}"):
            v = _values(s.samples)
            if v:
                pairs.append({"source_group": s.labels.get("source_group", ""),
                              "destination_group": s.labels.get("destination_group", ""),
                              "p99_median_seconds": _round(statistics.median(v)),
                              "p99_max_seconds": _round(max(v))})
        pairs.sort(key=lambda p: (-p["p99_max_seconds"], p["source_group"], p["destination_group"]))
        p50, p99, p999 = (_median(_values(series[k])) for k in ("p50", "p99", "p999"))
        p99_values = _values(series["p99"])
        mean99 = statistics.fmean(p99_values) if p99_values else None
        figures = {
            "p50_median_seconds": _round(p50), "p99_median_seconds": _round(p99), "p999_median_seconds": _round(p999),
            "p99_over_p50_ratio": _round(p99 / p50) if p50 and p99 else None,
            "p99_variation_cv_ratio": _round(statistics.pstdev(p99_values) / mean99) if mean99 else None,
            "p99_max_seconds": _round(max(p99_values)) if p99_values else None,
            "p99_max_over_median_ratio": _round(max(p99_values) / p99) if p99 else None,
            "worst_pairs": pairs[:WORST_PAIRS],
        }
        return figures, series

    def congestion(self, name: str, sel: str, p99: list[tuple[float, float]]):
        step = self.w.step
        severity = _sum_by_time(self.rng(f"max({FABRIC_SEVERITY}{sel})"))
        ports = _sum_by_time(self.rng(f"sum({FABRIC_CONGESTED_PORTS}{sel})"))
        bridge = duration_seconds(self.s["congestion.bridge_gap"])
        margin = self.s["congestion.recovery_margin"]
        found = ep.find_episodes(severity, step, bridge)
        sev_base = ep.baseline(severity, found)
        p99_base = ep.baseline(p99, found)
        found = ep.with_recovery(found, severity, p99, step, margin, severity_baseline=sev_base,
                                 p99_baseline=p99_base)
        congested_samples = sum(1 for v in _values(severity) if v > 1)
        recoveries = [e.recovery_seconds for e in found if e.recovery_seconds is not None]
        figures = {
            "episodes_count": len(found),
            "time_congested_seconds": _round(congested_samples * step),
            "time_congested_ratio": _round(congested_samples * step / self.w.seconds) if self.w.seconds else None,
            "recovery_median_seconds": _round(statistics.median(recoveries)) if recoveries else None,
            "recovery_max_seconds": _round(max(recoveries)) if recoveries else None,
            "episodes_unrecovered_count": sum(1 for e in found if e.recovered_at is None),
            "episode_duration_median_seconds": _round(statistics.median([e.duration_seconds for e in found]))
            if found else None,
            "baseline_severity_ratio": _round(sev_base),
            "baseline_p99_seconds": _round(p99_base),
            "congested_ports_max_count": int(max(_values(ports))) if _values(ports) else 0,
            "severity_samples_count": len(severity),
            "episodes": [{"start": iso(e.start), "end": iso(e.end), "duration_seconds": _round(e.duration_seconds),
                          "end_observed": e.end_observed, "recovered_at": iso(e.recovered_at) if e.recovered_at else None,
                          "recovery_seconds": _round(e.recovery_seconds), "peak_severity_ratio": _round(e.peak_severity)}
                         for e in found],
        }
        figures.update(self.bursts(sel))
        return figures, {"severity": severity, "ports": ports, "episodes": found}

    def bursts(self, sel: str) -> dict:
        """Sub-second bursts the exporter's samplers counted in the window (roce_nic option ``burst``;
        the IB focus set's, when that metric exists): exact whole counts (``counted``, the report's
        ``increase()`` without extrapolation), None when the fabric has no such series; and the
        ports with the most, per signal."""
        by_port: dict[tuple[str, str], float] = {}
        for metric in BURST_COUNTERS:
            for s in self.moved(metric, sel):
                n = ep.counter_increase(s.samples)
                if n > 0:
                    key = (port_name(s.labels), s.labels.get("signal", "xmit_wait"))
                    by_port[key] = by_port.get(key, 0) + n
        top = sorted(by_port.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
        return {
            "roce_nic_bursts_count": self.counted(("fabric_roce_nic_bursts_total",), sel),
            "ib_port_bursts_count": self.counted(("fabric_ib_port_bursts_total",), sel),
            "burst_ports_count": len({port for port, _ in by_port}),
            "bursts_by_port": [{"port": port, "signal": signal, "bursts_count": int(n)} for (port, signal), n in top],
        }

    def stability(self, name: str, sel: str):
        w, rw = self.w, self.rw
        # Exact link-down counts: only the counters that moved in the window are fetched in full.
        downs_by_port: dict[str, float] = {}
        down_times: list[float] = []
        for metric in ("fabric_ib_link_downed_total", "fabric_roce_nic_link_down_events_total"):
            for s in self.moved(metric, sel):
                n = ep.counter_increase(s.samples)
                if n > 0:
                    key = port_name(s.labels)
                    downs_by_port[key] = downs_by_port.get(key, 0) + n
                    down_times += [t for (_, a), (t, b) in zip(s.samples, s.samples[1:]) if b != a]
        # IB links the topology expects up going down (ibsim, and some firmware, never count LinkDowned)
        for s in self.moved("fabric_ib_port_link_down_unexpected", sel):
            n = ep.state_changes(s.samples, up=0.0)
            key = port_name(s.labels)
            if n and n > downs_by_port.get(key, 0):  # the same event may also be in LinkDowned
                downs_by_port[key] = n
                down_times += [t for (_, a), (t, b) in zip(s.samples, s.samples[1:]) if a == 0 and b != 0]
        for s in self.moved("fabric_roce_switch_if_oper_status", sel):
            n = ep.state_changes(s.samples)
            if n:
                downs_by_port[port_name(s.labels)] = n
                down_times += [t for (_, a), (t, b) in zip(s.samples, s.samples[1:]) if a == 1 and b != 1]
        # Many ports: a coarser step whose rate windows tile the window (the mean rate stays exact).
        # (One query per counter: rate() drops the names, and two counters of a port would collide.)
        error_step, error_rw = self.coarse(max(self.count_now(f"{m}{sel}") for m in ERROR_COUNTERS))
        errors = _sum_by_time(
            [x for m in ERROR_COUNTERS for x in self.rng(f"sum(rate({m}{sel}[{error_rw}]))", error_step)])
        error_total = self.counted(ERROR_COUNTERS, sel)
        clients = self.fsel(name, 'role="client"')
        probes = self.counted(("fabric_rdma_latency_probes_total",), clients)
        failures = self.counted(("fabric_rdma_latency_probe_failures_total",), sel) or 0
        loss = _sum_by_time(self.rng(
            f"(sum(rate(fabric_rdma_latency_probe_failures_total{sel}[{rw}])) or vector(0))"
            f" / sum(rate(fabric_rdma_latency_probes_total{sel}[{rw}]))"))
        storm_events = self.counted(("fabric_roce_nic_pause_storm_error_events_total",
                                     "fabric_roce_switch_pfcwd_storms_detected_total"), sel)
        storm_alert = _sum_by_time(self.rng(
            f'count(ALERTS{{alertname="FabricRocePfcPauseStorm",alertstate="firing",fabric={quote(name)}}})'))
        has_pfc = bool(self.c.query(f"group(last_over_time(fabric_roce_pfc_rx_pause_frames_total{sel}[{w.range}]))",
                                    w.end))
        flap_limit = 1
        figures = {
            "link_downs_count": int(sum(downs_by_port.values())),
            "ports_with_link_downs_count": len(downs_by_port),
            "ports_flapping_count": sum(1 for n in downs_by_port.values() if n > flap_limit),
            "errors_count": error_total or 0,
            "errors_per_second_mean": _round(statistics.fmean(_values(errors))) if _values(errors) else 0.0,
            "probes_count": probes or 0,
            "probe_failures_count": failures,
            "probe_loss_ratio": _round(failures / probes) if probes else None,
            "pause_storm_events_count": (storm_events or 0) if has_pfc else None,
            "pause_storm_alert_seconds": _round(len(storm_alert) * w.step) if has_pfc else None,
            "link_downs_count_by_port": {k: int(v) for k, v in
                                         sorted(downs_by_port.items(), key=lambda kv: (-kv[1], kv[0]))[:20]},
        }
        return figures, {"errors": errors, "loss": loss, "down_times": sorted(down_times), "storm": storm_alert}

    def completeness(self, name: str, sel: str):
        # Per target, the steps at which it was up and fresh, counted in Prometheus (one number per
        # target, not every target's every step: thousands of targets x 10k steps is ~0.5 GB of JSON).
        w = self.w
        targets = []
        expected = steps_at(w.start, w.end, w.step)
        fresh = f"sum_over_time((fabric_up{sel} == bool 1)[{w.range}:{int(w.step)}s] @ {w.end:.3f})"
        for s in self.c.query(fresh, w.end):
            good = s.samples[0][1] if s.samples else 0.0
            targets.append({"group": s.labels.get("group", ""), "host": s.labels.get("host", ""),
                            "collector": s.labels.get("collector", ""),
                            "fresh_ratio": _round(min(1.0, good / expected) if expected else 0.0, 4)})
        targets.sort(key=lambda t: (t["fresh_ratio"], t["group"], t["host"]))
        ratios = [t["fresh_ratio"] for t in targets]
        figures = {"targets_count": len(targets),
                   "fresh_min_ratio": min(ratios) if ratios else None,
                   "fresh_mean_ratio": _round(statistics.fmean(ratios), 4) if ratios else None,
                   "targets": targets}
        return figures, {"targets": targets}
