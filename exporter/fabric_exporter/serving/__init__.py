"""Serving: snapshots in, bytes out. Each poll's samples are rendered once, when the poll lands, into
per-family Prometheus text (``exposition``) and kept with raw deflate pieces (``gzipstream``) in one
immutable snapshot per target (``store``), beside the daemon's own metrics (``selfmetrics``); the
HTTP side (``web``) answers ``/metrics`` by joining those cached bytes, plain or gzip, and never
renders, polls or does I/O of its own.
"""
