"""The report's plots, drawn with matplotlib (Agg) into inline SVG text: no files, no network.

One function per section; each takes one fabric's plot data and returns an ``<svg>`` string. A
section without data still gets a figure that says so, so a reader never mistakes a blank for zero.
"""

from __future__ import annotations

import io
from datetime import datetime, timezone

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402  (after the backend is chosen)
import matplotlib.pyplot as plt  # noqa: E402

from .collect import UTIL_BINS  # noqa: E402

SIZE = (5.6, 2.7)
matplotlib.rcParams.update({"font.size": 8, "svg.fonttype": "none", "axes.grid": True, "grid.alpha": 0.3,
                            "svg.hashsalt": "fabric-exporter"})  # stable ids: the same data gives the same page


def _times(samples):
    return [datetime.fromtimestamp(t, timezone.utc) for t, _ in samples]


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.tight_layout()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _time_axis(ax):
    locator = mdates.AutoDateLocator(tz=timezone.utc, minticks=3, maxticks=7)
    locator.intervald[mdates.SECONDLY] = [1, 2, 5, 10, 15, 30]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=timezone.utc))
    ax.set_xlabel("time (UTC)")


def _legend_below(ax, *more_axes) -> None:
    """The legend under the axes, outside the plotted area: it never hides a line or a label drawn on
    the plot (the recovery annotations)."""
    handles, labels = [], []
    for a in (ax, *more_axes):
        h, lbl = a.get_legend_handles_labels()
        handles += h
        labels += lbl
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=min(4, len(labels)),
              fontsize=6, frameon=False)


def _empty(ax, what: str):
    ax.text(0.5, 0.5, f"no {what} in this window", ha="center", va="center", transform=ax.transAxes, color="#a00")
    ax.set_xticks([])
    ax.set_yticks([])


def _finish(ax, drawn: bool, title: str, missing: str, *, time_axis: bool = True) -> None:
    """Every section's last step: a drawn axes gets its time axis, an empty one a note naming the
    ``missing`` data (never a blank that reads as zero); both get their title."""
    if not drawn:
        _empty(ax, missing)
    elif time_axis:
        _time_axis(ax)
    ax.set_title(title)


def throughput(data: dict) -> str:
    fig, (a, b) = plt.subplots(1, 2, figsize=SIZE, gridspec_kw={"width_ratios": [3, 2]})
    # Per adapter port on the left axis: the figure that compares fabrics of different size; the
    # fabric total on the right.
    if data["host_tx"]:
        a.plot(_times(data["per_adapter"]), [v * 8 / 1e9 for _, v in data["per_adapter"]], color="#1f77b4", lw=1,
               label="per adapter port")
        a.set_ylabel("per adapter port (Gb/s)")
        a.set_ylim(bottom=0)
        total = a.twinx()
        total.plot(_times(data["host_tx"]), [v * 8 / 1e9 for _, v in data["host_tx"]], color="#7f7f7f", lw=0.8,
                   ls="--", label="fabric total (right axis)")
        total.set_ylabel("fabric total (Gb/s)", color="#7f7f7f")
        total.set_ylim(bottom=0)
        total.grid(False)
        _legend_below(a, total)
    _finish(a, bool(data["host_tx"]), "Host transmit", "throughput data")
    samples = sum(data["hist"])
    if samples:
        b.bar([lo + 0.05 for lo in UTIL_BINS[:-1]], [n / samples for n in data["hist"]], width=0.09, color="#2ca02c")
        b.set_xlim(0, 1)
        b.set_xlabel("link utilisation")
        b.set_ylabel("share of port-samples")
    _finish(b, bool(samples), "Link utilisation distribution", "utilisation data", time_axis=False)
    return _svg(fig)


def latency(data: dict) -> str:
    fig, ax = plt.subplots(figsize=SIZE)
    drawn = False
    for key, label, color in (("p50", "p50", "#2ca02c"), ("p99", "p99", "#ff7f0e"), ("p999", "p99.9", "#d62728")):
        if data[key]:
            ax.plot(_times(data[key]), [v * 1e6 for _, v in data[key]], label=label, color=color, lw=1)
            drawn = True
    if drawn:
        ax.set_yscale("log")
        ax.set_ylabel("latency (µs)")
        _legend_below(ax)
    _finish(ax, drawn, "Probed RDMA latency (fabric-wide quantiles)", "latency probes")
    return _svg(fig)


def congestion(data: dict) -> str:
    fig, ax = plt.subplots(figsize=SIZE)
    if data["severity"]:
        ax.plot(_times(data["severity"]), [v for _, v in data["severity"]], color="#9467bd", lw=1,
                label="worst port severity")
        ax.axhline(1.0, color="#d62728", lw=0.8, ls="--", label="congestion threshold")
        for i, e in enumerate(data["episodes"]):
            start, end = (datetime.fromtimestamp(t, timezone.utc) for t in (e.start, e.end))
            ax.axvspan(start, end, color="#d62728", alpha=0.18, label="episode" if i == 0 else None)
            if e.recovered_at is not None:
                rec = datetime.fromtimestamp(e.recovered_at, timezone.utc)
                ax.axvspan(end, rec, color="#ff7f0e", alpha=0.18, label="recovery" if i == 0 else None)
                ax.annotate(f"recovered in {e.recovery_seconds:.0f} s", xy=(rec, 1.0), xytext=(3, 12),
                            textcoords="offset points", fontsize=7)
            else:
                ax.annotate("not recovered", xy=(end, 1.0), xytext=(3, 12), textcoords="offset points", fontsize=7)
        ax.set_yscale("symlog", linthresh=0.1)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("signal / threshold")
        _legend_below(ax)
    _finish(ax, bool(data["severity"]), f"Congestion episodes ({len(data['episodes'])}) and recovery",
            "congestion severity (are the congestion rules loaded?)")
    return _svg(fig)


