"""The SSH guard's allow-list is generated from the commands the collectors declare (``ssh_commands``,
fabric_exporter/commands.py): the committed guard is the generated one; every command each collector's
own builders emit (with the options that change a command, every switch dialect) is allowed by it;
and a command outside the declarations is refused -- by the committed guard and by a guard generated
from a registry that lacks the declaration."""

from __future__ import annotations

import asyncio
import functools
import importlib.machinery
import importlib.util
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fabric_exporter import ssh_guard
from fabric_exporter.collectors.base import PollContext
from fabric_exporter.commands import Getopt, Script, Shape, Value
from fabric_exporter.errors import PollError
from fabric_exporter.transport.base import CommandResult
from tests.harness.configs import parse_config

from .test_ssh_guard import GUARD, guard
from .test_ssh_guard_allowlist import _infiniband_argvs, _latency_argvs

ROOT = Path(__file__).resolve().parents[2]
POLICY = guard.Policy()
RESET_POLICY = guard.Policy(allow_counter_reset=True, ibdiagnet_dir="/var/tmp/ibdiagnet2")
REGENERATE = "PYTHONPATH=exporter python -m fabric_exporter.ssh_guard --write deploy/ssh/fabric-exporter-ssh-guard"


def load_guard_text(text: str, where: Path):
    path = where / "guard.py"
    path.write_text(text)
    loader = importlib.machinery.SourceFileLoader(f"generated_guard_{abs(hash(text))}", str(path))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_the_committed_guard_is_the_generated_one():
    text = GUARD.read_text()
    assert ssh_guard.render(text, ssh_guard.builtin_collectors()) == text, \
        f"the collectors' ssh_commands changed (or the roce_nic script / burst probe): run `{REGENERATE}`"


