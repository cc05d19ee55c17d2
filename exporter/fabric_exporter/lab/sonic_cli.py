"""Fake SONiC ``show`` commands for the lab and the tests: real layouts rendered from counter state.

``render_*`` produce the exact layouts of sonic-utilities (tabulate "simple", right-aligned,
thousands separators, ``For namespace :`` lines before each port's queue table, ``N/A`` for
counters the platform lacks) from a ``lab.snmp.SimulatedSwitch``, so one simulated switch can be
polled over SNMP and over the CLI with matching values. ``install_fake_show`` writes the rendered
outputs into a directory and a ``show`` program (POSIX sh) that prints them; put its directory first
on the SSH session's PATH.

Queue names follow SONiC: unicast queues UC0..UC<n-1>, multicast queues MC<n>..MC<2n-1>.

Watermarks (``show queue|priority-group|buffer_pool|headroom-pool [persistent-]watermark``, as
``watermarkstat`` prints them: a title line, then the table) and PFC history (``show pfc counters
--history``) come from the switch's ``buffers`` (``lab.switch_buffers``), which the lab's traffic
model raises while a congestion scenario is on. The simulated platform, like many, has no multicast
queue watermarks (``N/A``) and no ``ALL<n>`` queues (``watermark all`` fails as watermarkstat does).
"""

from __future__ import annotations

import datetime
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


WATERMARK_WORD = {"user": "watermark", "persistent": "persistent-watermark"}
QUEUE_TITLES = {"unicast": "Egress shared pool occupancy per unicast queue:",
                "multicast": "Egress shared pool occupancy per multicast queue:"}
PG_TITLES = {"shared": "Ingress shared pool occupancy per PG:", "headroom": "Ingress headroom per PG:"}


def _queue_wm_rows(sw: SimulatedSwitch, kind: str, qtype: str) -> tuple[list[str], list[list[str]]]:
    n = sw.queue_count
    if qtype == "unicast":
        headers = [f"UC{q}" for q in range(n)]
        rows = [[i.name] + [str(sw.buffers.ports[k].queue[kind][q]) for q in range(n)]
                for k, i in enumerate(sw.interfaces)]
    else:  # the simulated platform has no multicast queue watermarks
        headers = [f"MC{n + q}" for q in range(n)]
        rows = [[i.name] + [NA] * n for i in sw.interfaces]
    return ["Port"] + headers, rows


def _pg_wm_rows(sw: SimulatedSwitch, kind: str, region: str) -> tuple[list[str], list[list[str]]]:
    return (["Port"] + [f"PG{g}" for g in range(8)],
            [[i.name] + [str(sw.buffers.ports[k].pg[kind][region][g]) for g in range(8)]
             for k, i in enumerate(sw.interfaces)])


def _as_json(headers: list[str], rows: list[list[str]]) -> str:
    return json.dumps([dict(zip(headers, r)) for r in rows], indent=4) + "\n"


def render_queue_watermark(sw: SimulatedSwitch, kind: str, qtype: str, as_json: bool = False) -> str:
    headers, rows = _queue_wm_rows(sw, kind, qtype)
    if as_json:
        return _as_json(headers, rows)
    return QUEUE_TITLES[qtype] + "\n" + tabulate_simple(headers, rows) + "\n"


def render_pg_watermark(sw: SimulatedSwitch, kind: str, region: str, as_json: bool = False) -> str:
    headers, rows = _pg_wm_rows(sw, kind, region)
    if as_json:
        return _as_json(headers, rows)
    return PG_TITLES[region] + "\n" + tabulate_simple(headers, rows) + "\n"


def render_pool_watermark(sw: SimulatedSwitch, kind: str, headroom: bool = False) -> str:
    pools = (sw.buffers.headroom_pool if headroom else sw.buffers.pool)[kind]
    title = "Headroom pool maximum occupancy:" if headroom else "Shared pool maximum occupancy:"
    return title + "\n" + tabulate_simple(["Pool", "Bytes"], [[p, str(v)] for p, v in sorted(pools.items())]) + "\n"


def render_pfc_history(sw: SimulatedSwitch) -> str:
    """pfcstat --history: one row per port and priority, an empty row between ports."""
    headers = ["Port", "Priority", "RX Pause Transitions", "Total RX Pause Time US", "Recent RX Pause Time US",
               "Recent RX Pause Timestamp"]
    rows: list[list[str]] = []
    for k, i in enumerate(sw.interfaces):
        pb = sw.buffers.ports[k]
        for prio in range(8):
            at = pb.recent_pause_at_us[prio]
            stamp = NA if at is None else datetime.datetime.fromtimestamp(at / 1e6).strftime("%m/%d/%Y, %H:%M:%S")
            rows.append([i.name, f"PFC{prio}", _fmt(pb.transitions[prio]), _fmt(pb.pause_us[prio]),
                         _fmt(pb.recent_pause_us[prio]), stamp])
        rows.append([""] * len(headers))
    widths = [max([len(h) + 2] + [len(r[c]) for r in rows]) for c, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths)), "  ".join("-" * w for w in widths)]
    lines += ["" if not any(r) else "  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines) + "\n"


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
    "pfc_history.txt": lambda sw: render_pfc_history(sw),
    "lldp_table.txt": lambda sw: render_lldp_table(sw),
}
for _kind, _word in WATERMARK_WORD.items():
    for _qt in QUEUE_TITLES:
        OUTPUTS[f"queue_{_word}_{_qt}.txt"] = lambda sw, k=_kind, q=_qt: render_queue_watermark(sw, k, q)
        OUTPUTS[f"queue_{_word}_{_qt}.json"] = lambda sw, k=_kind, q=_qt: render_queue_watermark(sw, k, q, True)
    for _region in PG_TITLES:
        OUTPUTS[f"pg_{_word}_{_region}.txt"] = lambda sw, k=_kind, r=_region: render_pg_watermark(sw, k, r)
        OUTPUTS[f"pg_{_word}_{_region}.json"] = lambda sw, k=_kind, r=_region: render_pg_watermark(sw, k, r, True)
    OUTPUTS[f"buffer_pool_{_word}.txt"] = lambda sw, k=_kind: render_pool_watermark(sw, k)
    OUTPUTS[f"headroom_pool_{_word}.txt"] = lambda sw, k=_kind: render_pool_watermark(sw, k, headroom=True)

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
  "pfc counters --history") f=pfc_history.txt;;
  "queue watermark unicast"|"queue watermark multicast"|"queue persistent-watermark unicast"|\
  "queue persistent-watermark multicast") f="queue_$2_$3.txt";;
  "queue watermark unicast --json"|"queue watermark multicast --json"|"queue persistent-watermark unicast --json"|\
  "queue persistent-watermark multicast --json") f="queue_$2_$3.json";;
  "queue watermark all"|"queue persistent-watermark all"|"queue watermark all --json"|\
  "queue persistent-watermark all --json") echo "Object map is empty!" >&2; exit 1;;
  "priority-group watermark shared"|"priority-group watermark headroom"|"priority-group persistent-watermark shared"|\
  "priority-group persistent-watermark headroom") f="pg_$2_$3.txt";;
  "priority-group watermark shared --json"|"priority-group watermark headroom --json"|\
  "priority-group persistent-watermark shared --json"|"priority-group persistent-watermark headroom --json") f="pg_$2_$3.json";;
  "buffer_pool watermark"|"buffer_pool persistent-watermark") f="buffer_pool_$2.txt";;
  "headroom-pool watermark"|"headroom-pool persistent-watermark") f="headroom_pool_$2.txt";;
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
