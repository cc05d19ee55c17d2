"""A hostile Prometheus HTTP API on 127.0.0.1: answers like a small, healthy Prometheus (one fabric,
the congestion rule group, a vector per instant query, a matrix per range query) except at one
endpoint, where it answers in the scripted ``mode``: a malformed shape, a trickle, a huge or cut-short
body, deep nesting, non-finite samples. Any client of Prometheus's API (the report) meets it in tests.

    with HostilePrometheus("trickle") as prom:
        run_report(prom.url)

``MODES`` names every mode with the endpoint it hits; ``SHAPE_MODES`` are the ones a client must
refuse with a clear error (``nan_samples`` is valid data a client must survive).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from fabric_exporter.mixin.settings import Settings, recorded_labels
from fabric_exporter.mixin.rules.congestion import CONGESTION_GROUP, SETTINGS_INFO

FABRIC = "f1"
TRICKLE_SECONDS = 2.0  # one byte this often
HUGE_BYTES = 100 * 1024 * 1024
DEEP = 100_000

# mode -> the endpoint it answers hostile (the others answer healthy)
MODES = {
    "json_list": "rules",        # 200, body `[]`
    "no_data": "rules",          # {"status": "success"} without data
    "data_not_object": "rules",  # data is a string
    "groups_not_list": "rules",  # data.groups is a number
    "string_result": "query",    # data.result is "abc"
    "value_abc": "query",        # a sample value "abc"
    "metric_not_object": "query",  # a series' labels are a list
    "wrong_result_type": "query_range",  # resultType vector where a matrix is due
    "values_not_pairs": "query_range",   # values [[1]]
    "deep_nesting": "rules",     # 100,000 nested arrays
    "deep_in_result": "query",   # 100,000 nested arrays where a label value is due
    "not_json": "rules",         # HTML
    "invalid_utf8": "rules",     # bytes that are not UTF-8
    "cut_short": "rules",        # Content-Length 10,000, 100 bytes, then close
    "cut_short_chunked": "query",  # a chunked body that stops inside a chunk
    "trickle": "rules",          # headers, then one byte every 2 s
    "trickle_headers": "rules",  # the status line, then a header one byte every 2 s
    "silent": "rules",           # accepts, never answers
    "huge": "query_range",       # a valid 100 MB matrix, its Content-Length announced
    "huge_unannounced": "query_range",  # the same without Content-Length (read until the server closes)
    "nan_samples": "query_range",  # NaN, +Inf, -Inf sample values (valid JSON, valid API)
}
SHAPE_MODES = [m for m in MODES if m != "nan_samples"]


def send_body(handler: BaseHTTPRequestHandler, body: bytes, code: int = 200,
              content_type: str = "application/json") -> None:
    """A whole answer with its Content-Length (what a well-behaved server sends)."""
    handler.send_response(code)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _rules() -> dict:
    # the healthy rules record the default settings, as generated rules do, so the report goes on
    # to the endpoint a mode answers hostile
    settings_rule = {"name": SETTINGS_INFO, "type": "recording", "query": "vector(1)",
                     "labels": recorded_labels(Settings())}
    return {"status": "success", "data": {"groups": [
        {"name": CONGESTION_GROUP, "file": "rules.yaml", "interval": 15, "rules": [settings_rule]}]}}


def _vector(at: float) -> dict:
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"fabric": FABRIC, "collector": "roce_nic"}, "value": [at, "1"]}]}}


def _matrix(start: float, end: float, step: float) -> dict:
    n = min(int((end - start) / step) + 1, 11_000)
    return {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"fabric": FABRIC, "host": "h1"}, "values": [[start + i * step, "1"] for i in range(n)]}]}}


class HostilePrometheus:
    def __init__(self, mode: str):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}: one of {', '.join(MODES)}")
        self.mode, self.where = mode, MODES[mode]
        self.requests: list[str] = []
        self.stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 (http.server naming)
                url = urlsplit(self.path)
                params = {k: v[0] for k, v in parse_qs(url.query).items()}
                endpoint = url.path.rsplit("/", 1)[-1]
                server.requests.append(endpoint)
                try:
                    if endpoint == server.where:
                        server._hostile(self, params)
                    else:
                        self._json(server._healthy(endpoint, params))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up: what a bounded client does

            def _json(self, payload, code=200):
                self._send(json.dumps(payload).encode(), code)

            def _send(self, body: bytes, code=200, content_type="application/json"):
                send_body(self, body, code, content_type)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="hostile-prometheus", daemon=True)

    # -- answers -----------------------------------------------------------------------------------

    def _healthy(self, endpoint: str, params: dict) -> dict:
        if endpoint == "rules":
            return _rules()
        if endpoint == "query":
            return _vector(float(params.get("time", time.time())))
        if endpoint == "query_range":
            return _matrix(float(params["start"]), float(params["end"]), float(params["step"]))
        return {"status": "error", "errorType": "not_found", "error": f"no endpoint {endpoint}"}

    def _hostile(self, h: BaseHTTPRequestHandler, params: dict) -> None:
        m = self.mode
        healthy = self._healthy(self.where, params)
        if m == "json_list":
            h._json([])
        elif m == "no_data":
            h._json({"status": "success"})
        elif m == "data_not_object":
            h._json({"status": "success", "data": "groups"})
        elif m == "groups_not_list":
            h._json({"status": "success", "data": {"groups": 7}})
        elif m == "string_result":
            h._json({"status": "success", "data": {"resultType": "vector", "result": "abc"}})
        elif m == "value_abc":
            healthy["data"]["result"][0]["value"][1] = "abc"
            h._json(healthy)
        elif m == "metric_not_object":
            healthy["data"]["result"][0]["metric"] = ["fabric", FABRIC]
            h._json(healthy)
        elif m == "wrong_result_type":
            h._json(_vector(float(params["end"])))
        elif m == "values_not_pairs":
            healthy["data"]["result"][0]["values"] = [[1]]
            h._json(healthy)
        elif m == "deep_nesting":
            h._send(b"[" * DEEP + b"]" * DEEP)
        elif m == "deep_in_result":
            text = json.dumps(healthy).replace(f'"{FABRIC}"', "[" * DEEP + "]" * DEEP, 1)
            h._send(text.encode())
        elif m == "not_json":
            h._send(b"<html><body>not prometheus</body></html>", content_type="text/html")
        elif m == "invalid_utf8":
            h._send(b'{"status": "success", "data": {"groups": ["\xff\xfe"]}}')
        elif m == "cut_short":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", "10000")
            h.end_headers()
            h.wfile.write(json.dumps(healthy).encode()[:100])
            h.close_connection = True
        elif m == "cut_short_chunked":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            h.wfile.write(b"1000\r\n" + json.dumps(healthy).encode()[:50])
            h.close_connection = True
        elif m == "trickle":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", "100000")
            h.end_headers()
            h.wfile.flush()
            while not self.stopping.wait(TRICKLE_SECONDS):
                h.wfile.write(b" ")
                h.wfile.flush()
        elif m == "trickle_headers":
            h.wfile.write(b"HTTP/1.1 200 OK\r\n")
            h.wfile.flush()
            while not self.stopping.wait(TRICKLE_SECONDS):
                h.wfile.write(b"X")
                h.wfile.flush()
        elif m == "silent":
            self.stopping.wait(600)
        elif m in ("huge", "huge_unannounced"):
            self._huge(h, params, announce=m == "huge")
        elif m == "nan_samples":
            values = healthy["data"]["result"][0]["values"]
            for i, special in enumerate(("NaN", "+Inf", "-Inf")):
                if i < len(values):
                    values[i][1] = special
            h._json(healthy)
        else:  # pragma: no cover - MODES and this switch are kept together
            raise AssertionError(m)

    def _huge(self, h: BaseHTTPRequestHandler, params: dict, announce: bool) -> None:
        """A valid matrix of about HUGE_BYTES, streamed in chunks, its length announced or not."""
        head = b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"fabric":"f1"},"values":['
        tail = b"]}]}}"
        start = float(params["start"])
        point = b'[%.3f,"1"],' % start
        n = (HUGE_BYTES - len(head) - len(tail)) // len(point)
        body_len = len(head) + n * len(point) - 1 + len(tail)  # the last point has no comma
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if announce:
            h.send_header("Content-Length", str(body_len))
        else:
            h.send_header("Connection", "close")
            h.close_connection = True
        h.end_headers()
        h.wfile.write(head)
        block = point * 10_000
        sent = 0
        while sent + 10_000 < n:
            if self.stopping.is_set():
                return
            h.wfile.write(block)
            sent += 10_000
        h.wfile.write(point * (n - sent - 1) + point[:-1] + tail)

    # -- lifetime ----------------------------------------------------------------------------------

    def __enter__(self) -> HostilePrometheus:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


# -- running the report against it ------------------------------------------------------------------

class Run:
    """One finished CLI run: exit status, stderr, wall seconds, peak RSS (MB) of that process alone."""

    def __init__(self, returncode: int, stderr: str, seconds: float, peak_rss_mb: float):
        self.returncode, self.stderr, self.seconds, self.peak_rss_mb = returncode, stderr, seconds, peak_rss_mb

    def __repr__(self) -> str:
        return (f"Run(exit={self.returncode}, {self.seconds:.1f} s, peak RSS {self.peak_rss_mb:.0f} MB, "
                f"stderr={self.stderr[-300:]!r})")


# Runs the module the argv names and, on the way out, writes its own VmHWM. ru_maxrss from wait4 is
# not that: Linux carries the pre-exec high-water mark across execve, so a child forked from a large
# pytest process would report pytest's size.
_PEAK_WRAPPER = """
import os, runpy, sys
module, out = sys.argv[1], sys.argv[2]
sys.argv = [module] + sys.argv[3:]
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
finally:
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(out, "w") as f:
        f.write(peak)
"""


def run_measured(argv: list[str], *, env: dict, cwd: str, kill_after: float) -> Run:
    """Run ``argv`` (``python -m MODULE ...``), killing it after ``kill_after`` s; the peak RSS is the
    child's own VmHWM (a killed child: wait4's ru_maxrss, an upper bound)."""
    import os
    import signal
    import subprocess
    import tempfile

    if argv[1] != "-m":
        raise ValueError("run_measured runs `python -m MODULE ...`")
    with tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as tmp:
        peak_file = os.path.join(tmp, "vmhwm-kb")
        wrapped = [argv[0], "-c", _PEAK_WRAPPER, argv[2], peak_file, *argv[3:]]
        started = time.monotonic()
        proc = subprocess.Popen(wrapped, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err)
        killer = threading.Timer(kill_after, lambda: os.kill(proc.pid, signal.SIGKILL))
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)  # so Popen does not wait again
        seconds = time.monotonic() - started
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        try:
            peak_kb = float(open(peak_file).read())
        except (OSError, ValueError):
            peak_kb = usage.ru_maxrss
    return Run(proc.returncode, stderr, seconds, peak_kb / 1024)
