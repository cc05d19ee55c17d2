"""``--scenario poc`` while the lab runs: the POC's scenarios switched on and off on time, the timeline
written beside the config, and with ``--report`` the report written when the sequence is over."""

from __future__ import annotations

import argparse
import asyncio
import logging
import shlex
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .run import Lab

log = logging.getLogger("fabric_exporter.lab")


def schedule_poc(lab: Lab) -> None:
    """Switch the POC's scenarios on and off on time; write the timeline beside the config."""
    import json

    from .poc import schedule, total_seconds

    loop, now = asyncio.get_running_loop(), time.time()
    total = total_seconds(lab.opts.poc_phase)
    phases = schedule(lab.opts.poc_phase)
    for p in phases:
        p["start"], p["end"] = now + p["offset_seconds"], now + p["offset_seconds"] + p["seconds"]
        loop.call_later(p["offset_seconds"], log.info, f"POC phase: {p['phase']}")
        if p["scenario"]:
            loop.call_later(p["offset_seconds"], lab.model.start, p["scenario"], time.monotonic())
            loop.call_later(p["offset_seconds"] + p["seconds"], lab.model.stop, p["scenario"])
    (lab.workdir / "poc-timeline.json").write_text(json.dumps(
        {"phase_seconds": lab.opts.poc_phase, "start": now, "end": now + total, "phases": phases}, indent=2))
    # No --settings: the report reads the settings from the rules this lab's Prometheus loaded.
    report_argv = ["--prometheus-url", f"http://{lab.opts.prometheus_listen}", "--from", f"{now:.0f}",
                   "--to", f"{now + total:.0f}", "--out", str(lab.opts.report or "poc-report")]
    print(f"POC running for {total:.0f} s (timeline: {lab.workdir / 'poc-timeline.json'}); "
          + (f"the report goes to {lab.opts.report} when it is over" if lab.opts.report else
             f"then:\n  fabric-exporter report {shlex.join(report_argv)}"), file=sys.stderr, flush=True)
    loop.call_later(total, poc_over, lab, phases, report_argv)


def poc_over(lab: Lab, phases: list[dict], report_argv: list[str]) -> None:
    """Say that the POC sequence is over, what ran and how to get the report; write it with --report."""
    ran = ", ".join(f"{p['phase']} ({p['seconds']:g} s)" for p in phases)
    print(f"POC sequence over: {ran}; timeline: {lab.workdir / 'poc-timeline.json'}\n"
          + (f"  writing the report to {lab.opts.report} once Prometheus has recorded the last phase"
             if lab.opts.report else f"  report: fabric-exporter report {shlex.join(report_argv)}"),
          file=sys.stderr, flush=True)
    if lab.opts.report:
        lab.report_task = asyncio.ensure_future(write_report(lab, report_argv))


async def write_report(lab: Lab, report_argv: list[str]) -> None:
    """``fabric-exporter report`` itself (same parser, same code), in a thread: it blocks on HTTP."""
    from ..report.main import add_arguments as report_arguments, main as report_main
    from .prometheus import Prometheus

    if not any(isinstance(s, Prometheus) for s in lab.services):
        print("POC report not written: the lab's Prometheus is not running (scripts/setup-deps installs it)",
              file=sys.stderr, flush=True)
        return
    # the last phase's samples: two scrapes and one rule evaluation after the sequence's end
    await asyncio.sleep(3 * max(lab.opts.interval, 1.0) + 1.0)
    parser = argparse.ArgumentParser(prog="fabric-exporter report")
    report_arguments(parser)
    status = await asyncio.to_thread(report_main, parser.parse_args(report_argv))
    print(f"POC report {'written to ' + str(lab.opts.report) if status == 0 else 'failed (see above)'}; "
          f"the same again: fabric-exporter report {shlex.join(report_argv)}", file=sys.stderr, flush=True)
