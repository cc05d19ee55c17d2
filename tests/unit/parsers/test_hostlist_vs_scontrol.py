"""The hostlist expander against the real ``scontrol show hostnames`` on 10,000+ generated
expressions: the same names in the same order, or both refusing the expression.

``scontrol show hostnames`` needs only a slurm.conf (no slurmctld): a two-line one in tmp_path.
The expressions go through one scontrol process per batch (its command mode on stdin), each
between marker expressions, so 10,000 checks take seconds."""

from __future__ import annotations

import os
import random
import subprocess

from fabric_exporter.parsers.hostlist import HostlistError, expand
from tests.conftest import require_tool
from tests.harness.hostlist_gen import expression

COUNT = 10_500
BATCH = 1500


def scontrol_expand(scontrol: str, conf, expressions: list[str]) -> list[list[str] | None]:
    """Each expression's names per scontrol (None: it printed none, i.e. an invalid hostlist)."""
    lines = []
    for i, e in enumerate(expressions):
        lines.append(f"show hostnames zzmark{i}")
        lines.append(f"show hostnames {e}")
    lines.append(f"show hostnames zzmark{len(expressions)}")
    # TERM=dumb: readline redraws long lines with escape sequences otherwise
    env = {**os.environ, "SLURM_CONF": str(conf), "TERM": "dumb", "INPUTRC": "/dev/null",
           "COLUMNS": "100000"}
    out = subprocess.run([scontrol], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         env=env, timeout=120, check=True).stdout
    results: list[list[str] | None] = []
    current: list[str] | None = None
    for line in out.splitlines():
        if line.startswith("scontrol: "):  # the prompt (and echoed command) in command mode
            line = line[len("scontrol: "):]
            if line.startswith("show hostnames"):
                continue
        if not line or line.startswith("<") or " " in line or "[" in line or "]" in line:
            continue  # readline's echo of a long command line (names hold none of these)
        if line.startswith("zzmark"):
            if current is not None:
                results.append(current or None)
            current = []
            continue
        assert current is not None, line
        current.append(line)
    assert len(results) == len(expressions), (len(results), len(expressions))
    return results


def ours(e: str) -> list[str] | None:
    try:
        return expand(e)
    except HostlistError:
        return None


def test_expander_matches_scontrol(tmp_path):
    scontrol = require_tool("scontrol")
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=hostlist\nSlurmctldHost=localhost\n")
    rng = random.Random(22)
    expressions = [expression(rng) for _ in range(COUNT)]
    differences = []
    valid = multi = 0
    for start in range(0, COUNT, BATCH):
        batch = expressions[start:start + BATCH]
        for e, theirs in zip(batch, scontrol_expand(scontrol, conf, batch)):
            mine = ours(e)
            if mine != theirs:
                differences.append((e, theirs, mine))
            valid += theirs is not None
            multi += theirs is not None and e.count("[") > 1
    assert not differences, f"{len(differences)} differences, e.g. {differences[:5]}"
    # the generator really exercised both sides: most valid, some refused, multi-group names
    assert valid > COUNT * 0.7 and valid < COUNT and multi > 500
