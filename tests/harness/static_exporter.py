"""A scrape target on 127.0.0.1 that serves exposition text computed from the clock, for feeding a
real Prometheus series the test chooses (label values of any shape, counters growing at known rates)
without the whole lab.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .hostile_prometheus import send_body


def escape_label_value(value: str) -> str:
    """The text exposition format's escaping of a label value (backslash, double quote, newline)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def sample_line(name: str, labels: dict[str, str], value: float) -> str:
    text = ",".join(f'{k}="{escape_label_value(v)}"' for k, v in sorted(labels.items()))
    return f"{name}{{{text}}} {value!r}\n"


class StaticExporter:
    """Serves ``render(seconds since start)`` at /metrics; ``url`` is the scrape target host:port."""

    def __init__(self, render: Callable[[float], str]):
        self.started = time.time()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server naming)
                send_body(self, render(time.time() - exporter.started).encode(),
                          content_type="text/plain; version=0.0.4")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.target = f"127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="static-exporter", daemon=True)

    def __enter__(self) -> StaticExporter:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)
