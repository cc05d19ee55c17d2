"""What every rule module builds on: the rule and scenario types, the test context ``Ctx`` and
formatting helpers. The domain modules (exporter, infiniband, roce, latency, congestion) build
their rules from these; ``rules/__init__.py`` assembles them."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

# Label names that identify a port in each domain, in the order a description names them: the
# catalog's label sets, so a rule names the labels its metrics really carry.
from ...catalog.infiniband import IB_PORT
from ...catalog.labels import NIC_PORT, SWITCH_IF, TARGET
from ...catalog.latency import GROUP_PAIR as LAT_GROUP_PAIR
from ...promql import quote
from ..settings import Settings, duration_seconds

INFO, WARNING, CRITICAL = "info", "warning", "critical"

# Example label values the test scenarios use.
EXAMPLE = {
    "fabric": "lab",
    "node_guid": "0x0002c90300000001", "node_name": "leaf-1", "port": "1",
    "peer_node_name": "spine-1", "peer_port": "7",
    "host": "gpu-01", "device": "mlx5_0", "netdev": "eth2",
    "switch": "leaf-1", "interface": "Ethernet8",
    "group": "ib-sm", "collector": "infiniband",
    "source_group": "rack-1", "destination_group": "rack-2", "tool": "ib_write_lat", "message_bytes": "2",
}


@dataclass(frozen=True)
class Recording:
    record: str
    expr: str
    # promql_expr_test: input series, eval minute, expected (labels dict, value) samples.
    test_series: tuple[tuple[str, str], ...] = ()
    test_at: int = 0  # in steps
    test_expect: tuple[tuple[dict, float], ...] = ()
    test_step: int = 1  # minutes
    labels: tuple[tuple[str, str], ...] = ()  # static labels the rule adds to what it records


@dataclass(frozen=True)
class Scenario:
    series: tuple[tuple[str, str], ...]
    onset: int  # first evaluation (in steps) at which the expression holds
    labels: dict  # labels of the firing alert besides alertname and severity
    step: int = 1  # minutes between samples and evaluations (60 for day-long scenarios)


@dataclass(frozen=True)
class AlertRule:
    alert: str
    severity: str
    expr: str
    for_: str
    summary: str
    description: str  # may use {{ $labels.<name> }} only, so tests can render it exactly
    runbook_url: str
    scenario: Scenario
    # Static label naming the part of the fabric the alert is about (routing, and it keeps the
    # per-source rules of one alert name distinct): exporter, infiniband, roce_nic, roce_switch, latency.
    component: str = ""
    extra_scenarios: tuple[Scenario, ...] = ()  # more ways the same rule fires, each tested

    def scenarios(self) -> tuple[Scenario, ...]:
        return (self.scenario,) + self.extra_scenarios


@dataclass
class RuleSet:
    testable: bool = True  # False: the settings' rate window cannot be unit-tested with 1m steps
    recording_groups: list[tuple[str, list[Recording]]] = field(default_factory=list)
    alert_groups: list[tuple[str, list[AlertRule]]] = field(default_factory=list)

    def recordings(self) -> list[Recording]:
        return [r for _, rs in self.recording_groups for r in rs]

    def alerts(self) -> list[AlertRule]:
        return [a for _, rs in self.alert_groups for a in rs]

    def alert_names(self) -> list[str]:
        return sorted({a.alert for a in self.alerts()})


# --- helpers -------------------------------------------------------------------------------------

def minutes(text: str) -> int:
    """A duration in whole test steps (1m), rounded up: promtool evaluates once a minute."""
    return math.ceil(duration_seconds(text) / 60)


def fmt(value: float) -> str:
    """A threshold as PromQL and humans read it: no trailing zeros, no exponent for ordinary values."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    text = f"{value:.12g}"
    return text


def pct(value: float) -> str:
    return f"{fmt(value * 100)}%"


def labels_text(labels: dict) -> str:
    return "{" + ", ".join(f"{k}={quote(v)}" for k, v in sorted(labels.items())) + "}"


