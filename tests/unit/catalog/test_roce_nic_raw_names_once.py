"""A NIC raw counter name is declared in one product place: the catalog's rows (issue 21 item 1).

The collector, its host-side filter, HELP, ``origin`` and the per-vendor doc tables are all built from
``catalog/roce_nic.py`` / ``catalog/roce.py``; a raw name typed by hand anywhere else under exporter/
is a second copy that can drift, and fails here.
"""

from __future__ import annotations

import re
import subprocess

from fabric_exporter.mapping import rows_of

from tests.harness import paths

ROOT = paths.ROOT
# Not product mapping code: the lab's simulated GPU hosts print what each driver prints (they are
# the remote side, like tests/fixtures), and the burst injector bumps those hosts' counters.
SIMULATED_HOSTS = ("exporter/fabric_exporter/lab/",)
# Words that are a NIC raw name and also something else: SONiC's queue-counter record fields
# (tx_bytes), and the retransmit kinds the alert rules put in a label (mixin/rules/roce.py).
NOT_NIC = {("exporter/fabric_exporter/parsers/sonic_cli.py", "tx_bytes"),
           ("exporter/fabric_exporter/collectors/switch_cli.py", "tx_bytes"),
           ("exporter/fabric_exporter/mixin/rules/roce.py", "out_of_sequence"),
           ("exporter/fabric_exporter/mixin/rules/roce.py", "duplicate_request")}


def nic_raw_names() -> list[str]:
    return sorted({row.name for _metric, row in rows_of("ethtool", "hw_counters")})


def hand_copies(files: dict[str, str], names: list[str]) -> set[tuple[str, str]]:
    """(file, raw name) for every whole-word occurrence of a name outside the catalog."""
    found = set()
    for path, text in files.items():
        if path.startswith("exporter/fabric_exporter/catalog/") or path.startswith(SIMULATED_HOSTS):
            continue
        for name in names:
            if re.search(r"(?<![\w.{}-])" + re.escape(name) + r"(?![\w{}-])", text):
                found.add((path, name))
    return found - NOT_NIC


def product_files() -> dict[str, str]:
    listed = subprocess.run(["git", "ls-files", "exporter"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            check=True).stdout.split()
    return {p: (ROOT / p).read_text(errors="replace") for p in listed
            if p.endswith((".py", ".md", ".txt", ".yml", ".yaml", ".json", ".sh")) and (ROOT / p).exists()}


def test_nic_raw_names_appear_only_in_the_catalog():
    names = nic_raw_names()
    assert {"rx_prio{p}_pause", "np_cnp_sent", "rx_discard_packets_cos{q}"} <= set(names)
    assert hand_copies(product_files(), names) == set()


def test_the_check_finds_a_hand_copy():
    names = nic_raw_names()
    files = {"exporter/fabric_exporter/collectors/roce_nic/x.py": 'PAUSE = "rx_prio{p}_pause"\nn = "np_cnp_sent"\n',
             "exporter/fabric_exporter/catalog/roce.py": 'mlx5("rx_prio{p}_pause")',
             "exporter/fabric_exporter/collectors/y.py": 'x = "rx_prio{p}_pause_duration_extra"  # another name'}
    assert hand_copies(files, names) == {("exporter/fabric_exporter/collectors/roce_nic/x.py", "rx_prio{p}_pause"),
                                         ("exporter/fabric_exporter/collectors/roce_nic/x.py", "np_cnp_sent")}
