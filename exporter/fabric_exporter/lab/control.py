"""The lab's control endpoint (``POST /scenarios/NAME``, ``DELETE /scenarios/NAME``, ``GET /``): switch
scenarios on and off, now or on a schedule, on the hosts given or the hosts of one Slurm job."""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING

from aiohttp import web

from .traffic import SCENARIOS

if TYPE_CHECKING:
    from .run import Lab

log = logging.getLogger("fabric_exporter.lab")

INCASTS = ("congestion", "incast_ib", "incast_roce")
MAX_SCHEDULE_SECONDS = 7 * 86400.0


def scenario_schedule(query) -> tuple[float, float | None]:
    """``?after=`` (default 0) and ``?seconds=`` (default: until stopped) of POST /scenarios/NAME.

    Each must be a finite number of seconds, after >= 0 and 0 < seconds, both within a week: a
    NaN or infinite timer put into the event loop the lab's daemon shares misorders its timer
    heap (a 0.25 s sleep took 3.85 s), so a bad value is refused with a 400 naming it."""
    limit = MAX_SCHEDULE_SECONDS
    values: dict[str, float] = {}
    for name in ("after", "seconds"):
        if name not in query:
            continue
        text = query[name]
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{name}={text!r} is not a number of seconds") from None
        if not math.isfinite(value) or value < 0 or value > limit or (name == "seconds" and value == 0):
            low = "0 <= after" if name == "after" else "0 < seconds"
            raise ValueError(f"{name}={text!r}: expected a finite number of seconds, {low} <= {limit:g} (a week)")
        values[name] = value
    return values.get("after", 0.0), values.get("seconds")


def congest_hosts(lab: Lab, query) -> frozenset[str] | None:
    """The host set of POST /scenarios/NAME?hosts=a,b or ?job=ID (None: neither given).
    Raises ValueError naming an unknown host or job."""
    if "hosts" in query and "job" in query:
        raise ValueError("give hosts= or job=, not both")
    if "hosts" in query:
        hosts = frozenset(h for h in query["hosts"].split(",") if h)
        unknown = sorted(hosts - set(lab.hosts))
        if unknown or not hosts:
            raise ValueError(f"unknown hosts {unknown} (known: {', '.join(lab.hosts)})")
        return hosts
    if "job" in query:
        if lab.slurm is None:
            raise ValueError("job= needs the lab's Slurm (not running)")
        nodes = lab.slurm.running().get(query["job"])
        if not nodes:
            raise ValueError(f"job {query['job']!r} is not running")
        return frozenset(nodes)
    return None


def control_app(lab: Lab) -> web.Application:
    """The endpoint's routes: GET / lists the scenarios, POST starts one, DELETE stops one."""
    async def index(request):
        return web.json_response({
            "scenarios": {n: {"summary": s.summary, "active": lab.model.on(n)} for n, s in SCENARIOS.items()},
            "ibsim_restarts": lab.ib.restarts if lab.ib is not None else None,
            "usage": "POST /scenarios/NAME to start it (optional ?after=SECONDS to schedule it, "
                     "?seconds=N to end it by itself; an incast on ?hosts=a,b or the hosts of ?job=ID only), "
                     "DELETE /scenarios/NAME to stop it"})

    async def start(request):
        name = request.match_info["name"]
        if name not in SCENARIOS:
            return web.json_response({"error": f"unknown scenario {name!r}",
                                      "known": sorted(SCENARIOS)}, status=404)
        try:
            after, seconds = scenario_schedule(request.query)
            hosts = await asyncio.to_thread(congest_hosts, lab, request.query)
            if hosts is not None and name not in INCASTS:
                raise ValueError(f"hosts=/job= apply to the incast scenarios ({', '.join(INCASTS)})")
        except ValueError as e:
            return web.json_response({"error": str(e)}, status=400)
        if hosts is not None or name in INCASTS:
            lab.congested_hosts = hosts
        loop = asyncio.get_running_loop()
        loop.call_later(after, lab.model.start, name, loop.time() + after)
        if seconds is not None:
            loop.call_later(after + seconds, lab.model.stop, name)
        log.info("scenario scheduled", extra={"fields": {
            "scenario": name, "after": after, "seconds": seconds if seconds is not None else "until stopped"}})
        return web.json_response({"scheduled": name, "after": after, "seconds": seconds,
                                  **({"hosts": sorted(hosts)} if hosts is not None else {})})

    async def stop(request):
        name = request.match_info["name"]
        lab.model.stop(name)
        if name in INCASTS and not any(lab.model.on(n) for n in INCASTS):
            lab.congested_hosts = None
        log.info("scenario stopped", extra={"fields": {"scenario": name}})
        return web.json_response({"stopped": name})

    app = web.Application()
    app.router.add_get("/", index)
    app.router.add_get("/scenarios", index)
    app.router.add_post("/scenarios/{name}", start)
    app.router.add_delete("/scenarios/{name}", stop)
    return app


async def start_control(lab: Lab) -> web.AppRunner:
    """Serve the control app on ``--control-address``; the caller cleans the runner up."""
    chost, _, cport = lab.opts.control.rpartition(":")
    control_runner = web.AppRunner(control_app(lab), access_log=None)
    await control_runner.setup()
    await web.TCPSite(control_runner, chost, int(cport)).start()
    return control_runner
