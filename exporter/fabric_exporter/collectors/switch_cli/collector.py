"""switch_cli's dialect table (``DIALECTS``: each switch OS's commands, parsers, sample mapping
and run strategy), the batched scripts, and the collector that runs a poll."""

from __future__ import annotations

import dataclasses
import functools
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, ClassVar

from ...catalog import switch_commands as cmd
from ...commands import NONCE, Command, ShellLoop, ShellSection
from ...errors import CommandError, ParseError, PollError
from ...parsers import eos_cli, nvue
from ...parsers import sonic_cli as p
from ...parsers import sonic_watermark as wm
from ...parsers.batched import Section, split_sections
from ...samples import PollResult, Sample
from ...hostnames import NameRule, read_name_rule
from .. import lldp
from ..base import Collector, ErrorSink, parse_off_loop
from ..options import OptionReader

from .samples import (
    cumulus_samples,
    EOS_DISCARD_METRICS,
    eos_ecn_samples,
    EOS_PFC_METRICS,
    eos_port_samples,
    eos_queue_samples,
    lldp_samples,
    nvue_roce_samples,
    pfc_history_samples,
    pfc_samples,
    pfcwd_samples,
    pg_watermark_samples,
    pool_watermark_samples,
    QUEUE_METRICS,
    queue_samples,
    queue_watermark_samples,
    SwitchLabels,
    Wanted,
    WRED_METRICS,
    _one_metric,
)

# -- the dialect table ------------------------------------------------------------------------------

@dataclass(frozen=True)
class CliCommand:
    """One CLI command of a dialect: what runs, which parser reads its output, how records map to samples."""
    argv: tuple[str, ...]
    parse: Callable[..., Any]  # (text, skipped=) -> records
    to_samples: Callable[[SwitchLabels, Any, Wanted], list[Sample]]  # (the switch's labels, records, wanted)
    # the same records as JSON: ``argv + ("--json",)``, tried first under ``json: auto``
    parse_json: Callable[..., Any] | None = None
    # where its parser counts skipped lines, when not one of the dialect's ``sources`` (published at 0
    # only for targets that run the command)
    source: str = ""


SONIC = {
    "pfc": CliCommand(("show", "pfc", "counters"), p.parse_pfc_counters, pfc_samples),
    "queue": CliCommand(("show", "queue", "counters"), p.parse_queue_counters,
                        functools.partial(queue_samples, QUEUE_METRICS), p.parse_queue_counters_json),
    "wred": CliCommand(("show", "queue", "wredcounters"), p.parse_wred_counters,
                       functools.partial(queue_samples, WRED_METRICS), p.parse_wred_counters_json),
    "pfcwd": CliCommand(("show", "pfcwd", "stats"), p.parse_pfcwd_stats, pfcwd_samples),
}
SONIC_COMMANDS = tuple(SONIC)  # the default ``commands``

# Watermarks: which one a poll reads (``watermark_kind``) is the show command's word; the section
# names are ``queue_watermark_unicast``, ``queue_persistent_watermark_unicast``, ``pg_watermark_shared``...
WATERMARK_KINDS = {"user": "watermark", "persistent": "persistent-watermark"}
QUEUE_WATERMARK_TYPES = ("unicast", "multicast", "all")
PG_WATERMARK_REGIONS = ("shared", "headroom")
POOL_WATERMARKS = {"buffer_pool": ("buffer_pool", _one_metric(cmd.SONIC_BUFFER_POOL_WATERMARK)),
                   "headroom_pool": ("headroom-pool", _one_metric(cmd.SONIC_HEADROOM_POOL_WATERMARK))}


def _infix(kind: str) -> str:
    return WATERMARK_KINDS[kind].replace("-", "_")


