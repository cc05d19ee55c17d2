"""Fake SONiC ``show`` commands for the lab and the tests: real layouts rendered from counter state.

``render_*`` produce the exact layouts of sonic-utilities (tabulate "simple", right-aligned,
thousands separators, ``For namespace :`` lines before each port's queue table, ``N/A`` for
counters the platform lacks) from a ``lab.snmp.SimulatedSwitch``, so one simulated switch can be
polled over SNMP and over the CLI with matching values. ``install_fake_show`` writes the rendered
outputs into a directory and a ``show`` program (POSIX sh) that prints them; put its directory first
on the SSH session's PATH.

Queue names follow SONiC: unicast queues UC0..UC<n-1>, multicast queues MC<n>..MC<2n-1>.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from .snmp import SimulatedSwitch

NA = "N/A"


def _fmt(value: int | None, commas: bool = True) -> str:
    if value is None:
        return NA
    return f"{value:,}" if commas else str(value)


def tabulate_simple(headers: list[str], rows: list[list[str]]) -> str:
    """tabulate(..., tablefmt='simple', stralign='right') for cells without spaces.

    tabulate pads a header by 2 (MIN_PADDING) when sizing its column; cells are not padded.
    """
    widths = [max([len(h) + 2] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def render_pfc_counters(sw: SimulatedSwitch) -> str:
    out = []
    for title, k in (("Port Rx", 1), ("Port Tx", 0)):  # SimInterface.pfc[p] = [sent (tx), received (rx)]
        rows = [[i.name] + [_fmt(i.pfc[p][k]) for p in range(8)] for i in sw.interfaces]
        out.append(tabulate_simple([title] + [f"PFC{p}" for p in range(8)], rows))
    return "\n\n".join(out) + "\n"


def _queue_rows(sw: SimulatedSwitch, intf, stats_uc: tuple[str, ...], stats_mc: tuple[str, ...] | None):
    n = len(intf.queues)
    rows = []
    for q, stats in sorted(intf.queues.items()):
        rows.append((f"UC{q}", [stats[s] for s in stats_uc]))
    for q, stats in sorted(intf.queues.items()):
        rows.append((f"MC{n + q}", [stats[s] for s in stats_mc] if stats_mc else [None] * len(stats_uc)))
    return rows


QUEUE_STATS = (("Counter/pkts", "totalpacket"), ("Counter/bytes", "totalbytes"), ("Drop/pkts", "droppacket"),
               ("Drop/bytes", "dropbytes"))
WRED_STATS = (("WredDrp/pkts", "wreddroppacket"), ("WredDrp/bytes", "wreddropbytes"),
              ("EcnMarked/pkts", "ecnmarkedpacket"), ("EcnMarked/bytes", "ecnmarkedbytes"))


def _queue_data(sw: SimulatedSwitch, wred: bool):
    if wred:  # WRED/ECN apply to unicast queues; multicast ones show N/A
        return {i.name: _queue_rows(sw, i, ("wred_drop_pkts", "wred_drop_bytes", "ecn_pkts", "ecn_bytes"), None)
                for i in sw.interfaces}
    return {i.name: _queue_rows(sw, i, ("uc_pkts", "uc_bytes", "uc_drop_pkts", "uc_drop_bytes"),
                                ("mc_pkts", "mc_bytes", "mc_drop_pkts", "mc_drop_bytes")) for i in sw.interfaces}


def render_queue_counters(sw: SimulatedSwitch, wred: bool = False) -> str:
    stats = WRED_STATS if wred else QUEUE_STATS
    headers = ["Port", "TxQ"] + [h for h, _ in stats]
    out = []
    for port, rows in _queue_data(sw, wred).items():
        table = tabulate_simple(headers, [[port, q] + [_fmt(v) for v in values] for q, values in rows])
        # queuestat prints each port's table followed by an empty line
        out.append(("" if wred else "For namespace :\n") + table + "\n\n")
    return "".join(out)


def render_queue_counters_json(sw: SimulatedSwitch, wred: bool = False) -> str:
    stats = WRED_STATS if wred else QUEUE_STATS
    data = {port: {q: {key: _fmt(v, commas=False) for (_, key), v in zip(stats, values)} for q, values in rows}
            for port, rows in _queue_data(sw, wred).items()}
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def render_pfcwd_stats(sw: SimulatedSwitch) -> str:
    headers = ["QUEUE", "STATUS", "STORM DETECTED/RESTORED", "TX OK/DROP", "RX OK/DROP", "TX LAST OK/DROP",
               "RX LAST OK/DROP"]
    rows = []
    for i in sw.interfaces:
        for q, wd in sorted(i.pfcwd.items()):
            rows.append([f"{i.name}:{q}", wd["status"], f"{wd['detected']}/{wd['restored']}",
                         f"{wd['tx_ok']}/{wd['tx_drop']}", f"{wd['rx_ok']}/{wd['rx_drop']}",
                         f"{wd['tx_last_ok']}/{wd['tx_last_drop']}", f"{wd['rx_last_ok']}/{wd['rx_last_drop']}"])
    return tabulate_simple(headers, rows) + "\n"


def render_lldp_table(sw: SimulatedSwitch) -> str:
    """lldpshow's table (tabulate "simple", left-aligned, trailing blanks stripped) of the switch's
    neighbours: hosts running lldpd, so the port ID is a MAC and the description the netdev."""
    headers = ["LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr"]
    rows = [[i.name, i.neighbor[0], i.neighbor[2], "O", i.neighbor[1]] for i in sw.interfaces if i.neighbor]
    widths = [max([len(h) + 2] + [len(r[k]) for r in rows]) for k, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return ("Capability codes: (R) Router, (B) Bridge, (O) Other\n" + "\n".join(lines) + "\n"
            + "-" * 50 + "\n" + f"Total entries displayed:  {len(rows)}\n")


OUTPUTS = {
    "pfc_counters.txt": lambda sw: render_pfc_counters(sw),
    "queue_counters.txt": lambda sw: render_queue_counters(sw),
    "queue_counters.json": lambda sw: render_queue_counters_json(sw),
    "queue_wredcounters.txt": lambda sw: render_queue_counters(sw, wred=True),
    "queue_wredcounters.json": lambda sw: render_queue_counters_json(sw, wred=True),
    "pfcwd_stats.txt": lambda sw: render_pfcwd_stats(sw),
    "lldp_table.txt": lambda sw: render_lldp_table(sw),
}

# ``show`` arguments -> output file. Anything else fails like click does (exit 2, usage on stderr).
_SHOW_SCRIPT = """#!/bin/sh
# Fake SONiC 'show' (fabric-exporter lab): prints outputs rendered from simulated counters.
dir=${{FABRIC_FAKE_SONIC_DIR:-{default_dir}}}
if [ -e "$dir/.no-json" ]; then  # an older release: no --json option
  case "$*" in *--json*) echo "Error: No such option: --json" >&2; exit 2;; esac
