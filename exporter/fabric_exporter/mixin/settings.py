"""Every knob of the generated rules and dashboards, in one place (monitoring-mixin style).

Each setting has a default and a comment saying what it changes. A site overrides any subset in a
YAML file (same nested layout as ``defaults_yaml()`` prints) and regenerates:
``fabric-exporter generate --out DIR --settings site.yaml``. Unknown keys are errors, so a typo never
silently keeps a default.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml


@dataclass(frozen=True)
class Setting:
    path: str  # dotted key, e.g. "thresholds.ib_xmit_wait_ratio_warning"
    default: Any
    comment: str


# Alert name -> default `for:` duration. Kept beside the thresholds so a site can tune both together.
FOR_DEFAULTS: dict[str, str] = {
    # exporter itself
    "FabricTargetDown": "5m",
    "FabricPollsFailing": "15m",
    "FabricPollsSlow": "15m",
    "FabricTargetStale": "5m",
    "FabricExporterConfigReloadFailed": "5m",
    "FabricExporterAbsent": "5m",
    "FabricExporterEventLoopBehind": "15m",
    # congestion
    "FabricIBXmitWaitHigh": "10m",
    "FabricIBBurstsRepeated": "5m",
    "FabricRocePfcPauseStorm": "2m",
    "FabricRocePfcPausesSustained": "15m",
    "FabricRoceEcnMarkingHigh": "15m",
    "FabricRoceCnpIgnored": "10m",
    "FabricRoceLosslessQueueDrops": "5m",
    "FabricRoceRetransmitTimeouts": "10m",
    "FabricRoceRepeatedBursts": "10m",
    # link health
    "FabricLinkSymbolErrors": "5m",
    "FabricLinkFlapping": "0m",
    "FabricLinkDown": "2m",
    "FabricLinkDegraded": "5m",
    "FabricPortErrors": "10m",
    "FabricPortDiscards": "10m",
    # job attribution
    "FabricJobCongested": "10m",
    "FabricIBPortMalformedOrMisrouted": "5m",
    # tail latency
    "FabricLatencyP99High": "10m",
    "FabricLatencyP99Regression": "30m",
    "FabricLatencyProbeLoss": "10m",
}

SETTINGS: tuple[Setting, ...] = (
    # --- selectors and windows -------------------------------------------------------------------
    Setting("selector", 'job="fabric-exporter"',
            "Label matchers (without braces) that pick the exporter's series in every rule and panel; "
            "set it to your scrape job."),
    Setting("rate_window", "5m",
            "Range of every rate()/increase() in the recording rules: at least 4x the longest poll interval "
            "so a rate always sees two polls (recording rule names stay ':rate' whatever it is)."),
    Setting("lossless_priority", "3",
            "The PFC priority that carries RoCE (lossless). Pause and drop alerts look at this priority only."),
    Setting("lossless_queue", "UC3",
            "The switch egress queue of the lossless class, in SONiC naming (UC<n>); drops here are "
            "always a fault."),
    Setting("runbook_url_pattern",
            "https://github.com/fabric-exporter/fabric-exporter/blob/main/docs/runbooks/{alertname}.md",
            "Where an alert's runbook_url points; '{alertname}' is replaced by the alert's name. Point it at "
            "your own copy of docs/runbooks/."),
    Setting("dashboard_uid_prefix", "fabric-",
            "Prefix of every dashboard uid (uids are fixed so links and bookmarks survive regeneration)."),
    Setting("dashboard_tags", ["fabric-exporter"], "Tags on every dashboard (dashboard links find siblings by tag)."),
    Setting("dashboard_refresh", "1m", "Default dashboard auto-refresh."),
    Setting("top_n", 10, "How many ports/pairs the top-N tables and panels show."),
    # --- exporter health --------------------------------------------------------------------------
    Setting("thresholds.poll_error_ratio", 0.5,
            "FabricPollsFailing: fraction of a target's polls failing (any reason but 'partial')."),
    Setting("thresholds.poll_slow_ratio", 0.8,
            "FabricPollsSlow: poll duration as a fraction of the poll interval (the deadline is shorter than "
            "the interval, so a poll near it is about to time out)."),
    Setting("thresholds.event_loop_behind_ratio", 0.5,
            "FabricExporterEventLoopBehind: share of time the exporter's event loop woke its timers late "
            "(rate of fabric_event_loop_lag_seconds_sum). The 10k-GPU bench daemon at 0.8 core: ~0.17."),
    # --- congestion -------------------------------------------------------------------------------
    Setting("thresholds.ib_xmit_wait_ratio", 0.10,
            "FabricIBXmitWaitHigh: fraction of time an IB port had data to send but no credits "
            "(PortXmitWait normalised by link rate)."),
    Setting("thresholds.ib_bursts_per_hour", 5,
            "FabricIBBurstsRepeated: stall bursts of one IB focus port in one hour (runs of focus windows at or "
            "above the collector's focus_burst_threshold; fabric_ib_port_bursts_total)."),
    Setting("thresholds.pfc_pause_fraction", 0.90,
            "FabricRocePfcPauseStorm: fraction of time a port is held paused on the lossless priority; near 1 "
            "means the peer is stuck, not congested."),
    Setting("thresholds.pfc_pause_frames_per_second", 1000,
            "FabricRocePfcPausesSustained: PFC pause frames per second on the lossless priority, sustained."),
    Setting("thresholds.ecn_marked_ratio", 0.05,
            "FabricRoceEcnMarkingHigh: fraction of packets that arrive (NIC) or leave a queue (switch) CE-marked."),
    Setting("thresholds.cnp_ignored_per_second", 1,
            "FabricRoceCnpIgnored: CNPs per second a sender received and did not act on (DCQCN off or the "
            "CNP priority wrong)."),
    Setting("thresholds.retransmit_timeouts_per_second", 0.1,
            "FabricRoceRetransmitTimeouts: RoCE transport retransmissions on timeout per second "
            "(each one is a tail-latency spike of the ack timeout)."),
    Setting("thresholds.bursts_per_window", 3,
            "FabricRoceRepeatedBursts: PFC pause bursts (runs of burst-sampler windows paused at least the "
            "sampler's threshold, roce_nic option burst) on one NIC port within rate_window, sustained."),
    # --- link health ------------------------------------------------------------------------------
    Setting("thresholds.symbol_errors_per_window", 10,
            "FabricLinkSymbolErrors: symbol/bit errors within rate_window (infiniband-diags "
            "error_thresholds default: SymbolError 10)."),
    Setting("thresholds.link_flaps_per_hour", 3,
            "FabricLinkFlapping: link down events (or operational state changes) in one hour."),
    Setting("link_lookback", "1d",
            "FabricLinkDown: a port counts as 'expected up' when it was up within this lookback, so ports "
            "that were never cabled do not alert."),
    Setting("thresholds.port_errors_per_second", 1,
            "FabricPortErrors: receive/transmit errors per second on a port."),
    Setting("thresholds.port_discards_per_second", 10,
            "FabricPortDiscards: packets discarded per second on a port."),
    Setting("thresholds.ib_malformed_or_misrouted_per_window", 0,
            "FabricIBPortMalformedOrMisrouted: malformed, VL-mapping, DLID-mapping and looping packets a port "
            "received within rate_window (PortRcvErrorDetails, infiniband option error_details); 0 on a healthy "
            "fabric, so any rise is a configuration fault."),
    # --- tail latency -----------------------------------------------------------------------------
    Setting("thresholds.latency_p99_seconds", 0.00002,
            "FabricLatencyP99High: absolute p99 SLO of the probe latency (20 us)."),
    Setting("thresholds.latency_regression_factor", 1.5,
            "FabricLatencyP99Regression: p99 above this many times its own baseline."),
    Setting("latency_baseline", "median_7d",
            "Baseline of the regression alert: 'median_7d' (7-day median of the p99) or 'yesterday' "
            "(the same time one day earlier)."),
    Setting("thresholds.probe_loss_ratio", 0.01,
            "FabricLatencyProbeLoss: fraction of latency probes that failed or got no answer."),
    # --- congestion episodes and recovery (POC report) ---------------------------------------------
    Setting("congestion.ib_xmit_wait_ratio", 0.05,
            "An IB port counts as congested while its transmit-wait ratio (time stalled without credits) "
            "is above this; lower than the alert threshold, because an episode is a fact, not a page."),
    Setting("congestion.pfc_pause_fraction", 0.10,
            "A RoCE NIC port counts as congested while it is paused (received PFC, lossless priority) more "
            "than this fraction of the time."),
    Setting("congestion.ecn_marked_ratio", 0.05,
            "A RoCE NIC port or lossless switch queue counts as congested while more than this share of its "
            "packets is CE-marked."),
    Setting("congestion.recovery_margin", 0.20,
            "Recovery is over when the congestion severity is within this fraction of the threshold above "
            "its baseline and the probed p99 is within this fraction above its baseline (fabric-exporter "
            "report)."),
    Setting("congestion.bridge_gap", "1m",
            "fabric-exporter report: two congested stretches of a fabric this close (or a gap in the data this "
            "short) are one episode."),
    # --- job attribution (rules/jobs.py) -----------------------------------------------------------
    Setting("jobs.cnp_per_second", 10000,
            "Job roles: CNPs per second (summed over a host's NIC ports) that score 1 -- handled CNPs make a "
            "host a contributor (its senders are throttled), sent CNPs an incast target."),
    # --- for: durations ---------------------------------------------------------------------------
    *(Setting(f"for.{name}", value, f"`for:` of {name}.") for name, value in FOR_DEFAULTS.items()),
)

# The settings `fabric-exporter report`'s figures depend on: the selector and rate window of its own
# queries, the congestion thresholds behind the recorded severities, and the episode rules. The
# generator records them as labels of one recording rule (rules/congestion.py, SETTINGS_INFO) so the
# report reads them back from the Prometheus that evaluates the rules instead of trusting a file.
REPORT_SETTINGS = ("selector", "rate_window", "congestion.ib_xmit_wait_ratio", "congestion.pfc_pause_fraction",
                   "congestion.ecn_marked_ratio", "congestion.recovery_margin", "congestion.bridge_gap")
_DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
_DURATION_PATHS = ("rate_window", "link_lookback", "congestion.bridge_gap")
_BY_PATH = {s.path: s for s in SETTINGS}


class SettingsError(ValueError):
    pass


def _flatten(raw: Mapping, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in raw.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):  # no setting's value is a mapping: a mapping is a section
            out.update(_flatten(value, path + "."))
        else:
            out[path] = value
    return out


def _is_duration(path: str) -> bool:
    return path.startswith("for.") or path in _DURATION_PATHS


def _check(path: str, value: Any) -> Any:
    default = _BY_PATH[path].default
    if _is_duration(path):
        if not isinstance(value, str) or not _DURATION.match(value):
            raise SettingsError(f"{path}: {value!r} is not a Prometheus duration (e.g. 5m)")
    elif isinstance(default, bool) or isinstance(default, list):
        if type(value) is not type(default):
            raise SettingsError(f"{path}: expected a {type(default).__name__}, got {value!r}")
    elif isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise SettingsError(f"{path}: expected a non-negative number, got {value!r}")
    elif isinstance(default, str):
        if not isinstance(value, str):
            raise SettingsError(f"{path}: expected a string, got {value!r}")
    if path == "latency_baseline" and value not in ("median_7d", "yesterday"):
        raise SettingsError(f"{path}: must be 'median_7d' or 'yesterday', got {value!r}")
    if path == "runbook_url_pattern" and "{alertname}" not in value:
        raise SettingsError(f"{path}: must contain '{{alertname}}'")
    return value


class Settings:
    """Resolved settings: defaults overlaid with a site's file. Read with ``s["thresholds.x"]``."""

    def __init__(self, overrides: Mapping | None = None):
        self._values = {s.path: copy.deepcopy(s.default) for s in SETTINGS}
        flat = _flatten(overrides or {})
        unknown = sorted(set(flat) - set(self._values))
        if unknown:
            raise SettingsError("unknown setting(s): " + ", ".join(unknown))
        for path, value in flat.items():
            self._values[path] = _check(path, value)

    def __getitem__(self, path: str) -> Any:
        return self._values[path]

    def for_(self, alertname: str) -> str:
        return self._values[f"for.{alertname}"]

    def sel(self, extra: str = "") -> str:
        """``{selector,extra}`` for a metric selector."""
        parts = [p for p in (self._values["selector"], extra) if p]
        return "{" + ",".join(parts) + "}"

    def runbook_url(self, alertname: str) -> str:
        return self._values["runbook_url_pattern"].replace("{alertname}", alertname)

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)