for _kind, _word in WATERMARK_KINDS.items():
    for _t in QUEUE_WATERMARK_TYPES:
        SONIC[f"queue_{_infix(_kind)}_{_t}"] = CliCommand(
            ("show", "queue", _word, _t), wm.parse_queue_watermark,
            functools.partial(queue_watermark_samples, _kind), wm.parse_queue_watermark_json, wm.SOURCE_QUEUE)
    for _r in PG_WATERMARK_REGIONS:
        SONIC[f"pg_{_infix(_kind)}_{_r}"] = CliCommand(
            ("show", "priority-group", _word, _r), wm.parse_pg_watermark,
            functools.partial(pg_watermark_samples, _r), wm.parse_pg_watermark_json, wm.SOURCE_PG)
    for _pool, (_group, _metric) in POOL_WATERMARKS.items():  # 'show' has no --json for pools
        SONIC[f"{_pool}_{_infix(_kind)}"] = CliCommand(
            ("show", _group, _word), wm.parse_pool_watermark, functools.partial(pool_watermark_samples, _metric),
            source=wm.SOURCE_POOL)
SONIC["pfc_history"] = CliCommand(("show", "pfc", "counters", "--history"), p.parse_pfc_history, pfc_history_samples,
                                  source=p.SOURCE_PFC_HISTORY)
SONIC["lldp"] = CliCommand(("show", "lldp", "table"), p.parse_lldp_table, lldp_samples, source="sonic_lldp_table")
# what the ``commands`` option may name (watermark names stand for one section per type/region/pool)
SONIC_CHOICES = SONIC_COMMANDS + ("queue_watermark", "pg_watermark", "buffer_pool_watermark", "pfc_history", "lldp")


def sonic_sections(o: SwitchCliOptions) -> tuple[str, ...]:
    """The batch's sections (keys of SONIC) for the chosen commands and watermark options."""
    out: list[str] = []
    infix = _infix(o.watermark_kind)
    for c in o.commands:
        if c == "queue_watermark":
            out += [f"queue_{infix}_{t}" for t in o.queue_watermark_types]
        elif c == "pg_watermark":
            out += [f"pg_{infix}_{r}" for r in o.pg_watermark_regions]
        elif c == "buffer_pool_watermark":
            out += [f"{pool}_{infix}" for pool in o.buffer_pool_watermarks]
        else:
            out.append(c)
    return tuple(dict.fromkeys(out))

# Arista EOS: ``| json`` where a published capture of the JSON exists (discards, PFC, ECN); the
# queue table is read as text (no public JSON capture of it was found). The argv is the CLI line's words.
EOS = {
    "discards": CliCommand(("show", "interfaces", "counters", "discards", "|", "json"),
                           eos_cli.parse_discards_json, functools.partial(eos_port_samples, EOS_DISCARD_METRICS)),
    "queue": CliCommand(("show", "interfaces", "counters", "queue"),
                        eos_cli.parse_queue_counters, eos_queue_samples),
    "pfc": CliCommand(("show", "priority-flow-control", "counters", "|", "json"),
                      eos_cli.parse_pfc_counters_json, functools.partial(eos_port_samples, EOS_PFC_METRICS)),
    "ecn": CliCommand(("show", "qos", "interfaces", "ecn", "counters", "queue", "|", "json"),
                      eos_cli.parse_ecn_counters_json, eos_ecn_samples),
}
_SONIC_ARGV = {name: c.argv for name, c in SONIC.items()}


@dataclass(frozen=True)
class CommandOutput:
    """What one named command printed, however the dialect ran it."""
    name: str
    command: str  # as the user would type it, for messages
    exit_status: int | None  # None: the batch printed no section for it
    text: str
    error_tail: str  # the last lines of its error output, for a failure's message


@dataclass(frozen=True)
class Dialect:
    """A switch OS: its named commands (the ``commands`` option picks among them; empty when the
    dialect has no such choice), how one poll runs them, and what it reads (for messages)."""
    name: str
    commands: dict[str, CliCommand]
    poll: Callable[[SwitchCliCollector], Awaitable[PollResult]]
    reads: str
    sources: tuple[str, ...] = ()  # what its parsers report skipped lines under (published at 0 from the start)
    # the names the ``commands`` option takes and its default, when not simply the keys of ``commands``
    choices: tuple[str, ...] = ()
    defaults: tuple[str, ...] = ()
    #: what its run strategy sends over SSH (the SSH guard's allow-list is generated from it); empty for
    #: a strategy the guard does not see (EOS: lines in the switch's own CLI, no shell, no forced command)
    ssh_commands: tuple[Command, ...] = ()
    #: option keys only this dialect takes (another dialect given one is an error), and what they are
    own_options: tuple[str, ...] = ()
    own_options_are: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return self.choices or tuple(self.commands)


