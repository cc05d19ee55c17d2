"""Ground truth for the burst sampler: writes a lab host's fake counters on a schedule of bursts.

A separate process (``python -m fabric_exporter.lab.burst_injector``) moves one port's counters in
the lab's fake sysfs tree (``hw_counters/*``) and its fake ``ethtool -S`` file as a NIC would:

- during a burst (``--min-ms``..``--max-ms`` long, at random phases, gaps of ``--gap-ms``): the
  lossless priority is paused 100 % of the time (``rx_prio{p}_pause_duration`` += elapsed µs,
  rewritten every ``--step-ms``), with pause frames, ECN-marked packets and CNPs at burst rates;
- between bursts: background noise well below every threshold (a few % paused, a trickle of ECN);
- optionally a driver reload (every counter to 0) after a quiet gap (``--reset-at``).

Counters are rewritten IN PLACE (one ``pwrite`` of a fixed-width value, like a sysfs attribute:
same inode, so a reader's kept-open descriptor sees every change), never renamed. The log
(``--log``, JSON, written at the end) holds each burst's true start and end (``time.monotonic``,
the same clock in every process of the machine; ``written_until``: when a writer held up by a loaded
machine really wrote the burst's last count) and the total count added to each counter, so
tests can check recall, peak and conservation against what really happened.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

WIDTH = 20  # fixed-width values: a rewrite never changes a file's length


class InPlace:
    """A counter file rewritten in place (``%0{WIDTH}d``)."""

    def __init__(self, path: Path, value: int):
        self.fd = os.open(path, os.O_RDWR)
        self.value = value
        self.write(value)
        os.ftruncate(self.fd, WIDTH + 1)

    def write(self, value: int) -> None:
        self.value = value
        os.pwrite(self.fd, b"%0*d\n" % (WIDTH, value), 0)


class EthtoolFile:
    """A fake ``ethtool -S`` file rewritten in place with fixed-width values."""

    def __init__(self, path: Path):
        self.path = path
        self.names: list[str] = []
        self.values: dict[str, int] = {}
        for line in path.read_text().splitlines()[1:]:
            name, _, value = line.strip().rpartition(":")
            self.names.append(name.strip())
            self.values[name.strip()] = int(value)
        self.fd = os.open(path, os.O_RDWR)
        self.flush()
        os.ftruncate(self.fd, len(self._render()))

    def _render(self) -> bytes:
        return ("NIC statistics:\n" + "".join(f"     {n}: {self.values[n]:{WIDTH}d}\n" for n in self.names)).encode()

    def flush(self) -> None:
        os.pwrite(self.fd, self._render(), 0)


def make_schedule(seed: int, duration: float, min_ms: float, max_ms: float, gap_ms: tuple[float, float],
                  lengths_ms: list[float] | None = None) -> list[tuple[float, float]]:
    """(offset, length) in seconds from the start; random phases (gaps drawn uniformly)."""
    rng = random.Random(seed)
    out, t = [], rng.uniform(*gap_ms) / 1000
    k = 0
    while True:
        length = (lengths_ms[k % len(lengths_ms)] if lengths_ms else rng.uniform(min_ms, max_ms)) / 1000
        if t + length > duration:
            return out
        out.append((t, length))
        k += 1
        t += length + rng.uniform(*gap_ms) / 1000


def run(args: argparse.Namespace) -> dict:
    """Write the schedule's bursts (and noise, and the reload) into the counters; the log."""
    try:  # a NIC's counters move whatever the host's load: keep the ground truth's writer on time
        os.nice(-10)
    except OSError:
        pass
    return Injector(args).run()


def _sleep_until(t: float) -> None:
    delay = t - time.monotonic()
    if delay > 0:
        time.sleep(delay)