fi
case "$*" in
  "pfc counters") f=pfc_counters.txt;;
  "queue counters") f=queue_counters.txt;;
  "queue counters --json") f=queue_counters.json;;
  "queue wredcounters") f=queue_wredcounters.txt;;
  "queue wredcounters --json") f=queue_wredcounters.json;;
  "pfcwd stats") f=pfcwd_stats.txt;;
  "lldp table") f=lldp_table.txt;;
  *) echo "Usage: show [OPTIONS] COMMAND [ARGS]..." >&2; echo "Error: No such command \\"$*\\"." >&2; exit 2;;
esac
[ -f "$dir/$f" ] || {{ echo "fake show: $dir/$f missing" >&2; exit 1; }}
exec cat "$dir/$f"
"""


def write_outputs(sw: SimulatedSwitch, data_dir: str | os.PathLike) -> None:
    """(Re)render every output atomically, so a concurrent ``show`` sees old or new, never half."""
    d = Path(data_dir)
    d.mkdir(parents=True, exist_ok=True)
    for name, render in OUTPUTS.items():
        tmp = d / f".{name}.tmp"
        tmp.write_text(render(sw))
        os.replace(tmp, d / name)


def install_fake_show(bin_dir: str | os.PathLike, data_dir: str | os.PathLike) -> Path:
    """Write ``bin_dir/show``, printing the files ``write_outputs`` puts in ``data_dir``."""
    b = Path(bin_dir)
    b.mkdir(parents=True, exist_ok=True)
    script = b / "show"
    script.write_text(_SHOW_SCRIPT.format(default_dir=shlex.quote(str(Path(data_dir).resolve()))))
    script.chmod(0o755)
    return script
