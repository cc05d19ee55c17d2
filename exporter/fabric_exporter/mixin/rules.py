"""Recording and alerting rules, built from the settings, with a promtool test scenario for each.

Every derived signal that both a dashboard and an alert read is a recording rule here, so its
expression lives once; rule names follow ``level:metric:operation`` (``fabric:`` level = per series
of the exporter, no aggregation). Each alert rule carries a ``Scenario``: input series that make its
expression true from a known minute, from which ``rule_tests.py`` writes a ``promtool test rules`` case
showing it silent one evaluation before ``for:`` elapses and firing at ``for:``, with exact labels
and annotations.

An alert name may have several rules (one per source: IB port, NIC port, switch interface), each
with a description naming that source's labels; they share summary, severity and runbook.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .settings import Settings

INFO, WARNING, CRITICAL = "info", "warning", "critical"

# Label names that identify a port in each domain, in the order a description names them.
IB_PORT = ("fabric", "node_guid", "node_name", "port", "peer_node_name", "peer_port")
NIC_PORT = ("fabric", "host", "device", "port", "netdev")
SWITCH_IF = ("fabric", "switch", "interface")
TARGET = ("fabric", "group", "host", "collector")
LAT_GROUP_PAIR = ("fabric", "source_group", "destination_group", "tool", "message_bytes")

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

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def duration_seconds(text: str) -> float:
    total = 0.0
    for number, unit in re.findall(r"(\d+)(ms|s|m|h|d|w|y)", text):
        total += int(number) * _UNITS[unit]
    return total


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
    return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


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

    def alert(self, name: str, severity: str, expr: str, summary: str, description: str,
              scenario: Scenario, extra: tuple[Scenario, ...] = ()) -> AlertRule:
        return AlertRule(name, severity, expr, self.s.for_(name), summary, description,
                         self.s.runbook_url(name), scenario, component_of(scenario.labels), extra)

    def length(self, name: str, onset: int) -> int:
        """Series length that covers the onset, the alert's for: and a margin."""
        return onset + minutes(self.s.for_(name)) + 5


def component_of(labels: dict) -> str:
    """The component an alert's series belong to, from the labels that identify it."""
    if "node_guid" in labels:
        return "infiniband"
    if "switch" in labels:
        return "roce_switch"
    if "netdev" in labels:
        return "roce_nic"
    if "source_group" in labels or "host_group" in labels:
        return "latency"
    return "exporter"


def _ib_where() -> str:
    return ("fabric {{ $labels.fabric }}: {{ $labels.node_name }} ({{ $labels.node_guid }}) port {{ $labels.port }}"
            " -> {{ $labels.peer_node_name }} port {{ $labels.peer_port }}")


def _nic_where() -> str:
    return ("fabric {{ $labels.fabric }}: host {{ $labels.host }} {{ $labels.device }} port {{ $labels.port }}"
            " ({{ $labels.netdev }})")


def _switch_where() -> str:
    return "fabric {{ $labels.fabric }}: switch {{ $labels.switch }} interface {{ $labels.interface }}"


def _target_where() -> str:
    return ("fabric {{ $labels.fabric }}: the {{ $labels.collector }} poll of {{ $labels.host }} "
            "(target group {{ $labels.group }})")


def _strip(labels: dict, *drop: str) -> dict:
    return {k: v for k, v in labels.items() if k not in drop}


# --- exporter self-health -------------------------------------------------------------------------

