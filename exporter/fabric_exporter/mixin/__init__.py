"""Generated monitoring: Prometheus recording/alert rules (with promtool tests) and Grafana dashboards."""
