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
    try:  # a NIC's counters move whatever the host's load: keep the ground truth's writer on time
        os.nice(-10)
    except OSError:
        pass
    port_dir = Path(args.sys_class) / "infiniband" / args.device / "ports" / "1" / "hw_counters"
    p = args.priority
    eth = EthtoolFile(Path(args.ethtool_dir) / args.netdev)
    hw = {name: InPlace(port_dir / name, int((port_dir / name).read_text().split()[0]))
          for name in ("np_ecn_marked_roce_packets", "np_cnp_sent")}
    pause_us, frames = f"rx_prio{p}_pause_duration", f"rx_prio{p}_pause"
    added = {pause_us: 0, frames: 0, **{n: 0 for n in hw}}
    rng = random.Random(args.seed + 1)
    schedule = make_schedule(args.seed, args.duration, args.min_ms, args.max_ms, (args.gap_min_ms, args.gap_max_ms),
                             [float(x) for x in args.lengths_ms.split(",")] if args.lengths_ms else None)
    if args.quiet:
        schedule = []
    origin = args.start_at if args.start_at else time.monotonic()
    step = args.step_ms / 1000
    truth: list[tuple[float, float]] = []
    gaps: list[float] = []
    written: list[float] = []
    reset_at = origin + args.reset_at if args.reset_at else None

    def bump(name: str, n: int) -> None:
        if n <= 0:
            return
        added[name] += n
        if name in hw:
            hw[name].write(hw[name].value + n)
        else:
            eth.values[name] += n

    def sleep_until(t: float) -> None:
        delay = t - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    last = max(origin, time.monotonic())
    sleep_until(origin)
    last = time.monotonic()
    k = 0
    last_write = -1e9  # no write (burst or noise) for reset_quiet before the reload
    end_all = origin + args.duration
    while True:
        now = time.monotonic()
        if now >= end_all:
            break
        # the reload comes after a quiet gap, so the sampler has read every count before it
        if reset_at is not None and now >= reset_at and now - last_write >= args.reset_quiet:
            reset_at = None
            for f in hw.values():
                f.write(0)
            for n in eth.values:
                eth.values[n] = 0
            eth.flush()
        burst = schedule[k] if k < len(schedule) else None
        if burst is not None and now >= origin + burst[0] and not (reset_at is not None and now >= reset_at):
            sleep_until(origin + burst[0])
            t0 = time.monotonic()  # a burst held back by a pending reload starts late, as long
            end = t0 + burst[1]
            base = eth.values[pause_us]
            t = t0
            gap = 0.0  # the longest this writer was held up during the burst (a loaded machine)
            while t < end:
                nxt = min(end, t + step)
                sleep_until(nxt)
                t_now = min(time.monotonic(), end)
                gap = max(gap, t_now - t)
                dt = t_now - t
                eth.values[pause_us] = base + round((t_now - t0) * 1e6)
                bump(frames, round(dt * args.burst_frames_per_s))
                bump("np_ecn_marked_roce_packets", round(dt * args.burst_ecn_per_s))
                bump("np_cnp_sent", round(dt * args.burst_cnp_per_s))
                eth.flush()
                t = t_now
            added[pause_us] += eth.values[pause_us] - base
            truth.append((t0, t))
            gaps.append(gap)
            written.append(time.monotonic())  # when the burst's last count was really written
            last_write = time.monotonic()
            k += 1
            last = time.monotonic()
            continue
        # quiet: background noise below every threshold, then wait for the next step
        reset_pending = reset_at is not None and now >= reset_at
        nxt = min(now + step, origin + burst[0]) if burst and not reset_pending else now + step
        sleep_until(nxt)
        now = time.monotonic()
        # noise over at most two steps: a writer held up for a second must not pour a second's worth
        # of pause into one window (a NIC's counter would have moved all along)
        dt, last = min(now - last, 2 * step), now
        if args.noise and not reset_pending:
            last_write = now
            paused = round(dt * 1e6 * rng.uniform(0, 0.05))
            eth.values[pause_us] += paused
            added[pause_us] += paused
            bump("np_ecn_marked_roce_packets", round(dt * rng.uniform(0, 200)))
            eth.flush()
    log = {"bursts": truth, "writer_gaps": gaps, "written_until": written, "added": added, "origin": origin, "end": time.monotonic()}
    tmp = Path(args.log + ".tmp")
    tmp.write_text(json.dumps(log))
    os.replace(tmp, args.log)
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