def exporter_rules(c: Ctx) -> tuple[list[Recording], list[AlertRule]]:
    w, sel = c.w, c.sel
    rec = []
    not_partial = sel('reason!="partial"')
    not_probes = sel('collector!="latency_probe"')
    s_polls, target = c.series("fabric_polls_total", TARGET)
    s_err_t, _ = c.series("fabric_poll_errors_total", TARGET, reason="timeout")
    s_err_p, _ = c.series("fabric_poll_errors_total", TARGET, reason="partial")
    s_polls2, target2 = c.series("fabric_polls_total", TARGET, host="sm-2")
    # A target that never failed has no error series at all: "or 0 * polls" makes its ratio 0, not absent.
    rec.append(Recording(
        "fabric:poll_failures:ratio",
        f"(sum without (reason) (rate(fabric_poll_errors_total{not_partial}[{w}]))"
        f" or 0 * rate(fabric_polls_total{sel()}[{w}]))"
        f" / rate(fabric_polls_total{sel()}[{w}])",
        # 60 polls/min, 15 timeouts/min, 30 partial/min (partial data is not a failure): 0.25;
        # a second target that never failed: 0
        ((s_polls, "0+60x20"), (s_err_t, "0+15x20"), (s_err_p, "0+30x20"), (s_polls2, "0+60x20")), 10,
        ((target, 0.25), (target2, 0.0))))
    s_dur, _ = c.series("fabric_poll_duration_seconds", TARGET)
    s_int, _ = c.series("fabric_poll_interval_seconds", TARGET)
    rec.append(Recording(
        "fabric:poll_duration_over_interval:ratio",
        f"avg_over_time(fabric_poll_duration_seconds{sel()}[{w}]) / fabric_poll_interval_seconds{sel()}",
        ((s_dur, "4x20"), (s_int, "10x20")), 10, ((target, 0.4),)))

    alerts = []
    n = "FabricTargetDown"
    s_up, labels = c.series("fabric_up", TARGET)
    alerts.append(c.alert(
        n, WARNING, f"fabric_up{sel()} == 0",
        "A fabric target's polls are failing.",
        _target_where() + f" has failed or been stale for more than {c.s.for_(n)}; "
        "its fabric metrics are missing. fabric_poll_errors_total{reason} says why.",
        Scenario(((s_up, f"1x9 0x{minutes(c.s.for_(n)) + 10}"),), 10, labels)))

    n = "FabricPollsFailing"
    thr = c.s["thresholds.poll_error_ratio"]
    start = c.window_steps() + 2
    full, onset = c.ramp_plan(start, thr, cap=1.0)
    length = c.length(n, onset)
    alerts.append(c.alert(
        n, WARNING, f"fabric:poll_failures:ratio{sel()} > {fmt(thr)}",
        "Many polls of a fabric target fail.",
        _target_where() + f": more than {pct(thr)} of polls failed over {w}, for {c.s.for_(n)}; "
        "the target publishes partial or old data.",
        Scenario(((s_polls, f"0+60x{length}"), (s_err_t, c.ramp(start, 60 * full, length))), onset, target)))

    n = "FabricPollsSlow"
    thr = c.s["thresholds.poll_slow_ratio"]
    alerts.append(c.alert(
        # latency probe rounds spend their deadline by design (probes carry over); not a symptom there
        n, WARNING, f"fabric:poll_duration_over_interval:ratio{not_probes} > {fmt(thr)}",
        "Polls of a fabric target take nearly their whole interval.",
        _target_where() + f" takes more than {pct(thr)} of its poll interval on average over {w}; "
        "it is about to hit its deadline and time out.",
        # Interval 10 s; the duration jumps from 1 s to 10 s at minute 10: the average over w minutes
        # passes thr once (k+1) of its w+1 samples are slow.
        _slow_scenario(c, n, s_dur, s_int, target, thr)))

    n = "FabricTargetStale"
    s_stale, labels = c.series("fabric_target_stale", TARGET)
    alerts.append(c.alert(
        n, WARNING, f"fabric_target_stale{sel()} == 1",
        "A fabric target's data is stale and withheld.",
        _target_where() + " has not succeeded within its stale_after; the exporter withholds the target's "
        f"series, so its dashboards are empty (for {c.s.for_(n)}).",
        Scenario(((s_stale, f"0x9 1x{minutes(c.s.for_(n)) + 10}"),), 10, labels)))

    n = "FabricExporterConfigReloadFailed"
    s_cfg, labels = c.series("fabric_config_last_reload_successful", ())
    alerts.append(c.alert(
        n, WARNING, f"fabric_config_last_reload_successful{sel()} == 0",
        "The fabric exporter failed to load its configuration.",
        "The fabric-exporter at {{ $labels.instance }} failed to (re)load its configuration and keeps running "
        "the previous one; its log (and fabric-exporter check-config) says which key is wrong.",
        Scenario(((s_cfg, f"1x9 0x{minutes(c.s.for_(n)) + 10}"),), 10, labels)))

    n = "FabricExporterAbsent"
    s_build, _ = c.series("fabric_build_info", (), version="0.1.0", python_version="3.11.7")
    absent_labels = {k: v for k, v in c.base.items() if k != "instance" and f'{k}="' in c.s["selector"]}
    alerts.append(c.alert(
        n, CRITICAL, f"absent(fabric_build_info{sel()})",
        "The fabric exporter has disappeared from Prometheus.",
        f"No fabric-exporter series matching {{{c.s['selector']}}} have been scraped for {c.s.for_(n)}: "
        "fabric congestion, link and latency monitoring is blind.",
        Scenario(((s_build, "1x10 stale"),), 11, absent_labels)))
    return rec, alerts


def _slow_scenario(c: Ctx, n: str, s_dur: str, s_int: str, labels: dict, thr: float) -> Scenario:
    w = c.window_steps()
    start = 10
    interval = 10.0
    # A poll as long as its interval (or longer, for thresholds >= 1) against instant polls.
    slow, fast = interval * (1.0 if thr < 1 else thr * 1.5), 0.0
    onset = None
    for k in range(w + 1):
        samples = [slow] * (k + 1) + [fast] * (w - k)  # w+1 samples in a closed window of w minutes
        ratio = sum(samples) / len(samples) / interval
        if abs(ratio - thr) < 1e-9:
            raise ValueError("slow scenario hits the threshold exactly")
        if ratio > thr:
            onset = start + k
            break
    if onset is None:
        raise ValueError("slow scenario never exceeds the threshold")
    length = c.length(n, onset)
    return Scenario(((s_dur, f"{fmt(fast)}x{start - 1} {fmt(slow)}x{length}"), (s_int, f"{fmt(interval)}x{length + start}")),
                    onset, labels)


# --- InfiniBand ---------------------------------------------------------------------------------

