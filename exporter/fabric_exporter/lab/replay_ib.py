"""The InfiniBand collector's tool runs, recorded from a live (ibsim) fabric and replayed.

``write_wrappers(DIR)`` writes one small ``sh`` script per tool (ibqueryerrors, ibnetdiscover,
perfquery), to give the collector as its ``tool_paths``. While ``DIR/RECORD`` exists (``recording``),
each run calls the real tool and keeps its stdout, stderr and exit status under DIR, keyed by tool
and arguments (the discovery cache's path, which differs per daemon, left out of the key). Without
it, each run answers from those recordings, the same key's recordings in turn, in the order they
were made, then from the first again: a bench measures the collector and the daemon, not ibsim
and the tools (which stay in the recordings: keep the options' ``env`` the recording ran with, the
collector's arguments depend on it).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path

TOOLS = ("ibqueryerrors", "ibnetdiscover", "perfquery")

WRAPPER = r"""#!/bin/sh
# fabric-exporter lab: record (while @DIR@/RECORD exists) or replay @TOOL@'s runs.
dir=@DIR@; tool=@TOOL@
args=""; prev=""
for a in "$@"; do case "$prev" in --cache|--load-cache) a=CACHE ;; esac; args="$args $a"; prev=$a; done
key=$tool.$(printf '%s' "$args" | cksum | cut -d' ' -f1)
if [ -e "$dir/RECORD" ]; then
  out=$dir/$key.$(date +%s%N).$$; @REAL@ "$@" > "$out.out" 2> "$out.err"; rc=$?; echo $rc > "$out.rc"
  cat "$out.out"; cat "$out.err" >&2; exit $rc
fi
set -- "$dir/$key".*.out
[ -e "$1" ] || { echo "replay: no recording of $tool$args" >&2; exit 3; }
n=$(cat "$dir/$key.turn" 2>/dev/null || echo 0); echo $((n + 1)) > "$dir/$key.turn"
shift $((n % $#)); f=${1%.out}
cat "$f.out"; cat "$f.err" >&2; exit "$(cat "$f.rc")"
"""


def write_wrappers(directory: str | os.PathLike) -> dict[str, str]:
    """The wrappers under ``directory``: {tool: path}, the collector's ``tool_paths`` option."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    paths = {}
    for tool in TOOLS:
        real = shutil.which(tool)
        path = root / tool
        path.write_text(WRAPPER.replace("@DIR@", str(root)).replace("@TOOL@", tool)
                        .replace("@REAL@", real or f"echo {tool}: not installed >&2; false"))
        path.chmod(0o755)
        paths[tool] = str(path)
    return paths


@contextlib.contextmanager
def recording(directory: str | os.PathLike):
    """Runs of the wrappers inside this block call the real tools and are recorded."""
    flag = Path(directory) / "RECORD"
    flag.touch()
    try:
        yield
    finally:
        flag.unlink(missing_ok=True)


def rewind(directory: str | os.PathLike) -> None:
    """The next replay of every key starts again at its first recording."""
    for turn in Path(directory).glob("*.turn"):
        turn.unlink()


# -- a larger fabric from a recorded one ----------------------------------------------------------

# The lab's GUIDs all start 0x0002c90300 (lab/ibsim.FatTree): the copy number goes into the "030"
# digits, so every printed form (0x..., 16 digits, "S-..."/"H-..." ids, "(...)") stays the same width.
_LAB_GUID = re.compile(r"2c90300(?=[0-9a-fA-F]{6}\b)")
_LAB_NAME = re.compile(r"\b(spine|leaf|gpu)-(\d+)")
_SUMMARY = re.compile(r"^## Summary: (\d+) nodes checked, (\d+) bad nodes found$|"
                      r"^##\s+(\d+) ports checked, (\d+) ports have errors beyond threshold$|"
                      r"^##\s+(\d+) PMA query failures$", re.M)
MAX_COPIES = 0xFCF


def replicate(stdout: str, copies: int) -> str:
    """One recorded tool output of the lab fabric as if the fabric were ``copies`` copies of it,
    side by side: each copy's GUIDs and node names made its own (copy 0 unchanged), the
    ``##`` summary of ibqueryerrors added up over the copies. LIDs are left as recorded (the
    collector keys ports by GUID; no tool runs against the copies). For the bench: a fabric
    larger than ibsim holds here, answered from recordings of one it does."""
    if not 1 <= copies <= MAX_COPIES:
        raise ValueError(f"copies must be 1..{MAX_COPIES}")
    body = "\n".join(line for line in stdout.splitlines() if not line.startswith("##"))
    parts = [body] + [_LAB_NAME.sub(rf"\1-\2-c{k}", _LAB_GUID.sub(f"2c9{0x030 + k:03x}0", body))
                      for k in range(1, copies)]
    out = "\n".join(parts) + "\n"
    trailer = [line for line in stdout.splitlines() if line.startswith("##")]
    if not trailer:
        return out

    # every figure of the summary lines counts nodes, ports or failures: copies times as many
    return out + "\n".join(re.sub(r"\d+", lambda m: str(int(m.group()) * copies), line)
                           if _SUMMARY.match(line) else line for line in trailer) + "\n"


def replicate_stderr(stderr: str, copies: int) -> str:
    """The tool's warnings for ``copies`` copies (node names made each copy's own, as replicate())."""
    if not stderr:
        return stderr
    return "".join([stderr] + [_LAB_NAME.sub(rf"\1-\2-c{k}", _LAB_GUID.sub(f"2c9{0x030 + k:03x}0", stderr))
                               for k in range(1, copies)])


__all__ = ["MAX_COPIES", "TOOLS", "recording", "replicate", "replicate_stderr", "rewind", "write_wrappers"]
