"""No silent partial reads (issue 26): every parser, fed each of its real captures with a line wrapped,
doubled or moved, either refuses the text (ParseError), counts what it skipped (SkippedLine, i.e.
fabric_parse_skipped_lines_total), or reads at least as much as from the unedited capture -- it never
returns fewer records without saying so.

Which lines matter is found, not listed: a *data line* is one whose deletion makes the parser return
fewer values (every number in its records). Each data line (at most ``PER_FILE`` of them, spread over the
file) is then

- wrapped: cut in two at its middle, as a terminal or a mail would;
- doubled: printed twice (read once is fine: the same line twice carries nothing more; what may
  not happen is that the duplicate makes the parser drop the record, or others, without a word);
- doubled with another value: the copy's last number changed (which one is true cannot be known, so
  keeping either in silence is the partial read this test is for);
- moved: to the top of the text (above its table's header) and to the end.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import (eos_cli, ethtool, gnmi, ib_diagnet, ib_netdiscover, ib_perfquery, ib_queryerrors,
                                     nvue, perftest, rdma, slurm_squeue, sonic_cli, sonic_watermark)

from tests.harness import paths

FIXTURES = paths.FIXTURES
REAL = FIXTURES / "real"
PER_FILE = 12  # data lines mutated per capture (spread over the file); every line in small files

# capture file name -> its parser (the function the collector calls on that tool's output); a capture
# no pattern matches goes to the entry point whose FUZZ table lists it (declared_captures)
PARSERS: list[tuple[str, Callable]] = [
    (r"^eos_queue_counters", eos_cli.parse_queue_counters),
    (r"^eos_interfaces_counters_discards.*\.json$", eos_cli.parse_discards_json),
    (r"^eos_pfc_counters.*\.json$", eos_cli.parse_pfc_counters_json),
    (r"^eos_qos_ecn_counters.*\.json$", eos_cli.parse_ecn_counters_json),
    (r"^ethtool_cumulus_", sonic_cli.parse_cumulus_ethtool),
    (r"^ethtool_", ethtool.parse_ethtool_stats),
    (r"^nvue_qos_roce_counters", nvue.parse_roce_counters),
    (r"^hw_counters_", rdma.parse_hw_counters),
    (r"^ibdiagnet2.*\.db_csv$", "db_csv"),
    (r"^ibdiagnet2.*\.pm$", ib_diagnet.parse_pm),
    (r"^ibdiagnet2.*\.ibnetdiscover$", ib_netdiscover.parse),
    (r"^ibnetdiscover_", ib_netdiscover.parse),
    (r"^ibqueryerrors_", ib_queryerrors.parse),
    (r"^perfquery_", ib_perfquery.parse),
    (r"^perftest_.*\.txt$", perftest.parse_text),
    (r"^perftest_.*\.json$", perftest.parse_report),
    (r"^rdma_link_", rdma.parse_rdma_link),
    (r"^rdma_statistic_", rdma.parse_rdma_statistic),
    (r"^sonic_pfc_counters_history", sonic_cli.parse_pfc_history),
    (r"^sonic_pfc_counters", sonic_cli.parse_pfc_counters),
    (r"^sonic_queue_counters.*\.json$", sonic_cli.parse_queue_counters_json),
    (r"^sonic_queue_counters.*\.txt$", sonic_cli.parse_queue_counters),
    (r"^sonic_wred_counters", sonic_cli.parse_wred_counters),
    (r"^sonic_pfcwd_stats", sonic_cli.parse_pfcwd_stats),
    (r"^sonic_lldp_table", sonic_cli.parse_lldp_table),
    (r"^sonic_queue_.*watermark.*\.json$", sonic_watermark.parse_queue_watermark_json),
    (r"^sonic_queue_.*watermark.*\.txt$", sonic_watermark.parse_queue_watermark),
    (r"^sonic_pg_.*\.json$", sonic_watermark.parse_pg_watermark_json),
    (r"^sonic_pg_.*\.txt$", sonic_watermark.parse_pg_watermark),
    (r"^sonic_(buffer|headroom)_pool", sonic_watermark.parse_pool_watermark),
    # real captures kept beside their collector's other fixtures (provenance in each folder's README)
    (r"^slurm/.*squeue.*\.json$", slurm_squeue.parse_squeue_json),
    (r"^slurm/.*squeue-format\.txt$", slurm_squeue.parse_squeue_text),
    (r"^switch/gnmi/sonic/COUNTERS_PORT_ALIAS_MAP", "map:port_aliases"),
    (r"^switch/gnmi/sonic/COUNTERS_\w+_NAME_MAP", "map:name_map"),
    (r"^switch/gnmi/sonic/(COUNTERS|PERIODIC_WATERMARKS)\+(?!.*_expected)", gnmi.parse_sonic_blob),
]


def read_db_csv(text: str, skipped: list | None = None):
    """ibdiagnet2.db_csv as the collector reads it: the sections, then PM_INFO, CABLE_INFO, TEMP_SENSING."""
    sections = ib_diagnet.parse_db_csv(text, skipped=skipped)
    return ib_diagnet.pm_info(sections), ib_diagnet.cable_info(sections), ib_diagnet.node_temperatures(sections)


def map_entries(parse: Callable) -> Callable:
    """A name map's readings are its entries (names, which ``leaves`` does not count): one each."""
    def read(text: str) -> list[int]:
        return [1] * len(parse(text))
    read.__wrapped__ = parse
    return read