class Ctx:
    """Settings plus the bits every rule builder needs."""

    def __init__(self, s: Settings):
        self.s = s
        self.w = s["rate_window"]
        self.w_min = duration_seconds(self.w) / 60
        # Labels the selector pins (job="..."): test series carry them, alerts keep them.
        self.base = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', s["selector"]))
        self.base.setdefault("instance", "fabric-exporter:9808")
        self.p = s["lossless_priority"]

    def sel(self, extra: str = "") -> str:
        return self.s.sel(extra)

    def series(self, name: str, label_names: tuple[str, ...], **extra: str) -> tuple[str, dict]:
        labels = {**self.base, **{k: EXAMPLE[k] for k in label_names if k not in extra}, **extra}
        return f"{name}{labels_text(labels)}", labels

    @property
    def testable(self) -> bool:
        """promtool scenarios step by 1m, so they need a rate window of whole minutes (>= 2m)."""
        return self.w_min == int(self.w_min) and self.w_min >= 2

    def window_steps(self) -> int:
        # With a sub-minute window (end-to-end tests) the rules are still built; their scenarios are
        # nominal and build_tests() refuses to write them.
        return int(self.w_min) if self.testable else 5

    def ramp(self, start: int, per_minute: float, length: int) -> str:
        """A counter flat at 0 until ``start``, then rising by ``per_minute`` each minute."""
        return f"0x{start - 1} {fmt(per_minute)}+{fmt(per_minute)}x{length - start}"

    def ramp_plan(self, start: int, threshold: float, cap: float | None = None) -> tuple[float, int]:
        """A full rate for a ramp scenario (about 3x the threshold, at most ``cap``) whose partial
        rates never land on the threshold, and the minute it first exceeds it."""
        factors = (3, 2.5, 3.7, 1.7, 4.3)
        candidates = [threshold * f if threshold > 0 else f for f in factors]
        if cap is not None:
            candidates = [min(cap, v) for v in candidates] + [cap * 0.97, cap * 0.93]
        for full in candidates:
            try:
                return full, self.ramp_onset(start, full, threshold)
            except ValueError:
                continue
        raise ValueError(f"no ramp scenario for threshold {threshold} (cap {cap})")

    def ramp_onset(self, start: int, full: float, threshold: float) -> int:
        """First minute a rate over rate_window of a ramp starting at ``start`` exceeds ``threshold``.

        With 1m samples and a window of w minutes whose edges fall on samples, the rate k minutes
        into the ramp is (k+1)/w of the full rate, exactly (no extrapolation)."""
        w = self.window_steps()
        for k in range(w):
            value = (k + 1) / w * full
            if abs(value - threshold) <= 1e-9 * max(1.0, abs(threshold)):
                raise ValueError(f"scenario value {value} equals threshold {threshold}: pick another")
            if value > threshold:
                return start + k
        raise ValueError(f"full value {full} never exceeds threshold {threshold}")

    def ramp_alert(self, name: str, threshold: str, cap: float | None = None) -> Ramp:
        """The recipe of a threshold alert on a rate: ``thresholds.<threshold>`` from the settings and
        a counter ramp starting just after the first full rate window (see ``ramp_plan``), long
        enough to cover the alert's onset, ``for:`` and a margin. ``Ramp.alert`` builds the rule."""
        thr = self.s[f"thresholds.{threshold}"]
        start = self.window_steps() + 2
        full, onset = self.ramp_plan(start, thr, cap)
        return Ramp(self, name, thr, start, full, onset, self.length(name, onset))

    def step(self, name: str, series: str, before: str, after: str, labels: dict) -> Scenario:
        """The recipe of an alert on a state: ``series`` reads ``before`` for ten minutes, then ``after``
        long enough to cover the alert's ``for:`` and a margin; the expression holds from minute 10."""
        return Scenario(((series, f"{before}x9 {after}x{minutes(self.s.for_(name)) + 10}"),), 10, labels)

    def link_downs(self, name: str, series: str, labels: dict) -> Scenario:
        """The recipe of a flapping alert on a link-down counter (its increase over 1h): an hour
        without downs, then one more at once than ``link_flaps_per_hour`` allows, held past ``for:``."""
        jump = math.floor(self.s["thresholds.link_flaps_per_hour"]) + 1
        return Scenario(((series, f"0x69 {jump}x{minutes(self.s.for_(name)) + 10}"),), 70, labels)

    def alert(self, name: str, severity: str, expr: str, summary: str, description: str,
              scenario: Scenario, extra: tuple[Scenario, ...] = ()) -> AlertRule:
        return AlertRule(name, severity, expr, self.s.for_(name), summary, description,
                         self.s.runbook_url(name), scenario, component_of(scenario.labels), extra)

    def length(self, name: str, onset: int) -> int:
        """Series length that covers the onset, the alert's for: and a margin."""
        return onset + minutes(self.s.for_(name)) + 5


@dataclass(frozen=True)
class Ramp:
    """A threshold alert planned by ``Ctx.ramp_alert``: alert ``name`` fires when its expression
    exceeds ``threshold``; in its scenario the counter rises at ``full`` (per unit) from ``start``,
    the expression first holds at ``onset`` and test series run for ``length`` steps."""
    c: Ctx
    name: str
    threshold: float
    start: int
    full: float
    onset: int
    length: int

    @property
    def value(self) -> str:
        """The threshold as the expression and descriptions print it."""
        return fmt(self.threshold)

    @property
    def percent(self) -> str:
        """The threshold of a ratio, as a percentage."""
        return pct(self.threshold)

    @property
    def for_(self) -> str:
        return self.c.s.for_(self.name)

    @property
    def window(self) -> str:
        """How descriptions name the rate window and the alert's ``for:``."""
        return f"over {self.c.w}, for {self.for_}"

    def alert(self, severity: str, measure: str, summary: str, description: str, scenario: Scenario,
              extra: tuple[Scenario, ...] = ()) -> AlertRule:
        """The rule: ``measure`` (a PromQL expression) above the threshold."""
        return self.c.alert(self.name, severity, f"{measure} > {self.value}", summary, description, scenario, extra)

    def counter(self, per_unit: float) -> str:
        """The input series of a counter rising by ``full * per_unit`` each minute from ``start``."""
        return self.c.ramp(self.start, self.full * per_unit, self.length)

    def per_second(self, series: str, labels: dict) -> Scenario:
        """The scenario of an alert on a per-second rate: ``series`` counts ``full`` per second
        (60 x full per 1m step) from ``start``; the alert has ``labels``."""
        return Scenario(((series, self.counter(60)),), self.onset, labels)

    def per_window(self, series: str, labels: dict) -> Scenario:
        """The scenario of an alert on an increase over the rate window: ``series`` counts ``full``
        per window from ``start``; the alert has ``labels``."""
        return Scenario(((series, self.c.ramp(self.start, self.full / self.c.window_steps(), self.length)),),
                        self.onset, labels)


def component_of(labels: dict) -> str:
    """The component an alert's series belong to, from the labels that identify it."""
    if "job_id" in labels:
        return "job"
    if "node_guid" in labels:
        return "infiniband"
    if "switch" in labels:
        return "roce_switch"
    if "netdev" in labels:
        return "roce_nic"
    if "source_group" in labels or "host_group" in labels:
        return "latency"
    return "exporter"


def _strip(labels: dict, *drop: str) -> dict:
    return {k: v for k, v in labels.items() if k not in drop}
