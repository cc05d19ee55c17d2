"""ibdiagnet2 output files (ibdiagnet runs on the site's schedule): find the newest ibdiagnet2.db_csv
/ ibdiagnet2.pm under ``ibdiagnet_dir`` (depth 2), read them with cat, map them to samples."""

from __future__ import annotations

import asyncio
import time

from ...catalog.infiniband import COUNTER_SWEEP, ERROR_SWEEP, IBDIAGNET_PM, PERFQUERY, pm_field_in_bytes
from ...commands import Files, Shape, Value
from ...errors import CommandError, PollError
from ...parsers import ib_diagnet
from ...parsers.ib_common import guid_str
from ...parsers.skipped import SkippedLine
from ...mapping import RawTable
from ...samples import Sample
from .state import FabricState
from .tools import IbPoll, IbTools

DB_CSV, PM = "ibdiagnet2.db_csv", "ibdiagnet2.pm"


def pm_fields(table: RawTable) -> ib_diagnet.PmFields:
    """What the catalog's rows say about ibdiagnet's PM counter names: fixed-width fields (64-bit
    ones do not latch), word counters (scale 4, published in bytes: ``pm_field_in_bytes``), and
    two spellings of one field (rows of one source with one CounterSelect bit; the first is preferred)."""
    widths: dict[str, int] = {}
    in_bytes: dict[str, str] = {}
    by_field: dict[tuple[str, int], list[str]] = {}
    for _metric, row in table.rows:
        if row.width is not None and row.width < 64:
            widths[row.name] = row.width
        if row.scale == 4:
            in_bytes[row.name] = pm_field_in_bytes(row.name)
        if row.reset_bit is not None:
            by_field.setdefault((row.source, row.reset_bit), []).append(row.name)
    spellings = {names[0]: tuple(names[1:]) for names in by_field.values() if len(names) > 1}
    return ib_diagnet.PmFields(widths, spellings, in_bytes)


# ibdiagnet's snake_case names are rows of their own; its CamelCase PM_INFO columns are the sweep's names.
PM_FIELDS = pm_fields(RawTable.for_source(IBDIAGNET_PM, COUNTER_SWEEP, ERROR_SWEEP, PERFQUERY))


TOOL = "ibdiagnet_files"  # fabric_ib_sweep_duration_seconds' tool label of the read


def find_argv(directory: str) -> list[str]:
    """The newest-files search below ``directory`` (ibdiagnet's output directory)."""
    return ["find", directory, "-maxdepth", "2", "(", "-name", DB_CSV, "-o", "-name", PM, ")", "-type", "f",
            "-printf", "%T@ %p\\n"]


# What this reader runs over SSH (the SSH guard's allow-list is generated from it); the guard allows
# it only below the directory its --ibdiagnet-dir names.
SSH_COMMANDS = (
    Shape("find", tuple(Value("ibdiagnet_dir") if i == 1 else w for i, w in enumerate(find_argv("DIR")))[1:]),
    Shape("cat", ("--", Value("ibdiagnet_file"))),
    Files("ibdiagnet_file", (DB_CSV, PM)),
)


async def read_ibdiagnet(tools: IbTools, directory: str, state: FabricState, poll: IbPoll) -> list[Sample]:
    """The newest ibdiagnet files' samples, and how long finding and reading them took (after the
    sweeps' figures were published, so this read publishes its own)."""
    started = asyncio.get_running_loop().time()
    out = await _read_newest_files(tools, directory, state, poll)
    poll.took(TOOL, started)
    out.append(Sample("fabric_ib_sweep_duration_seconds", {"tool": TOOL}, poll.durations[TOOL]))
    return out


