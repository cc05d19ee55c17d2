"""Every real NIC capture through the roce_nic collector, rendered: run it in two checkouts and diff.

    PYTHONPATH=exporter python scripts/nic_series.py . > new.txt
    (cd OLD && PYTHONPATH=exporter python /path/to/scripts/nic_series.py .) > old.txt; cmp old.txt new.txt

Each ethtool -S capture (tests/fixtures/real, tests/fixtures/roce_nic) framed as a host dump with each
hw_counters capture (and none) under six PCI drivers, every rdma link/statistic pair, and the lab hosts of
every vendor in both modes; each with and without the host-side filter and expose_unmapped; printed as
the exposition bytes per family, the problems and the skipped lines, plus the remote script digest
(issue 21: moving the NIC raw names into the catalog must not change one published byte)."""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from fabric_exporter.collectors.roce_nic import FILTER_AWK, REMOTE_SCRIPT, RoceNicOptions, result_from_dump
from fabric_exporter.serving.exposition import render_chunks
from fabric_exporter.lab.roce_host import DRIVERS, RoceHost
from fabric_exporter.parsers.rdma import parse_host_dump

F = Path(sys.argv[1]) / "tests" / "fixtures"
ETH = sorted([*(F / "real").glob("ethtool_*.txt"), *(F / "roce_nic").glob("ethtool_*.txt")])
HW = sorted([*(F / "real").glob("hw_counters_*.txt"), *(F / "roce_nic").glob("hw_counters_*.txt")])
RDMA = [(l, s) for l in sorted([*(F / "real").glob("rdma_link_*"), *(F / "roce_nic").glob("rdma_link*")])
        for s in sorted([*(F / "real").glob("rdma_statistic_*"), *(F / "roce_nic").glob("rdma_statistic*")])]

def awk(text):
    return subprocess.run(["awk", FILTER_AWK], input=text, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "LC_ALL": "C"}).stdout

def out(case, text):
    for unmapped in (False, True):
        for filt in ((False, True) if not unmapped else (False,)):
            t = awk(text) if filt else text
            try:
                r = result_from_dump(parse_host_dump(t), "gpu-001", RoceNicOptions(expose_unmapped=unmapped))
                body = "".join(f"#{k}\n" + v.decode() for k, v in render_chunks(r.samples, ("fabric", "f")).items())
                body += "problems=" + repr(r.problems) + "\nskipped=" + repr(sorted((s.source, s.text) for s in r.skipped)) + "\n"
            except Exception as e:
                body = f"error {type(e).__name__}: {e}\n"
            print(f"=== {case} unmapped={unmapped} filter={filt} samples-sha={hashlib.sha256(body.encode()).hexdigest()[:16]}")
            print(body, end="")

for driver in ("mlx5_core", "bnxt_en", "bnxt_re", "ice", "irdma", "vmxnet3"):
    for e in ETH:
        for h in HW + [None]:
            parts = ["@@fabric-roce 1 sysfs", f"@@device dev0 {driver}", "@@port dev0 1 eth0 Ethernet 4: ACTIVE"]
            if h:
                parts += ["@@hw_counters dev0 1", *h.read_text().splitlines()]
            parts += ["@@ethtool eth0 0", *e.read_text().splitlines()]
            out(f"{driver} {e.name} {h.name if h else '-'}", "\n".join(parts) + "\n@@end\n")
for l, s in RDMA:
    out(f"rdma {l.name} {s.name}", "@@fabric-roce 1 rdma\n@@rdma_link 0\n" + l.read_text() + "@@rdma_statistic 0\n" + s.read_text() + "@@end\n")
for vendor in sorted(DRIVERS):
    for mode in ("sysfs", "rdma"):
        try:
            text = RoceHost.build("h", vendor, nics=8).render_dump(mode=mode)
        except TypeError:
            text = RoceHost.build("h", vendor, nics=8).render_dump()
        out(f"lab {vendor} {mode}", text)
print("=== script sha", hashlib.sha256(REMOTE_SCRIPT.encode()).hexdigest())
