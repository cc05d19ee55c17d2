"""The tests use the lab's Prometheus/Alertmanager/webhook helpers (one implementation)."""

from fabric_exporter.lab.prometheus import (  # noqa: F401
    ALERTMANAGER,
    PROMETHEUS,
    Alertmanager,
    Prometheus,
    WebhookReceiver,
    wait_until,
)
from fabric_exporter.lab.ports import free_tcp_port as free_port
from tests.harness.lanes import starts_processes


@starts_processes
def backfilled_prometheus(work, openmetrics: str, rule_files=()):
    """A real Prometheus whose TSDB holds ``openmetrics`` (text ending in ``# EOF``), written into
    ``work/data`` by ``promtool tsdb create-blocks-from openmetrics``; it scrapes nothing. Start it
    and stop it yourself (``.start()``, ``.stop()``); needs promtool and prometheus."""
    import subprocess
    from pathlib import Path

    from tests.conftest import require_tool

    promtool = require_tool("promtool")
    require_tool("prometheus")
    work = Path(work)
    (work / "data.om").write_text(openmetrics)
    r = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(work / "data.om"),
                        str(work / "data")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return Prometheus(work, job="nothing", targets=[f"127.0.0.1:{free_port()}"], rule_files=list(rule_files),
                      interval="1m")
