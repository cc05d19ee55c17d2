"""switch_cli's watermark options: which show commands a poll runs for which option values."""

from __future__ import annotations

from fabric_exporter.collectors import switch_cli


def parse(raw: dict):
    errors: list = []
    opts = switch_cli.SwitchCliCollector.parse_options(raw, "o", lambda path, msg: errors.append((path, msg)))
    return opts, errors


def argvs(opts) -> list[str]:
    return [" ".join(switch_cli.SONIC[s].argv) for s in opts.sections]


def test_default_polls_no_watermarks():
    opts, errors = parse({})
    assert errors == [] and opts.sections == ("pfc", "queue", "wred", "pfcwd")


def test_user_watermarks_by_default_and_every_region_and_pool():
    opts, errors = parse({"commands": ["queue_watermark", "pg_watermark", "buffer_pool_watermark", "pfc_history"]})
    assert errors == []
    assert argvs(opts) == ["show queue watermark unicast", "show queue watermark multicast",
                           "show priority-group watermark shared", "show priority-group watermark headroom",
                           "show buffer_pool watermark", "show headroom-pool watermark",
                           "show pfc counters --history"]


def test_persistent_and_narrowed_choices():
    opts, errors = parse({"commands": ["pfc", "queue_watermark", "pg_watermark", "buffer_pool_watermark"],
                          "watermark_kind": "persistent", "queue_watermark_types": ["all"],
                          "pg_watermark_regions": ["headroom"], "buffer_pool_watermarks": ["headroom_pool"]})
    assert errors == []
    assert argvs(opts) == ["show pfc counters", "show queue persistent-watermark all",
                           "show priority-group persistent-watermark headroom", "show headroom-pool persistent-watermark"]


def test_bad_watermark_options_are_reported_with_their_path():
    _, errors = parse({"commands": ["queue_watermark"], "watermark_kind": "periodic",
                       "queue_watermark_types": [], "pg_watermark_regions": ["xoff"]})
    paths = sorted(p for p, _ in errors)
    assert paths == ["o.pg_watermark_regions[0]", "o.queue_watermark_types", "o.watermark_kind"], errors
    _, errors = parse({"dialect": "eos", "watermark_kind": "user"})
    assert errors == [("o.watermark_kind", "only for the sonic dialect (eos has no watermarks)")]
    _, errors = parse({"dialect": "eos", "commands": ["queue_watermark"]})
    assert [p for p, _ in errors] == ["o.commands[0]"]
