"""A small client of Prometheus's HTTP API (stdlib only): instant and range queries, rule groups.

Every failure becomes a ``ReportError`` whose message says what to do: an unreachable server, an
HTTP error, or a query Prometheus rejected (with its own error text).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass


class ReportError(Exception):
    """A problem the user can fix; the command prints it and exits 2."""


@dataclass(frozen=True)
class Series:
    labels: dict
    samples: list[tuple[float, float]]


class PrometheusClient:
    def __init__(self, base_url: str, timeout: float = 60.0):
        if not base_url.startswith(("http://", "https://")):
            raise ReportError(f"--prometheus-url must start with http:// or https://, got {base_url!r}")
        self.base = base_url.rstrip("/")
        self.timeout = timeout
        self.queries = 0

    def _get(self, path: str, params: dict | None = None) -> dict:
        url = f"{self.base}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        self.queries += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = json.loads(response.read())
        except urllib.error.HTTPError as e:
            try:
                detail = json.loads(e.read()).get("error", "")
            except (ValueError, OSError):
                detail = ""
            if e.code == 400 and detail:
                raise ReportError(f"Prometheus at {self.base} rejected a query: {detail}") from None
            raise ReportError(f"Prometheus at {self.base} answered {path} with HTTP {e.code} {e.reason}"
                              + (f": {detail}" if detail else "")) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ReportError(f"cannot reach Prometheus at {self.base} ({reason}); check --prometheus-url "
                              "and that Prometheus is running") from None
        except ValueError:
            raise ReportError(f"{url} did not answer with JSON: is {self.base} a Prometheus server?") from None
        if payload.get("status") != "success":
            raise ReportError(f"Prometheus at {self.base}: {payload.get('errorType', '')} {payload.get('error', '')}")
        return payload["data"]

    def query(self, expr: str, at: float) -> list[Series]:
        data = self._get("/api/v1/query", {"query": expr, "time": f"{at:.3f}"})
        if data["resultType"] == "scalar":
            return [Series({}, [(float(data["result"][0]), float(data["result"][1]))])]
        return [Series(r["metric"], [(float(r["value"][0]), float(r["value"][1]))]) for r in data["result"]]

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        data = self._get("/api/v1/query_range",
                         {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"})
        return [Series(r["metric"], [(float(t), float(v)) for t, v in r["values"]]) for r in data["result"]]

    def rule_groups(self) -> list[dict]:
        return self._get("/api/v1/rules", {"type": "record"}).get("groups", [])