def test_check_mode_exit_codes(tmp_path):
    stale = tmp_path / "guard"
    text = GUARD.read_text()
    stale.write_text(text.replace('"true"', '"truex"', 1))
    env_path = str(ROOT / "exporter")
    run = [sys.executable, "-m", "fabric_exporter.ssh_guard"]
    env = {"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"}
    r = subprocess.run([*run, "--check", str(stale)], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 1 and '+    "true": ' in r.stdout, r.stdout + r.stderr
    r = subprocess.run([*run, "--write", str(stale)], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and stale.read_text() == text
    r = subprocess.run([*run, "--check", str(stale)], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout


def test_the_pinned_script_digests_come_from_the_scripts_themselves(monkeypatch):
    """A changed roce_nic script (another branch edits it) regenerates to its new digest, without a
    hand-copied hash anywhere."""
    import hashlib

    from fabric_exporter.collectors.roce_nic import script

    before = ssh_guard.tables(ssh_guard.builtin_collectors())["SCRIPTS"]["sh"]["fabric-roce"]
    monkeypatch.setattr(script, "REMOTE_SCRIPT", script.REMOTE_SCRIPT + "# changed\n")
    after = ssh_guard.tables(ssh_guard.builtin_collectors())["SCRIPTS"]["sh"]["fabric-roce"]
    assert after == [hashlib.sha256(script.REMOTE_SCRIPT.encode()).hexdigest()] and after != before


# ---------------------------------------------------------------------------------------------
# Every command the collectors emit, built by their own code, is allowed.


class Recorder:
    """A runner that records what a collector asks to run and answers ``answer(argv)``."""

    description = "recorder"

    def __init__(self, answer=lambda argv: CommandResult(tuple(argv), 0, "", "")):
        self.argvs: list[list[str]] = []
        self.answer = answer

    async def run(self, argv, timeout=None):
        self.argvs.append(list(argv))
        return self.answer(argv)


class RecordingTransports:
    def __init__(self, recorder: Recorder):
        self.recorder = recorder

    def runner(self, group, host):
        return self.recorder


def _poll_and_record(collector: str, options: dict, answer=None) -> list[list[str]]:
    """One real poll of ``collector`` with ``options``, its runner replaced by a recorder (the group says
    transport: local; which runner a poll gets does not change the commands it builds)."""
    from fabric_exporter.collectors import registry

    top = {"targets": [{"name": "t", "fabric": "f", "collector": collector, "transport": "local",
                        "interval": "30s", "timeout": "20s", "hosts": ["h1"], "options": options}]}
    group = parse_config(top).targets[0]
    recorder = Recorder(answer) if answer else Recorder()
    col = registry()[collector](PollContext(group, group.hosts[0], RecordingTransports(recorder)))
    try:
        asyncio.run(col.poll())
    except PollError:
        pass  # the recorder's empty answers are no real output; only the commands matter here
    return recorder.argvs


def _switch_cli_argvs() -> list[list[str]]:
    out = []
    every_sonic = ["pfc", "queue", "wred", "pfcwd", "queue_watermark", "pg_watermark", "buffer_pool_watermark",
                   "pfc_history", "lldp"]
    for options in ({}, {"commands": every_sonic}, {"commands": every_sonic, "json": "never", "queue_watermark_types": ["unicast", "multicast", "all"]},
                    {"commands": every_sonic, "json": "always", "watermark_kind": "persistent",
                     "queue_watermark_types": ["unicast", "multicast", "all"]},
                    {"commands": ["lldp", "pfc"]}):
        out += _poll_and_record("switch_cli", {"dialect": "sonic", **options})
    # json: auto falls back to the text tables when --json is a usage error (exit status 2)
    def no_json(argv):
        script = argv[-1]
        nonce = guard.NONCE.search(script).group(1)
        names = [line.split()[-1] for line in script.splitlines() if line.startswith("printf '@@%s begin")]
        body = "".join(f"@@{nonce} begin {n}\n\n@@{nonce} end {n} 2\n" for n in names)
        return CommandResult(tuple(argv), 0, body, "")
    out += _poll_and_record("switch_cli", {"dialect": "sonic", "commands": every_sonic}, answer=no_json)
    for commands in (["ethtool"], ["nvue_roce"], ["ethtool", "nvue_roce"], ["nvue_roce", "ethtool"]):
        out += _poll_and_record("switch_cli", {"dialect": "cumulus", "commands": commands})
    out += _poll_and_record("switch_cli", {"dialect": "cumulus"})
    # every dialect in the table with all its commands (a new dialect needs no line here)
    from fabric_exporter.collectors.switch_cli import DIALECTS

    for name, dialect in DIALECTS.items():
        out += _poll_and_record("switch_cli", {"dialect": name, **({"commands": list(dialect.names)}
                                                                   if dialect.names else {})})
    return out


def _roce_argvs() -> list[list[str]]:
    out = []
    for options in ({}, {"hw_counters_from": "rdma"}, {"ethtool": False, "devices": ["mlx5_0", "mlx5_1"]},
                    {"hw_counters_from": "rdma", "ethtool": False}):
        out += _poll_and_record("roce_nic", options)
    return out


def _burst_argvs() -> list[list[str]]:
    from fabric_exporter.collectors import burst
    from fabric_exporter.collectors.roce_nic import (ETHTOOL_MAPPER, HW_MAPPER, RoceNicOptions, _result_and_ports,
                                                     driver_family)
    from fabric_exporter.lab.roce_host import DRIVERS, RoceHost
    from fabric_exporter.parsers.rdma import parse_host_dump

    out = []
    for vendor in sorted(DRIVERS):
        o = burst.BurstOptions(window=0.05, signals=tuple(burst.SIGNALS))
        _, ports = _result_and_ports(parse_host_dump(RoceHost.build("h", vendor, nics=2).render_dump()), "h",
                                     RoceNicOptions(burst=o))
        out.append(burst.command(burst.plan_columns(ports, "h", o, HW_MAPPER, ETHTOOL_MAPPER, driver_family), o))
    return out


def _infiniband_all_argvs() -> list[list[str]]:
    from fabric_exporter.collectors.infiniband import ibdiagnet

    return [*_infiniband_argvs(), ibdiagnet.find_argv("/var/tmp/ibdiagnet2"),
            ["cat", "--", "/var/tmp/ibdiagnet2/run1/ibdiagnet2.db_csv"],
            ["perfquery", "-R", "12", "1", hex(0x1000)]]  # reset_latched, only with --allow-counter-reset


def _latency_all_argvs() -> list[list[str]]:
    return [["true"], *_latency_argvs()]


def _variant_argvs(collector: str) -> list[list[str]]:
    """A collector's own ``command_variants``: one recorded poll with each."""
    return [argv for options in ssh_guard.builtin_collectors()[collector].command_variants
            for argv in _poll_and_record(collector, dict(options))]


# Collectors whose commands need more than a poll per option set (builder functions, a scripted
# answer, a lab host); every other collector that declares ssh_commands declares command_variants.
HAND_DRIVERS = {"infiniband": _infiniband_all_argvs, "latency_probe": _latency_all_argvs, "roce_nic": _roce_argvs,
                "roce_nic/burst": _burst_argvs, "switch_cli": _switch_cli_argvs}
DRIVERS = {**HAND_DRIVERS, **{n: functools.partial(_variant_argvs, n)
                              for n, c in ssh_guard.builtin_collectors().items() if c.command_variants}}


def test_every_collector_that_declares_ssh_commands_is_driven_here():
    collectors = ssh_guard.builtin_collectors()
    declaring = {n for n, c in collectors.items() if c.ssh_commands}
    assert declaring == {d.split("/")[0] for d in DRIVERS}, \
        "a collector with ssh_commands declares command_variants (or has a hand driver here)"
    assert not {n for n, c in collectors.items() if c.command_variants} & set(HAND_DRIVERS)


@pytest.mark.parametrize("collector", sorted(n for n, c in ssh_guard.builtin_collectors().items()
                                             if c.command_variants))
def test_the_variants_reach_every_fixed_command_a_collector_declares(collector):
    """Not vacuous: each ``Shape`` it declares is sent by a poll of one of its variants."""
    argvs = _variant_argvs(collector)
    for shape in ssh_guard.builtin_collectors()[collector].ssh_commands:
        if isinstance(shape, Shape):
            assert any(a[0] == shape.tool and _words_match(shape, a[1:]) for a in argvs), shape


def _words_match(shape: Shape, args: list[str]) -> bool:
    while args and args[0] in shape.leading_flags:
        args = args[1:]
    return len(args) == len(shape.words) and all(not isinstance(w, str) or w == x for w, x in zip(shape.words, args))


@pytest.mark.parametrize("source", sorted(DRIVERS))
def test_every_command_a_collector_emits_is_allowed(source):
    argvs = DRIVERS[source]()
    assert argvs
    for argv in argvs:
        policy = RESET_POLICY if "-R" in argv or argv[0] in ("find", "cat") else POLICY
        # as the SSH transport sends a command: bare, or under the remote deadline wrapper
        assert guard.decide(shlex.join(argv), policy) == argv, argv[:3]
        wrapped = ["timeout", "-k", "2", "18", *argv]
        assert guard.decide(shlex.join(wrapped), policy) == wrapped


def test_the_collectors_emit_each_shape_the_guard_has_for_them():
    """The drivers above are not vacuous: they reach every SONiC section, both Cumulus loops and
    every roce_nic mode."""
    scripts = [a[2] for a in _switch_cli_argvs() if a[:2] == ["sh", "-c"]]
    for name, argv in guard.SONIC_SECTIONS.items():
        assert any(f" {name}\n{shlex.join(argv)}" in s for s in scripts), name
    assert any("nv show interface" in s and "ethtool -S" in s for s in scripts)
    modes = {(a[4], a[5]) for a in _roce_argvs()}
    assert modes == {("sysfs", "1"), ("rdma", "1"), ("sysfs", "0"), ("rdma", "0")}


def test_the_eos_dialect_sends_nothing_through_a_shell():
    """EOS's strategy runs lines in the switch's CLI (run_line), which no forced command sees: it
    declares no ssh_commands, and without run_line it refuses to run rather than fall back to a shell."""
    from fabric_exporter.collectors import switch_cli

    assert switch_cli.DIALECTS["eos"].ssh_commands == ()
    assert _poll_and_record("switch_cli", {"dialect": "eos"}) == []


# ---------------------------------------------------------------------------------------------
# What is not declared is refused.


@pytest.mark.parametrize("tool", sorted(guard.GETOPT))
def test_an_undeclared_option_is_refused(tool):
    rule = guard.GETOPT[tool]
    base = [tool, *[w for r in rule["required"] for w in (r, "1")]]
    assert guard.decide(shlex.join(base), RESET_POLICY) == base
    for extra in ("--no-such-option", "-Z", "--help", "-h"):
        with pytest.raises(guard.Refused):
            guard.decide(shlex.join([*base, extra]), RESET_POLICY)


@pytest.mark.parametrize("tool", sorted(guard.SHAPES))
def test_a_shape_with_one_word_more_or_changed_is_refused(tool):
    for shape in guard.SHAPES[tool]:
        words = [w if isinstance(w, str) else "x" for w in shape["words"]]
        for extra in (["--extra"], [";id"], ["a b"], ["$(id)"]):  # never a value of any kind
            with pytest.raises(guard.Refused):
                guard.decide(shlex.join([tool, *words, *extra]), RESET_POLICY)
        for i, w in enumerate(shape["words"]):
            if isinstance(w, str):  # one fixed word changed
                with pytest.raises(guard.Refused):
                    guard.decide(shlex.join([tool, *words[:i], w + "x", *words[i + 1:]]), RESET_POLICY)


def test_a_tool_no_collector_declares_is_refused():
    for command in ("bash", "python3 -c 'print(1)' x", "ibportstate 1 1 disable", "smpquery nodeinfo 1",
                    "sh -c id", "nv set interface swp1 link state down", "sonic-clear counters"):
        with pytest.raises(guard.Refused):
            guard.decide(command, RESET_POLICY)


def test_a_guard_generated_without_a_declaration_refuses_its_command(tmp_path):
    """The allow-list is the declarations: generate a guard from a registry where slurm_jobs declares
    only its JSON listing and a toy collector declares one Getopt tool; the text listing and the
    infiniband tools (not in this registry) are refused, the toy's exact options pass."""

    class Slurm:
        ssh_commands = (Shape("squeue", ("--json",)),)

    class Toy:
        ssh_commands = (Getopt("toolx", flags=("--read",), values={"-d": "name"}, operand="number", max_operands=1),
                        Script("sh", "toy-magic", lambda: "echo toy\n"))

    g = load_guard_text(ssh_guard.render(GUARD.read_text(), {"slurm_jobs": Slurm, "toy": Toy}), tmp_path)
    p = g.Policy()
    assert g.decide("squeue --json", p) == ["squeue", "--json"]
    assert g.decide("toolx --read -d mlx5_0 3", p) == ["toolx", "--read", "-d", "mlx5_0", "3"]
    for refused in ("env SLURM_TIME_FORMAT=%s squeue --noheader --states=RUNNING --format=%i|%T|%S|%P|%a|%u|%N|%j",
                    "perfquery 12 1", "ibnetdiscover", "true", "show pfc counters", "toolx --rea",
                    "toolx -d 'a b'", "toolx 3 4", "toolx --read --read"):
        with pytest.raises(g.Refused):
            g.decide(refused, p)
    # a pinned script whose magic has no argument rule is refused rather than run unchecked
    with pytest.raises(g.Refused):
        g.decide(shlex.join(["sh", "-c", "echo toy\n", "toy-magic"]), p)


def test_a_declaration_the_guard_cannot_hold_is_an_error():
    class A:
        ssh_commands = (Getopt("t", flags=("-a",)),)

    class B:
        ssh_commands = (Getopt("t", flags=("-b",)),)

    class C:
        ssh_commands = (Shape("t", (Value("name"),)),)

    for pair in ({"a": A, "b": B}, {"a": A, "c": C}):
        with pytest.raises(ssh_guard.DeclarationError):
            ssh_guard.tables(pair)
    with pytest.raises(ValueError):
        Value("no-such-kind")
