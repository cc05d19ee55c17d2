"""The one remote command of a roce_nic poll and the host-side filter its output goes through.

``REMOTE_SCRIPT`` is a POSIX ``sh`` script: it discovers the RDMA devices, ports and netdevs in
sysfs (or with ``rdma link show``), dumps every port's ``hw_counters`` with one ``grep``, runs
``ethtool -S`` per netdev and frames it all with ``@@`` section lines ending in ``@@end`` (see
parsers/rdma.py). ``FILTER_AWK`` drops, on the host, the counters no mapping row reads.
"""

from __future__ import annotations

import re

from ...parsers.rdma import HW_COUNTER_SETTINGS
from .mapping import ETHTOOL_MAPPER, HW_MAPPER

# ---------------------------------------------------------------------------------------------
# The one remote command. POSIX sh (dash, busybox): builtins where possible (read, globbing), one
# grep per port, one ethtool per netdev. $1 = sysfs|rdma, $2 = 1 to run ethtool, $3 = mapped|all
# (mapped: the host drops the counters no rule maps, see FILTER_AWK), $4... = devices; without
# arguments (installed as an sshd forced command): sysfs, ethtool, all counters, every device.

_SCRIPT_BODY = r"""
mode=${1:-sysfs}; with_ethtool=${2:-1}; counters=${3:-all}
if [ $# -ge 3 ]; then shift 3; else set --; fi
sys=/sys/class/infiniband
dump() {
echo "@@fabric-roce 1 $mode"
netdevs=""
add_netdev() { case " $netdevs " in *" $1 "*) ;; *) netdevs="$netdevs $1" ;; esac; }
if [ "$mode" = rdma ]; then
  out=$(rdma link show 2>&1); rc=$?
  echo "@@rdma_link $rc"; printf '%s\n' "$out"
  if [ $rc -eq 0 ]; then
    for nd in $(printf '%s\n' "$out" | sed -n 's/.* netdev \([^ ]*\).*/\1/p'); do add_netdev "$nd"; done
  fi
  out=$(rdma -j statistic show 2>/dev/null); rc=$?
  if [ $rc -ne 0 ]; then out=$(rdma statistic show 2>&1); rc=$?; fi
  echo "@@rdma_statistic $rc"; printf '%s\n' "$out"
else
  if [ $# -eq 0 ] && [ -d "$sys" ]; then
    for d in "$sys"/*; do [ -e "$d" ] && set -- "$@" "${d##*/}"; done
  fi
  for dev in "$@"; do
    d="$sys/$dev"
    if [ ! -d "$d" ]; then echo "@@missing $dev"; continue; fi
    drv=$(readlink "$d/device/driver" 2>/dev/null); drv=${drv##*/}
    echo "@@device $dev ${drv:--}"
    for p in "$d"/ports/*; do
      [ -d "$p" ] || continue
      port=${p##*/}; nd=""; ll=""; st=""
      read -r nd 2>/dev/null < "$p/gid_attrs/ndevs/0" || nd=""
      if [ -z "$nd" ]; then
        n=0; for f in "$d"/device/net/*; do [ -e "$f" ] && { n=$((n+1)); nd=${f##*/}; }; done
        [ $n -eq 1 ] || nd=""
      fi
      read -r ll 2>/dev/null < "$p/link_layer" || ll=""
      read -r st 2>/dev/null < "$p/state" || st=""
      echo "@@port $dev $port ${nd:--} ${ll:--} ${st:--}"
      if [ -d "$p/hw_counters" ]; then
        echo "@@hw_counters $dev $port"
        (cd "$p/hw_counters" && grep -s -H . -- * 2>/dev/null)
      fi
      [ -n "$nd" ] && [ "$ll" != InfiniBand ] && add_netdev "$nd"
    done
  done
fi
if [ "$with_ethtool" = 1 ]; then
  for nd in $netdevs; do
    out=$(ethtool -S "$nd" 2>&1); rc=$?
    echo "@@ethtool $nd $rc"; printf '%s\n' "$out"
  done
fi
echo "@@end"
}
if [ "$counters" = mapped ] && command -v awk >/dev/null 2>&1; then
  dump "$@" | LC_ALL=C awk '@FILTER@'
else
  dump "$@"
fi
""".strip() + "\n"