MAPS = {"map:port_aliases": map_entries(gnmi.parse_sonic_port_aliases),
        "map:name_map": map_entries(gnmi.parse_sonic_name_map)}
PARSERS = [(pattern, read_db_csv if parse == "db_csv" else MAPS.get(parse, parse) if isinstance(parse, str) else parse)
           for pattern, parse in PARSERS]

# Captures the parser refuses whole, by design (nothing read, so nothing to lose): checked to stay refused.
REFUSED = {
    "perftest_out_json_unquoted_issue216.json": "perftest's --out_json before linux-rdma/perftest#216: not JSON",
    "slurm/slurm-22.05.8-squeue-controller-down.json": "squeue's answer when slurmctld is down: an error, no jobs",
}

# Captures whose every value is N/A (SONiC: not counted on that platform): read, no record, nothing to lose.
ALL_NA = {"sonic_queue_watermark_multicast_na.json", "sonic_queue_watermark_multicast_na.txt",
          "sonic_queue_watermark_multicast_unconfigured.txt"}


def declared_captures() -> dict[str, Callable]:
    """Capture (as CAPTURES names it) -> the entry point whose ``FUZZ`` table lists it: a new
    parser's real captures are fed without a PARSERS row."""
    import importlib
    import pkgutil

    from fabric_exporter import parsers

    out: dict[str, Callable] = {}
    for info in pkgutil.iter_modules(parsers.__path__):
        module = importlib.import_module(f"{parsers.__name__}.{info.name}")
        for entry, paths in getattr(module, "FUZZ", {}).items():
            for path in paths:
                out.setdefault(path.removeprefix("real/"), getattr(module, entry))
    return out


def parser_for(name: str) -> Callable:
    for pattern, parse in PARSERS:
        if re.search(pattern, name):
            return parse
    declared = declared_captures().get(name)
    if declared is not None:
        return declared
    raise AssertionError(f"{name}: no parser mapped (list it in its parser's FUZZ table, or add it to PARSERS)")


# Captures that are not a tool's text output for a parser: SNMP walks are varbinds, read by the SNMP
# collectors' table mapping (tests/unit/test_parsers_real_captures.py feeds them through it).
NOT_TEXT = {"snmpwalk_lldp_scalance_x204irt.txt": "an LLDP-MIB walk: varbinds for collectors/lldp.py, no text parser"}

CAPTURES = sorted(p.name for p in REAL.iterdir() if p.name != "README.md" and p.name not in NOT_TEXT) + sorted(
    str(p.relative_to(FIXTURES)) for folder in ("slurm", "switch/gnmi/sonic") for p in (FIXTURES / folder).iterdir()
    if p.name != "README.md" and not p.name.endswith("_expected.txt"))