async def _read_newest_files(tools: IbTools, directory: str, state: FabricState, poll: IbPoll) -> list[Sample]:
    argv = find_argv(directory)
    try:
        found = await tools.run_plain(argv, timeout=poll.remaining())
    except PollError as e:
        poll.problems.append(f"ibdiagnet files: {e}")
        return []
    # Age on the exporter's clock: hosts are NTP-synced, ibdiagnet runs are minutes to hours
    # apart, and one command less (the SSH guard allows only find and cat here).
    now_wall = time.time()
    if found.exit_status != 0 and not found.stdout.strip():
        poll.problems.append(f"ibdiagnet files: {found.describe_failure()}")
        return []
    newest = newest_files(found.stdout)
    if not newest:
        poll.problems.append(f"ibdiagnet files: no {DB_CSV} or {PM} under {directory}")
        return []
    out: list[Sample] = []
    pm_published = False
    for base, (mtime, path) in sorted(newest.items()):  # db_csv sorts before pm
        if base == PM and pm_published:
            continue  # PM_INFO in the db_csv already holds these counters: the .pm is not read
        try:
            res = await tools.run_plain(["cat", "--", path], timeout=poll.remaining())
            if res.exit_status != 0:
                raise CommandError(res.describe_failure())
            samples, had_pm = ibdiagnet_samples(base, res.stdout, state, skip_pm=pm_published, skipped=poll.skipped)
        except PollError as e:
            poll.problems.append(f"ibdiagnet file {path}: {e}")
            continue
        pm_published = pm_published or had_pm
        out += samples
        out.append(Sample("fabric_ib_ibdiagnet_file_age_seconds", {"file": base}, max(0.0, now_wall - mtime)))
    return out


def newest_files(find_output: str) -> dict[str, tuple[float, str]]:
    """find -printf '%T@ %p' lines -> base name -> (mtime, path) of the newest."""
    newest: dict[str, tuple[float, str]] = {}
    for line in find_output.splitlines():
        mtime_s, _, path = line.partition(" ")
        try:
            mtime = float(mtime_s)
        except ValueError:
            continue
        base = path.rsplit("/", 1)[-1]
        if base not in newest or mtime > newest[base][0]:
            newest[base] = (mtime, path)
    return newest


def ibdiagnet_samples(base: str, text: str, state: FabricState, skip_pm: bool,
                      skipped: list[SkippedLine] | None = None) -> tuple[list[Sample], bool]:
    """One file's samples (pure), and whether it held PM counters."""
    out: list[Sample] = []

    def node_labels(guid: int) -> dict[str, str]:
        facts = state.nodes.get(guid)
        return {"node_guid": guid_str(guid), "node_name": state.name(guid, facts.description if facts else "")}

    if base == PM:
        pms = ib_diagnet.parse_pm(text, skipped=skipped)
    else:
        sections = ib_diagnet.parse_db_csv(text, skipped=skipped)
        pms = ib_diagnet.pm_info(sections)
        for cable in ib_diagnet.cable_info(sections):
            labels = {**node_labels(cable.node_guid), "port": str(cable.port)}
            if cable.temperature is not None:
                out.append(Sample("fabric_ib_ibdiagnet_cable_temperature_celsius", labels, cable.temperature))
            out.append(Sample("fabric_ib_ibdiagnet_cable_info", {
                **labels, "vendor": cable.vendor, "part_number": cable.part_number,
                "serial_number": cable.serial_number, "length": cable.length}, 1.0))
        for guid, temp in sorted(ib_diagnet.node_temperatures(sections).items()):
            out.append(Sample("fabric_ib_ibdiagnet_node_temperature_celsius", node_labels(guid), temp))
    # The .pm and PM_INFO carry the same counters: publish PM_INFO when both exist.
    if skip_pm:
        return out, False
    for pm in ib_diagnet.normalised(pms, PM_FIELDS):
        labels = {**node_labels(pm.node_guid), "port": str(pm.port)}
        for name, value in sorted(pm.counters.items()):
            out.append(Sample("fabric_ib_ibdiagnet_pm_counter", {**labels, "counter": name}, float(value)))
        out.append(Sample("fabric_ib_ibdiagnet_port_latched", labels, 1.0 if pm.latched else 0.0))
    return out, bool(pms)
