"""A small client of Prometheus's HTTP API (stdlib only): instant and range queries, rule groups.

Every failure becomes a ``ReportError`` whose message says what to do: an unreachable server, an
HTTP error, a query Prometheus rejected (with its own error text), an answer of the wrong shape
(``payload.py`` checks every one before use), too slow or too large.

Bounded whatever the server does: each request has a deadline for the whole exchange (connect,
headers, body: a server trickling a byte at a time is cut when it passes, not when one read stalls),
capped by the run's overall deadline; each body is read in chunks and refused past
``max_response_bytes``; once one request failed the others stop instead of starting new ones.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.parse

from . import payload
from .payload import Series  # noqa: F401  (collect imports it from here)

DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
_ERROR_BODY_BYTES = 64 * 1024  # enough for Prometheus's error text
_CHUNK = 64 * 1024


class ReportError(Exception):
    """A problem the user can fix; the command prints it and exits 2."""


class PrometheusClient:
    def __init__(self, base_url: str, timeout: float = 60.0, *, deadline: float | None = None,
                 max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES):
        """``timeout``: seconds per request, whole exchange; ``deadline``: time.monotonic() by which
        every request of the run must be over (None: no overall deadline)."""
        if not base_url.startswith(("http://", "https://")):
            raise ReportError(f"--prometheus-url must start with http:// or https://, got {base_url!r}")
        self.base = base_url.rstrip("/")
        url = urllib.parse.urlsplit(self.base)
        try:
            self._host, self._port = url.hostname, url.port
        except ValueError as e:
            raise ReportError(f"--prometheus-url {base_url!r}: {e}") from None
        if not self._host:
            raise ReportError(f"--prometheus-url {base_url!r} names no host")
        self._https = url.scheme == "https"
        self._prefix = url.path
        self.timeout = timeout
        self.deadline = deadline
        self.max_response_bytes = max_response_bytes
        self.queries = 0
        self.non_finite_samples = 0  # NaN/±Inf sample values left out (payload.py)
        self._lock = threading.Lock()
        self._failed: ReportError | None = None

    # -- one request -------------------------------------------------------------------------------

    def _budget(self) -> tuple[float, str]:
        """Seconds this request may take, and which limit that is (for the error message)."""
        if self.deadline is None:
            return self.timeout, f"--timeout {self.timeout:g} s"
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ReportError("the report ran past its overall deadline (--deadline) waiting for Prometheus at "
                              f"{self.base}: a shorter window, fewer fabrics or a longer --deadline")
        if left < self.timeout:
            return left, "the report's overall deadline (--deadline)"
        return self.timeout, f"--timeout {self.timeout:g} s"

    def _fetch(self, path: str, params: dict) -> tuple[int, str, bytes]:
        """(HTTP status, reason, body) of one GET, within the budget and the byte cap."""
        budget, limit = self._budget()
        target = f"{self._prefix}{path}?{urllib.parse.urlencode(params)}"
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=budget)
        expired = threading.Event()

        def cut():  # wakes a read that is blocked or being fed a byte at a time
            expired.set()
            if conn.sock is not None:
                try:
                    conn.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        timer = threading.Timer(budget, cut)
        timer.daemon = True
        timer.start()
        try:
            conn.request("GET", target, headers={"Accept": "application/json", "Accept-Encoding": "identity"})
            response = conn.getresponse()
            cap = self.max_response_bytes if response.status == 200 else _ERROR_BODY_BYTES
            body = self._read(response, cap, path, expired)
            return response.status, response.reason, body
        except (TimeoutError, http.client.HTTPException, OSError) as e:
            if expired.is_set() or isinstance(e, TimeoutError):
                raise ReportError(f"Prometheus at {self.base} did not finish answering {path} within "
                                  f"{budget:.3g} s ({limit})") from None
            if isinstance(e, http.client.HTTPException):
                raise ReportError(f"Prometheus at {self.base} broke off its answer to {path} "
                                  f"({type(e).__name__}): is it restarting, or is something between us cutting "
                                  "answers?") from None
            reason = getattr(e, "reason", None) or e.strerror or e
            raise ReportError(f"cannot reach Prometheus at {self.base} ({reason}); check --prometheus-url "
                              "and that Prometheus is running") from None
        finally:
            timer.cancel()
            conn.close()

    def _read(self, response: http.client.HTTPResponse, cap: int, path: str, expired: threading.Event) -> bytes:
        declared = response.getheader("Content-Length")
        declared_n = int(declared) if declared and declared.isdigit() else None
        if declared_n is not None and declared_n > cap:
            raise self._too_large(path, cap, f"it announces {declared_n:,} bytes")
        body = bytearray()
        while chunk := response.read1(_CHUNK):
            body += chunk
            if len(body) > cap:
                raise self._too_large(path, cap, "it kept coming")
        if expired.is_set():
            raise TimeoutError
        if declared_n is not None and len(body) != declared_n:
            raise http.client.IncompleteRead(bytes(body[:0]), declared_n - len(body))
        return bytes(body)

    def _too_large(self, path: str, cap: int, how: str) -> ReportError:
        return ReportError(f"Prometheus's answer to {path} is larger than the {cap:,}-byte cap ({how}; "
                           "--max-response-bytes): a shorter window or a coarser --step makes it smaller")

    def _get(self, path: str, params: dict) -> dict:
        """The ``data`` object of a successful answer; ReportError for anything else."""
        with self._lock:
            if self._failed is not None:  # another request already failed: do not start new ones
                raise self._failed
            self.queries += 1
        try:
            return self._get_once(path, params)
        except ReportError as e:
            with self._lock:
                self._failed = self._failed or e
            raise

    def _get_once(self, path: str, params: dict) -> dict:
        status, reason, body = self._fetch(path, params)
        try:
            decoded = json.loads(body)
        except RecursionError:
            raise ReportError(f"Prometheus at {self.base} answered {path} with JSON nested too deeply to be "
                              "an API answer") from None
        except ValueError:  # also bad UTF-8
            decoded = None
            if status == 200:
                raise ReportError(f"{self.base}{path} did not answer with JSON: is {self.base} a Prometheus "
                                  "server?") from None
        if status != 200:
            detail = decoded.get("error", "") if isinstance(decoded, dict) else ""
            detail = str(detail)[:500]
            if status == 400 and detail:
                raise ReportError(f"Prometheus at {self.base} rejected a query: {detail}")
            raise ReportError(f"Prometheus at {self.base} answered {path} with HTTP {status} {reason}"
                              + (f": {detail}" if detail else ""))
        try:
            return payload.data_of(decoded)
        except payload.ErrorAnswer as e:
            raise ReportError(f"Prometheus at {self.base} answered {path} with an error: {e}") from None
        except payload.PayloadError as e:
            raise ReportError(self._shape_error(path, e)) from None

    def _shape_error(self, path: str, e: payload.PayloadError) -> str:
        return f"Prometheus at {self.base} answered {path} in a shape its API does not have: {e}"

    def _parse(self, path: str, parse, data: dict):
        try:
            parsed = parse(data)
        except payload.PayloadError as e:
            raise ReportError(self._shape_error(path, e)) from None
        except RecursionError:
            raise ReportError(f"Prometheus at {self.base} answered {path} with data nested too deeply") from None
        if getattr(parsed, "non_finite", 0):
            with self._lock:
                self.non_finite_samples += parsed.non_finite
        return parsed

    # -- the API -----------------------------------------------------------------------------------

    def query(self, expr: str, at: float) -> list[Series]:
        path = "/api/v1/query"
        return self._parse(path, payload.instant, self._get(path, {"query": expr, "time": f"{at:.3f}"})).series

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        path = "/api/v1/query_range"
        data = self._get(path, {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"})
        return self._parse(path, payload.range_, data).series

    def rule_groups(self) -> list[dict]:
        path = "/api/v1/rules"
        return self._parse(path, payload.rule_groups, self._get(path, {"type": "record"}))