@dataclass(frozen=True)
class SwitchCliOptions:
    dialect: str = "sonic"
    commands: tuple[str, ...] = SONIC_COMMANDS
    json: str = "auto"  # auto | always | never
    interface_include: re.Pattern | None = None
    interface_exclude: re.Pattern | None = None
    cumulus_interfaces: re.Pattern = re.compile(r"swp[0-9]+(s[0-9]+)?")
    watermark_kind: str = "user"  # user | persistent
    queue_watermark_types: tuple[str, ...] = ("unicast", "multicast")
    pg_watermark_regions: tuple[str, ...] = PG_WATERMARK_REGIONS
    buffer_pool_watermarks: tuple[str, ...] = tuple(POOL_WATERMARKS)
    sections: tuple[str, ...] = SONIC_COMMANDS  # what one poll runs (the batch's sections)
    #: an LLDP neighbour's system name -> the scheduler's node name (neighbor_host); None: as sent
    neighbor_name: NameRule | None = None


def _quote(argv: tuple[str, ...]) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in argv)


def build_script(commands: list[tuple[str, tuple[str, ...]]], nonce: str) -> str:
    """A POSIX sh script running each command between markers; stdout only is captured in sections.

    The end marker starts on a fresh line (a command's output need not end with a newline), and
    holds the command's exit status.
    """
    lines = []
    for name, argv in commands:
        lines.append(f"printf '@@%s begin %s\\n' {nonce} {name}")
        lines.append(f"{_quote(argv)} </dev/null")
        lines.append(f"printf '\\n@@%s end %s %d\\n' {nonce} {name} $?")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class CumulusCommand:
    """One per-interface command of the Cumulus dialect: its shell words (``$n`` the interface), the
    suffix of its sections' names, its parser and its mapping."""
    shell: str
    suffix: str  # section name: the interface name + suffix
    parse: Callable[..., Any]  # (text, skipped=) -> record
    to_samples: Callable[[SwitchLabels, str, Any], list[Sample]]  # (the switch's labels, interface, record)
    source: str
    what: str  # for messages


CUMULUS = {
    "ethtool": CumulusCommand('ethtool -S "$n"', "", p.parse_cumulus_ethtool, cumulus_samples, "ethtool",
                              "ethtool -S"),
    "nvue_roce": CumulusCommand('nv show interface "$n" qos roce counters', ":nvue_roce", nvue.parse_roce_counters,
                                nvue_roce_samples, nvue.SOURCE_ROCE, "nv show interface qos roce counters"),
}
CUMULUS_DEFAULT = ("ethtool",)


def build_cumulus_script(nonce: str, commands: tuple[str, ...] = CUMULUS_DEFAULT) -> str:
    """Per selected command, a loop over every swp* interface running it between markers named after
    the interface (plus the command's suffix). The loops run in ``CUMULUS``'s order, whatever the
    order of ``commands`` (the SSH guard allows each loop once, in that order)."""
    return "".join(
        "for d in /sys/class/net/swp*; do\n"
        "  [ -e \"$d\" ] || continue\n"
        "  n=${d##*/}\n"
        f"  printf '@@%s begin %s\\n' {nonce} \"$n{CUMULUS[c].suffix}\"\n"
        f"  {CUMULUS[c].shell} </dev/null\n"
        f"  printf '\\n@@%s end %s %d\\n' {nonce} \"$n{CUMULUS[c].suffix}\" $?\n"
        "done\n" for c in CUMULUS if c in commands)