# ---------------------------------------------------------------------------------------------
# The host's side of "send back only what is mapped": an awk filter the script's output goes
# through when the daemon asks for ``mapped`` counters (every poll, unless expose_unmapped). A real
# mlx5 ``ethtool -S`` prints hundreds of per-channel counters no rule reads; dropping them on the
# host saves the daemon ciphering, splitting and parsing them.
#
# It drops a line only when the daemon's parsers would read it as a counter no rule maps, so the
# published series, problems and skipped lines are those of the whole dump (tests/unit/
# collectors/roce_nic/test_script_mapped_only.py runs this program on every real capture and compares):
# - only in ``@@hw_counters`` sections and in ``@@ethtool`` sections that exited 0 (an error's text
#   is kept for the problem it becomes), there only after the ``NIC statistics:`` header;
# - only lines of the parsers' one-pass counter shape (``name:digits``, ``  name: digits``) with a
#   value under 20 digits (so it fits in 64 bits: a longer one is the daemon's error to report);
# - a name seen twice in a section is printed every time (the first one too): duplicates are the
#   parsers' to judge (an error in hw_counters, an ambiguous ethtool counter);
# - the number dropped per section follows it as ``@@dropped KIND KEY... N``, so a host whose
#   counters are all unmapped is still one that was read (a partial poll, not a failed one).
# Names are the catalog rows' (every vendor's: a superset of the host driver's) and hw_counters' settings.
# POSIX awk (mawk, gawk, busybox); LC_ALL=C so [!-~] is bytes. Without awk on the host, the script
# sends everything, which reads the same.


def _filter_awk(names: list[str]) -> str:
    exact = sorted({n for n in names if "{" not in n} | set(HW_COUNTER_SETTINGS))
    patterns = sorted({re.sub(r"[.]", r"\\.", n).replace("{p}", "[0-7]").replace("{q}", "[0-9][0-9]?")
                       for n in names if "{" in n})
    for name in exact + patterns:
        if not re.fullmatch(r"[A-Za-z0-9_.\-\\\[\]?]+", name):  # nothing the sh quoting or awk string could see
            raise ValueError(f"rule name unfit for the host filter: {name!r}")
    return (
        'BEGIN { n = split("' + " ".join(exact) + '", w, " "); for (i = 1; i <= n; i++) keep[w[i]] = 1 }\n'
        'function done() { if (kind != "" && cut > 0) print "@@dropped " key " " cut }\n'
        '/^@@/ { done(); kind = ""; cut = 0; split("", seen)\n'
        '  if ($1 == "@@hw_counters" && NF == 3) { kind = "hw"; key = "hw_counters " $2 " " $3; head = 1 }\n'
        '  else if ($1 == "@@ethtool" && NF == 3 && $3 == "0") { kind = "eth"; key = "ethtool " $2; head = 0 }\n'
        '  print; next }\n'
        'kind == "" { print; next }\n'
        '{ nm = ""; v = ""\n'
        '  if (kind == "hw") {\n'
        '    i = index($0, ":")\n'
        '    if (i > 1) { nm = substr($0, 1, i - 1); v = substr($0, i + 1)\n'
        '      if (nm !~ /^[A-Za-z0-9_.-]+$/ || length(nm) > 128) nm = "" }\n'
        '  } else {\n'
        '    if (head == 0) { if ($0 !~ /^[ \\t]*$/) head = ($0 ~ /^[ \\t]*NIC statistics:[ \\t]*$/) ? 1 : -1; print; next }\n'
        '    if (match($0, /:[^:]*$/)) { nm = substr($0, 1, RSTART - 1); v = substr($0, RSTART + 1)\n'
        '      sub(/^[ \\t]+/, "", nm); sub(/[ \\t]+$/, "", nm); sub(/^[ \\t]+/, "", v); sub(/[ \\t]+$/, "", v)\n'
        '      if (nm !~ /^[!-~]+( [!-~]+)*$/) nm = "" }\n'
        '  }\n'
        '  if (nm == "") { print; next }\n'
        '  if (nm in seen) { if (seen[nm] != "") { print seen[nm]; seen[nm] = ""; cut-- } print; next }\n'
        '  if (head > 0 && v ~ /^[0-9]+$/ && length(v) < 20 && !(nm in keep) && nm !~ /^(' + "|".join(patterns) + ')$/) {\n'
        '    seen[nm] = $0; cut++; next }\n'
        '  seen[nm] = ""; print }\n'
    )


FILTER_AWK = _filter_awk(ETHTOOL_MAPPER.table.names() + HW_MAPPER.table.names())
REMOTE_SCRIPT = _SCRIPT_BODY.replace("@FILTER@", FILTER_AWK)