def ib_rules(c: Ctx) -> tuple[list[Recording], list[AlertRule]]:
    w, sel = c.w, c.sel
    rec = []
    s_wait, port = c.series("fabric_ib_port_transmit_wait_total", IB_PORT)
    s_rate, _ = c.series("fabric_ib_port_rate_bytes_per_second", IB_PORT)
    s_tick, _ = c.series("fabric_ib_node_xmit_wait_tick_multiplier", ("fabric", "node_guid", "node_name"))
    s_wait2, port2 = c.series("fabric_ib_port_transmit_wait_total", IB_PORT, port="2")
    s_rate2, _ = c.series("fabric_ib_port_rate_bytes_per_second", IB_PORT, port="2")
    # Lost bytes per second = rate(PortXmitWait) x (Tick+1) on Quantum-class switches (NVIDIA's
    # conversion); over the link's bytes/s this is the fraction of time the port stalled. Where the
    # tick multiplier is not readable one tick is taken as one byte time. Down ports (rate 0) drop out.
    xmit_wait_ratio = (
        f"clamp_max(("
        f"rate(fabric_ib_port_transmit_wait_total{sel()}[{w}])"
        f" * ignoring (port, peer_node_name, peer_port) group_left ()"
        f" (fabric_ib_node_xmit_wait_tick_multiplier{sel()} + 1)"
        f" or rate(fabric_ib_port_transmit_wait_total{sel()}[{w}])"
        f") / (fabric_ib_port_rate_bytes_per_second{sel()} > 0), 1)")
    rec.append(Recording(
        "fabric:ib_port_xmit_wait:ratio", xmit_wait_ratio,
        # port 1: 600 ticks/min = 10/s, tick multiplier 3 (x4) -> 40 lost bytes/s over 100 B/s = 0.4;
        # port 2 of another node without a readable tick: 25/s over 100 B/s = 0.25.
        ((s_wait, "0+600x20"), (s_rate, "100x20"), (s_tick, "3x20"),
         (s_wait2.replace(EXAMPLE["node_guid"], "0x0002c90300000002"), "0+1500x20"),
         (s_rate2.replace(EXAMPLE["node_guid"], "0x0002c90300000002"), "100x20")),
        10, ((port, 0.4), ({**port2, "node_guid": "0x0002c90300000002"}, 0.25))))

    s_sym, _ = c.series("fabric_ib_symbol_error_total", IB_PORT)
    s_rcv, _ = c.series("fabric_ib_port_receive_errors_total", IB_PORT)
    error_counters = (
        ("fabric_ib_port_receive_errors_total", "PortRcvErrors"),
        ("fabric_ib_port_receive_remote_physical_errors_total", "PortRcvRemotePhysicalErrors"),
        ("fabric_ib_local_link_integrity_errors_total", "LocalLinkIntegrityErrors"),
        ("fabric_ib_excessive_buffer_overrun_errors_total", "ExcessiveBufferOverrunErrors"),
        ("fabric_ib_link_error_recovery_total", "LinkErrorRecoveryCounter"),
    )
    rec.append(Recording(
        "fabric:ib_port_errors:rate",
        " or ".join(f'label_replace(rate({m}{sel()}[{w}]), "counter", "{cn}", "", "")' for m, cn in error_counters),
        ((s_rcv, "0+120x20"),), 10, (({**port, "counter": "PortRcvErrors"}, 2.0),)))
    s_disc, _ = c.series("fabric_ib_port_transmit_discards_total", IB_PORT)
    rec.append(Recording(
        "fabric:ib_port_transmit_discards:rate",
        f"rate(fabric_ib_port_transmit_discards_total{sel()}[{w}])",
        ((s_disc, "0+30x20"),), 10, ((port, 0.5),)))

    alerts = []
    n = "FabricIBXmitWaitHigh"
    thr = c.s["thresholds.ib_xmit_wait_ratio"]
    start = c.window_steps() + 2
    full, onset = c.ramp_plan(start, thr, cap=1.0)
    length = c.length(n, onset)
    alerts.append(c.alert(
        n, WARNING, f"fabric:ib_port_xmit_wait:ratio{sel()} > {fmt(thr)}",
        "An InfiniBand port is congested: it often has data to send and no credits.",
        _ib_where() + f" stalled for lack of credits more than {pct(thr)} of the time over {w}, for "
        f"{c.s.for_(n)}: congestion downstream of this port (or a slow receiver) is spreading back.",
        # 100 B/s link, no tick multiplier: ticks/s = ratio x 100.
        Scenario(((s_wait, c.ramp(start, full * 100 * 60, length)), (s_rate, f"100x{length}")), onset, port)))

    n = "FabricLinkSymbolErrors"
    thr = c.s["thresholds.symbol_errors_per_window"]
    start = c.window_steps() + 2
    full, onset = c.ramp_plan(start, thr)
    length = c.length(n, onset)
    symbol_ib = c.alert(
        n, WARNING, f"increase(fabric_ib_symbol_error_total{sel()}[{w}]) > {fmt(thr)}",
        "A link is taking bit errors.",
        _ib_where() + f" counted more than {fmt(thr)} symbol errors in {w}, for {c.s.for_(n)}: "
        "a failing cable, transceiver or dirty connector.",
        Scenario(((s_sym, c.ramp(start, full / c.window_steps(), length)),), onset, port))

    n = "FabricLinkFlapping"
    thr = c.s["thresholds.link_flaps_per_hour"]
    s_down, _ = c.series("fabric_ib_link_downed_total", IB_PORT)
    jump = math.floor(thr) + 1
    flap_ib = c.alert(
        n, WARNING, f"increase(fabric_ib_link_downed_total{sel()}[1h]) > {fmt(thr)}",
        "A link keeps going down and up.",
        _ib_where() + f" went down more than {fmt(thr)} times in the last hour: every flap reroutes traffic "
        "and stalls collectives.",
        Scenario(((s_down, f"0x69 {jump}x{minutes(c.s.for_(n)) + 10}"),), 70, port))

    n = "FabricLinkDown"
    s_unexp, _ = c.series("fabric_ib_port_link_down_unexpected", IB_PORT)
    down_ib = c.alert(
        n, WARNING, f"fabric_ib_port_link_down_unexpected{sel()} == 1",
        "A link that should be up is down.",
        _ib_where() + f" is down although the topology had its link up, for {c.s.for_(n)}.",
        Scenario(((s_unexp, f"0x9 1x{minutes(c.s.for_(n)) + 10}"),), 10, port))

    n = "FabricLinkDegraded"
    s_deg, _ = c.series("fabric_ib_port_degraded", IB_PORT)
    degraded_ib = c.alert(
        n, WARNING, f"fabric_ib_port_degraded{sel()} == 1",
        "A link runs below its supported width or speed.",
        _ib_where() + f" is up but narrower or slower than both ends support, for {c.s.for_(n)}: "
        "its bandwidth is cut and it congests first.",
        Scenario(((s_deg, f"0x9 1x{minutes(c.s.for_(n)) + 10}"),), 10, port))

    n = "FabricPortErrors"
    thr = c.s["thresholds.port_errors_per_second"]
    start = c.window_steps() + 2
    full, onset = c.ramp_plan(start, thr)
    length = c.length(n, onset)
    errors_ib = c.alert(
        n, WARNING, f"sum without (counter) (fabric:ib_port_errors:rate{sel()}) > {fmt(thr)}",
        "A port is receiving errors.",
        _ib_where() + f" counts more than {fmt(thr)} receive/link errors per second over {w}, for {c.s.for_(n)} "
        "(PortRcvErrors, remote physical, link integrity, buffer overrun, link recoveries).",
        Scenario(((s_rcv, c.ramp(start, full * 60, length)),), onset, port))

    n = "FabricPortDiscards"
    thr = c.s["thresholds.port_discards_per_second"]
    full, onset = c.ramp_plan(start, thr)
    length = c.length(n, onset)
    discards_ib = c.alert(
        n, WARNING, f"fabric:ib_port_transmit_discards:rate{sel()} > {fmt(thr)}",
        "A port is discarding packets.",
        _ib_where() + f" discards more than {fmt(thr)} outbound packets per second over {w}, for "
        f"{c.s.for_(n)}: its link is down or congestion timed packets out.",
        Scenario(((s_disc, c.ramp(start, full * 60, length)),), onset, port))
    return rec, [alerts[0], symbol_ib, flap_ib, down_ib, degraded_ib, errors_ib, discards_ib]


