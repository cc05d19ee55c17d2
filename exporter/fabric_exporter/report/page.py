"""index.html: one self-contained page (inline CSS and SVG, no scripts, no external references)."""

from __future__ import annotations

import html

from .collect import FabricReport

# (section, figure label, key in that section, how to show it)
SUMMARY_ROWS = (
    ("Throughput", "host transmit, mean / peak", ("host_transmit_mean_bytes_per_second",
                                                  "host_transmit_peak_bytes_per_second"), "gbps"),
    ("Throughput", "per host adapter port, mean / peak", ("host_transmit_per_adapter_port_mean_bytes_per_second",
                                                          "host_transmit_per_adapter_port_peak_bytes_per_second"),
     "gbps"),
    ("Throughput", "host adapter ports (IB: HCA ports; RoCE: NIC ports)", "host_adapter_ports_count", "int"),
    ("Throughput", "link utilisation p50 / p99 (median over time)", ("link_utilisation_p50_ratio",
                                                                       "link_utilisation_p99_ratio"), "pct2"),
    ("Tail latency", "p50 / p99 / p99.9 (median over time)", ("p50_median_seconds", "p99_median_seconds",
                                                             "p999_median_seconds"), "us3"),
    ("Tail latency", "p99 / p50", "p99_over_p50_ratio", "x"),
    ("Tail latency", "p99 variation (stdev / mean)", "p99_variation_cv_ratio", "num"),
    ("Tail latency", "p99 max (max / median)", ("p99_max_seconds", "p99_max_over_median_ratio"), "usx"),
    ("Congestion recovery", "episodes (unrecovered)", ("episodes_count", "episodes_unrecovered_count"), "int2"),
    ("Congestion recovery", "time congested", ("time_congested_seconds", "time_congested_ratio"), "spct"),
    ("Congestion recovery", "recovery time median / max", ("recovery_median_seconds", "recovery_max_seconds"), "s2"),
    ("Congestion recovery", "sub-second bursts: RoCE NIC / IB focus (ports)", ("roce_nic_bursts_count",
                                                                             "ib_port_bursts_count",
                                                                             "burst_ports_count"), "bursts"),
    ("Stability", "link downs (ports flapping)", ("link_downs_count", "ports_flapping_count"), "int2"),
    ("Stability", "errors counted (mean per second)", ("errors_count", "errors_per_second_mean"), "num2"),
    ("Stability", "probe loss (failed / probes run)", ("probe_loss_ratio", "probe_failures_count", "probes_count"),
     "loss"),
    ("Stability", "PFC pause storm events (alert firing)", ("pause_storm_events_count", "pause_storm_alert_seconds"),
     "storm"),
    ("Data completeness", "targets fresh: least / mean", ("fresh_min_ratio", "fresh_mean_ratio"), "pct2"),
)
SECTION_KEYS = {"Throughput": "throughput", "Tail latency": "latency", "Congestion recovery": "congestion",
                "Stability": "stability", "Data completeness": "completeness"}

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1500px}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
.meta{color:#555;font-size:.9em}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.n{text-align:right;font-variant-numeric:tabular-nums}
.grid{display:grid;gap:1em} .fabric h3{margin:.3em 0;font-size:1em}
.fabric svg{width:100%;height:auto} .note{color:#555;font-size:.85em}
.job svg{width:100%;max-width:1000px;height:auto}
"""


def _g(x: float) -> str:
    """Three significant digits, but never an exponent a reader has to decode: 1094 Gb/s, not 1.09e+03."""
    return f"{x:.0f}" if 1000 <= abs(x) < 1e15 else f"{x:.3g}"


def _n(v, unit=""):
    if v is None:
        return "n/a"
    if isinstance(v, float) and v != int(v):
        text = f"{_g(v)}"
    else:
        text = f"{int(v)}" if abs(v) < 1e15 else f"{_g(v)}"
    return text + unit


def _fmt(kind: str, values: list):
    v = values
    if kind == "gbps":
        if all(x is None for x in v):
            return "n/a"
        return " / ".join("n/a" if x is None else _g(x * 8 / 1e9) for x in v) + " Gb/s"
    if kind == "loss":
        return "n/a" if v[0] is None else f"{_g(v[0] * 100)} % ({_n(v[1])} / {_n(v[2])})"
    if kind in ("pct", "pct2"):
        return " / ".join("n/a" if x is None else f"{_g(x * 100)} %" for x in v)
    if kind == "us3":
        return " / ".join("n/a" if x is None else f"{_g(x * 1e6)}" for x in v) + " µs"
    if kind == "x":
        return "n/a" if v[0] is None else f"{_g(v[0])}×"
    if kind == "usx":
        return "n/a" if v[0] is None else f"{_g(v[0] * 1e6)} µs ({_n(v[1])}×)"
    if kind == "int2":
        return f"{_n(v[0])} ({_n(v[1])})"
    if kind == "spct":
        return "n/a" if v[0] is None else f"{_n(v[0])} s ({_g((v[1] or 0) * 100)} %)"
    if kind == "s2":
        return " / ".join(_n(x, " s") for x in v)
    if kind == "num2":
        return f"{_n(v[0])} ({_n(v[1])}/s)"
    if kind == "bursts":
        return f"{_n(v[0])} / {_n(v[1])} ({_n(v[2])})"
    if kind == "storm":
        return "n/a (no PFC)" if v[0] is None else f"{_n(v[0])} ({_n(v[1])} s)"
    return " / ".join(_n(x) for x in v)


def summary_table(reports: list[FabricReport]) -> str:
    head = "".join(f"<th>{html.escape(r.name)} ({html.escape(r.figures['kind'])})</th>" for r in reports)
    rows = []
    for section, label, keys, kind in SUMMARY_ROWS:
        keys = keys if isinstance(keys, tuple) else (keys,)
        cells = "".join(
            f'<td class="n">{html.escape(_fmt(kind, [r.figures[SECTION_KEYS[section]].get(k) for k in keys]))}</td>'
            for r in reports)
        rows.append(f"<tr><th>{section}</th><td>{html.escape(label)}</td>{cells}</tr>")
    return (f'<table id="summary"><tr><th>criterion</th><th>figure</th>{head}</tr>' + "".join(rows) + "</table>")


def _detail(section: str, r: FabricReport) -> str:
    f = r.figures[section]
    if section == "latency" and f["worst_pairs"]:
        rows = "".join(f"<tr><td>{html.escape(p['source_group'])} → {html.escape(p['destination_group'])}</td>"
                       f'<td class="n">{_g(p["p99_median_seconds"] * 1e6)}</td><td class="n">{_g(p["p99_max_seconds"] * 1e6)}</td></tr>'
                       for p in f["worst_pairs"])
        return ("<table><tr><th>worst pairs</th><th>p99 median (µs)</th><th>p99 max (µs)</th></tr>" + rows + "</table>")
    if section == "congestion":
        return _episodes(f) + _bursts(f)
    if section == "stability" and f["link_downs_count_by_port"]:
        rows = "".join(f"<tr><td>{html.escape(k)}</td><td class='n'>{_n(v)}</td></tr>"
                       for k, v in f["link_downs_count_by_port"].items())
        return "<table><tr><th>port</th><th>link downs</th></tr>" + rows + "</table>"
    return ""


def _e(value) -> str:
    return html.escape("" if value is None else str(value))


def job_section(job, svg: str) -> str:
    """The ``--job`` section: who the job is, its hosts, episodes with recovery, roles, worst hosts."""
    f = job.figures
    c, roles = f["congestion"], f["roles"]
    facts = (("job", f'{f["job_name"] or "(name not published)"} #{f["job_id"]}'), ("cluster", f["cluster"]),
             ("user / account / partition", " / ".join(x or "-" for x in (f["user"], f["account"], f["partition"]))),
             ("started", f["start_time"] or "n/a"),
             ("seen running in the window", f'{f["first_seen"]} → {f["last_seen"]}'
              + (" (still running)" if f["running_at_window_end"] else "")),
             ("hosts", f'{f["hosts_count"]}: ' + ", ".join(f["hosts"]) + (" …" if f["hosts_count"] > len(f["hosts"]) else "")),
             ("episodes (unrecovered)", f'{c["episodes_count"]} ({c["episodes_unrecovered_count"]})'),
             ("time congested", _n(c["time_congested_seconds"], " s")),
             ("recovery median / max", f'{_n(c["recovery_median_seconds"], " s")} / {_n(c["recovery_max_seconds"], " s")}'),
             ("worst severity / baseline", f'{_n(c["severity_max_ratio"])} / {_n(c["baseline_severity_ratio"])}'))
    parts = ['<h2 id="job">Job ' + _e(f["job_id"]) + "</h2>", '<div class="job" data-section="job">',
             '<table id="job-facts">' + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts)
             + "</table>", svg]
    if c["episodes"]:
        dominant = roles["episode_dominant_roles"]
        rows = "".join(
            f"<tr><td>{e['start']}</td><td class='n'>{_n(e['duration_seconds'])} s"
            f"{'' if e['end_observed'] else ' (end not seen)'}</td><td class='n'>{_n(e['peak_severity_ratio'])}</td>"
            f"<td class='n'>{_n(e['recovery_seconds'], ' s')}</td><td>{_e(dominant[i] or 'n/a')}</td></tr>"
            for i, e in enumerate(c["episodes"][:50]))
        parts.append('<table id="job-episodes"><tr><th>episode start (UTC)</th><th>duration</th><th>peak severity</th>'
                     "<th>recovery</th><th>dominant role</th></tr>" + rows + "</table>")
    else:
        parts.append('<p class="note">No congestion episode of this job in the window.</p>')
    rows = "".join(f"<tr><td>{_e(r)}</td><td class='n'>{_n(v['max_score'])}</td><td class='n'>{_n(v['median_score'])}</td>"
                   f"<td class='n'>{_n(v['time_above_one_seconds'], ' s')}</td></tr>" for r, v in roles["by_role"].items())
    parts.append('<table id="job-roles"><tr><th>role</th><th>max score</th><th>median score</th><th>time above 1</th></tr>'
                 + rows + "</table>")
    if f["worst_hosts"]:
        rows = "".join(f"<tr><td>{_e(h['host'])}</td><td class='n'>{_n(h['max_severity_ratio'])}</td>"
                       f"<td class='n'>{_n(h['time_congested_seconds'], ' s')}</td></tr>" for h in f["worst_hosts"])
        parts.append('<table id="job-worst-hosts"><tr><th>worst hosts</th><th>max severity</th><th>time congested</th>'
                     "</tr>" + rows + "</table>")
    parts.append('<p class="note">Episodes: runs of fabric:job_congestion:severity above 1; recovery: back within the '
                 "recovery margin of the job's baseline severity (docs/jobs.md).</p></div>")
    return "\n".join(parts)


def _bursts(f: dict) -> str:
    """The ports with the most sub-second bursts (burst samplers), or what the window had."""
    if f.get("roce_nic_bursts_count") is None and f.get("ib_port_bursts_count") is None:
        return '<p class="note">No burst sampler in this fabric (roce_nic option burst, IB focus set).</p>'
    if not f.get("bursts_by_port"):
        return '<p class="note" id="bursts">No sub-second burst in this window.</p>'
    rows = "".join(f"<tr><td>{html.escape(b['port'])}</td><td>{html.escape(b['signal'])}</td>"
                   f"<td class='n'>{_n(b['bursts_count'])}</td></tr>" for b in f["bursts_by_port"])
    return ('<table id="bursts"><tr><th>port</th><th>signal</th><th>bursts</th></tr>' + rows + "</table>"
            + f'<p class="note">Bursts counted: RoCE NIC {_n(f.get("roce_nic_bursts_count"))}, IB focus '
            f'{_n(f.get("ib_port_bursts_count"))}: each a run of sub-second windows above the sampler\'s '
            "threshold, invisible in the rate-window averages above.</p>")


def _episodes(f: dict) -> str:
    """The congestion episodes table (rate-window severities)."""
    if not f["episodes"]:
        return '<p class="note">No congestion episode in this window.</p>'
    rows = "".join(
        f"<tr><td>{e['start']}</td><td class='n'>{_n(e['duration_seconds'])} s{'' if e['end_observed'] else ' (end not seen)'}</td>"
        f"<td class='n'>{_n(e['peak_severity_ratio'])}</td><td class='n'>{_n(e['recovery_seconds'], ' s')}</td></tr>"
        for e in f["episodes"][:50])
    return ("<table><tr><th>episode start (UTC)</th><th>duration</th><th>peak severity</th><th>recovery</th></tr>"
            + rows + "</table>" + f'<p class="note">Baselines: severity {_n(f["baseline_severity_ratio"])}, '
            f'p99 {_fmt("us3", [f["baseline_p99_seconds"]])}.</p>')


def render(reports: list[FabricReport], svgs: dict, meta: dict, job=None, job_svg: str = "") -> str:
    from .plots import SECTIONS

    cols = f"grid-template-columns:repeat({len(reports)},minmax(0,1fr))"
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Fabric POC report: {html.escape(', '.join(r.name for r in reports))}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>Fabric POC report: {html.escape(' vs '.join(r.name for r in reports))}</h1>",
        f'<p class="meta">Window {meta["from"]} → {meta["to"]} ({meta["window_seconds"]:.0f} s, one point every '
        f'{meta["step_seconds"]:g} s) from {html.escape(meta["prometheus_url"])}; generated by fabric-exporter '
        f'{html.escape(meta["version"])} in {meta["elapsed_seconds"]:.1f} s. Definitions: docs/poc.md.</p>',
        '<h2 id="summary-heading">Summary</h2>', summary_table(reports),
    ]
    if job is not None:
        parts.append(job_section(job, job_svg))
    for key, title, _ in SECTIONS:
        parts.append(f'<h2 id="{key}">{title}</h2><div class="grid" style="{cols}">')
        for r in reports:
            parts.append(f'<div class="fabric" data-section="{key}"><h3>{html.escape(r.name)}</h3>'
                         f"{svgs[(r.name, key)]}{_detail(key, r)}</div>")
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
