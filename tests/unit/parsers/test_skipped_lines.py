"""The skip-and-count rule's plumbing: skipped lines become fabric_parse_skipped_lines_total and one
debug log line per distinct line (the parsers' side is tested with each parser)."""

from __future__ import annotations

import logging

from fabric_exporter.parsers import ib_diagnet
from fabric_exporter.parsers.skipped import MAX_KEPT, SkippedLine, note
from fabric_exporter.scheduler import TargetState, _count_skipped
from fabric_exporter.serving.selfmetrics import ReloadStatus, SelfMetrics


def test_note_keeps_a_bounded_list_and_only_when_asked():
    note(None, "x", 1, "ignored")  # the caller did not ask: nothing to do, no error
    kept: list[SkippedLine] = []
    for i in range(MAX_KEPT + 5):
        note(kept, "ethtool", i, "  odd line " + "x" * 300)
    assert len(kept) == MAX_KEPT and kept[0] == SkippedLine("ethtool", 0, "odd line " + "x" * 191)


def test_counted_per_source_logged_once_and_published(caplog):
    state = TargetState("gpus", "gpu-001", "roce_nic", "lab", "ssh", 10.0, 60.0)
    lines = [SkippedLine("ethtool", 3, "Per queue stats"), SkippedLine("ethtool", 9, "Per queue stats"),
             SkippedLine("hw_counters", 1, "weird")]
    with caplog.at_level(logging.DEBUG, logger="fabric_exporter.scheduler"):
        _count_skipped(state, lines)
        _count_skipped(state, lines[:1])
    assert state.skipped_lines == {"ethtool": 3, "hw_counters": 1}
    logged = [r for r in caplog.records if r.getMessage() == "skipped an unknown line"]
    assert sorted(r.fields["line"] for r in logged) == ["Per queue stats", "weird"]  # each distinct line once
    assert all(r.levelno == logging.DEBUG for r in logged)

    metrics = SelfMetrics(ReloadStatus())
    metrics.target_changed(state, None)
    text = metrics.render().decode()
    assert ('fabric_parse_skipped_lines_total{collector="roce_nic",fabric="lab",group="gpus",host="gpu-001",'
            'source="ethtool"} 3.0') in text
    assert 'source="hw_counters"} 1.0' in text


def test_each_collector_declares_the_sources_its_parsers_report_and_they_start_at_zero():
    from fabric_exporter.collectors import registry
    from tests.harness.configs import parse_config
    from fabric_exporter.scheduler import Scheduler

    declared = {name: set(cls.parse_sources) for name, cls in registry().items() if cls.parse_sources}
    assert declared["roce_nic"] >= {"ethtool", "hw_counters", "rdma_link", "rdma_statistic"}
    assert declared["infiniband"] >= {"ibnetdiscover", "ibqueryerrors", "perfquery", "ibdiagnet2.pm"}
    assert declared["switch_cli"] >= {"sonic_pfc_counters", "sonic_queue_counters"}
    assert declared["latency_probe"] == {"perftest"}
    from fabric_exporter.serving.store import SnapshotStore

    metrics = SelfMetrics(ReloadStatus())
    sched = Scheduler(transports=None, store=SnapshotStore(), self_metrics=metrics)
    sched.apply(parse_config({"targets": [{"name": "g", "fabric": "lab", "collector": "roce_nic",
                                           "transport": "local"}]}), start_tasks=False)
    (state,) = sched.states.values()
    text = metrics.render().decode()
    assert 'collector="roce_nic",fabric="lab",group="g",host="localhost",source="ethtool"} 0.0' in text
    assert dict(state.skipped_lines) == {s: 0 for s in declared["roce_nic"]}


def test_a_switch_cli_target_starts_at_zero_only_the_sources_of_its_dialect():
    from fabric_exporter.collectors.switch_cli import CUMULUS, DIALECTS, SwitchCliCollector
    from fabric_exporter.scheduler import Scheduler
    from fabric_exporter.serving.store import SnapshotStore
    from tests.harness.configs import parse_config

    # the class declares every dialect's sources (docs, tests); a target publishes its own dialect's
    # (and the commands' own: the watermark parsers' sources, published only by targets that run them)
    assert set(SwitchCliCollector.parse_sources) == ({s for d in DIALECTS.values() for s in d.sources}
                                                     | {c.source for d in DIALECTS.values()
                                                        for c in d.commands.values() if c.source}
                                                     | {c.source for c in CUMULUS.values()})
    groups = [{"name": f"sw-{d}", "fabric": "lab", "collector": "switch_cli", "transport": "ssh",
               "credentials": "sw", "hosts": [f"{d}-1"], "options": {"dialect": d}} for d in ("sonic", "cumulus", "eos")]
    groups.append({"name": "sw-wm", "fabric": "lab", "collector": "switch_cli", "transport": "ssh",
                   "credentials": "sw", "hosts": ["wm-1"], "options": {"commands": ["wred", "pg_watermark"]}})
    groups.append({"name": "sw-nv", "fabric": "lab", "collector": "switch_cli", "transport": "ssh",
                   "credentials": "sw", "hosts": ["nv-1"],
                   "options": {"dialect": "cumulus", "commands": ["nvue_roce"]}})
    sched = Scheduler(transports=None, store=SnapshotStore(), self_metrics=SelfMetrics(ReloadStatus()))
    credentials = {"sw": {"type": "ssh", "username": "u", "password": "env:SWITCH_PASSWORD"}}
    sched.apply(parse_config({"credentials": credentials, "targets": groups}), start_tasks=False)
    sources = {state.host: set(state.skipped_lines) for state in sched.states.values()}
    assert sources == {"sonic-1": {"sonic_pfc_counters", "sonic_queue_counters", "sonic_wred_counters",
                                   "sonic_pfcwd_stats"},
                       "cumulus-1": {"ethtool"}, "nv-1": {"nvue_roce"}, "eos-1": {"eos_queue_counters"},
                       "wm-1": {"sonic_pfc_counters", "sonic_queue_counters", "sonic_wred_counters",
                                "sonic_pfcwd_stats", "sonic_pg_watermark"}}


# -- the cap and the cut, pinned where scripts/mutation skipped found them unpinned (issue 16) ---------

def test_a_flood_of_odd_lines_keeps_the_first_thousand():
    skipped: list[SkippedLine] = []
    text = "Port=1 Lid=0x1 GUID=0x1 Device=1 Port Name=x\n" + "".join(f"odd line {k}\n" for k in range(1500))
    (port,) = ib_diagnet.parse_pm(text, skipped=skipped)
    assert port.counters == {}
    assert len(skipped) == 1000  # the documented per-parse cap
    assert (skipped[0].line_no, skipped[0].text) == (2, "odd line 0")
    assert (skipped[-1].line_no, skipped[-1].text) == (1001, "odd line 999")


def test_note_cuts_the_stripped_line_to_200_characters():
    kept: list[SkippedLine] = []
    note(kept, "src", 3, "\t" + "a" * 199 + "bc  \n")
    assert kept == [SkippedLine("src", 3, "a" * 199 + "b")]
    note(None, "src", 4, "not kept: the caller did not ask")
    assert len(kept) == 1
