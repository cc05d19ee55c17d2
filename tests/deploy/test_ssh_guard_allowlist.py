"""The SSH guard is an allow-list of exact argument shapes (issue 16, defects 1 and 2).

getopt_long accepts any unambiguous prefix of a long option (perfquery --Re == --Reset_only), so a
deny-list of spellings can always be bypassed. These tests generate every prefix of every long option
each tool really has -- read from the installed tool's --help (or its man page) on this machine -- and
insert it into commands the guard otherwise allows: an abbreviation is never allowed, and the full
spellings that are allowed are exactly the read-only ones listed here. Then every command the
collectors build (with all their options) must still pass.
"""

from __future__ import annotations

import gzip
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from fabric_exporter.collectors import switch_cli
from fabric_exporter.collectors.switch_cli import collector as switch_cli_collector
from fabric_exporter.collectors.base import PollContext
from fabric_exporter.collectors.infiniband import InfinibandCollector, details, focus
from fabric_exporter.collectors.latency_probe import LatencyProbeCollector
from fabric_exporter.collectors.roce_nic import REMOTE_SCRIPT
from tests.harness.configs import parse_config
from fabric_exporter.transport.factory import Transports

from .test_ssh_guard import guard

POLICY = guard.Policy()
RESET_POLICY = guard.Policy(allow_counter_reset=True, ibdiagnet_dir="/var/tmp/ibdiagnet2")


