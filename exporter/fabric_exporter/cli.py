"""Command line: run, once, check-config, catalog (and generate, lab, report where installed)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from . import __version__


def _add_config(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "--config.file", dest="config", required=True, metavar="FILE",
                   help="YAML configuration file")


def _add_logging(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log.level", dest="log_level", default="info",
                   choices=["debug", "info", "warning", "error"])
    p.add_argument("--log.format", dest="log_format", default="text", choices=["text", "json"])


def _add_shard(p: argparse.ArgumentParser) -> None:
    from .sharding import parse_shard

    def shard(text: str):
        try:
            return parse_shard(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    p.add_argument("--shard", type=shard, metavar="INDEX/COUNT",
                   help="poll only this replica's share of the targets (stable hash), e.g. 0/3")


class _CommandParser(argparse.ArgumentParser):
    """A command's parser that may add its arguments only when that command is parsed (or its help
    shown), so a tooling command's module (lab) is not imported by the daemon's ``run``."""

    def __init__(self, *args, add_arguments=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._add_arguments = add_arguments

    def _complete(self) -> None:
        if self._add_arguments is not None:
            add, self._add_arguments = self._add_arguments, None
            add(self)

    def parse_known_args(self, args=None, namespace=None):
        self._complete()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._complete()
        return super().format_help()


def _report_arguments(p: argparse.ArgumentParser) -> None:
    from .report.main import add_arguments  # stdlib only; matplotlib is imported when the report runs

    add_arguments(p)


def _lab_arguments(p: argparse.ArgumentParser) -> None:
    from .lab.options import add_arguments

    add_arguments(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fabric-exporter",
        description="Prometheus telemetry for InfiniBand and RoCE fabrics: throughput, congestion, "
                    "link health and tail latency.")
    parser.add_argument("--version", action="version", version=f"fabric-exporter {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_CommandParser)

    run = sub.add_parser("run", help="run the daemon")
    _add_config(run)
    run.add_argument("--web.listen-address", dest="listen_address", metavar="HOST:PORT",
                     help="override web.listen_address (default 0.0.0.0:9315)")
    run.add_argument("--web.config.file", dest="web_config_file", metavar="FILE",
                     help="exporter-toolkit web config (TLS, basic auth)")
    _add_shard(run)
    _add_logging(run)

    once = sub.add_parser("once", help="poll every target once and print the exposition text")
    _add_config(once)
    once.add_argument("--target", metavar="NAME", help="only this target group (or host)")
    _add_shard(once)
    _add_logging(once)

    check = sub.add_parser("check-config", help="validate a configuration file")
    _add_config(check)
    check.add_argument("--syntax-only", action="store_true",
                       help="do not require the files the config refers to (keys, hosts files) to exist here")

    sub.add_parser("config-schema", help="print the JSON Schema of the configuration (for editors)")
    docs = sub.add_parser("config-docs", help="regenerate docs/configuration.md's collector row from the registry")
    mode = docs.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="MD", help="regenerate the row in place")
    mode.add_argument("--check", metavar="MD", help="exit 1 (with a diff) if the row is not current")

    cat = sub.add_parser("catalog", help="print the metric catalog")
    cat.add_argument("--format", choices=["markdown", "json"], default="markdown")

    sub.add_parser("lab", help="run a simulated IB + RoCE fabric on 127.0.0.1 with the daemon polling it",
                   add_arguments=_lab_arguments)

    sub.add_parser("report", help="a RoCE-vs-InfiniBand POC report (HTML + JSON) from Prometheus",
                         description="Read a window from Prometheus and write DIR/index.html (plots inline) and "
                                     "DIR/summary.json: throughput, tail latency, congestion recovery, stability "
                                     "and data completeness per fabric, side by side. See docs/poc.md.",
                         add_arguments=_report_arguments)

    gen = sub.add_parser("generate", help="generate Grafana dashboards and Prometheus rules")
    gen.add_argument("--out", metavar="DIR", help="directory to write alerts/ and dashboards/ into")
    gen.add_argument("--settings", metavar="FILE", help="YAML overrides of the mixin settings")
    gen.add_argument("--print-defaults", action="store_true",
                     help="print the default settings as a commented YAML file and exit")
    return parser


def cmd_check_config(args) -> int:
    from .collectors import registry
    from .config.loader import load_config
    from .config.model import ConfigError

    try:
        config = load_config(args.config, options_parsers=registry(), check_files=not args.syntax_only)
    except ConfigError as e:
        print(f"{args.config}: {len(e.problems)} problem(s):", file=sys.stderr)
        for p in e.problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    print(f"{args.config}: OK, {len(config.targets)} target group(s)")
    for line in config.summary_lines():
        print(f"  {line}")
    return 0


def cmd_config_schema(args) -> int:
    from .collectors import registry
    from .config.schema import render

    sys.stdout.write(render(registry()))
    return 0


def cmd_config_docs(args) -> int:
    from pathlib import Path

    from .config import docs
    from .ssh_guard import builtin_collectors

    return docs.update(Path(args.write or args.check), builtin_collectors(), write=args.write is not None)


def cmd_catalog(args) -> int:
    from . import catalog

    sys.stdout.write(catalog.to_json() if args.format == "json" else catalog.to_markdown())
    return 0


def _only_target(config, name: str):
    """The config reduced to one group (by group name) or one host (by host name)."""
    from dataclasses import replace

    groups = []
    for g in config.targets:
        if g.name == name:
            groups.append(g)
        elif any(h.name == name for h in g.hosts):
            groups.append(replace(g, hosts=tuple(h for h in g.hosts if h.name == name)))
    return replace(config, targets=tuple(groups))


async def _once(args) -> int:
    from .collectors import registry
    from .config.loader import load_config
    from .config.model import ConfigError
    from .scheduler import Scheduler
    from .serving.selfmetrics import ReloadStatus, SelfMetrics
    from .serving.store import SnapshotStore
    from .transport.factory import Transports

    try:
        config = load_config(args.config, options_parsers=registry())
    except ConfigError as e:
        for p in e.problems:
            print(f"config: {p}", file=sys.stderr)
        return 2
    if args.target:
        config = _only_target(config, args.target)
        if not config.targets:
            print(f"no target group or host named {args.target!r}", file=sys.stderr)
            return 2
    store, transports = SnapshotStore(), Transports()
    status = ReloadStatus()
    status.record(True)
    self_metrics = SelfMetrics(status)
    scheduler = Scheduler(transports, store, shard=args.shard, self_metrics=self_metrics)
    scheduler.apply(config, start_tasks=False)
    try:
        states = await scheduler.poll_all_once()
    finally:
        await transports.close()
    sys.stdout.buffer.write(store.render() + self_metrics.render())
    failed = 0
    for s in states:
        if s.state == "failed":
            failed += 1
            print(f"{s.group}/{s.host}: FAILED ({s.errors.most_common(1)[0][0]}): {s.last_error}", file=sys.stderr)
        elif s.state == "partial":
            print(f"{s.group}/{s.host}: partial data: {s.last_error}", file=sys.stderr)
    return 1 if failed else 0


def cmd_generate(args) -> int:
    try:
        from .mixin.generate import main as generate_main
    except ModuleNotFoundError:
        print("the dashboard/alert generator is not installed in this build", file=sys.stderr)
        return 2
    argv = ((["--out", args.out] if args.out else []) + (["--settings", args.settings] if args.settings else [])
            + (["--print-defaults"] if args.print_defaults else []))
    return generate_main(argv)


def cmd_report(args) -> int:
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        print("fabric-exporter report needs matplotlib: pip install 'fabric-exporter[report]'", file=sys.stderr)
        return 2
    from .report.main import main as report_main

    return report_main(args)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "check-config":
        return cmd_check_config(args)
    if args.command == "catalog":
        return cmd_catalog(args)
    if args.command == "config-schema":
        return cmd_config_schema(args)
    if args.command == "config-docs":
        return cmd_config_docs(args)
    if args.command == "generate":
        return cmd_generate(args)
    if args.command == "report":
        return cmd_report(args)
    if args.command == "lab":
        from .lab.run import main as lab_main

        return lab_main(args)

    from .logsetup import setup_logging

    setup_logging(args.log_level, args.log_format)
    if args.command == "once":
        return asyncio.run(_once(args))
    if args.command == "run":
        from .daemon import Daemon

        daemon = Daemon(args.config, listen_address=args.listen_address, web_config_file=args.web_config_file,
                        shard=args.shard)
        return asyncio.run(daemon.run())
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