def leaves(value) -> int:
    """Values a parse returned: every number in its records (counters, GUIDs, ports, LIDs). Text
    labels (a test's title, a link type) are not counted: they are descriptions, not readings."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return 0
    if isinstance(value, (int, float)):
        return 1
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a record counts, and its numbers
        return 1 + sum(leaves(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple record
        return 1 + sum(leaves(v) for v in value)
    if isinstance(value, dict):
        return sum(leaves(v) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return sum(leaves(v) for v in value)
    return 0


def run(parse: Callable, text: str) -> tuple[int, int] | None:
    """(values read, lines skipped or names reported ambiguous), or None when the parser refused the text.
    ``ethtool -S`` names printed twice with different values are reported, not read (EthtoolStats.ambiguous;
    the roce_nic collector names them in the poll's problems)."""
    skipped: list = []
    try:
        result = parse(text, skipped=skipped) if "skipped" in inspect.signature(parse).parameters else parse(text)
    except ParseError:
        return None
    return leaves(result), len(skipped) + len(getattr(result, "ambiguous", ()))


def data_lines(parse: Callable, lines: list[str], base: int) -> list[int]:
    # candidates: every line of a small file; in a big one (an ethtool dump of 300 counters) the first
    # and last 10 lines (headers, trailers) and 60 spread between them
    if len(lines) <= 80:
        candidates = range(len(lines))
    else:
        middle = range(10, len(lines) - 10)
        candidates = sorted({*range(10), *range(len(lines) - 10, len(lines)),
                             *(middle[round(k * (len(middle) - 1) / 59)] for k in range(60))})
    out = []
    for i in candidates:
        got = run(parse, "\n".join(lines[:i] + lines[i + 1:]) + "\n")
        if got is not None and got[0] < base:
            out.append(i)
    if len(out) > PER_FILE:  # spread over the file: header rows, first and last records, the middle
        step = (len(out) - 1) / (PER_FILE - 1)
        out = sorted({out[round(k * step)] for k in range(PER_FILE)})
    return out


def mutations(lines: list[str], i: int):
    line = lines[i]
    cut = max(1, len(line.rstrip()) // 2)
    yield "wrapped", lines[:i] + [line[:cut], line[cut:]] + lines[i + 1:]
    yield "doubled", lines[:i + 1] + [line] + lines[i + 1:]
    numbers = list(re.finditer(r"\d+", line))
    if numbers:  # the copy with another value: which one is true cannot be known
        last = numbers[-1]
        other = line[:last.start()] + str(int(last.group()) + 7) + line[last.end():]
        yield "doubled with another value", lines[:i + 1] + [other] + lines[i + 1:]
    rest = lines[:i] + lines[i + 1:]
    yield "moved to the top", [line] + rest
    yield "moved to the end", rest + [line]


@pytest.mark.parametrize("name", CAPTURES)
def test_a_wrapped_doubled_or_moved_line_is_refused_counted_or_read(name):
    parse = parser_for(name)
    text = (REAL / name if "/" not in name else FIXTURES / name).read_text()
    lines = text.splitlines()
    unedited = run(parse, text)
    if name in REFUSED:
        assert unedited is None, f"{name}: read, but it should be refused ({REFUSED[name]})"
        return
    assert unedited is not None, f"{name}: the unedited capture is refused"
    base, base_skipped = unedited
    if name in ALL_NA:
        assert base == 0, f"{name}: N/A read as a value"
        return
    assert base > 0
    silent = []
    for i in data_lines(parse, lines, base):
        for how, edited in mutations(lines, i):
            got = run(parse, "\n".join(edited) + "\n")
            if got is None:
                continue  # refused: the collector fails the read and says why
            values, skipped = got
            if skipped > base_skipped:
                continue  # counted in fabric_parse_skipped_lines_total
            if how == "doubled with another value":
                if values > base:
                    continue  # both read, as two records: the conflict is visible downstream
            elif values >= base:
                continue  # nothing lost (a doubled line may be read once: the same value twice)
            silent.append(f"line {i + 1} {how}: {values} values (unedited {base}), nothing skipped: {lines[i][:80]!r}")
    assert not silent, f"{name}: silent partial reads:\n" + "\n".join(silent)


# Parser entry points this test does not feed, and why (a value parser, a helper of another entry, or
# no real capture of that output in tests/fixtures/real/ yet).
NOT_FED = {
    "ethtool.parse_u64": "a value, not a text", "ib_common.parse_guid": "a value", "ib_common.parse_uint": "a value",
    "sonic_cli.parse_count": "a value", "sonic_cli.parse_tables": "the table reader under every SONiC entry",
    "perftest.parse_json": "under parse_report (the collector's entry)",
    "ib_nodenamemap.parse": "a site's config file, no tool output: no published capture",
    "rdma.parse_host_dump": "the roce_nic script's own framing around the fed hw_counters/ethtool/rdma parsers",
    "sonic_cli.parse_wred_counters_json": "no real `show queue wredcounters --json` capture in the corpus",
    "gnmi.parse_xpath": "a path expression from the config, not a target's answer",
    "burst_stream.parse_header": "our own burst probe's stream framing, no third-party output (fuzzed in tests/unit/parsers/test_burst_stream.py)",
    "burst_stream.parse_window": "our own burst probe's stream framing, no third-party output (fuzzed in tests/unit/parsers/test_burst_stream.py)",
}


def test_every_parser_entry_point_is_fed_or_says_why_not():
    import importlib
    import pkgutil

    from fabric_exporter import parsers

    fed = {parser_for(n) for n in CAPTURES} | {ib_diagnet.parse_db_csv}  # db_csv through read_db_csv
    assert {parse for _p, parse in PARSERS} <= fed | {read_db_csv}, "a PARSERS row matches no capture"
    fed |= {read.__wrapped__ for read in MAPS.values()}
    entries = {}
    for info in pkgutil.iter_modules(parsers.__path__):
        module = importlib.import_module(f"{parsers.__name__}.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("parse") and fn.__module__ == module.__name__ and hasattr(fn, "__wrapped__"):
                entries[f"{info.name}.{name}"] = fn
    unfed = {name for name, fn in entries.items() if fn not in fed}
    assert unfed <= set(NOT_FED), f"parsers neither fed their real captures nor listed in NOT_FED: {unfed - set(NOT_FED)}"


# -- what this test found, pinned (issue 26) ---------------------------------------------------------

def test_ibnetdiscover_a_sysimgguid_no_node_takes_is_counted():
    lines = (REAL / "ibnetdiscover_ibtopotool_4.topo").read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("sysimgguid="))
    skipped: list = []
    moved = "\n".join(lines[:i] + lines[i + 1:] + [lines[i]]) + "\n"  # after the last node: belongs to none
    ib_netdiscover.parse(moved, skipped=skipped)
    assert [(s.line_no, s.text) for s in skipped] == [(len(lines), lines[i])]
    skipped = []
    doubled_early = "\n".join(lines[:i] + [lines[i]] + lines[i:]) + "\n"  # twice before one node: one is spare
    ib_netdiscover.parse(doubled_early, skipped=skipped)
    assert [s.line_no for s in skipped] == [i + 1]


def test_perftest_a_data_row_outside_the_table_is_counted():
    lines = (REAL / "perftest_ib_write_lat_rxe_linux_rdma.txt").read_text().splitlines()
    header = next(n for n, line in enumerate(lines) if "#bytes" in line)
    row = next(n for n in range(header + 1, len(lines)) if lines[n].strip())
    skipped: list = []
    above = "\n".join([lines[row]] + lines[:row] + lines[row + 1:]) + "\n"
    reports = perftest.parse_text(above, skipped=skipped)
    assert [s.line_no for s in skipped] == [1]
    assert len(reports) == len(perftest.parse_text((REAL / "perftest_ib_write_lat_rxe_linux_rdma.txt").read_text())) - 1


def test_json_with_a_key_twice_is_refused_not_read_as_its_last_value():
    from fabric_exporter.parsers.guard import load_json

    with pytest.raises(ParseError, match="'outDiscards' twice"):
        load_json('{"interfaces": {"Et1": {"outDiscards": 0, "outDiscards": 40}}}', "eos")
    text = (REAL / "sonic_pg_watermark_shared.json").read_text()
    line = next(x for x in text.splitlines() if '"PG0"' in x)
    other = line.split(":")[0] + ': "7",'  # "PG0" again, another value
    with pytest.raises(ParseError, match="'PG0' twice"):
        sonic_watermark.parse_pg_watermark_json(text.replace(line, line + "\n" + other))


def test_ibdiagnet_a_node_with_two_temperatures_is_refused():
    text = (REAL / "ibdiagnet2_2.10_quantum2.db_csv").read_text()
    row = "0xb0cf0e0300d33fc0,46"
    assert row in text
    with pytest.raises(ParseError, match="twice"):
        read_db_csv(text.replace(row, row + "\n0xb0cf0e0300d33fc0,53"))
    read_db_csv(text.replace(row, row + "\n" + row))  # the same row twice says the same thing: read


def test_ibqueryerrors_two_port_summaries_are_refused():
    text = (REAL / "ibqueryerrors_linux_rdma_sx6036.txt").read_text()
    line = next(x for x in text.splitlines() if "ports checked" in x)
    with pytest.raises(ParseError, match="two ports summaries"):
        ib_queryerrors.parse(text.replace(line, line + "\n" + line.replace("43 ports", "50 ports")))
