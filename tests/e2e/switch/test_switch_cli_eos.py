"""switch_cli's eos dialect over a real OpenSSH sshd on 127.0.0.1 whose sessions land, like EOS's,
in a "CLI" and not a shell: a ForceCommand answers each exec'd command line from the real captures
(tests/fixtures/real/eos_*), logs the line it got, and refuses any other line as EOS does."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import time
from pathlib import Path

import pytest

from tests.harness import paths
from tests.harness.sshd import SSHD
from tests.harness.switch import make_config
from tests.harness.polling import polls, series

REAL = paths.FIXTURES / "real"
QUEUE_LINE = "show interfaces counters queue"
DISCARDS_LINE = "show interfaces counters discards | json"
PFC_LINE = "show priority-flow-control counters | json"
ECN_LINE = "show qos interfaces ecn counters queue | json"


def install_eos_cli(base: Path) -> tuple[Path, Path, Path]:
    """The stand-in CLI (a POSIX sh ForceCommand), its answers' directory and its log of lines."""
    data, log, cli = base / "eos-data", base / "eos-lines.log", base / "eos-cli"
    data.mkdir()
    shutil.copy(REAL / "eos_queue_counters_nz_7280sr3e.txt", data / "queue.txt")
    shutil.copy(REAL / "eos_interfaces_counters_discards_anta.json", data / "discards.json")
    shutil.copy(REAL / "eos_pfc_counters_anta.json", data / "pfc.json")
    shutil.copy(REAL / "eos_qos_ecn_counters_queue_anta.json", data / "ecn.json")
    q = shlex.quote
    cli.write_text(f"""#!/bin/sh
# One exec request = one CLI line, answered from a recorded capture (no shell, no batching).
printf '%s\\n' "$SSH_ORIGINAL_COMMAND" >> {q(str(log))}
[ -e {q(str(data / 'hang'))} ] && exec sleep 60  # a CLI that never answers
case "$SSH_ORIGINAL_COMMAND" in
  {q(QUEUE_LINE)}) exec cat {q(str(data / 'queue.txt'))} ;;
  {q(DISCARDS_LINE)}) exec cat {q(str(data / 'discards.json'))} ;;
  {q(PFC_LINE)}) exec cat {q(str(data / 'pfc.json'))} ;;
  {q(ECN_LINE)}) exec cat {q(str(data / 'ecn.json'))} ;;
  *) echo "% Invalid input"; exit 1 ;;
esac
""")
    cli.chmod(0o755)
    return cli, data, log


