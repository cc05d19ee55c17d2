"""The lab's traffic model: believable counter rates, and scenarios an operator can switch on.

Each tick moves every simulated counter by rate × seconds. Healthy load is data near a fraction of
line rate with a trickle of PFC/ECN/CNP activity and no errors; each scenario raises the signals
an operator would see in that situation, correlated the way a real fabric correlates them (an
incast raises transmit-wait, PFC, ECN, CNPs and latency together). Pure state: no I/O here; the
lab applies the model to ibsim, the simulated hosts, the SNMP data and the perftest answers.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field

from .roce_host import NicPort


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str


SCENARIOS = {s.name: s for s in (
    Scenario("congestion", "incast into rack 1: IB transmit-wait on leaf-01's host ports, PFC pauses, "
                           "ECN marks and CNPs on rack 1's NICs and switch, latency p99 into rack 1 rises"),
    Scenario("pause_storm", "one NIC stuck sending PFC on priority 3: pause time ~100%, storm events, "
                            "the switch's PFC watchdog fires"),
    Scenario("link_flap", "an IB leaf uplink and a RoCE NIC port go down and up every few seconds"),
    Scenario("bit_errors", "symbol errors on an IB link, PCS symbol errors and corrected bits on a NIC"),
    Scenario("incast_ib", "incast into rack 1 on the InfiniBand fabric only: transmit-wait on leaf-01's host "
                          "ports, IB probe latency into rack 1 rises"),
    Scenario("incast_roce", "incast into rack 1 on the RoCE fabric only: PFC pauses, ECN marks and CNPs on rack 1's "
                            "NICs and switch, RoCE probe latency into rack 1 rises"),
    Scenario("microburst", "PFC pause bursts of 150-400 ms at random phases on rack 1's NICs (a few % paused on "
                           "average: the 30 s pause rate barely moves, the burst sampler's peak does)"),
    Scenario("latency_regression", "every probed pair's p99 latency rises tenfold, past the 20 us SLO "
                                   "(tail only; the median holds)"),
)}

LINE_RATE_BYTES = 400e9 / 8  # 400G RoCE NIC ports
IB_PORT_BYTES_PER_SECOND = 12e9  # ibsim's links train at 12x QDR: 12 lanes x 8 Gb/s of data
# ibsim has only the 32-bit PortXmitWait, which latches at 2^32-1: at a true 40% stall on a 12 GB/s
# port that is one second. The lab counts transmit-wait 10,000x slower (a 40% stall latches after
# ~2.5 hours) and its generated rules lower the IB stall threshold by the same factor.
IB_XMIT_WAIT_SCALE = 1e-4
LOSSLESS = 3  # the RoCE priority with PFC
# After an incast stops, the counters' rates drop at once but queues drain and flows ramp back up
# over a while: the tail latency into the congested rack decays with this time constant. The lab
# assumes RoCE (PFC pauses spreading, DCQCN rate recovery) is slower than credit-based IB.
RECOVERY_TIME_CONSTANT_SECONDS = {"ib": 3.0, "roce": 8.0}
# microburst: each NIC port of the bursting rack is paused 100 % for 150-400 ms, then runs free for
# 8-20 s (phases drawn per port): ~2 % paused on average, below any rate-window threshold
MICROBURST_MS = (150.0, 400.0)
MICROBURST_GAP_S = (8.0, 20.0)
MICROBURST_PAUSE_FRAMES_PER_S = 20000  # a paused port keeps receiving XOFF refreshes


@dataclass
class TrafficModel:
    """Which scenarios are on, and how that turns into counter increments."""

    seed: int = 7
    active: dict[str, float] = field(default_factory=dict)  # scenario -> started (monotonic)
    stopped: dict[str, float] = field(default_factory=dict)  # scenario -> last stopped (monotonic)
    _rng: random.Random = field(init=False, repr=False)
    # fractions of a count carried to the next tick, so short ticks (the lab's NIC timer) keep
    # small rates: (id(table), name) -> fraction
    _carry: dict = field(init=False, repr=False, default_factory=dict)
    # microburst: per port key, the next (or current) burst's (start, end), monotonic seconds
    _bursts: dict = field(init=False, repr=False, default_factory=dict)
    _burst_rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._burst_rng = random.Random(self.seed + 1)

    def on(self, name: str) -> bool:
        return name in self.active

    def start(self, name: str, now: float) -> None:
        if name not in SCENARIOS:
            raise KeyError(name)
        self.active.setdefault(name, now)

    def stop(self, name: str, now: float | None = None) -> None:
        if self.active.pop(name, None) is not None:
            self.stopped[name] = time.monotonic() if now is None else now

    def congestion_level(self, fabric: str, now: float | None = None) -> float:
        """1 while an incast is on in this fabric, then decaying to 0 (the aftermath); 0 otherwise."""
        if self.congested(fabric):
            return 1.0
        ends = [self.stopped[n] for n in ("congestion", f"incast_{fabric}") if n in self.stopped]
        if not ends:
            return 0.0
        since = (time.monotonic() if now is None else now) - max(ends)
        return math.exp(-since / RECOVERY_TIME_CONSTANT_SECONDS[fabric])

    def congested(self, fabric: str) -> bool:
        """Is an incast on in this fabric ('ib' or 'roce')? 'congestion' is an incast on both."""
        return self.on("congestion") or self.on(f"incast_{fabric}")

    def jitter(self) -> float:
        return self._rng.uniform(0.85, 1.15)

    # -- RoCE NIC ports ---------------------------------------------------------------------------

    def microburst_paused(self, key, t0: float, t1: float) -> float:
        """Seconds of [t0, t1) the port ``key`` spends inside a microburst; bursts follow each other at
        random phases (the first one within a gap of ``t0``), whatever the tick length."""
        start, end = self._bursts.get(key) or self._next_burst(t0 + self._burst_rng.uniform(0, MICROBURST_GAP_S[1]))
        paused = 0.0
        while start < t1:
            paused += max(0.0, min(end, t1) - max(start, t0))
            if end > t1:
                break
            start, end = self._next_burst(end + self._burst_rng.uniform(*MICROBURST_GAP_S))
        self._bursts[key] = (start, end)
        return paused

    def _next_burst(self, start: float) -> tuple[float, float]:
        return start, start + self._burst_rng.uniform(*MICROBURST_MS) / 1000

    def advance_nic(self, port: NicPort, dt: float, *, in_congested_rack: bool, storming: bool,
                    flapping: bool, bit_errors: bool, now: float | None = None) -> None:
        eth, hw = port.ethtool, port.hw_counters
        carry = self._carry

        def _add(table: dict[str, int], name: str, amount: float) -> None:
            _add_carried(table, name, amount, carry)

        micro = 0.0  # seconds of this tick inside a microburst
        if in_congested_rack and self.on("microburst"):
            end = time.monotonic() if now is None else now
            micro = self.microburst_paused(id(port), end - dt, end)
        elif id(port) in self._bursts:
            del self._bursts[id(port)]  # the scenario stopped: the next one draws new phases
        congested = in_congested_rack and self.congested("roce")
        load = 0.55 if not congested else 0.9  # fraction of line rate
        rx_bytes = LINE_RATE_BYTES * load * dt * self.jitter()
        tx_bytes = LINE_RATE_BYTES * load * 0.95 * dt * self.jitter()
        _add(eth, "rx_bytes_phy", rx_bytes)
        _add(eth, "tx_bytes_phy", tx_bytes)
        _add(eth, "rx_packets_phy", rx_bytes / 4096)
        _add(eth, "tx_packets_phy", tx_bytes / 4096)
        _add(eth, f"rx_prio{LOSSLESS}_bytes", rx_bytes * 0.98)
        _add(eth, f"tx_prio{LOSSLESS}_bytes", tx_bytes * 0.98)
        _add(eth, f"rx_prio{LOSSLESS}_packets", rx_bytes * 0.98 / 4096)
        _add(eth, f"tx_prio{LOSSLESS}_packets", tx_bytes * 0.98 / 4096)
        # PFC: a trickle when healthy; under incast the fabric pauses this NIC ~30% of the time.
        paused = 0.3 if congested else 0.002
        _add(eth, f"rx_prio{LOSSLESS}_pause",
             3000 * paused * dt * self.jitter() + MICROBURST_PAUSE_FRAMES_PER_S * micro)
        _add(eth, f"rx_prio{LOSSLESS}_pause_duration", 1e6 * (paused * dt + micro))
        _add(eth, f"rx_prio{LOSSLESS}_pause_transition", 1500 * paused * dt)
        if storming:  # the NIC itself cannot drain: it sends pause all the time
            _add(eth, f"tx_prio{LOSSLESS}_pause", 30000 * dt)
            _add(eth, f"tx_prio{LOSSLESS}_pause_duration", 1e6 * dt * 0.99)
            _add(eth, "tx_pause_storm_warning_events", dt)  # one a second (whatever the tick)
            _add(eth, "tx_pause_storm_error_events", dt / 5)
            _add(eth, "rx_discards_phy", 2000 * dt)
        else:
            _add(eth, f"tx_prio{LOSSLESS}_pause", 10 * dt * self.jitter())
            _add(eth, f"tx_prio{LOSSLESS}_pause_duration", 1000 * dt)
        # DCQCN: ECN-marked arrivals and the CNPs they trigger
        ecn = (1_000_000 if congested else 200) * dt * self.jitter()  # ~9% of packets under incast
        _add(hw, "np_ecn_marked_roce_packets", ecn)
        _add(hw, "np_cnp_sent", ecn * 0.8)
        _add(hw, "rp_cnp_handled", ecn * 0.8)
        if congested:
            _add(hw, "out_of_sequence", 50 * dt)
            _add(hw, "packet_seq_err", 20 * dt)
            _add(hw, "local_ack_timeout_err", 2 * dt)
            _add(hw, "roce_adp_retrans", 40 * dt)
        if flapping:
            _add(eth, "link_down_events_phy", dt)  # one a second while flapping
        if bit_errors:
            _add(eth, "rx_pcs_symbol_err_phy", 500 * dt)
            _add(eth, "rx_corrected_bits_phy", 1e5 * dt)

    # -- switch buffers -----------------------------------------------------------------------------

    def switch_buffer_peaks(self, *, congested: bool) -> dict[str, float]:
        """The peak occupancy (bytes) one tick reaches in a switch port's buffers, and the fraction of
        the tick its lossless priority was paused by received PFC. Healthy: a few KB queue up now and
        then. Incast: the lossless egress queue fills towards its dynamic threshold (~2-3 MB on a
        Tomahawk/Spectrum class ASIC), the ingress PG's shared use follows and its headroom takes what
        was in flight after XOFF; the port is paused ~30% of the time (as the NICs are)."""
        if congested:
            return {"queue": 2_400_000 * self.jitter(), "other_queue": 30_000 * self.jitter(),
                    "pg_shared": 1_700_000 * self.jitter(), "pg_headroom": 110_000 * self.jitter(), "paused": 0.3}
        return {"queue": 9_000 * self.jitter(), "other_queue": 4_000 * self.jitter(),
                "pg_shared": 6_000 * self.jitter(), "pg_headroom": 0.0, "paused": 0.002}

    # -- latency ----------------------------------------------------------------------------------

    def latency_us(self, source_rack: int, destination_rack: int, fabric: str = "roce") -> dict:
        """Statistics (µs) of one ib_write_lat probe between racks, over the RoCE or the IB fabric."""
        base = 1.9 if source_rack == destination_rack else 2.6  # one more switch hop across racks
        if fabric == "ib":
            base *= 0.7  # cut-through switches and no Ethernet framing
        typical = base * self._rng.uniform(0.97, 1.05)
        p99_factor = 1.35
        level = self.congestion_level(fabric) if destination_rack == 1 else 0.0
        if level > 0.001:
            typical *= 1 + 0.8 * level
            # queueing behind the incast: the tail grows far more than the median
            p99_factor = 1.35 + (8.0 - 1.35) * level
        if self.on("latency_regression"):
            p99_factor *= 10.0
        p99 = typical * p99_factor * self._rng.uniform(0.95, 1.1)
        p999 = p99 * self._rng.uniform(1.3, 2.0)
        return {"min": round(typical * 0.9, 2), "typical": round(typical, 2), "avg": round(typical * 1.05, 2),
                "stdev": round(typical * 0.08, 2), "p99": round(p99, 2), "p999": round(p999, 2),
                "max": round(p999 * 1.5, 2)}

    # -- InfiniBand ---------------------------------------------------------------------------------

    def ib_port_rates(self, *, host_port_of_congested_leaf: bool) -> dict[str, float]:
        """Per-second increments of one IB port's counters (data in 4-byte words, as IB counts)."""
        congested = host_port_of_congested_leaf and self.congested("ib")
        load = 0.9 if congested else 0.45
        words = IB_PORT_BYTES_PER_SECOND * load / 4
        stalled = 0.4 if congested else 0.0001  # fraction of time with data but no credits
        return {
            "PortXmitData": words * self.jitter(), "PortRcvData": words * self.jitter(),
            "PortXmitPkts": words / 1024, "PortRcvPkts": words / 1024,
            "PortXmitWait": stalled * IB_PORT_BYTES_PER_SECOND * IB_XMIT_WAIT_SCALE,
        }


def _add_carried(table: dict[str, int], name: str, amount: float, carry: dict) -> None:
    """Add ``amount`` to a counter, keeping the fraction for the next tick (10/s over 50 ms ticks is
    still 10/s). A counter this driver/PFC config does not have stays absent."""
    if name in table:
        key = (id(table), name)
        total = amount + carry.get(key, 0.0)
        whole = int(total)
        carry[key] = total - whole
        table[name] += whole
