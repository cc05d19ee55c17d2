"""Where collectors find ``OptionReader``: the one validator's view of an ``options:`` mapping
(fabric_exporter/config/validator.py holds the rules, shared with the config's own keys)."""

from __future__ import annotations

from ..config.validator import ErrorSink, OptionReader

__all__ = ["ErrorSink", "OptionReader"]