_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def duration_seconds(text: str) -> float:
    """A Prometheus duration (``1h30m``, ``15s``) in seconds."""
    total = 0.0
    for number, unit in re.findall(r"(\d+)(ms|s|m|h|d|w|y)", text):
        total += int(number) * _UNITS[unit]
    return total


def settings_label(path: str) -> str:
    """A setting's label name in the recorded settings (label names cannot hold dots)."""
    return path.replace(".", "_")


def _label_value(value: Any) -> str:
    return repr(float(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def recorded_labels(settings: Settings) -> dict[str, str]:
    """The REPORT_SETTINGS as the labels the generator records (numbers exactly: ``repr`` round-trips)."""
    return {settings_label(p): _label_value(settings[p]) for p in REPORT_SETTINGS}


def from_recorded_labels(labels: Mapping[str, str]) -> Settings:
    """Settings whose REPORT_SETTINGS are the recorded labels (the rest: defaults, unused by the report)."""
    missing = [settings_label(p) for p in REPORT_SETTINGS if settings_label(p) not in labels]
    if missing:
        raise SettingsError("recorded settings lack " + ", ".join(missing))
    values: dict[str, Any] = {}
    for path in REPORT_SETTINGS:
        text = labels[settings_label(path)]
        if isinstance(_BY_PATH[path].default, (int, float)):
            try:
                value: Any = float(text)
            except ValueError:
                raise SettingsError(f"recorded {settings_label(path)}={text!r} is not a number") from None
        else:
            value = text
        node = values
        *sections, leaf = path.split(".")
        for section in sections:
            node = node.setdefault(section, {})
        node[leaf] = value
    return Settings(values)


def _same(path: str, a: Any, b: Any) -> bool:
    if _is_duration(path):
        return duration_seconds(a) == duration_seconds(b)  # 1m is 60s
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    return a == b


def differences(recorded: Settings, given: Settings, paths=REPORT_SETTINGS) -> list[str]:
    """Each setting of ``paths`` on which two settings disagree, as 'path: A (rules) vs B (file)'."""
    return [f"{p}: {recorded[p]!r} in the rules, {given[p]!r} in the file"
            for p in paths if not _same(p, recorded[p], given[p])]


def load_settings(path: str | None) -> Settings:
    if path is None:
        return Settings()
    with open(path, encoding="utf-8") as f:
        raw = yaml.safe_load(f) or {}
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{path}: top level must be a mapping")
    try:
        return Settings(raw)
    except SettingsError as e:
        raise SettingsError(f"{path}: {e}") from None


def defaults_yaml() -> str:
    """The defaults as a commented YAML file a site can copy and edit (each section once)."""
    lines = ["# fabric-exporter mixin settings (defaults). Override any subset; unknown keys are errors.", ""]
    sections: dict[str, list[Setting]] = {}
    for s in SETTINGS:
        sections.setdefault(s.path.rpartition(".")[0], []).append(s)
    for head in sorted(sections, key=lambda h: (h != "", list(sections).index(h))):
        if head:
            lines += ["", f"{head}:"]
        indent = "  " if head else ""
        for s in sections[head]:
            leaf = s.path.rpartition(".")[2]
            lines.append(f"{indent}# {s.comment}")
            dumped = yaml.safe_dump({leaf: s.default}, default_flow_style=True, width=10_000).strip()[1:-1]
            lines.append(f"{indent}{dumped}")
    return "\n".join(lines) + "\n"