# --- RoCE: NIC and switch -------------------------------------------------------------------------

def _direction_union(metrics: tuple[tuple[str, str], ...], sel: str, w: str) -> str:
    return " or ".join(f'label_replace(rate({m}{sel}[{w}]), "direction", "{d}", "", "")' for m, d in metrics)


def roce_rules(c: Ctx) -> tuple[list[Recording], list[AlertRule]]:
    w, sel, p = c.w, c.sel, c.p
    rec = []
    s_rx_pause, nic_prio = c.series("fabric_roce_pfc_rx_pause_frames_total", NIC_PORT + ("priority",), priority=p)
    s_sw_tx_pause, sw_prio = c.series("fabric_roce_pfc_tx_pause_frames_total", SWITCH_IF + ("priority",), priority=p)
    rec.append(Recording(
        "fabric:roce_pfc_pause_frames:rate",
        _direction_union((("fabric_roce_pfc_rx_pause_frames_total", "rx"),
                          ("fabric_roce_pfc_tx_pause_frames_total", "tx")), sel(), w),
        ((s_rx_pause, "0+6000x20"), (s_sw_tx_pause, "0+600x20")), 10,
        (({**nic_prio, "direction": "rx"}, 100.0), ({**sw_prio, "direction": "tx"}, 10.0))))
    s_rx_psec, _ = c.series("fabric_roce_nic_pfc_rx_pause_seconds_total", NIC_PORT + ("priority",), priority=p)
    rec.append(Recording(
        "fabric:roce_pfc_pause_time:fraction",
        _direction_union((("fabric_roce_nic_pfc_rx_pause_seconds_total", "rx"),
                          ("fabric_roce_nic_pfc_tx_pause_seconds_total", "tx")), sel(), w),
        ((s_rx_psec, "0+30x20"),), 10, (({**nic_prio, "direction": "rx"}, 0.5),)))
    s_ecn, nic = c.series("fabric_roce_ecn_marked_packets_total", NIC_PORT)
    s_rxp, _ = c.series("fabric_roce_rx_packets_total", NIC_PORT)
    s_sw_ecn, sw_q = c.series("fabric_roce_ecn_marked_packets_total", SWITCH_IF, queue=c.s["lossless_queue"])
    s_sw_qtx, _ = c.series("fabric_roce_switch_queue_tx_packets_total", SWITCH_IF, queue=c.s["lossless_queue"])
    rec.append(Recording(
        "fabric:roce_ecn_marked_packets:rate", f"rate(fabric_roce_ecn_marked_packets_total{sel()}[{w}])",
        ((s_ecn, "0+600x20"), (s_sw_ecn, "0+60x20")), 10, ((nic, 10.0), (sw_q, 1.0))))
    # NIC: marked packets it received over all it received; switch: marked over sent, per queue.
    rec.append(Recording(
        "fabric:roce_ecn_marked:ratio",
        f"fabric:roce_ecn_marked_packets:rate{sel()} / rate(fabric_roce_rx_packets_total{sel()}[{w}])"
        f" or fabric:roce_ecn_marked_packets:rate{sel()} / rate(fabric_roce_switch_queue_tx_packets_total{sel()}[{w}])",
        ((s_ecn, "0+600x20"), (s_rxp, "0+6000x20"), (s_sw_ecn, "0+60x20"), (s_sw_qtx, "0+240x20")), 10,
        ((nic, 0.1), (sw_q, 0.25))))
    cnp_kinds = (("fabric_roce_nic_cnp_sent_total", "sent"), ("fabric_roce_nic_cnp_received_total", "received"),
                 ("fabric_roce_nic_cnp_handled_total", "handled"), ("fabric_roce_nic_cnp_ignored_total", "ignored"))
    s_cnp_ign, _ = c.series("fabric_roce_nic_cnp_ignored_total", NIC_PORT)
    s_cnp_hdl, _ = c.series("fabric_roce_nic_cnp_handled_total", NIC_PORT)
    rec.append(Recording(
        "fabric:roce_cnp:rate",
        " or ".join(f'label_replace(rate({m}{sel()}[{w}]), "kind", "{k}", "", "")' for m, k in cnp_kinds),
        ((s_cnp_ign, "0+120x20"), (s_cnp_hdl, "0+60x20")), 10,
        (({**nic, "kind": "ignored"}, 2.0), ({**nic, "kind": "handled"}, 1.0))))
    retrans_kinds = (("fabric_roce_nic_local_ack_timeouts_total", "local_ack_timeout"),
                     ("fabric_roce_nic_adaptive_retransmit_timeouts_total", "adaptive_retransmit_timeout"),
                     ("fabric_roce_nic_packet_sequence_errors_total", "packet_sequence_error"),
                     ("fabric_roce_nic_out_of_sequence_packets_total", "out_of_sequence"),
                     ("fabric_roce_nic_implied_nak_sequence_errors_total", "implied_nak_sequence_error"),
                     ("fabric_roce_nic_duplicate_requests_total", "duplicate_request"))
    s_lat, _ = c.series("fabric_roce_nic_local_ack_timeouts_total", NIC_PORT)
    rec.append(Recording(
        "fabric:roce_retransmits:rate",
        " or ".join(f'label_replace(rate({m}{sel()}[{w}]), "kind", "{k}", "", "")' for m, k in retrans_kinds),
        ((s_lat, "0+6x20"),), 10, (({**nic, "kind": "local_ack_timeout"}, 0.1),)))
    s_rxd, _ = c.series("fabric_roce_rx_discards_total", NIC_PORT)
    s_sw_txd, sw = c.series("fabric_roce_tx_discards_total", SWITCH_IF)
    rec.append(Recording(
        "fabric:roce_port_discards:rate",
        _direction_union((("fabric_roce_rx_discards_total", "rx"), ("fabric_roce_tx_discards_total", "tx")), sel(), w),
        ((s_rxd, "0+60x20"), (s_sw_txd, "0+120x20")), 10,
        (({**nic, "direction": "rx"}, 1.0), ({**sw, "direction": "tx"}, 2.0))))
    s_qdrop, _ = c.series("fabric_roce_switch_queue_dropped_packets_total", SWITCH_IF, queue=c.s["lossless_queue"])
    rec.append(Recording(
        "fabric:roce_switch_queue_dropped_packets:rate",
        f"rate(fabric_roce_switch_queue_dropped_packets_total{sel()}[{w}])",
        ((s_qdrop, "0+30x20"),), 10, ((sw_q, 0.5),)))
    s_sw_rxe, _ = c.series("fabric_roce_switch_if_rx_errors_total", SWITCH_IF)
    rec.append(Recording(
        "fabric:roce_switch_if_errors:rate",
        _direction_union((("fabric_roce_switch_if_rx_errors_total", "rx"),
                          ("fabric_roce_switch_if_tx_errors_total", "tx")), sel(), w),
        ((s_sw_rxe, "0+60x20"),), 10, (({**sw, "direction": "rx"}, 1.0),)))

    alerts: list[AlertRule] = []
    start = c.window_steps() + 2
    prio_sel = sel(f'priority="{p}"')
    queue_sel = sel(f'queue="{c.s["lossless_queue"]}"')
    host_sel, switch_sel = sel('host!=""'), sel('switch!=""')
    ignored_sel, timeout_sel = sel('kind="ignored"'), sel('kind="local_ack_timeout"')

    # -- PFC pause storm
    n = "FabricRocePfcPauseStorm"
    thr = c.s["thresholds.pfc_pause_fraction"]
    full, onset = c.ramp_plan(start, thr, cap=1.0)
    length = c.length(n, onset)
    s_storm, _ = c.series("fabric_roce_nic_pause_storm_error_events_total", NIC_PORT)
    storm_length = c.length(n, start)
    # Two signs of one fault on a NIC port, so one rule: time paused near 100% on the lossless
    # priority, or the NIC's own stall watchdog firing (it stops pausing to save the fabric).
    alerts.append(c.alert(
        n, CRITICAL,
        f"fabric:roce_pfc_pause_time:fraction{prio_sel} > {fmt(thr)}"
        f" or increase(fabric_roce_nic_pause_storm_error_events_total{sel()}[{w}]) > 0",
        "A RoCE port is held in a PFC pause storm.",
        _nic_where() + f" is in a PFC pause storm: paused more than {pct(thr)} of the time on the lossless "
        f"priority over {w}, or its NIC's pause-storm watchdog fired, for {c.s.for_(n)}. A stuck receiver "
        "is freezing the lossless class and the pause spreads through the fabric.",
        Scenario(((s_rx_psec, c.ramp(start, 60 * full, length)),), onset, {**nic_prio, "direction": "rx"}),
        extra=(Scenario(((s_storm, c.ramp(start, 1, storm_length)),), start, nic),)))
    s_wd, _ = c.series("fabric_roce_switch_pfcwd_storm_active", SWITCH_IF, queue=c.s["lossless_queue"])
    alerts.append(c.alert(
        n, CRITICAL, f"fabric_roce_switch_pfcwd_storm_active{sel()} == 1",
        "A RoCE port is held in a PFC pause storm.",
        _switch_where() + " queue {{ $labels.queue }} is held in a PFC storm by the switch's PFC watchdog: "
        "it drops or forwards the queue's traffic while the peer keeps pausing it.",
        Scenario(((s_wd, f"0x9 1x{minutes(c.s.for_(n)) + 10}"),), 10, sw_q)))

    n = "FabricRocePfcPausesSustained"
    thr = c.s["thresholds.pfc_pause_frames_per_second"]
    full, onset = c.ramp_plan(start, thr)
    length = c.length(n, onset)
    for where, s_name, labels, direction in ((_nic_where(), s_rx_pause, nic_prio, "rx"),
                                              (_switch_where(), s_sw_tx_pause, sw_prio, "tx")):
        side = "host" if "host" in labels else "switch"
        side_sel = sel(f'priority="{p}",{side}!=""')
        alerts.append(c.alert(
            n, WARNING,
            f"fabric:roce_pfc_pause_frames:rate{side_sel} > {fmt(thr)}",
            "A RoCE port sends or receives PFC pause frames continuously.",
            where + " {{ $labels.direction }} more than " + fmt(thr) + " PFC pause frames per second on lossless "
            "priority {{ $labels.priority }}" + f" over {w}, for {c.s.for_(n)}: sustained congestion that PFC, "
            "not ECN, is absorbing.",
            Scenario(((s_name, c.ramp(start, full * 60, length)),), onset, {**labels, "direction": direction})))

    n = "FabricRoceEcnMarkingHigh"
    thr = c.s["thresholds.ecn_marked_ratio"]
    full, onset = c.ramp_plan(start, thr, cap=1.0)
    length = c.length(n, onset)
    alerts.append(c.alert(
        n, INFO, f"fabric:roce_ecn_marked:ratio{host_sel} > {fmt(thr)}",
        "Many RoCE packets arrive ECN-marked.",
        _nic_where() + f" receives more than {pct(thr)} of its packets CE-marked over {w}, for {c.s.for_(n)}: "
        "the path to this host is congested and DCQCN is slowing its senders.",
        Scenario(((s_ecn, c.ramp(start, full * 6000, length)), (s_rxp, f"0+6000x{length}")), onset, nic)))
    alerts.append(c.alert(
        n, INFO, f"fabric:roce_ecn_marked:ratio{switch_sel} > {fmt(thr)}",
        "Many RoCE packets leave a switch queue ECN-marked.",
        _switch_where() + " queue {{ $labels.queue }}" + f" CE-marks more than {pct(thr)} of the packets it "
        f"sends over {w}, for {c.s.for_(n)}: the egress port is congested.",
        Scenario(((s_sw_ecn, c.ramp(start, full * 6000, length)), (s_sw_qtx, f"0+6000x{length}")), onset, sw_q)))

    n = "FabricRoceCnpIgnored"
    thr = c.s["thresholds.cnp_ignored_per_second"]
    full, onset = c.ramp_plan(start, thr)
    length = c.length(n, onset)
    alerts.append(c.alert(
        n, WARNING, f"fabric:roce_cnp:rate{ignored_sel} > {fmt(thr)}",
        "A RoCE sender ignores congestion notifications.",
        _nic_where() + f" ignored more than {fmt(thr)} CNPs per second over {w}, for {c.s.for_(n)}: congestion "
        "control (DCQCN) is off or the CNP priority/DSCP does not match, so this sender never slows down.",
        Scenario(((s_cnp_ign, c.ramp(start, full * 60, length)),), onset, {**nic, "kind": "ignored"})))

    n = "FabricRoceLosslessQueueDrops"
    onset = c.ramp_onset(start, 1.0, 0)
    length = c.length(n, onset)
    alerts.append(c.alert(
        n, CRITICAL,
        f"fabric:roce_switch_queue_dropped_packets:rate{queue_sel} > 0",
        "A switch drops packets in the lossless RoCE queue.",
        _switch_where() + " drops packets in lossless queue {{ $labels.queue }}" + f" (over {w}, for "
        f"{c.s.for_(n)}): PFC is not protecting the class, so RDMA retransmits and tail latency explodes.",
        Scenario(((s_qdrop, c.ramp(start, 60, length)),), onset, sw_q)))
    s_pd, _ = c.series("fabric_roce_nic_priority_rx_discards_total", NIC_PORT + ("priority",), priority=p)
    alerts.append(c.alert(
        n, CRITICAL,
        f"rate(fabric_roce_nic_priority_rx_discards_total{prio_sel}[{w}]) > 0",
        "A NIC drops packets in the lossless RoCE priority.",
        _nic_where() + " drops received packets on lossless priority {{ $labels.priority }}" + f" (over {w}, for "
        f"{c.s.for_(n)}): its buffer overflowed although PFC should have paused the sender.",
        Scenario(((s_pd, c.ramp(start, 60, length)),), onset, nic_prio)))

    n = "FabricRoceRetransmitTimeouts"
    thr = c.s["thresholds.retransmit_timeouts_per_second"]
    full, onset = c.ramp_plan(start, thr)
    length = c.length(n, onset)
    alerts.append(c.alert(
        n, WARNING, f"fabric:roce_retransmits:rate{timeout_sel} > {fmt(thr)}",
        "RoCE retransmissions on timeout are rising.",
        _nic_where() + f" retransmits more than {fmt(thr)} times per second on ACK timeout over {w}, for "
        f"{c.s.for_(n)}: packets are lost in the fabric and each loss costs a full timeout of tail latency.",
        Scenario(((s_lat, c.ramp(start, full * 60, length)),), onset, {**nic, "kind": "local_ack_timeout"})))

    # -- link health on RoCE ports
    n = "FabricLinkSymbolErrors"
    thr = c.s["thresholds.symbol_errors_per_window"]
    full, onset = c.ramp_plan(start, thr)
    length = c.length(n, onset)
    s_pcs, _ = c.series("fabric_roce_nic_rx_pcs_symbol_errors_total", NIC_PORT)
    alerts.append(c.alert(
        n, WARNING, f"increase(fabric_roce_nic_rx_pcs_symbol_errors_total{sel()}[{w}]) > {fmt(thr)}",
        "A link is taking bit errors.",
        _nic_where() + f" counted more than {fmt(thr)} symbol errors FEC could not correct in {w}, for "
        f"{c.s.for_(n)}: a failing cable, transceiver or dirty connector.",
        Scenario(((s_pcs, c.ramp(start, full / c.window_steps(), length)),), onset, nic)))

    n = "FabricLinkFlapping"
    thr = c.s["thresholds.link_flaps_per_hour"]
    jump = math.floor(thr) + 1
    s_lde, _ = c.series("fabric_roce_nic_link_down_events_total", NIC_PORT)
    alerts.append(c.alert(
        n, WARNING, f"increase(fabric_roce_nic_link_down_events_total{sel()}[1h]) > {fmt(thr)}",
        "A link keeps going down and up.",
        _nic_where() + f" went down more than {fmt(thr)} times in the last hour: every flap breaks the host's "
        "RDMA connections.",
        Scenario(((s_lde, f"0x69 {jump}x{minutes(c.s.for_(n)) + 10}"),), 70, nic)))
    s_oper, _ = c.series("fabric_roce_switch_if_oper_status", SWITCH_IF)
    flips = 2 * math.floor(thr) + 1  # changes()/2 > thr
    flap_values = "1x69 " + " ".join("2" if i % 2 == 0 else "1" for i in range(flips + minutes(c.s.for_(n)) + 5))
    alerts.append(c.alert(
        n, WARNING, f"changes(fabric_roce_switch_if_oper_status{sel()}[1h]) / 2 > {fmt(thr)}",
        "A link keeps going down and up.",
        _switch_where() + f" changed its operational state more than {fmt(2 * thr)} times in the last hour "
        "(as polled): the link is flapping.",
        Scenario(((s_oper, flap_values),), 70 + flips - 1, sw)))

    n = "FabricLinkDown"
    lookback = c.s["link_lookback"]
    s_act, _ = c.series("fabric_roce_nic_port_active", NIC_PORT)
    alerts.append(c.alert(
        n, WARNING,
        f"fabric_roce_nic_port_active{sel()} == 0 and max_over_time(fabric_roce_nic_port_active{sel()}[{lookback}]) == 1",
        "A link that should be up is down.",
        _nic_where() + f" is not ACTIVE although it was within {lookback}, for {c.s.for_(n)}.",
        Scenario(((s_act, f"1x9 0x{minutes(c.s.for_(n)) + 10}"),), 10, nic)))
    # ifOperStatus: 1 up is the smallest code, so min over the lookback == 1 means "was up".
    alerts.append(c.alert(
        n, WARNING,
        f"fabric_roce_switch_if_oper_status{sel()} != 1"
        f" and min_over_time(fabric_roce_switch_if_oper_status{sel()}[{lookback}]) == 1",
        "A link that should be up is down.",
        _switch_where() + f" is not up (ifOperStatus) although it was within {lookback}, "
        f"for {c.s.for_(n)}.",
        Scenario(((s_oper, f"1x9 2x{minutes(c.s.for_(n)) + 10}"),), 10, sw)))

    n = "FabricLinkDegraded"
    s_speed, _ = c.series("fabric_roce_switch_if_speed_bytes_per_second", SWITCH_IF)
    alerts.append(c.alert(
        n, WARNING,
        f"fabric_roce_switch_if_speed_bytes_per_second{sel()}"
        f" < max_over_time(fabric_roce_switch_if_speed_bytes_per_second{sel()}[{lookback}])"
        f" and fabric_roce_switch_if_speed_bytes_per_second{sel()} > 0",
        "A link runs below its supported width or speed.",
        _switch_where() + f" runs slower than it did within {lookback} (for {c.s.for_(n)}): it renegotiated "
        "down, its bandwidth is cut and it congests first.",
        Scenario(((s_speed, f"50000000000x9 25000000000x{minutes(c.s.for_(n)) + 10}"),), 10, sw)))

    n = "FabricPortErrors"
    thr = c.s["thresholds.port_errors_per_second"]
    full, onset = c.ramp_plan(start, thr)
    length = c.length(n, onset)
    alerts.append(c.alert(
        n, WARNING, f"sum without (direction) (fabric:roce_switch_if_errors:rate{sel()}) > {fmt(thr)}",
        "A port is receiving errors.",
        _switch_where() + f" counts more than {fmt(thr)} receive/transmit errors per second over {w}, for "
        f"{c.s.for_(n)}.",
        Scenario(((s_sw_rxe, c.ramp(start, full * 60, length)),), onset, sw)))
    s_crc, _ = c.series("fabric_roce_nic_rx_crc_errors_total", NIC_PORT)
    alerts.append(c.alert(
        n, WARNING, f"rate(fabric_roce_nic_rx_crc_errors_total{sel()}[{w}]) > {fmt(thr)}",
        "A port is receiving errors.",
        _nic_where() + f" receives more than {fmt(thr)} packets per second with a bad FCS over {w}, for "
        f"{c.s.for_(n)}.",
        Scenario(((s_crc, c.ramp(start, full * 60, length)),), onset, nic)))

    n = "FabricPortDiscards"
    thr = c.s["thresholds.port_discards_per_second"]
    full, onset = c.ramp_plan(start, thr)
    length = c.length(n, onset)
    s_sw_rxd, _ = c.series("fabric_roce_rx_discards_total", SWITCH_IF)
    for where, sel_side, s_name, labels in ((_nic_where(), host_sel, s_rxd, nic),
                                            (_switch_where(), switch_sel, s_sw_rxd, sw)):
        alerts.append(c.alert(
            n, WARNING, f"fabric:roce_port_discards:rate{sel_side} > {fmt(thr)}",
            "A port is discarding packets.",
            where + f" discards more than {fmt(thr)} " + "{{ $labels.direction }} packets per second over "
            f"{w}, for {c.s.for_(n)}: its buffers overflow.",
            Scenario(((s_name, c.ramp(start, full * 60, length)),), onset, {**labels, "direction": "rx"})))
    return rec, alerts


