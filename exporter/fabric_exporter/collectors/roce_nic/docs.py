"""The per-vendor raw-name -> metric tables of docs/collectors/roce_nic.md, generated from the catalog rows."""

from __future__ import annotations

from ...catalog.roce_nic import ETHTOOL, HW_COUNTERS
from ...catalog.spec import CAPTURES
from ...mapping import rows_of

SECTIONS = ((ETHTOOL, "From `ethtool -S <netdev>`"),
            (HW_COUNTERS, "From the RDMA hardware counters (sysfs `hw_counters/*` or `rdma statistic show`)"))


def mapping_table_markdown() -> str:
    """One table per source and vendor: raw counter, metric, the label its capture becomes, notes (unit
    scale, driver families, which earlier row of the same metric it falls back from)."""
    out = []
    for source, title in SECTIONS:
        rows = rows_of(source)
        out += [f"### {title}", ""]
        for vendor in dict.fromkeys(row.vendor for _m, row in rows):
            out += [f"#### {vendor}", "", "| raw counter | metric | extra label | note |", "|---|---|---|---|"]
            for metric, row in rows:
                if row.vendor != vendor:
                    continue
                extra = ", ".join(label for key, (label, _rx) in CAPTURES.items() if "{" + key + "}" in row.name)
                notes = []
                if row.scale != 1:
                    notes.append("µs → s")
                if row.families:
                    notes.append(f"{'/'.join(sorted(row.families))} driver only")
                earlier = []
                for other_metric, other in rows:  # this vendor's rows of the metric declared before this one
                    if other is row:
                        break
                    if other_metric == metric and other.vendor == vendor:
                        earlier.append(f"`{other.name}`")
                if earlier:
                    notes.append("used when " + ", ".join(earlier) + " is absent")
                out.append(f"| `{row.name}` | `{metric}` | {extra} | {'; '.join(notes)} |")
            out.append("")
    return "\n".join(out)
