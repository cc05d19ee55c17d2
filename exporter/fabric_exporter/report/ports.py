"""Ports named the way an operator names them: the node and its port, not every label of the series.

- InfiniBand port (``node_name``, ``port``): ``leaf-01 port 12`` (the node GUID when the node has no name);
- RoCE NIC port (``host``, ``device``, ``port``): ``gpu-001 mlx5_0/1``;
- switch interface (``switch``, ``interface``): ``leaf-r1 Ethernet8``.

Anything else falls back to its identifying labels, so a series is never nameless. Pure.
"""

from __future__ import annotations

_SCRAPE_LABELS = ("__name__", "job", "instance", "fabric")


def port_name(labels: dict) -> str:
    if labels.get("host") and labels.get("device"):
        return f"{labels['host']} {labels['device']}/{labels.get('port') or '?'}"
    if labels.get("switch") and labels.get("interface"):
        return f"{labels['switch']} {labels['interface']}"
    node = labels.get("node_name") or labels.get("node_guid")
    if node and labels.get("port"):
        return f"{node} port {labels['port']}"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in _SCRAPE_LABELS and v) or "?"
