"""fabric-exporter: Prometheus telemetry for InfiniBand and RoCE fabrics of AI clusters."""

__version__ = "0.1.0"
