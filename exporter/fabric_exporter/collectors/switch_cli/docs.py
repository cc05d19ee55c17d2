"""docs/collectors/switch_cli.md's counters table (``python -m fabric_exporter.collectors.switch_cli.docs
--write|--check FILE``), made from the catalog rows by ``catalog.switch_commands.markdown``."""

from __future__ import annotations

from ... import generated
from ...catalog.switch_commands import DOC_BEGIN, DOC_END, markdown


def render(text: str) -> str:
    """``text`` with its generated counters table replaced by the current one."""
    return generated.replace_block(text, DOC_BEGIN, DOC_END, markdown())


def main(argv: list[str] | None = None) -> int:
    return generated.main(argv, "python -m fabric_exporter.collectors.switch_cli.docs",
                          "docs/collectors/switch_cli.md's counters table, from the catalog rows", "MD", render)


if __name__ == "__main__":
    raise SystemExit(main())
