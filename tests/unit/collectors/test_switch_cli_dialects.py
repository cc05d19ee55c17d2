"""switch_cli dialects are table entries: a new switch OS is an entry in ``DIALECTS`` (commands ->
parsers -> mapping), run by the same poll code, with no branch in the collector."""

from __future__ import annotations

import asyncio

from fabric_exporter.collectors import switch_cli
from fabric_exporter.parsers import sonic_cli

from tests.harness import paths
from tests.harness.switch import make_config
from tests.harness.polling import Poller, series

CAPTURE = paths.FIXTURES / "switch" / "sonic" / "show_pfc_counters.txt"


def test_a_third_dialect_is_one_entry(monkeypatch, tmp_path, local_commands):
    # A made-up OS whose "pfc" command prints the sonic-utilities capture (cat of the file, on
    # this machine through the local transport) and whose "broken" command fails.
    table = {"pfc": switch_cli.CliCommand(("cat", str(CAPTURE)), sonic_cli.parse_pfc_counters,
                                          switch_cli.pfc_samples),
             "broken": switch_cli.CliCommand(("false",), sonic_cli.parse_pfc_counters, switch_cli.pfc_samples)}
    monkeypatch.setitem(switch_cli.DIALECTS, "acme",
                        switch_cli.Dialect("acme", table, switch_cli.SwitchCliCollector._poll_commands, "acme show"))
    group = {"name": "acme", "fabric": "lab", "collector": "switch_cli", "transport": "local", "interval": "30s",
             "timeout": "15s", "options": {"dialect": "acme", "commands": ["pfc", "broken"]}}
    cfg = make_config(tmp_path, [group])

    async def poll():
        p = Poller(cfg)
        try:
            return await p.poll()
        finally:
            await p.close()

    states, samples = asyncio.run(poll())
    (state,) = states.values()
    assert state.state == "partial" and "false: exit status 1" in state.last_error, state
    expected = sonic_cli.parse_pfc_counters(CAPTURE.read_text())
    port, columns = next(iter(expected.rx.items()))
    column, value = next(iter(sorted(columns.items())))
    assert series(samples, "fabric_roce_pfc_rx_pause_frames_total", fabric="lab", switch="localhost", interface=port,
                  priority=column.removeprefix("PFC")) == value


def test_dialect_and_commands_choices_come_from_the_table(monkeypatch):
    errors: list = []
    opts = switch_cli.SwitchCliCollector.parse_options({"dialect": "sonic", "commands": ["pfc"]}, "o",
                                                       lambda path, msg: errors.append((path, msg)))
    assert errors == [] and opts.commands == ("pfc",)
    switch_cli.SwitchCliCollector.parse_options({"dialect": "cumulus", "commands": ["pfc"]}, "o",
                                                lambda path, msg: errors.append((path, msg)))
    assert errors == [("o.commands[0]", "'pfc' is not a command of the cumulus dialect (known: ethtool, nvue_roce)")]
    errors.clear()
    # cumulus: ethtool by default, NVUE's RoCE counters when asked; the sources follow the commands
    opts = switch_cli.SwitchCliCollector.parse_options({"dialect": "cumulus"}, "o",
                                                       lambda path, msg: errors.append((path, msg)))
    assert errors == [] and opts.commands == ("ethtool",)
    assert switch_cli.SwitchCliCollector.sources_for(opts) == ("ethtool",)
    opts = switch_cli.SwitchCliCollector.parse_options({"dialect": "cumulus", "commands": ["ethtool", "nvue_roce"]},
                                                       "o", lambda path, msg: errors.append((path, msg)))
    assert errors == [] and switch_cli.SwitchCliCollector.sources_for(opts) == ("ethtool", "nvue_roce")
    # eos: its own command names, all of them by default; a SONiC name is not one of them
    opts = switch_cli.SwitchCliCollector.parse_options({"dialect": "eos"}, "o", lambda path, msg: errors.append((path, msg)))
    assert errors == [] and opts.commands == ("discards", "queue", "pfc", "ecn")
    switch_cli.SwitchCliCollector.parse_options({"dialect": "eos", "commands": ["wred"]}, "o",
                                                lambda path, msg: errors.append((path, msg)))
    assert errors == [("o.commands[0]", "'wred' is not a command of the eos dialect "
                                        "(known: discards, queue, pfc, ecn)")]
    errors.clear()
    switch_cli.SwitchCliCollector.parse_options({"dialect": "acme"}, "o", lambda path, msg: errors.append((path, msg)))
    assert [p for p, _ in errors] == ["o.dialect"]
    monkeypatch.setitem(switch_cli.DIALECTS, "acme", switch_cli.Dialect(
        "acme", {"x": switch_cli.CliCommand(("true",), sonic_cli.parse_pfc_counters, switch_cli.pfc_samples)},
        switch_cli.SwitchCliCollector._poll_commands, "acme show"))
    errors.clear()
    opts = switch_cli.SwitchCliCollector.parse_options({"dialect": "acme"}, "o",
                                                       lambda path, msg: errors.append((path, msg)))
    assert errors == [] and opts.commands == ("x",)
