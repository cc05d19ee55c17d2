"""The per-vendor raw-name -> metric tables of docs/collectors/roce_nic.md, generated."""

from __future__ import annotations

from .mapping import ETHTOOL_RULES, HW_RULES


def mapping_table_markdown() -> str:
    """The per-vendor raw-name -> metric tables of docs/collectors/roce_nic.md (a test keeps the doc equal)."""
    out = []
    for title, rules in (("From `ethtool -S <netdev>`", ETHTOOL_RULES),
                         ("From the RDMA hardware counters (sysfs `hw_counters/*` or `rdma statistic show`)", HW_RULES)):
        out += [f"### {title}", ""]
        vendors = list(dict.fromkeys(rule.vendor for rule in rules))
        for vendor in vendors:
            out += [f"#### {vendor}", "", "| raw counter | metric | extra label | note |", "|---|---|---|---|"]
            for rule in rules:
                if rule.vendor != vendor:
                    continue
                extra = "priority" if "{p}" in rule.pattern else ("queue" if "{q}" in rule.pattern else "")
                same = [r.pattern for r in ETHTOOL_RULES + HW_RULES if r.metric == rule.metric]
                notes = []
                if rule.scale != 1.0:
                    notes.append("µs → s")
                if rule.families:
                    notes.append(f"{'/'.join(sorted(rule.families))} driver only")
                if len(same) > 1 and same.index(rule.pattern) > 0:
                    earlier = [f"`{x}`" for x in same[:same.index(rule.pattern)]
                               if any(r.pattern == x and r.vendor == vendor for r in rules)]
                    if earlier:
                        notes.append("used when " + ", ".join(earlier) + " is absent")
                out.append(f"| `{rule.pattern}` | `{rule.metric}` | {extra} | {'; '.join(notes)} |")
            out.append("")
    return "\n".join(out)

