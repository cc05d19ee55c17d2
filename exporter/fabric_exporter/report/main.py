"""``fabric-exporter report``: read a window from Prometheus, write DIR/index.html and DIR/summary.json.

Exit status 0 with both files written; 2 with a one-line reason on stderr for anything the user can
fix (Prometheus unreachable, no data in the window, a fabric it does not know, bad arguments) —
never an empty page presented as a result.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from datetime import datetime, timezone

from .. import __version__
from . import limits
from .prom import DEFAULT_MAX_RESPONSE_BYTES, PrometheusClient, ReportError

_DURATION_HELP = "a Prometheus duration: 90m, 6h, 2d"


def parse_time(text: str) -> float:
    """RFC 3339 (2026-11-30T10:00:00Z, offsets allowed) or Unix seconds."""
    try:
        return limits.check_time(float(text), text)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ReportError(f"{text!r} is neither an RFC 3339 time (2026-11-30T10:00:00Z) nor Unix seconds") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return limits.check_time(parsed.timestamp(), text)


def resolve_window(args, now: float) -> tuple[float, float]:
    if args.since and (args.from_ or args.to):
        raise ReportError("give either --since or --from/--to, not both")
    if args.since:
        from ..mixin.rules import duration_seconds

        seconds = duration_seconds(args.since) if re.fullmatch(r"(\d+(ms|s|m|h|d|w|y))+", args.since) else 0
        if seconds <= 0:
            raise ReportError(f"--since {args.since!r} is not {_DURATION_HELP}")
        limits.check_window(seconds, f"--since {args.since}")
        return now - seconds, now
    if not (args.from_ and args.to):
        raise ReportError("give the window: --since 6h, or --from T --to T")
    start, end = parse_time(args.from_), parse_time(args.to)
    if end <= start:
        raise ReportError("--to must be after --from")
    limits.check_window(min(end, now) - start, "--from .. --to")
    return start, min(end, now)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prometheus-url", required=True, metavar="URL", help="e.g. http://127.0.0.1:9090")
    p.add_argument("--since", metavar="DURATION", help=f"the window ends now and lasts this long ({_DURATION_HELP})")
    p.add_argument("--from", dest="from_", metavar="TIME", help="window start (RFC 3339 or Unix seconds)")
    p.add_argument("--to", metavar="TIME", help="window end (RFC 3339 or Unix seconds)")
    p.add_argument("--fabric", action="append", default=[], metavar="NAME",
                   help="a fabric to report (repeatable; default: every fabric with data in the window)")
    p.add_argument("--job", metavar="ID",
                   help="add a section for this scheduler job: its hosts, congestion episodes and recovery, roles "
                        "and worst hosts in the window (needs the slurm_jobs collector and the job rules; docs/jobs.md)")
    p.add_argument("--cluster", metavar="NAME", help="the scheduler cluster of --job (when its id ran in several)")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for index.html and summary.json")
    p.add_argument("--settings", metavar="FILE",
                   help="optional: a mixin settings file to check against the settings the rules loaded in "
                        "Prometheus record (the report always uses the recorded ones; it refuses a file that "
                        "disagrees and names the differences)")
    p.add_argument("--step", type=limits.positive_seconds, metavar="SECONDS",
                   help="resolution (default: the congestion rules' evaluation interval, coarser for long windows)")
    p.add_argument("--timeout", type=limits.positive_seconds, default=60.0, metavar="SECONDS",
                   help="deadline of one request to Prometheus, connect to last byte")
    p.add_argument("--deadline", type=limits.positive_seconds, default=limits.DEFAULT_DEADLINE_SECONDS,
                   metavar="SECONDS", help="deadline of the whole report run")
    p.add_argument("--max-response-bytes", type=limits.positive_bytes, default=DEFAULT_MAX_RESPONSE_BYTES,
                   metavar="BYTES", help="largest answer read from Prometheus (larger: an error)")


def build(args, now: float | None = None) -> dict:
    """Collect, render and write; returns the summary. Raises ReportError."""
    from ..mixin.settings import SettingsError, load_settings
    from . import collect, loaded_rules, page, plots  # matplotlib only now

    started = time.monotonic()
    try:
        given = load_settings(args.settings) if args.settings else None
    except (SettingsError, OSError) as e:
        raise ReportError(f"--settings: {e}") from None
    client = PrometheusClient(args.prometheus_url, timeout=args.timeout, deadline=started + args.deadline,
                              max_response_bytes=args.max_response_bytes)
    start, end = resolve_window(args, now if now is not None else time.time())
    rules = loaded_rules.read(client.rule_groups(), f"Prometheus at {client.base}")
    if given is not None:
        loaded_rules.check_given(rules.settings, given, args.settings)
    settings, interval = rules.settings, rules.interval
    step = args.step or collect.choose_step(end - start, interval)
    if (end - start) / step > collect.MAX_POINTS:
        raise ReportError(f"--step {step:g} gives more than {collect.MAX_POINTS} points over this window")
    window = collect.Window(start, end, step)
    known = collect.known_fabrics(client, settings, window)
    if not known:
        raise ReportError(
            f"no fabric-exporter data in Prometheus at {client.base} between {collect.iso(start)} and "
            f"{collect.iso(end)} (no fabric_up{settings.sel()} series; the selector is the loaded rules'): check "
            "the window and that this Prometheus scrapes the exporter")
    unknown = [f for f in args.fabric if f not in known]
    if unknown:
        raise ReportError(f"unknown fabric(s) {', '.join(map(repr, unknown))}: fabrics with data in the window: "
                          + ", ".join(known))
    names = args.fabric or known
    if args.cluster is not None and args.job is None:
        raise ReportError("--cluster goes with --job")
    job = None
    if args.job is not None:  # first: a job that is not there is refused before the long part
        from .job import JobCollector

        job = JobCollector(client, settings, window).job(args.job, args.cluster)
    collector = collect.Collector(client, settings, window)
    reports = [collector.fabric(n) for n in names]
    svgs = {}
    for r in reports:
        for key, _, draw in plots.SECTIONS:
            svgs[(r.name, key)] = draw(r.plots[key])
    meta = {"from": collect.iso(start), "to": collect.iso(end), "window_seconds": end - start, "step_seconds": step,
            "prometheus_url": client.base, "version": __version__}
    summary = {"window": {"from": meta["from"], "to": meta["to"], "window_seconds": round(end - start, 3),
                          "step_seconds": step, "rules_evaluation_interval_seconds": interval,
                          "prometheus_url": client.base},
               "settings": loaded_rules.as_summary(settings),
               "fabrics": {r.name: r.figures for r in reports}}
    if job is not None:
        summary["job"] = job.figures
    meta["elapsed_seconds"] = time.monotonic() - started
    summary["generated"] = {"version": __version__, "elapsed_seconds": round(meta["elapsed_seconds"], 2),
                            "prometheus_queries_count": client.queries,
                            "non_finite_samples_skipped_count": client.non_finite_samples,
                            "notes": _notes(client, step, interval, args.step, collect.MAX_POINTS)
                            + _coarse_notes(reports, step)}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(args.out, "index.html"), "w", encoding="utf-8") as f:
        f.write(page.render(reports, svgs, meta, job, plots.job(job.plots) if job is not None else ""))
    return summary


def _notes(client: PrometheusClient, step: float, interval: float, asked_step: float | None,
           max_points: int) -> list[str]:
    """What the user should know about how the figures were read (printed, and kept in summary.json)."""
    notes = []
    if asked_step is None and step > interval:
        notes.append(f"step {step:g} s instead of the rules' {interval:g} s, so a series has at most "
                     f"{max_points} points over this window (episodes shorter than a step are not resolved)")
    if client.non_finite_samples:
        notes.append(f"{client.non_finite_samples} NaN/±Inf samples from Prometheus left out (gaps)")
    return notes


def _coarse_notes(reports, step: float) -> list[str]:
    """Fabrics whose per-port aggregates were read at a coarser step than the report's (many ports)."""
    from . import collect

    notes = []
    for r in reports:
        t = r.figures["throughput"]
        host, util = t.get("host_transmit_step_seconds"), t.get("link_utilisation_step_seconds")
        if (host or step) > step or (util or step) > step:
            notes.append(f"{r.name}: many ports, so host transmit is averaged over {host:g} s steps and link "
                         f"utilisation sampled every {util:g} s (ports x points per query within "
                         f"{collect.PORT_POINTS_BUDGET:,}; Prometheus evaluates such queries port by port, "
                         "step by step)")
    return notes


def main(args) -> int:
    try:
        summary = build(args)
    except ReportError as e:
        print(f"fabric-exporter report: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"fabric-exporter report: cannot write {args.out}: {e}", file=sys.stderr)
        return 2
    for note in summary["generated"]["notes"]:
        print(f"fabric-exporter report: note: {note}", file=sys.stderr)
    fabrics = summary["fabrics"]
    print(f"wrote {os.path.join(args.out, 'index.html')} and summary.json: "
          + "; ".join(f"{n}: {f['congestion']['episodes_count']} congestion episode(s)" for n, f in fabrics.items())
          + (f"; job {summary['job']['job_id']}: {summary['job']['congestion']['episodes_count']} episode(s) on "
             f"{summary['job']['hosts_count']} host(s)" if "job" in summary else "")
          + f" ({summary['generated']['elapsed_seconds']} s, {summary['generated']['prometheus_queries_count']} queries)")
    return 0
