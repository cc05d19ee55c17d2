"""Datagrams the fast SNMP path dropped, process-wide, by reason: published as the self-metric
``fabric_snmp_datagrams_dropped_total`` (serving/selfmetrics.py). A module of its own, free of imports, so the
self-metrics can read it without loading any SNMP code."""

from __future__ import annotations

#: wrong_source: not from the agent's address and port; undecodable: not a well-formed SNMP message;
#: rejected: well-formed but failing the version's checks (community, USM digest, time window,
#: decryption, security level); unmatched: answering no request in flight (late, duplicate, or never asked)
REASONS = ("wrong_source", "undecodable", "rejected", "unmatched")

DROPPED: dict[str, int] = dict.fromkeys(REASONS, 0)


def count(reason: str) -> None:
    DROPPED[reason] += 1
