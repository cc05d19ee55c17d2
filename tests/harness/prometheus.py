"""The tests use the lab's Prometheus/Alertmanager/webhook helpers (one implementation)."""

from fabric_exporter.lab.prometheus import (  # noqa: F401
    ALERTMANAGER,
    PROMETHEUS,
    Alertmanager,
    Prometheus,
    WebhookReceiver,
    free_port,
    wait_until,
)