class Injector:
    """One run: the port's counter files, the burst schedule, and the ground truth written so far."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        port_dir = Path(args.sys_class) / "infiniband" / args.device / "ports" / "1" / "hw_counters"
        p = args.priority
        self.eth = EthtoolFile(Path(args.ethtool_dir) / args.netdev)
        self.hw = {name: InPlace(port_dir / name, int((port_dir / name).read_text().split()[0]))
                   for name in ("np_ecn_marked_roce_packets", "np_cnp_sent")}
        self.pause_us, self.frames = f"rx_prio{p}_pause_duration", f"rx_prio{p}_pause"
        self.added = {self.pause_us: 0, self.frames: 0, **{n: 0 for n in self.hw}}
        self.rng = random.Random(args.seed + 1)
        schedule = make_schedule(args.seed, args.duration, args.min_ms, args.max_ms,
                                 (args.gap_min_ms, args.gap_max_ms),
                                 [float(x) for x in args.lengths_ms.split(",")] if args.lengths_ms else None)
        self.schedule = [] if args.quiet else schedule
        self.origin = args.start_at if args.start_at else time.monotonic()
        self.step = args.step_ms / 1000
        self.truth: list[tuple[float, float]] = []
        self.gaps: list[float] = []
        self.written: list[float] = []
        self.reset_at = self.origin + args.reset_at if args.reset_at else None
        self.last_write = -1e9  # no write (burst or noise) for reset_quiet before the reload
        self.last = self.origin  # the last noise step (or burst end)

    def run(self) -> dict:
        _sleep_until(self.origin)
        self.last = time.monotonic()
        k = 0
        end_all = self.origin + self.args.duration
        while True:
            now = time.monotonic()
            if now >= end_all:
                break
            self._reload_if_due(now)
            burst = self.schedule[k] if k < len(self.schedule) else None
            if burst is not None and now >= self.origin + burst[0] and not self._reset_pending(now):
                self._burst(*burst)
                k += 1
                continue
            self._quiet_step(now, burst)
        return self._write_log()

    def bump(self, name: str, n: int) -> None:
        if n <= 0:
            return
        self.added[name] += n
        if name in self.hw:
            self.hw[name].write(self.hw[name].value + n)
        else:
            self.eth.values[name] += n

    def _reset_pending(self, now: float) -> bool:
        return self.reset_at is not None and now >= self.reset_at

    def _reload_if_due(self, now: float) -> None:
        """The driver reload (every counter to 0), after a quiet gap, so the sampler has read every
        count before it."""
        if self._reset_pending(now) and now - self.last_write >= self.args.reset_quiet:
            self.reset_at = None
            for f in self.hw.values():
                f.write(0)
            for n in self.eth.values:
                self.eth.values[n] = 0
            self.eth.flush()

    def _burst(self, offset: float, length: float) -> None:
        """One burst: 100 % paused, rewritten every step, with frames, ECN marks and CNPs at burst rates."""
        args, eth = self.args, self.eth
        _sleep_until(self.origin + offset)
        t0 = time.monotonic()  # a burst held back by a pending reload starts late, as long
        end = t0 + length
        base = eth.values[self.pause_us]
        t = t0
        gap = 0.0  # the longest this writer was held up during the burst (a loaded machine)
        while t < end:
            nxt = min(end, t + self.step)
            _sleep_until(nxt)
            t_now = min(time.monotonic(), end)
            gap = max(gap, t_now - t)
            dt = t_now - t
            eth.values[self.pause_us] = base + round((t_now - t0) * 1e6)
            self.bump(self.frames, round(dt * args.burst_frames_per_s))
            self.bump("np_ecn_marked_roce_packets", round(dt * args.burst_ecn_per_s))
            self.bump("np_cnp_sent", round(dt * args.burst_cnp_per_s))
            eth.flush()
            t = t_now
        self.added[self.pause_us] += eth.values[self.pause_us] - base
        self.truth.append((t0, t))
        self.gaps.append(gap)
        self.written.append(time.monotonic())  # when the burst's last count was really written
        self.last_write = time.monotonic()
        self.last = time.monotonic()

    def _quiet_step(self, now: float, burst: tuple[float, float] | None) -> None:
        """Between bursts: wait one step (or until the next burst), with noise below every threshold."""
        reset_pending = self._reset_pending(now)
        nxt = min(now + self.step, self.origin + burst[0]) if burst and not reset_pending else now + self.step
        _sleep_until(nxt)
        now = time.monotonic()
        # noise over at most two steps: a writer held up for a second must not pour a second's worth
        # of pause into one window (a NIC's counter would have moved all along)
        dt, self.last = min(now - self.last, 2 * self.step), now
        if self.args.noise and not reset_pending:
            self.last_write = now
            paused = round(dt * 1e6 * self.rng.uniform(0, 0.05))
            self.eth.values[self.pause_us] += paused
            self.added[self.pause_us] += paused
            self.bump("np_ecn_marked_roce_packets", round(dt * self.rng.uniform(0, 200)))
            self.eth.flush()

    def _write_log(self) -> dict:
        """The ground truth, as JSON at ``--log`` (written whole: a reader never sees half of it)."""
        log = {"bursts": self.truth, "writer_gaps": self.gaps, "written_until": self.written, "added": self.added,
               "origin": self.origin, "end": time.monotonic()}
        tmp = Path(self.args.log + ".tmp")
        tmp.write_text(json.dumps(log))
        os.replace(tmp, self.args.log)
        return log


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sys-class", required=True, help="the fake /sys/class tree (holding infiniband/)")
    ap.add_argument("--ethtool-dir", required=True, help="the fake ethtool -S files (one per netdev)")
    ap.add_argument("--device", default="mlx5_0")
    ap.add_argument("--netdev", default="ens1f0np0")
    ap.add_argument("--priority", type=int, default=3)
    ap.add_argument("--duration", type=float, required=True, help="seconds")
    ap.add_argument("--start-at", type=float, default=0.0, help="time.monotonic() to start at (default now)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-ms", type=float, default=150)
    ap.add_argument("--max-ms", type=float, default=500)
    ap.add_argument("--lengths-ms", default="", help="comma-separated burst lengths, cycled (instead of random)")
    ap.add_argument("--gap-min-ms", type=float, default=400)
    ap.add_argument("--gap-max-ms", type=float, default=1200)
    ap.add_argument("--step-ms", type=float, default=2)
    ap.add_argument("--burst-frames-per-s", type=float, default=20000)
    ap.add_argument("--burst-ecn-per-s", type=float, default=50000)
    ap.add_argument("--burst-cnp-per-s", type=float, default=5000)
    ap.add_argument("--noise", action="store_true", help="background noise below the thresholds between bursts")
    ap.add_argument("--quiet", action="store_true", help="no bursts at all (noise only, with --noise)")
    ap.add_argument("--reset-at", type=float, default=0.0, help="seconds from the start: a driver reload")
    ap.add_argument("--reset-quiet", type=float, default=0.5, help="seconds without a burst before the reload")
    ap.add_argument("--log", required=True)
    run(ap.parse_args(argv))


if __name__ == "__main__":
    main()