# --- tail latency ----------------------------------------------------------------------------------

LAT_BY = "fabric, source_group, destination_group, tool, message_bytes"
QUANTILES = (("p50", 0.5), ("p99", 0.99), ("p999", 0.999))


def latency_rules(c: Ctx) -> tuple[list[Recording], list[AlertRule]]:
    w, sel = c.w, c.sel
    rec = []
    grp = {k: EXAMPLE[k] for k in LAT_GROUP_PAIR}
    # 100 exchanges/s all within (2 us, 2.5 us]: every quantile interpolates inside that bucket.
    bucket_series = []
    from ..catalog import CATALOG  # local: the catalog is the only source of the bucket bounds
    for le in CATALOG["fabric_rdma_latency_seconds"].buckets + (math.inf,):
        per_min = 0 if le < 2.5e-06 else 6000
        name, _ = c.series("fabric_rdma_latency_seconds_bucket", LAT_GROUP_PAIR, le=_le(le))
        bucket_series.append((name, f"0+{per_min}x20"))
    for qname, q in QUANTILES:
        rec.append(Recording(
            f"fabric:rdma_latency_seconds:{qname}",
            f"histogram_quantile({q}, sum by (le, {LAT_BY}) (rate(fabric_rdma_latency_seconds_bucket{sel()}[{w}])))",
            tuple(bucket_series), 10, ((grp, 2e-06 + (2.5e-06 - 2e-06) * q),)))
    s_p99 = f"fabric:rdma_latency_seconds:p99{labels_text(grp)}"
    # A 5m-resolution subquery: the median of ~2000 points per series instead of every 30s sample
    # of a week, evaluated every minute. At 10m the points are 0m, 5m (3 us) and 10m (5 us).
    rec.append(Recording(
        "fabric:rdma_latency_seconds:p99_median_7d",
        "quantile_over_time(0.5, fabric:rdma_latency_seconds:p99[7d:5m])",
        ((s_p99, "0.000003x9 0.000005x20"),), 10, ((grp, 0.000003),)))
    rec.append(Recording(
        "fabric:rdma_latency_seconds:p99_1d_ago",
        "fabric:rdma_latency_seconds:p99 offset 1d",
        # hourly steps: a day of 1m evaluations would make promtool slow for nothing
        ((s_p99, "0.000004x2 0.000006x30"),), 26, ((grp, 0.000004),), test_step=60))
    s_pf, host_role = c.series("fabric_rdma_latency_probe_failures_total", ("fabric", "host"),
                               host_group="rack-1", role="client", reason="timeout")
    s_pt, _ = c.series("fabric_rdma_latency_probes_total", ("fabric", "host"), host_group="rack-1", role="client")
    host_role = _strip(host_role, "reason")
    s_pt2, host_role2 = c.series("fabric_rdma_latency_probes_total", ("fabric",), host="gpu-02",
                                 host_group="rack-1", role="server")
    rec.append(Recording(
        "fabric:rdma_latency_probe_failures:ratio",
        f"(sum without (reason) (rate(fabric_rdma_latency_probe_failures_total{sel()}[{w}]))"
        f" or 0 * rate(fabric_rdma_latency_probes_total{sel()}[{w}]))"
        f" / rate(fabric_rdma_latency_probes_total{sel()}[{w}])",
        ((s_pf, "0+3x20"), (s_pt, "0+60x20"), (s_pt2, "0+60x20")), 10, ((host_role, 0.05), (host_role2, 0.0))))

    alerts = []
    n = "FabricLatencyP99High"
    thr = c.s["thresholds.latency_p99_seconds"]
    high = thr * 2
    alerts.append(c.alert(
        n, WARNING, f"fabric:rdma_latency_seconds:p99 > {fmt(thr)}",
        "RDMA tail latency is above its SLO.",
        "fabric {{ $labels.fabric }}: p99 latency of {{ $labels.tool }} ({{ $labels.message_bytes }} B) from "
        "{{ $labels.source_group }} to {{ $labels.destination_group }} is above " + f"{fmt(thr * 1e6)} us over {w}, "
        f"for {c.s.for_(n)}.",
        Scenario(((s_p99, f"{fmt(thr / 2)}x9 {fmt(high)}x{minutes(c.s.for_(n)) + 10}"),), 10, grp)))

    n = "FabricLatencyP99Regression"
    factor = c.s["thresholds.latency_regression_factor"]
    baseline = ("fabric:rdma_latency_seconds:p99_median_7d" if c.s["latency_baseline"] == "median_7d"
                else "fabric:rdma_latency_seconds:p99_1d_ago")
    baseline_text = "its 7-day median" if c.s["latency_baseline"] == "median_7d" else "the same time yesterday"
    base_value, bad = 0.000004, 0.000004 * factor * 2
    if c.s["latency_baseline"] == "median_7d":
        # 2h of normal p99, then a jump: the median stays at the normal value for hours.
        series = ((s_p99, f"{fmt(base_value)}x119 {fmt(bad)}x{minutes(c.s.for_(n)) + 10}"),)
        onset = 120
    else:
        # hourly steps: the p99 is normal for a day, then regresses at hour 25
        series = ((s_p99, f"{fmt(base_value)}x24 {fmt(bad)}x{math.ceil(minutes(c.s.for_(n)) / 60) + 5}"),)
        onset = 25
    alerts.append(c.alert(
        n, WARNING, f"fabric:rdma_latency_seconds:p99 > {fmt(factor)} * {baseline}",
        "RDMA tail latency regressed against its own baseline.",
        "fabric {{ $labels.fabric }}: p99 latency of {{ $labels.tool }} ({{ $labels.message_bytes }} B) from "
        "{{ $labels.source_group }} to {{ $labels.destination_group }} is more than " + f"{fmt(factor)}x "
        f"{baseline_text}, for {c.s.for_(n)}.",
        Scenario(series, onset, grp, step=1 if c.s["latency_baseline"] == "median_7d" else 60)))

    n = "FabricLatencyProbeLoss"
    thr = c.s["thresholds.probe_loss_ratio"]
    start = c.window_steps() + 2
    full, onset = c.ramp_plan(start, thr, cap=1.0)
    length = c.length(n, onset)
    alerts.append(c.alert(
        n, WARNING, f"fabric:rdma_latency_probe_failures:ratio{sel()} > {fmt(thr)}",
        "Latency probes are failing.",
        "fabric {{ $labels.fabric }}: more than " + pct(thr) + " of the latency probes of {{ $labels.host }} "
        "(as {{ $labels.role }}, group {{ $labels.host_group }})" + f" gave no result over {w}, for "
        f"{c.s.for_(n)}: the host is unreachable over RDMA, or its probes time out.",
        Scenario(((s_pf, c.ramp(start, full * 600, length)), (s_pt, f"0+600x{length}")), onset, host_role)))
    return rec, alerts


