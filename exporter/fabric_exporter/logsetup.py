"""One structured line per event, as text (logfmt-like) or JSON, with target and collector fields."""

from __future__ import annotations

import json
import logging
import sys
import time

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None)))


def _fields(record: logging.LogRecord) -> dict:
    fields = dict(getattr(record, "fields", {}) or {})
    for k, v in vars(record).items():
        if k not in _STANDARD and k not in ("fields", "message", "asctime"):
            fields[k] = v
    return fields


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        parts = [f"ts={ts}", f"level={record.levelname.lower()}", f"logger={record.name}",
                 f"msg={_quote(record.getMessage())}"]
        parts += [f"{k}={_quote(v)}" for k, v in _fields(record).items()]
        if record.exc_info:
            parts.append(f"exc={_quote(self.formatException(record.exc_info))}")
        return " ".join(parts)


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": record.created, "level": record.levelname.lower(), "logger": record.name,
               "msg": record.getMessage(), **_fields(record)}
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def _quote(value) -> str:
    text = value if isinstance(value, str) else (f"{value:.6g}" if isinstance(value, float) else str(value))
    if text == "" or any(c in text for c in ' "=\n\t'):
        return json.dumps(text)
    return text


def setup_logging(level: str = "info", fmt: str = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # asyncssh logs every channel at INFO: keep it for debugging only.
    logging.getLogger("asyncssh").setLevel(logging.WARNING if level.lower() != "debug" else logging.DEBUG)
