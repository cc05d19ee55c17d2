"""The five dashboards, built from the settings with our panel factory (``panels.py``): one module per
dashboard, each a list of small builders, one per row.

Congestion, error and latency panels read the recording rules in ``rules/`` (so a panel shows
exactly what an alert evaluates); throughput panels compute their own rates with
``$__rate_interval``. Every panel filters by ``$fabric`` and the dashboard's own variables, and every
host and port panel by the selected job's hosts (``job_views.py``: the ``cluster``, ``job`` and hidden
``job_hosts`` variables every dashboard carries; "All" shows everything).
"""

from __future__ import annotations

from ..settings import Settings
from .exporter import exporter
from .infiniband import infiniband
from .latency import latency
from .overview import overview
from .roce import roce

BUILDERS = {"overview": overview, "infiniband": infiniband, "roce": roce, "latency": latency,
            "exporter": exporter}


def build_all(s: Settings) -> dict[str, dict]:
    """File stem -> dashboard JSON."""
    return {f"fabric-{name}": build(s) for name, build in BUILDERS.items()}