def stability(data: dict) -> str:
    fig, ax = plt.subplots(figsize=SIZE)
    drawn = False
    if data["errors"]:
        ax.plot(_times(data["errors"]), [v for _, v in data["errors"]], color="#8c564b", lw=1, label="errors/s")
        drawn = True
    for i, t in enumerate(data["down_times"]):
        ax.axvline(datetime.fromtimestamp(t, timezone.utc), color="#d62728", lw=0.6, alpha=0.6,
                   label="link down" if i == 0 else None)
        drawn = True
    if data["storm"]:
        ts = _times(data["storm"])
        ax.scatter(ts, [0] * len(ts), marker="|", color="#e377c2", label="PFC pause storm alert")
        drawn = True
    twin = None
    if data["loss"]:
        twin = ax.twinx()
        twin.plot(_times(data["loss"]), [v * 100 for _, v in data["loss"]], color="#17becf", lw=1, ls=":",
                  label="probe loss (right axis)")
        twin.set_ylabel("probe loss (%)", color="#17becf")
        twin.set_ylim(bottom=0)
        twin.grid(False)
        drawn = True
    if drawn:
        ax.set_ylabel("errors per second")
        ax.set_ylim(bottom=0)
        _legend_below(ax, *([twin] if twin else []))
    _finish(ax, drawn, "Stability: errors, link downs, probe loss, pause storms", "stability data")
    return _svg(fig)


def completeness(data: dict) -> str:
    targets = data["targets"][:25]
    fig, ax = plt.subplots(figsize=(SIZE[0], max(1.6, 0.22 * len(targets) + 0.8)))
    if targets:
        labels = [f"{t['group']}/{t['host']}" for t in targets]
        values = [t["fresh_ratio"] * 100 for t in targets]
        ax.barh(labels, values, color=["#2ca02c" if v >= 99 else "#ff7f0e" if v >= 90 else "#d62728" for v in values])
        ax.set_xlim(0, 100)
        ax.set_xlabel("share of the window with fresh data (%)")
        ax.invert_yaxis()
        ax.tick_params(axis="y", labelsize=6)
    title = "Data completeness per target" + (" (25 least complete)" if len(data["targets"]) > 25 else "")
    _finish(ax, bool(targets), title, "targets", time_axis=False)
    return _svg(fig)


ROLE_COLORS = {"victim": "#1f77b4", "contributor": "#2ca02c", "incast_target": "#d62728"}


def job(data: dict) -> str:
    """One job: its congestion severity with episodes and recovery (top), its role scores (bottom)."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(SIZE[0] * 1.6, SIZE[1] * 1.7))
    severity = data["severity"]
    if severity:
        top.plot(_times(severity), [v for _, v in severity], color="#9467bd", lw=1, label="job severity (worst host)")
        top.axhline(1.0, color="#d62728", lw=0.8, ls="--", label="congestion threshold")
        for i, e in enumerate(data["episodes"]):
            start, end = (datetime.fromtimestamp(t, timezone.utc) for t in (e.start, e.end))
            top.axvspan(start, end, color="#d62728", alpha=0.18, label="episode" if i == 0 else None)
            if e.recovered_at is not None:
                top.axvspan(end, datetime.fromtimestamp(e.recovered_at, timezone.utc), color="#ff7f0e", alpha=0.18,
                            label="recovery" if i == 0 else None)
        top.set_yscale("symlog", linthresh=0.1)
        top.set_ylim(0, max(2.0, max(v for _, v in severity)) * 2)  # headroom: a peak is not cut by the frame
        top.set_ylabel("signal / threshold")
        _legend_below(top)
    _finish(top, bool(severity), f"Job congestion: {len(data['episodes'])} episode(s)",
            "job severity (are the job rules loaded?)")
    drawn = False
    for role, samples in sorted(data["roles"].items()):
        if samples:
            bottom.plot(_times(samples), [v for _, v in samples], lw=1, label=role, color=ROLE_COLORS.get(role))
            drawn = True
    if drawn:
        bottom.axhline(1.0, color="#7f7f7f", lw=0.8, ls="--")
        bottom.set_ylim(bottom=0)
        bottom.set_ylabel("role score")
        _legend_below(bottom)
    _finish(bottom, drawn, "Roles: victim, contributor, incast target", "role scores")
    return _svg(fig)


SECTIONS = (("throughput", "Throughput", throughput), ("latency", "Tail latency", latency),
            ("congestion", "Congestion recovery", congestion), ("stability", "Stability", stability),
            ("completeness", "Data completeness", completeness))