def batched_ssh_commands(commands: dict[str, CliCommand]) -> tuple[Command, ...]:
    """Each section of a batched dialect (SONiC's strategy) exactly as ``build_script`` writes it (with
    ``--json`` where the section has a JSON parser): the guard allows a batch of distinct sections, each
    in one of these forms. A dialect on that strategy declares ``batched_ssh_commands(ITS_COMMANDS)``."""
    return tuple(ShellSection(name, c.argv, build_script([(name, c.argv)], NONCE),
                              build_script([(name, c.argv + ("--json",))], NONCE) if c.parse_json else None)
                 for name, c in commands.items())


def _cumulus_ssh_commands() -> tuple[Command, ...]:
    return tuple(ShellLoop(name, build_cumulus_script(NONCE, (name,)), i) for i, name in enumerate(CUMULUS))


def _looks_like_no_json(section: Section) -> bool:
    return section.exit_status == 2  # click's usage error: "No such option: --json"


class SwitchCliCollector(Collector):
    name: ClassVar[str] = "switch_cli"
    transports: ClassVar[tuple[str, ...]] = ("ssh", "local")
    # parse_sources: every dialect's, derived from DIALECTS below (sources_for names one target's)

    @classmethod
    def sources_for(cls, options: SwitchCliOptions) -> tuple[str, ...]:
        d = DIALECTS[options.dialect]
        extra = (c.source for s in options.sections if (c := d.commands.get(s)) is not None and c.source)
        if options.dialect == "cumulus":
            extra = (CUMULUS[c].source for c in options.commands if c in CUMULUS)
        return tuple(dict.fromkeys((*d.sources, *extra)))

    @classmethod
    def parse_options(cls, raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> SwitchCliOptions:
        r = OptionReader(raw, path, err, base_dir)
        dialect = r.string("dialect", "sonic", choices=tuple(DIALECTS)) or "sonic"
        d = DIALECTS.get(dialect, DIALECTS["sonic"])
        names = d.names or SONIC_COMMANDS
        # every dialect's names are valid words (so the generated schema knows them all) ...
        every = tuple(dict.fromkeys(n for x in DIALECTS.values() for n in x.names))
        commands = r.string_list("commands", d.defaults or names, choices=every)
        # ... but only this dialect's are commands of this switch
        for i, c in enumerate(commands):
            if c in every and c not in names:
                err(f"{path}.commands[{i}]",
                    f"{c!r} is not a command of the {dialect} dialect (known: {', '.join(names)})")
        json_mode = r.string("json", "auto", choices=("auto", "always", "never")) or "auto"
        include, exclude = r.regex("interface_include"), r.regex("interface_exclude")
        cumulus = r.regex("cumulus_interfaces")
        kind = r.string("watermark_kind", "user", choices=tuple(WATERMARK_KINDS)) or "user"
        queue_types = r.string_list("queue_watermark_types", SwitchCliOptions.queue_watermark_types,
                                    choices=QUEUE_WATERMARK_TYPES)
        regions = r.string_list("pg_watermark_regions", PG_WATERMARK_REGIONS, choices=PG_WATERMARK_REGIONS)
        pools = r.string_list("buffer_pool_watermarks", tuple(POOL_WATERMARKS), choices=tuple(POOL_WATERMARKS))
        neighbor_name = read_name_rule(r, "neighbor_name")
        r.done()
        for key, chosen, command in (("queue_watermark_types", queue_types, "queue_watermark"),
                                     ("pg_watermark_regions", regions, "pg_watermark"),
                                     ("buffer_pool_watermarks", pools, "buffer_pool_watermark")):
            if command in commands and not chosen:
                err(f"{path}.{key}", f"needs at least one value when commands has {command}")
        for other in DIALECTS.values():  # a key only another dialect takes
            keys = [k for k in other.own_options if k in (raw or {})]
            if keys and dialect != other.name:
                err(f"{path}.{keys[0]}", f"only for the {other.name} dialect ({dialect} has no {other.own_options_are})")
        if not commands:
            err(f"{path}.commands", "needs at least one command")
        d = DIALECTS.get(dialect)
        if d is not None and not d.names and "commands" in (raw or {}):
            with_commands = " / ".join(n for n, x in DIALECTS.items() if x.names)
            err(f"{path}.commands", f"only for the {with_commands} dialect ({dialect} reads {d.reads})")
        opts = SwitchCliOptions(dialect, commands, json_mode, include, exclude,
                                cumulus or SwitchCliOptions.cumulus_interfaces, kind, queue_types, regions, pools,
                                neighbor_name=neighbor_name)
        sections = sonic_sections(opts) if dialect == "sonic" else commands
        return dataclasses.replace(opts, sections=sections)

    def __init__(self, ctx: Any):
        super().__init__(ctx)
        self.options: SwitchCliOptions = self.options or SwitchCliOptions()
        self.dialect = DIALECTS[self.options.dialect]
        self._json = {n: self.options.json != "never" for n in self.options.sections
                      if (c := self.dialect.commands.get(n)) is not None and c.parse_json}
        self.switch = self.host.name if self.host else ""
        self.labels = SwitchLabels(self.switch)  # its rows' LabelSets, kept across polls

    def _wanted(self, port: str) -> bool:
        inc, exc = self.options.interface_include, self.options.interface_exclude
        return (inc is None or bool(inc.fullmatch(port))) and (exc is None or not exc.fullmatch(port))

    async def _run(self, script: str) -> tuple[str, str]:
        runner = self.ctx.runner()
        result = await runner.run(["sh", "-c", script], timeout=self.ctx.remaining())
        if result.exit_status != 0:
            raise CommandError(f"{runner.description}: batched command: {result.describe_failure()}")
        return result.stdout, result.stderr

    async def poll(self) -> PollResult:
        return await self.dialect.poll(self)

    # -- named commands in one batched script (SONiC) -------------------------------------------------

    def _argv(self, name: str) -> tuple[str, ...]:
        argv = self.dialect.commands[name].argv
        return argv + ("--json",) if self._json.get(name) else argv

    async def _poll_commands(self) -> PollResult:
        names = list(self.options.sections)
        nonce = secrets.token_hex(8)
        stdout, stderr = await self._run(build_script([(n, self._argv(n)) for n in names], nonce))
        sections = {s.name: s for s in split_sections(stdout, nonce)}
        retry = [n for n in names if n in sections and self._json.get(n) and self.options.json == "auto"
                 and _looks_like_no_json(sections[n])]
        if retry:  # an older release without --json: use the table from now on
            for n in retry:
                self._json[n] = False
            nonce = secrets.token_hex(8)
            stdout2, stderr = await self._run(build_script([(n, self._argv(n)) for n in retry], nonce))
            sections.update({s.name: s for s in split_sections(stdout2, nonce)})

        outputs = []
        for n in names:
            section = sections.get(n)
            command = " ".join(self._argv(n))
            if section is None:
                outputs.append(CommandOutput(n, command, None, "", ""))
            else:
                tail = " | ".join(stderr.strip().splitlines()[-2:]) or section.text.strip()[-200:]
                outputs.append(CommandOutput(n, command, section.exit_status, section.text, tail))
        return await self._result(outputs)

    async def _result(self, outputs: list[CommandOutput]) -> PollResult:
        """Each named command's output parsed into samples; a command that failed or printed what its
        parser cannot read is a problem (its samples left out), and when every one did the poll fails."""
        samples: list[Sample] = []
        failures: list[PollError] = []
        self._skipped: list = []  # lines the parsers skipped (skip-and-count rule)
        for out in outputs:
            if out.exit_status is None:
                failures.append(CommandError(f"{out.command}: no output section (shell failed?)"))
            elif out.exit_status != 0:
                failures.append(CommandError(f"{out.command}: exit status {out.exit_status}: "
                                             f"{out.error_tail or 'no output'}"))
            else:
                try:
                    samples.extend(await parse_off_loop(functools.partial(self._samples, out.name), out.text))
                except ParseError as e:
                    failures.append(ParseError(f"{out.command}: {e}"))
        if failures and len(failures) == len(outputs):
            raise failures[0]
        return PollResult(samples, [str(f) for f in failures], self._skipped)

    def _samples(self, name: str, text: str) -> list[Sample]:
        command = self.dialect.commands[name]
        parse = command.parse_json if self._json.get(name) else command.parse
        samples = command.to_samples(self.labels, parse(text, skipped=self._skipped), self._wanted)
        return lldp.map_neighbor_hosts(samples, self.options.neighbor_name)

    # -- one CLI exec per command (EOS) -----------------------------------------------------------

    async def _poll_cli_lines(self) -> PollResult:
        runner = self.ctx.runner()
        run_line = getattr(runner, "run_line", None)
        if run_line is None:
            raise CommandError(f"{runner.description}: the {self.dialect.name} dialect runs commands in the "
                               f"switch's CLI over SSH; use transport: ssh")
        outputs = []
        for n in self.options.commands:
            line = " ".join(self.dialect.commands[n].argv)
            result = await run_line(line, timeout=self.ctx.remaining())
            tail = " | ".join((result.stderr or result.stdout).strip().splitlines()[-2:])
            outputs.append(CommandOutput(n, line, result.exit_status, result.stdout, tail))
        return await self._result(outputs)

    # -- Cumulus -----------------------------------------------------------------------------------

    async def _poll_cumulus(self) -> PollResult:
        nonce = secrets.token_hex(8)
        commands = self.options.commands
        stdout, stderr = await self._run(build_cumulus_script(nonce, commands))
        by_suffix = {CUMULUS[c].suffix: CUMULUS[c] for c in commands}
        sections = []
        for s in split_sections(stdout, nonce):
            interface, _, suffix = s.name.partition(":")
            command = by_suffix.get(":" + suffix if suffix else "")
            if (command is not None and self.options.cumulus_interfaces.fullmatch(interface)
                    and self._wanted(interface)):
                sections.append((interface, command, s))
        if not sections:
            raise CommandError(f"no interfaces matching {self.options.cumulus_interfaces.pattern} "
                                f"under /sys/class/net")
        samples: list[Sample] = []
        problems: list[str] = []
        skipped: list = []
        for interface, command, s in sections:
            if s.exit_status != 0:
                problems.append(f"{command.what} {interface}: exit status {s.exit_status}: "
                                + (" | ".join(stderr.strip().splitlines()[-2:]) or "no output"))
                continue
            try:
                record = command.parse(s.text, skipped=skipped)
            except ParseError as e:
                problems.append(f"{command.what} {interface}: {e}")
                continue
            samples.extend(command.to_samples(self.labels, interface, record))
        if len(problems) == len(sections):
            raise CommandError(problems[0])
        return PollResult(samples, problems, skipped)


DIALECTS: dict[str, Dialect] = {
    "sonic": Dialect("sonic", SONIC, SwitchCliCollector._poll_commands, "show commands",
                     ("sonic_pfc_counters", "sonic_queue_counters", "sonic_wred_counters", "sonic_pfcwd_stats"),
                     SONIC_CHOICES, SONIC_COMMANDS, batched_ssh_commands(SONIC),
                     ("watermark_kind", "queue_watermark_types", "pg_watermark_regions", "buffer_pool_watermarks"), "watermarks"),
    # its sources follow its commands (sources_for): ethtool and/or nvue_roce
    "cumulus": Dialect("cumulus", {}, SwitchCliCollector._poll_cumulus, "ethtool -S / nv show", (),
                       tuple(CUMULUS), CUMULUS_DEFAULT, _cumulus_ssh_commands()),
    "eos": Dialect("eos", EOS, SwitchCliCollector._poll_cli_lines, "show commands", (eos_cli.SOURCE_QUEUE,)),
}
SwitchCliCollector.ssh_commands = tuple(c for d in DIALECTS.values() for c in d.ssh_commands)
SwitchCliCollector.parse_sources = tuple(dict.fromkeys(
    [s for d in DIALECTS.values() for s in d.sources] + [c.source for d in DIALECTS.values()
                                                        for c in d.commands.values() if c.source]
    + [c.source for c in CUMULUS.values()]))