@pytest.fixture()
def eos_env(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the sshd harness needs root (mount namespace)")
    cli, data, log = install_eos_cli(tmp_path)
    with SSHD(tmp_path, extra_config=[f"ForceCommand {cli}"]) as sshd:
        yield sshd, data, log


def config(tmp_path, sshd, timeout="15s", **options):
    group = {"name": "eos", "fabric": "lab", "collector": "switch_cli", "transport": "ssh", "credentials": "ssh",
             "hosts": [{"name": "spine1", "address": "127.0.0.1", "port": sshd.port}], "interval": "30s",
             "timeout": timeout, "options": {"dialect": "eos", **options}}
    return make_config(tmp_path, [group], {"ssh": sshd.credential()})


def test_eos_over_ssh_reads_the_captures_one_line_per_exec(eos_env, tmp_path):
    sshd, data, log = eos_env

    def change():  # the switch counts on: the next poll must show the new value, not a cached one
        text = (data / "queue.txt").read_text()
        (data / "queue.txt").write_text(text.replace("9453397328", "9453397999", 1))

    ((st1, s1), (st2, s2)), _ = asyncio.run(polls(config(tmp_path, sshd), change))
    state = st1[("eos", "spine1")]
    assert state.state == "ok", state.last_error
    lab = {"fabric": "lab", "switch": "spine1"}
    # values read by hand from the captures
    assert series(s1, "fabric_roce_switch_queue_enqueued_packets_total", **lab, interface="Ethernet31",
                  queue="UC1") == 9453397328
    assert series(s2, "fabric_roce_switch_queue_enqueued_packets_total", **lab, interface="Ethernet31",
                  queue="UC1") == 9453397999
    assert series(s1, "fabric_roce_switch_queue_dropped_bytes_total", **lab, interface="Ethernet14",
                  queue="UC7") == 241
    assert series(s1, "fabric_roce_rx_discards_total", **lab, interface="Ethernet1") == 42
    assert series(s1, "fabric_roce_tx_discards_total", **lab, interface="Port-Channel1") == 30
    assert series(s1, "fabric_roce_switch_voq_dropped_packets_total", **lab, interface="Ethernet15",
                  queue="UC6") == 2326123603
    assert series(s1, "fabric_roce_switch_pfc_tx_frames_total", **lab, interface="Ethernet3/2/1") == 2
    assert series(s1, "fabric_roce_ecn_marked_packets_total", **lab, interface="Ethernet10/20/1", queue="UC1") == 2
    assert len(s1) == (44 + 43) * 4 + 5 * 2 + 4 * 2 + 10
    # the CPU port's 'TC3,7' row: skipped and counted, on each of the two polls
    assert {k: v for k, v in st2[("eos", "spine1")].skipped_lines.items() if v} == {"eos_queue_counters": 2}
    # each poll: exactly the four CLI lines, each its own exec, as typed at the CLI (no sh, no timeout)
    assert log.read_text().splitlines() == [DISCARDS_LINE, QUEUE_LINE, PFC_LINE, ECN_LINE] * 2
    assert sshd.log().count("Accepted publickey") == 1  # one pooled connection for both polls


def test_eos_refused_and_garbled_commands_make_the_poll_partial(eos_env, tmp_path):
    sshd, data, log = eos_env
    (data / "discards.json").write_text("% This is an unconverted command\n")
    (only,), _ = asyncio.run(polls(config(tmp_path, sshd)))
    st, s = only
    state = st[("eos", "spine1")]
    assert state.state == "partial"
    assert f"{DISCARDS_LINE}: " in state.last_error and "invalid JSON" in state.last_error
    assert not any(name.startswith("fabric_roce_rx_discards") for name, _ in s)
    assert series(s, "fabric_roce_switch_queue_enqueued_packets_total", fabric="lab", switch="spine1",
                  interface="Ethernet1", queue="UC1") == 10203741


def test_eos_every_command_failing_fails_the_poll(eos_env, tmp_path):
    sshd, data, log = eos_env
    (data / "queue.txt").unlink()
    (only,), _ = asyncio.run(polls(config(tmp_path, sshd, commands=["queue"])))
    state = only[0][("eos", "spine1")]
    assert state.state == "failed"
    assert f"{QUEUE_LINE}: exit status 1" in state.last_error
    assert log.read_text().splitlines() == [QUEUE_LINE]


def test_eos_needs_the_ssh_transport(tmp_path):
    group = {"name": "eos", "fabric": "lab", "collector": "switch_cli", "transport": "local", "interval": "30s",
             "timeout": "15s", "options": {"dialect": "eos"}}
    (only,), _ = asyncio.run(polls(make_config(tmp_path, [group])))
    state = only[0][("eos", "localhost")]
    assert state.state == "failed" and "use transport: ssh" in state.last_error


def test_eos_a_cli_that_never_answers_times_out_at_the_deadline(eos_env, tmp_path):
    # no coreutils timeout on a device CLI: the client closes the channel at the poll's deadline
    sshd, data, log = eos_env
    (data / "hang").touch()
    started = time.monotonic()
    (only,), _ = asyncio.run(polls(config(tmp_path, sshd, timeout="2s", commands=["queue"])))
    elapsed = time.monotonic() - started
    state = only[0][("eos", "spine1")]
    assert state.state == "failed" and "timeout" in state.errors, (state.state, state.errors, state.last_error)
    assert elapsed < 6, elapsed
