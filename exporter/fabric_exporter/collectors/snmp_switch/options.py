"""snmp_switch's options: what to walk, how, and which interfaces to keep."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ...hostnames import NameRule, read_name_rule
from ...transport.snmp import DEFAULT_ENGINE, DEFAULT_MAX_REPETITIONS, ENGINES
from .. import lldp
from ..base import ErrorSink
from ..options import OptionReader
from ..snmp_modules import DEFAULT_MODULES, MODULES


@dataclass(frozen=True)
class SnmpSwitchOptions:
    modules: tuple[str, ...] = DEFAULT_MODULES
    max_repetitions: int = DEFAULT_MAX_REPETITIONS
    snmp_timeout: float = 2.0
    snmp_retries: int = 2
    max_concurrent_walks: int = 8
    interface_include: re.Pattern | None = None
    interface_exclude: re.Pattern | None = None
    oper_up_only: bool = False
    #: "fast" (SNMPv2c without pysnmp per request) or "pysnmp" (pysnmp for every request)
    snmp_engine: str = DEFAULT_ENGINE
    #: an LLDP neighbour's system name -> the scheduler's node name (neighbor_host); None: as sent
    neighbor_name: NameRule | None = None


def read_options(raw: dict, path: str, err: ErrorSink, *, base_dir: Path = Path(".")) -> SnmpSwitchOptions:
    r = OptionReader(raw, path, err, base_dir)
    opts = SnmpSwitchOptions(
        modules=r.string_list("modules", DEFAULT_MODULES, choices=tuple(MODULES) + tuple(lldp.REM_TABLES)),
        max_repetitions=r.integer("max_repetitions", DEFAULT_MAX_REPETITIONS, minimum=1, maximum=200),
        snmp_timeout=r.duration("snmp_timeout", 2.0) or 2.0,
        snmp_retries=r.integer("snmp_retries", 2, minimum=0, maximum=10),
        max_concurrent_walks=r.integer("max_concurrent_walks", 8, minimum=1, maximum=64),
        interface_include=r.regex("interface_include"),
        interface_exclude=r.regex("interface_exclude"),
        oper_up_only=r.boolean("oper_up_only", False),
        snmp_engine=r.string("snmp_engine", DEFAULT_ENGINE, choices=ENGINES) or DEFAULT_ENGINE,
        neighbor_name=read_name_rule(r, "neighbor_name"),
    )
    r.done()
    if not opts.modules:
        err(f"{path}.modules", "needs at least one module")
    return opts