def _le(value: float) -> str:
    return "+Inf" if math.isinf(value) else repr(value)


# --- assembly --------------------------------------------------------------------------------------

def build(settings: Settings) -> RuleSet:
    c = Ctx(settings)
    rs = RuleSet(testable=c.testable)
    parts = (("exporter", exporter_rules(c)), ("infiniband", ib_rules(c)), ("roce", roce_rules(c)),
             ("latency", latency_rules(c)))
    for domain, (rec, _) in parts:
        rs.recording_groups.append((f"fabric-exporter.{domain}.recording", rec))
    # after the groups it reads, so one evaluation sees this round's ratios
    from .congestion import congestion_rules
    rs.recording_groups.append(("fabric-exporter.congestion.recording", congestion_rules(c)))
    for domain, (_, alerts) in parts:
        rs.alert_groups.append((f"fabric-exporter.{domain}.alerts", alerts))
    return rs


def to_prometheus(rs: RuleSet) -> dict:
    """The rule file as Prometheus loads it (``rule_files``)."""
    groups = []
    for name, recs in rs.recording_groups:
        groups.append({"name": name, "rules": [{"record": r.record, "expr": r.expr} for r in recs]})
    for name, alerts in rs.alert_groups:
        rules = []
        for a in alerts:
            rule = {"alert": a.alert, "expr": a.expr, "labels": {"component": a.component, "severity": a.severity},
                    "annotations": {"summary": a.summary, "description": a.description,
                                    "runbook_url": a.runbook_url}}
            if duration_seconds(a.for_) > 0:
                rule["for"] = a.for_
            rules.append(rule)
        groups.append({"name": name, "rules": rules})
    return {"groups": groups}