def _help_long_options(tool: str) -> set[str]:
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} is not installed (scripts/setup-deps installs it)")
    r = subprocess.run([tool, "--help"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    found = set(re.findall(r"(?<![\w-])(--[A-Za-z][A-Za-z0-9_-]*)", r.stdout + r.stderr))
    assert len(found) >= 5, f"{tool} --help listed no long options: {r.stdout[:300]!r}"
    return found


def _rdma_long_options() -> set[str]:
    # rdma(8) spells its options as "-V[ersion]", "-j[son]", ... (iproute2 6.1 on this machine).
    page = Path("/usr/share/man/man8/rdma.8.gz")
    if not page.exists():
        pytest.fail("rdma(8) is not installed (rdma-core/iproute2)")
    text = gzip.decompress(page.read_bytes()).decode(errors="replace")
    found = {"--" + a + b for a, b in re.findall(r"\\fB\\-([a-z])\\fR\[\\fI([a-z]+)\\fR\]", text)}
    assert {"--json", "--details", "--pretty"} <= found, found
    return found | {"--batch", "--force", "--netns", "--raw", "--help"}  # in rdma(8)'s prose, not its synopsis


# ethtool matches its options exactly (its own table, not getopt_long) and is not installed here; its
# write options from ethtool(8) 6.1 (https://manpages.debian.org/bookworm/ethtool/ethtool.8.en.html).
ETHTOOL_LONG = {"--change", "--change-eeprom", "--flash", "--reset", "--set-priv-flags", "--set-channels",
                "--set-ring", "--features", "--pause", "--coalesce", "--identify", "--test", "--statistics",
                "--set-eee", "--set-fec", "--set-module", "--set-phy-tunable", "--config-nfc", "--config-ntuple",
                "--set-rxfh-indir", "--json", "--debug", "--include-statistics", "--all-groups"}


def _prefixes(option: str) -> list[str]:
    return [option[:n] for n in range(3, len(option) + 1)]  # "--R" ... the full spelling


# tool -> (its long options, commands the guard allows with "{}" where a word is inserted,
#          the full long spellings allowed somewhere in that tool's commands)
def _cases():
    perftest_base = "{tool} -p 18515 -n 1000 -s 8 {{}} 10.0.0.2"
    cases = {
        "perfquery": (_help_long_options("perfquery"),
                      ["perfquery {} 12 1", "perfquery -x {} 12 1", "timeout -k 2 18 perfquery {} 12 1",
                       "perfquery {}=x 12 1", "perfquery 12 1 {}"],
                      {"--extended", "--smplctl", "--all_ports", "--loop_ports", "--vlxmitcounters", "--rcverr",
                       "--xmtdisc"}),
        "ibqueryerrors": (_help_long_options("ibqueryerrors"),
                          ["ibqueryerrors --counters {} --report-port", "ibqueryerrors {} /dev/null",
                           "ibqueryerrors {}=/tmp/x --counters"],
                          {"--counters", "--report-port", "--details", "--data", "--switch", "--ca", "--router",
                           "--skip-sl", "--threshold-file", "--load-cache"}),
        "ibnetdiscover": (_help_long_options("ibnetdiscover"),
                          ["ibnetdiscover {}", "ibnetdiscover {} /tmp/fabric-exporter-ib-x.ibnetdiscover-cache",
                           "ibnetdiscover {}=/etc/x"],
                          {"--list", "--grouping", "--Hca_list", "--Switch_list", "--Router_list", "--show", "--ports",
                           "--full", "--cache"}),
        "timeout": (_help_long_options("timeout"),
                    ["timeout {} -k 2 18 perfquery 12 1", "timeout -k 2 {} 18 perfquery 12 1",
                     "timeout {}=KILL 18 perfquery 12 1"], set()),
        "rdma": (_rdma_long_options(), ["rdma {} statistic show", "rdma -j {} link show", "rdma {}=x statistic show"],
                 {"--json", "--pretty", "--details"}),
        "ethtool": (ETHTOOL_LONG, ["ethtool {} eth0", "ethtool {} -S eth0", "ethtool --json {} eth0"],
                    {"--json", "--statistics"}),
    }
    for tool in ("ib_write_lat", "ib_read_lat", "ib_send_lat"):
        base = perftest_base.format(tool=tool)
        cases[tool] = (_help_long_options(tool), [base, base.replace("{}", "{}=/tmp/owned"),
                                                  base.replace("{}", "--out_json {}")],
                       {"--tclass", "--out_json"})
    return cases


CASES = _cases()


@pytest.mark.parametrize("tool", sorted(CASES))
def test_no_abbreviation_of_any_long_option_passes(tool):
    options, templates, allowed_full = CASES[tool]
    tried = allowed = 0
    for option in sorted(options):
        for spelling in _prefixes(option):
            for template in templates:
                command = template.replace("{}", spelling)
                tried += 1
                for policy in (POLICY, RESET_POLICY):
                    try:
                        argv = guard.decide(command, policy)
                    except guard.Refused:
                        continue
                    allowed += 1
                    words = shlex.split(command)
                    # An allowed word starting like the option is the full spelling of a read-only option.
                    used = [w for w in words if w.startswith("--") and option.startswith(w.split("=")[0])]
                    for w in used:
                        base = w.split("=")[0]
                        is_full = base in options
                        assert is_full, f"abbreviation allowed: {command!r}"
                        assert base in allowed_full or (policy is RESET_POLICY and base in (
                            "--Reset_only", "--reset_after_read")) or base == "--out_json_file", \
                            f"{base} is allowed but not in the read-only list: {command!r}"
                    assert argv == words
    assert tried > 100 and allowed < tried


# The crafted bypasses of the issue, and more of their kind.
BYPASSES = [
    "timeout -k 2 18 perfquery --Re 1 1", "timeout -k 2 18 perfquery --Res 1 1", "perfquery --rese 1 1",
    "perfquery --R 1 1", "perfquery --Reset_only 1 1", "perfquery --reset_after_read 1 1", "perfquery -xR 1 1",
    "perfquery -Rx 1 1", "perfquery -x -r 1 1", "perfquery -z /tmp/conf", "perfquery --conf=/tmp/conf",
    "perfquery --config /tmp/conf", "perfquery -C mlx5_0 --Re 1 1", "perfquery -Cmlx5_0 1 1",
    "perfquery 1 1 0xffff", "perfquery -y 1 1", "perfquery --m_key=1 1 1", "perfquery --node 1 1",
    "ib_write_lat --out_json_fil=/any/path 10.0.0.2", "ib_write_lat --out_json_file=/tmp/x -p 1 -n 1 -s 8",
    "ib_write_lat --out_json_f /tmp/x -p 1 -n 1 -s 8", "ib_write_lat --outp=x -p 1 -n 1 -s 8",
    "ib_write_lat -p 1 -n 1 -s 8 --out_json", "ib_write_lat -p 1 -n 1 -s 8 --cred=/etc/shadow",
    "ib_write_lat -p 1 -n 1 -s 8 --kek_path=/etc/shadow", "ib_write_lat -p 1 -n 1 -s 8 -d -R 10.0.0.2",
    "ib_write_lat -p 1 -p 2 -n 1 -s 8", "ib_write_lat -p 1 -n 1 -s 8 10.0.0.2 10.0.0.3",
    "ibqueryerrors --clear", "ibqueryerrors --clear-e", "ibqueryerrors -k", "ibqueryerrors -K", "ibqueryerrors -kK",
    "ibqueryerrors --load-cache=/etc/shadow", "ibqueryerrors --threshold-file=/etc/shadow",
    "ibqueryerrors --thres /etc/shadow", "ibqueryerrors --node-name-map /etc/shadow",
    "ibnetdiscover /tmp/topology", "ibnetdiscover --cache=/etc/x", "ibnetdiscover --cach /etc/x",
    "ibnetdiscover --load-cache /tmp/fabric-exporter-ib-x.ibnetdiscover-cache", "ibnetdiscover --diff /etc/x",
    "timeout --signal=KILL 5 perfquery 1 1", "timeout -s 9 5 perfquery 1 1", "timeout --k=2 5 perfquery 1 1",
    "timeout -k 2 5 timeout 5 perfquery 1 1", "timeout -k 2 5 env LD_PRELOAD=/tmp/x.so perfquery 1 1",
    "env LD_PRELOAD=/tmp/x.so perfquery 1 1", "rm -rf /", "rm -f -- /etc/passwd", "rm -f /tmp/x",
    "rm -f -- /tmp/fabric-exporter-ib-x.ibnetdiscover-cache /etc/passwd",
    "rdma -b /tmp/cmds", "rdma --ba /tmp/cmds", "rdma -n other statistic show", "rdma statistic set link x",
    "rdma statistic show link mlx5_0/1 extra", "rdma link set mlx5_0/1 down",
    "ethtool -s eth0 speed 10", "ethtool --reset eth0 all", "ethtool -S eth0 eth1",
    "show pfc counters extra", "show pfc counters --clear", "show pfc counters; id",
    "sh -c 'show pfc counters; id'",
    "cat -- /etc/shadow", "cat --files0-from=/tmp/x",
]


@pytest.mark.parametrize("command", BYPASSES)
def test_crafted_bypasses_are_refused(command):
    with pytest.raises(guard.Refused):
        guard.decide(command, POLICY)


def test_reset_only_in_its_exact_shape_when_allowed():
    assert guard.decide("perfquery -R 12 1 0x1000", RESET_POLICY)
    for command in ("perfquery --Re 12 1 0x1000", "perfquery -xR 12 1", "perfquery -R -z /tmp/c 12 1"):
        with pytest.raises(guard.Refused):
            guard.decide(command, RESET_POLICY)


def test_guard_knows_exactly_the_collectors_sonic_sections():
    assert guard.SONIC_SECTIONS == switch_cli_collector._SONIC_ARGV


def test_switch_scripts_pass_only_as_built():
    nonce = "0123456789abcdef"
    names = list(switch_cli_collector._SONIC_ARGV)
    good = [switch_cli.build_script([(n, switch_cli_collector._SONIC_ARGV[n]) for n in names], nonce),
            switch_cli.build_script([(n, switch_cli_collector._SONIC_ARGV[n] + ("--json",)) for n in names[1:3]], nonce),
            switch_cli.build_cumulus_script(nonce),
            switch_cli.build_cumulus_script(nonce, ("ethtool", "nvue_roce")),
            switch_cli.build_cumulus_script(nonce, ("nvue_roce",))]
    for script in good:
        assert guard.decide(shlex.join(["sh", "-c", script]), POLICY) == ["sh", "-c", script]
    evil = [good[0].replace("show pfc counters", "sonic-clear pfccounters"),
            good[0] + "id\n", good[0].replace(f"{nonce} pfc $?", "x pfc $?"),
            switch_cli.build_script([("pfc", ("show", "pfc", "counters", "|", "sh"))], nonce),
            switch_cli.build_script([("pfc", ("show", "pfc", "counters")), ("pfc", ("show", "pfc", "counters"))],
                                    nonce),
            good[2].replace("ethtool -S", "ethtool -s"), good[2].replace("done\n", "done\nid\n"),
            good[4].replace("nv show", "nv set"), good[4].replace("qos roce counters", "qos roce"),
            good[4] + good[2], good[3].replace(":nvue_roce", ":x"),
            good[0].replace("show queue watermark unicast", "sonic-clear queue watermark unicast"),
            switch_cli.build_script([("queue_watermark_unicast", ("show", "queue", "persistent-watermark", "unicast"))],
                                    nonce),
            # show lldp table takes no option: not even --json, which the other tables have
            switch_cli.build_script([("lldp", ("show", "lldp", "table", "--json"))], nonce),
            switch_cli.build_script([("lldp", ("show", "lldp", "neighbors"))], nonce)]
    for script in evil:
        with pytest.raises(guard.Refused):
            guard.decide(shlex.join(["sh", "-c", script]), POLICY)


# ---------------------------------------------------------------------------------------------
# Everything the collectors send, with every option that changes a command, passes.


def _infiniband_argvs() -> list[list[str]]:
    out = []
    for options in ({}, {"ca": "mlx5_0", "ca_port": 1, "mad_timeout_ms": 200, "skip_sl": True},
                    {"skip_sl": True}):
        top = {"targets": [{"name": "ib", "fabric": "lab", "collector": "infiniband", "transport": "local",
                            "interval": "30s", "timeout": "20s", "hosts": ["ib-mgmt-01"], "options": options}]}
        group = parse_config(top).targets[0]
        col = InfinibandCollector(PollContext(group, group.hosts[0], Transports()))
        cache = col.discovery_cache_path()
        out += [col.tools.argv("ibnetdiscover", "--cache", cache), col.tools.argv("ibnetdiscover"),
                col.tools.argv("ibqueryerrors", "--load-cache", cache, "--counters", "--report-port"),
                col.tools.argv("ibqueryerrors", "--load-cache", cache, "--threshold-file", "/dev/null"),
                col.tools.argv("ibqueryerrors", "--counters", "--report-port"),
                col.tools.argv("ibqueryerrors", "--threshold-file", "/dev/null"),
                col.tools.argv("perfquery", "-l", "12", "255"), col.tools.argv("perfquery", "12", "1"),
                col.tools.argv("perfquery", "-c", "12", "1"), ["rm", "-f", "--", cache],
                # the focus set (focus.py): a node's focus ports, and one port's per-VL wait counters
                *(col.tools.argv("perfquery", *focus.read_args(basic, 12, ports))
                  for basic in (False, True) for ports in ([3], [1, 3, 17])),
                col.tools.argv("perfquery", *focus.vl_read_args(12, 3))]
        # the error-detail read (collectors/infiniband/details.py): its flags, as the collector builds them
        out += [col.tools.argv("perfquery", flag, "12", "1") for flag, *_ in details.READS]
    return out


def _latency_argvs() -> list[list[str]]:
    out = []
    for options in ({}, {"report": "json"},
                    {"device": "mlx5_0", "ib_port": 1, "gid_index": 3, "traffic_class": 106, "service_level": 3,
                     "report": "json", "tool": "ib_read_lat"}, {"tool": "ib_send_lat", "extra_args": ["-F"]}):
        top = {"targets": [{"name": "lat", "fabric": "f", "collector": "latency_probe", "transport": "local",
                            "hosts": [{"name": h, "address": "10.0.0.%d" % i} for i, h in enumerate("ab", 1)],
                            "interval": "30s", "timeout": "20s", "options": options}]}
        group = parse_config(top).targets[0]
        col = LatencyProbeCollector(PollContext(group, None, Transports()))
        out += [col._command("a", 18515), col._command("a", 18515, server_address="10.0.0.2")]
    return out


def _roce_argvs() -> list[list[str]]:
    return [["sh", "-c", REMOTE_SCRIPT, "fabric-roce", mode, eth, *devices]
            for mode in ("sysfs", "rdma") for eth in ("0", "1") for devices in ((), ("mlx5_0", "mlx5_1"))]


def _slurm_argvs() -> list[list[str]]:
    from fabric_exporter.collectors.slurm_jobs import JSON_ARGV, TEXT_ARGV

    return [list(JSON_ARGV), list(TEXT_ARGV)]


@pytest.mark.parametrize("command", [
    "squeue", "squeue --json --me", "squeue --js", "squeue --noheader --states=RUNNING --format=%i",
    "env squeue --json", "env SLURM_TIME_FORMAT=%s squeue --json", "env SLURM_TIME_FORMAT=%s sh -c id",
    "env SLURM_CONF=/tmp/x squeue --noheader --states=RUNNING --format=%i|%T|%S|%P|%a|%u|%N|%j",
    "scancel 1", "scontrol show jobs"])
def test_squeue_only_in_the_slurm_jobs_shapes(command):
    with pytest.raises(guard.Refused):
        guard.decide(command, POLICY)


def test_every_burst_probe_command_the_collector_sends_is_allowed():
    """Columns for every vendor's lab host (mlx5, bnxt, irdma), every signal, 10 ms and 10 s windows;
    the stream is started without the timeout wrapper (it runs until the exporter closes it)."""
    from fabric_exporter.collectors import burst
    from fabric_exporter.collectors.roce_nic import (ETHTOOL_MAPPER, HW_MAPPER, RoceNicOptions, _result_and_ports,
                                                     driver_family)
    from fabric_exporter.lab.roce_host import DRIVERS, RoceHost
    from fabric_exporter.parsers.rdma import parse_host_dump

    for vendor in sorted(DRIVERS):
        for window in (0.01, 10.0):
            o = burst.BurstOptions(window=window, signals=tuple(burst.SIGNALS))
            model = RoceHost.build("h", vendor, nics=2)
            _, ports = _result_and_ports(parse_host_dump(model.render_dump()), "h", RoceNicOptions(burst=o))
            columns = burst.plan_columns(ports, "h", o, HW_MAPPER, ETHTOOL_MAPPER, driver_family)
            assert columns, vendor
            argv = burst.command(columns, o)
            assert guard.decide(shlex.join(argv), POLICY) == argv




@pytest.mark.parametrize("source", ["infiniband", "latency_probe", "roce_nic", "slurm_jobs"])
def test_every_command_the_collectors_send_is_allowed(source):
    argvs = {"infiniband": _infiniband_argvs, "latency_probe": _latency_argvs, "roce_nic": _roce_argvs,
             "slurm_jobs": _slurm_argvs}[source]()
    assert argvs
    for argv in argvs:
        # As the SSH transport sends it: under the remote deadline wrapper.
        wrapped = ["timeout", "-k", "2", "18", *argv]
        assert guard.decide(shlex.join(wrapped), RESET_POLICY) == wrapped
        assert guard.decide(shlex.join(wrapped), POLICY) == wrapped
