"""The report's parts that need no Prometheus: window arguments, the HTTP client's errors (against a
loopback HTTP server), and plots that say so when a section has no data."""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from fabric_exporter.report.main import add_arguments, parse_time, resolve_window
from fabric_exporter.report.prom import PrometheusClient, ReportError


def args(*argv):
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(["--prometheus-url", "http://127.0.0.1:9", "--out", "x", *argv])


def test_window_from_since_and_from_to():
    assert resolve_window(args("--since", "6h"), now=100_000.0) == (100_000.0 - 21_600, 100_000.0)
    assert resolve_window(args("--from", "2026-11-30T10:00:00Z", "--to", "1796040000"), now=2e9) == \
        (parse_time("2026-11-30T10:00:00+00:00"), 1796040000.0)
    # a window reaching into the future ends now
    assert resolve_window(args("--from", "10", "--to", "500"), now=200.0) == (10.0, 200.0)


@pytest.mark.parametrize("argv, message", [
    (("--since", "6 hours"), "not a Prometheus duration"),
    (("--since", "6h", "--from", "1"), "either --since or --from/--to"),
    (("--from", "1",), "give the window"),
    (("--from", "5", "--to", "4"), "--to must be after --from"),
    (("--from", "yesterday", "--to", "4"), "neither an RFC 3339 time"),
])
def test_window_errors(argv, message):
    with pytest.raises(ReportError, match=message):
        resolve_window(args(*argv), now=1000.0)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        if "bad" in self.path:
            body, code = json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}), 400
        elif "html" in self.path:
            body, code = "<html>not prometheus</html>", 200
        else:
            body, code = "", 503
        self.send_response(code)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *a):
        pass


@pytest.fixture()
def server():
    srv = HTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()
    t.join(5)


def test_client_errors_say_what_happened(server):
    with pytest.raises(ReportError, match="rejected a query: parse error at char 3"):
        PrometheusClient(server + "/bad").query("up{", 0)
    with pytest.raises(ReportError, match="did not answer with JSON"):
        PrometheusClient(server + "/html").query("up", 0)
    with pytest.raises(ReportError, match="HTTP 503"):
        PrometheusClient(server).query("up", 0)
    with pytest.raises(ReportError, match="must start with http"):
        PrometheusClient("127.0.0.1:9090")


def test_empty_sections_are_drawn_as_no_data():
    from fabric_exporter.report import plots

    empty = {"throughput": {"host_tx": [], "hist": [0] * 10},
             "latency": {"p50": [], "p99": [], "p999": []},
             "congestion": {"severity": [], "ports": [], "episodes": []},
             "stability": {"errors": [], "loss": [], "down_times": [], "storm": []},
             "completeness": {"targets": []}}
    for key, _, draw in plots.SECTIONS:
        svg = draw(empty[key])
        assert svg.startswith("<svg") and "in this window" in svg, key


def test_plots_are_deterministic():
    from fabric_exporter.report import plots

    data = {"severity": [(1e9 + 10 * i, v) for i, v in enumerate([0.1, 2, 3, 0.5, 0.1])], "ports": [],
            "episodes": []}
    assert plots.congestion(data) == plots.congestion(data)


@pytest.mark.parametrize("kind,values,text", [
    ("gbps", [1094e9 / 8], "1094 Gb/s"),      # was "1.09e+03 Gb/s"
    ("gbps", [169.4e9 / 8], "169 Gb/s"),
    ("us3", [1.43e-6, 2.12e-6, 3450e-6], "1.43 / 2.12 / 3450 µs"),
    ("x", [1.4812], "1.48×"),
    ("pct", [0.123456], "12.3 %"),
    ("gbps", [None], "n/a"),
])
def test_summary_figures_read_without_exponents(kind, values, text):
    from fabric_exporter.report.page import _fmt

    assert _fmt(kind, values) == text


@pytest.mark.parametrize("value, literal, regex", [
    ("ib-lab", '"ib-lab"', '"ib-lab"'),
    ('a"b\\c', '"a\\"b\\\\c"', '"a\\"b\\\\\\\\c"'),
    ("x\ny\tz\x01", '"x\\ny\\tz\\x01"', '"x\\ny\\tz\\x01"'),
    ("a.b*", '"a.b*"', '"a\\\\.b\\\\*"'),
])
def test_quote_writes_promql_string_literals(value, literal, regex):
    """The exact text (Prometheus reading it back is tests/e2e/report/test_hostile_fabric_names.py)."""
    from fabric_exporter.promql import quote

    assert quote(value) == literal
    assert quote(value, regex=True) == regex


def test_quote_refuses_what_cannot_be_a_label_value():
    from fabric_exporter.promql import quote

    with pytest.raises(ValueError, match="not valid UTF-8"):
        quote("bad\udcff")
    with pytest.raises(TypeError):
        quote(3)
