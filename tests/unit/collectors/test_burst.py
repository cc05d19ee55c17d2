"""The burst sampler (roce_nic option ``burst:``): windows -> peaks, histograms, bursts; counts
conserved across counter resets; the probe reads real files in place and the real ethtool ioctl;
a ground-truth injector (a separate process writing the lab's fake counters on a schedule of
bursts) checks recall, peak and conservation through the local sampler and through a real sshd.

Timing tests measure on this (loaded, 2-core) machine with 100 ms windows; their tolerances are
the issue's acceptance figures. The 10-minute quiet run is bench/bench_burst.py --quiet-minutes 10.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fabric_exporter.collectors import burst, burst_probe
from fabric_exporter.collectors.base import PollContext
from fabric_exporter.collectors.roce_nic import ETHTOOL_MAPPER, HW_MAPPER, RoceNicCollector, driver_family
from fabric_exporter.config.model import ConfigError
from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import burst_stream
from fabric_exporter.lab.burst_injector import InPlace
from fabric_exporter.lab.roce_host import RoceHost, write_fake_tools
from tests.harness.configs import parse_config

from tests.harness.roce_nic import group
from tests.harness.polling import matching, one, parse_exposition

PAUSE = (("host", "gpu-001"), ("device", "mlx5_0"), ("port", "1"), ("netdev", "ens1f0np0"),
         ("signal", "pfc_rx_pause_time"))
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


def col(probe: str, signal: str = "pfc_rx_pause_time", scale: float = 1e-6, threshold: float = 0.5) -> burst.Column:
    labels = (("host", "h"), ("device", "d"), ("port", "1"), ("netdev", "n"), ("signal", signal))
    return burst.Column(probe, labels, scale, threshold, burst.SIGNALS[signal].fraction)


# ---------------------------------------------------------------------------------------------
# the accumulator (pure)


def test_windows_make_peaks_histograms_and_bursts():
    acc = burst.BurstAccumulator([col("a"), col("b", "ecn_marked", 1.0, 1000.0)])
    # a: 0.2, 0.6, 0.9, 0, 0.7 of 100 ms windows paused; b: 50 packets in one window (500/s)
    for t, deltas in enumerate([{0: 20_000}, {0: 60_000, 1: 50}, {0: 90_000}, {}, {0: 70_000}]):
        acc.window(0.1, deltas, 10.0 + 0.1 * (t + 1))
    peaks = acc.take_peaks()
    assert peaks == {"a": pytest.approx(0.9), "b": pytest.approx(500.0)}
    assert acc.take_peaks() is None  # no window since: no peak is published, rather than a stale one
    acc.window(0.1, {0: 10_000}, 10.6)
    assert acc.take_peaks() == {"a": pytest.approx(0.1), "b": 0.0}
    a = acc.series["a"]
    assert a.bursts == 2 and a.burst_seconds == pytest.approx(0.3)  # windows 2-3, then window 5
    assert [(e.start, e.end, e.peak) for e in acc.events] == [
        (pytest.approx(10.1), pytest.approx(10.3), pytest.approx(0.9)),
        (pytest.approx(10.4), pytest.approx(10.5), pytest.approx(0.7))]
    assert acc.totals() == {"a": 250_000, "b": 50}
    out = {(s.name, s.labels.get("le")): s.value for s in acc.samples(None, {"group": "g", "host": "h",
                                                                            "collector": "roce_nic"})
           if s.labels.get("signal", "pfc_rx_pause_time") == "pfc_rx_pause_time"}
    bucket = "fabric_roce_nic_burst_window_ratio_bucket"
    # six windows: 0.2, 0.6, 0.9, 0, 0.7, 0.1 -> cumulative per bound
    assert [out[(bucket, le)] for le in ("0.05", "0.25", "0.5", "0.9", "1.0", "100.0", "+Inf")] == [1, 3, 3, 6, 6, 6, 6]
    assert out[("fabric_roce_nic_burst_window_ratio_count", None)] == 6
    assert out[("fabric_roce_nic_bursts_total", None)] == 2
    assert out[("fabric_burst_sampler_ticks_total", None)] == 6


def test_missed_ticks_and_lateness_are_counted():
    acc = burst.BurstAccumulator([col("a")])
    acc.window(0.1, {}, 1.0, 0, 0.002)
    acc.window(0.3, {0: 300_000}, 1.3, 2, 0.2)  # two ticks missed: one longer window, its counts kept
    assert acc.ticks == 2 and acc.missed == 2 and acc.totals() == {"a": 300_000}
    assert acc.lateness_buckets == [0, 1, 0, 0, 0, 1]
    assert acc.take_peaks() == {"a": pytest.approx(1.0)}
    # a lagging time counter puts 120 ms of pause in a 100 ms window: 100 % paused, the count kept whole
    acc.window(0.1, {0: 120_000}, 1.4)
    assert acc.take_peaks() == {"a": 1.0} and acc.totals() == {"a": 420_000}


def test_peak_is_held_between_polls_not_reset_by_scrapes():
    """Two Prometheus replicas read the same snapshot: the peak is the poll's, whatever the scrapes."""
    acc = burst.BurstAccumulator([col("a")])
    acc.window(0.1, {0: 80_000}, 1.0)
    target = {"group": "g", "host": "h", "collector": "roce_nic"}
    published = acc.samples(acc.take_peaks(), target)
    peak = [s.value for s in published if s.name == "fabric_roce_nic_burst_peak_ratio"]
    assert peak == [pytest.approx(0.8)]
    # the snapshot is what every scrape reads until the next poll; nothing in the accumulator moved
    assert [s.value for s in published if s.name == "fabric_roce_nic_burst_peak_ratio"] == peak


# ---------------------------------------------------------------------------------------------
# the probe: kept-open files read in place, resets, the real ethtool ioctl


def fake_port(tmp_path: Path) -> tuple[Path, Path, RoceHost]:
    model = RoceHost.build("gpu-001", "mlx5", nics=1)
    model.advance(5)
    model.write_sysfs(tmp_path / "sys" / "class")
    model.write_tool_outputs(tmp_path / "data")
    return tmp_path / "sys", tmp_path / "data" / "ethtool", model


def test_probe_conserves_counts_across_a_counter_reset(tmp_path):
    sysfs, _, model = fake_port(tmp_path)
    path = sysfs / "class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent"
    f = InPlace(path, model.ports[0].hw_counters["np_cnp_sent"])
    probe = burst_probe.Probe(["hw/mlx5_0/1/np_cnp_sent", "hw/mlx5_0/1/absent"], sysfs=str(sysfs))
    assert set(probe.missing) == {1}
    start = f.value
    seen = 0
    injected = 0
    for step in (5, 0, 17, "reset", 3, 40, 0, 1):
        if step == "reset":  # driver reload: the counter starts again at 0
            f.write(0)
        else:
            f.write(f.value + step)
            injected += step
        _, deltas = probe.sample()
        seen += deltas.get(0, 0)
        assert all(d >= 0 for d in deltas.values())
    assert seen == injected == 66
    assert f.value == 44 and start > 0  # the raw counter alone would say 44 - start (< 0)
    probe.close()


def test_probe_reads_a_real_driver_with_the_ethtool_ioctl(tmp_path):
    """ETHTOOL_GSTATS on a veth pair in a private network namespace (the machine's are untouched):
    each side's peer_ifindex statistic is the other's ifindex, as `ip link` lists them."""
    script = (
        "ip link add fbv0 type veth peer name fbv1 && ip link set fbv0 up && ip link set fbv1 up && "
        "ip -o link show && "
        f"{shlex.quote(sys.executable)} -c 'import sys; from fabric_exporter.collectors.burst_probe import Probe; "
        "p = Probe([\"eth/fbv0/peer_ifindex\", \"eth/fbv1/peer_ifindex\", \"eth/fbv0/no_such\"]); "
        "print(\"VALUES\", *p.last, sorted(p.missing))'")
    r = subprocess.run(["unshare", "-n", "sh", "-c", script], capture_output=True, text=True, timeout=30, env=ENV)
    assert r.returncode == 0, r.stderr
    index = {}
    for line in r.stdout.splitlines():
        if not line.startswith("VALUES"):
            number, name = line.split(":")[:2]
            index[name.strip().split("@")[0]] = int(number)
    values = next(line for line in r.stdout.splitlines() if line.startswith("VALUES")).split()
    assert int(values[1]) == index["fbv1"] and int(values[2]) == index["fbv0"]
    assert values[3] == "0" and values[4] == "[2]"


def test_remote_probe_streams_windows(tmp_path):
    """The probe as the SSH path runs it: ``python3 -c <source> fabric-burst ...``, one line per window."""
    sysfs, ethtool_dir, _ = fake_port(tmp_path)
    cols = [col("hw/mlx5_0/1/np_cnp_sent"), col("eth/ens1f0np0/rx_prio3_pause_duration"), col("hw/nope/1/x")]
    opts = burst.BurstOptions(window=0.02, ethtool_stats_dir=str(ethtool_dir))
    argv = burst.command(cols, opts)
    assert argv[:2] == ["python3", "-c"] and argv[2] == burst.PROBE_SOURCE
    # the probe reads /sys: run it in a mount namespace with the fake tree on /sys/class
    inner = f"mount --bind {shlex.quote(str(sysfs / 'class'))} /sys/class && exec timeout 2 " + shlex.join(argv)
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", inner], capture_output=True,
                       text=True, timeout=30)
    lines = r.stdout.splitlines()
    burst.check_header(lines[0], 3)
    window_us, ncolumns, origin_us = burst_stream.parse_header(lines[0])
    assert (window_us, ncolumns) == (20_000, 3) and abs(origin_us / 1e6 - time.monotonic()) < 30
    assert lines[1].startswith("m 2 ")
    windows = [burst_stream.parse_window(line, 3) for line in lines[2:]]
    assert len(windows) >= 20
    seqs = [w[0] for w in windows]
    assert seqs == sorted(seqs) and all(w[1] > 0 for w in windows)


def test_bad_stream_lines_are_parse_errors():
    assert burst_stream.parse_window("w 7 100250 1200 0:5 2:100000", 3) == (7, 0.10025, 0.0012, {0: 5, 2: 100000})
    for bad in ("w 1 100000 0 7:5", "w 1 x 0", "w 1 1 1 0:1 0:2", "w 1 1 1 0:-1", "x 1 1 1", "w 1 1"):
        with pytest.raises(ParseError):
            burst_stream.parse_window(bad, 3)
    with pytest.raises(ParseError):
        burst_stream.parse_header("@@fabric-roce 1 sysfs")
    with pytest.raises(ParseError):
        burst.check_header("@@fabric-burst 1 100000 4 123456", 3)


# ---------------------------------------------------------------------------------------------
# options


def burst_config(**options) -> dict:
    return {"targets": [group("gpu", [{"name": "gpu-001", "address": "127.0.0.1"}], transport="local",
                              options={"burst": options})]}


def test_burst_options_are_validated():
    cfg = parse_config(burst_config(window="50ms", signals=["pfc_rx_pause_time", "cnp_sent"],
                                    thresholds={"cnp_sent": 500}))
    o = cfg.targets[0].options.burst
    assert o.window == 0.05 and o.signals == ("pfc_rx_pause_time", "cnp_sent") and o.threshold("cnp_sent") == 500
    assert o.threshold("pfc_rx_pause_time") == 0.5
    for bad, where in (({"window": "5ms"}, "burst.window"), ({"signals": ["pfc"]}, "burst.signals"),
                       ({"priority": 9}, "burst.priority"), ({"thresholds": {"bogus": 1}}, "burst.thresholds.bogus"),
                       ({"windw": "1s"}, "burst.windw")):
        with pytest.raises(ConfigError) as e:
            parse_config(burst_config(**bad))
        assert where in str(e.value), (bad, str(e.value))


def test_columns_follow_the_regular_mapping_for_each_vendor():
    from fabric_exporter.parsers.rdma import parse_host_dump
    from fabric_exporter.collectors.roce_nic import _result_and_ports, RoceNicOptions

    for vendor, expected in (("mlx5", {"pfc_rx_pause_time": "eth/ens1f0np0/rx_prio3_pause_duration",
                                       "pfc_rx_pause": "eth/ens1f0np0/rx_prio3_pause",
                                       "ecn_marked": "hw/mlx5_0/1/np_ecn_marked_roce_packets",
                                       "cnp_sent": "hw/mlx5_0/1/np_cnp_sent",
                                       "rx_discards": "eth/ens1f0np0/rx_prio3_discards"}),
                             ("bnxt", {"pfc_rx_pause_time": "eth/ens1f0np0/pfc_pri3_rx_duration_us",
                                       "pfc_rx_pause": "eth/ens1f0np0/rx_pfc_ena_frames_pri3",
                                       "ecn_marked": "hw/bnxt_re0/1/rx_ecn_marked_pkts",
                                       "cnp_sent": "hw/bnxt_re0/1/tx_cnp_pkts",
                                       "rx_discards": "eth/ens1f0np0/rx_stat_discard"})):
        model = RoceHost.build("h", vendor, nics=1)
        o = burst.BurstOptions()
        _, ports = _result_and_ports(parse_host_dump(model.render_dump()), "h", RoceNicOptions(burst=o))
        columns = burst.plan_columns(ports, "h", o, HW_MAPPER, ETHTOOL_MAPPER, driver_family)
        got = {dict(c.labels)["signal"]: c.probe for c in columns}
        assert {k: got.get(k) for k in expected} == expected, vendor
        assert [c.scale for c in columns if dict(c.labels)["signal"] == "pfc_rx_pause_time"] == [1e-6]


# ---------------------------------------------------------------------------------------------
# ground truth: the injector against the sampler


def start_injector(tmp_path: Path, sys_class: Path, ethtool_dir: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / f"truth-{time.monotonic_ns()}.json"
    argv = [sys.executable, "-m", "fabric_exporter.lab.burst_injector", "--sys-class", str(sys_class),
            "--ethtool-dir", str(ethtool_dir), "--log", str(log), *args]
    return subprocess.Popen(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), log


def finish(proc: subprocess.Popen, log: Path, timeout: float) -> dict:
    try:
        _, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert proc.returncode == 0, err.decode()[-2000:]
    return json.loads(log.read_text())


class Recording(burst.BurstAccumulator):
    """Keeps each tick's (end, elapsed, lateness): whether the sampler kept its clock during a burst."""

    def __init__(self, columns=()):
        super().__init__(columns)
        self.ticks_seen: list[tuple[float, float, float]] = []

    def window(self, elapsed, deltas, now, missed=0, lateness=0.0):
        self.ticks_seen.append((now, elapsed, lateness))
        super().window(elapsed, deltas, now, missed, lateness)


#: the lateness budget within which the peak's accuracy is promised (the issue's p99 tick lateness)
ON_TIME = 0.010


def on_time(acc: Recording, truth: dict, window: float = 0.1) -> list[bool]:
    """Per true burst: did the sampler keep its clock around it (every tick within ON_TIME, no window
    stretched) and the injector its writes (never held up more than ON_TIME)? Where either was held
    up by this shared 2-core machine, the burst's peak is not scored (its detection still is)."""
    out = []
    for (start, end), gap in zip(truth["bursts"], truth["writer_gaps"]):
        ticks = [t for t in acc.ticks_seen if start - window <= t[0] <= end + 2 * window]
        out.append(gap <= ON_TIME and all(late <= ON_TIME and elapsed <= window + ON_TIME
                                          for _, elapsed, late in ticks))
    return out


def score(events, truth, labels=PAUSE) -> dict:
    """Recall per true burst length, peak of each detected burst, false bursts (matching no truth).
    ``truth`` is the injector's log: a burst's counts may land up to ``written_until`` (a writer held
    up by the loaded machine writes its last counts late), so a burst matches until then."""
    lengths = [end - start for start, end in truth["bursts"]]
    truth = [(start, max(end, written)) for (start, end), written in zip(truth["bursts"], truth["written_until"])]
    mine = [e for e in events if e.signal_labels == labels]
    hits, false = [], 0
    for e in mine:
        if not any(e.start < end and start < e.end for start, end in truth):
            false += 1
    for (start, end), length in zip(truth, lengths):
        found = [e for e in mine if e.start < end and start < e.end]
        hits.append((length, bool(found), max((e.peak for e in found), default=0.0)))
    return {"hits": hits, "false": false}


def check_recall(result: dict, kept_time: list[bool]) -> None:
    long_ = [h for h in result["hits"] if h[0] >= 0.195]
    short = [h for h in result["hits"] if h[0] < 0.195]
    assert long_ and short
    assert all(found for _, found, _ in long_), long_
    # 150 ms bursts: found in >= 95 % of the 100 ms windows that stayed 100 ms windows (a tick held up
    # by this shared machine stretches one and dilutes a short burst in it; the lateness is published)
    short_kept = [h for h, ok in zip(result["hits"], kept_time) if ok and h[0] < 0.195]
    assert sum(found for _, found, _ in short_kept) >= 0.95 * len(short_kept), (short, kept_time)
    assert sum(found for _, found, _ in short) >= 0.75 * len(short), short
    # peak error <= 0.10 for bursts of two windows or more (true peak: 100 % paused), where the
    # sampler and the injector kept time (on this shared machine, at load 10+, not always)
    scored = [h for h, ok in zip(result["hits"], kept_time) if ok and h[0] >= 0.195]
    assert scored, (kept_time, result["hits"])
    assert all(abs(peak - 1.0) <= 0.10 for length, _, peak in scored), scored
    assert result["false"] == 0


def test_local_sampler_finds_every_injected_burst_and_conserves_counts(tmp_path):
    sysfs, ethtool_dir, _ = fake_port(tmp_path)
    o = burst.BurstOptions(window=0.1, ethtool_stats_dir=str(ethtool_dir), sysfs_root=str(sysfs),
                           signals=tuple(burst.SIGNALS))
    start = time.monotonic() + 1.0
    proc, log = start_injector(tmp_path, sysfs / "class", ethtool_dir, "--duration", "16", "--start-at", repr(start),
                               "--lengths-ms", "150,200,150,300,150,500", "--seed", "7", "--noise",
                               "--reset-at", "9")

    async def sample():
        from fabric_exporter.collectors.roce_nic import _result_and_ports, RoceNicOptions
        from fabric_exporter.parsers.rdma import parse_host_dump

        await asyncio.sleep(0.5)  # the injector has rewritten the files in its fixed-width form
        model = RoceHost.build("gpu-001", "mlx5", nics=1)
        _, ports = _result_and_ports(parse_host_dump(model.render_dump()), "gpu-001", RoceNicOptions(burst=o))
        columns = burst.plan_columns(ports, "gpu-001", o, HW_MAPPER, ETHTOOL_MAPPER, driver_family)
        acc = Recording()
        runner = burst.LocalRunner(columns, o, acc)
        runner.start()
        assert runner.missing == {}
        while proc.poll() is None:
            await asyncio.sleep(0.2)
        await asyncio.sleep(0.5)  # the last windows after the last write
        await runner.close()
        return acc, columns

    acc, columns = asyncio.run(sample())
    truth = finish(proc, log, 30)
    result = score(acc.events, truth)
    print(f"\nlocal: hits {result['hits']} false {result['false']} on time {on_time(acc, truth)}")
    check_recall(result, on_time(acc, truth))
    # counts conserved exactly, across the driver reload in the middle
    by_name = {c.probe.rsplit("/", 1)[1]: c.probe for c in columns}
    totals = acc.totals()
    for name, added in truth["added"].items():
        assert totals[by_name[name]] == added, name
    # the quiet gaps (with noise below the thresholds) raised no burst on any signal
    spans = [(start, max(end, w)) for (start, end), w in zip(truth["bursts"], truth["written_until"])]
    stray = [e for e in acc.events if not any(e.start < end and start < e.end for start, end in spans)]
    assert stray == [], (stray, spans)
    print(f"\nlocal: {len(truth['bursts'])} bursts, hits {result['hits']}, ticks {acc.ticks}, missed {acc.missed}, "
          f"lateness mean {acc.lateness_sum / max(1, acc.lateness_count) * 1e3:.2f} ms")


def test_a_quiet_host_raises_no_burst(tmp_path):
    """Background noise only (a few % paused, an ECN trickle): no signal crosses its threshold.
    (10 quiet minutes: bench/bench_burst.py --quiet-minutes 10.)"""
    sysfs, ethtool_dir, _ = fake_port(tmp_path)
    o = burst.BurstOptions(window=0.1, ethtool_stats_dir=str(ethtool_dir), sysfs_root=str(sysfs),
                           signals=tuple(burst.SIGNALS))
    proc, log = start_injector(tmp_path, sysfs / "class", ethtool_dir, "--duration", "6", "--quiet", "--noise",
                               "--start-at", repr(time.monotonic() + 1.0))

    async def sample():
        await asyncio.sleep(0.3)
        columns = [burst.Column("eth/ens1f0np0/rx_prio3_pause_duration", PAUSE, 1e-6, 0.5, True),
                   burst.Column("hw/mlx5_0/1/np_ecn_marked_roce_packets", PAUSE[:-1] + (("signal", "ecn_marked"),),
                                1.0, burst.SIGNALS["ecn_marked"].threshold)]
        acc = burst.BurstAccumulator()
        runner = burst.LocalRunner(columns, o, acc)
        runner.start()
        while proc.poll() is None:
            await asyncio.sleep(0.2)
        await asyncio.sleep(0.3)
        await runner.close()
        return acc

    acc = asyncio.run(sample())
    truth = finish(proc, log, 20)
    assert acc.ticks >= 40
    assert list(acc.events) == [] and all(s.bursts == 0 for s in acc.series.values())
    assert truth["added"]["rx_prio3_pause_duration"] > 0  # the noise was there
    assert sum(acc.totals().values()) == truth["added"]["rx_prio3_pause_duration"] + \
        truth["added"]["np_ecn_marked_roce_packets"]


def test_ssh_stream_through_the_scheduler(lab_factory, tmp_path):
    """A real sshd with the lab's fake /sys/class: the collector polls through the real scheduler and
    keeps ONE channel streaming windows between polls; bursts, peaks and counts match the truth."""
    lab = lab_factory("mlx5", nics=2)
    ethtool_dir = lab.data / "ethtool"
    cfg = parse_config({"credentials": {"lab": lab.sshd.credential()}, "targets": [
        {**group("gpu", [{"name": "gpu-001", "address": "127.0.0.1", "port": lab.sshd.port}],
                 options={"burst": {"window": "100ms", "ethtool_stats_dir": str(ethtool_dir)}}),
         "interval": "3s", "timeout": "2500ms"}]})  # a loaded 2-core machine: the poll's own deadline
    from fabric_exporter.scheduler import Scheduler
    from fabric_exporter.serving.store import SnapshotStore
    from fabric_exporter.transport.factory import Transports

    start = time.monotonic() + 2.0
    proc, log = start_injector(tmp_path, lab.sysfs, ethtool_dir, "--duration", "9", "--start-at",
                               repr(start), "--lengths-ms", "200,150,300,500", "--seed", "3", "--noise")
    peaks = []

    async def scenario():
        transports = Transports()
        sched = Scheduler(transports, SnapshotStore())
        sched.apply(cfg, start_tasks=False)
        key = ("gpu", "gpu-001")
        g = cfg.targets[0]
        collector = RoceNicCollector(PollContext(g, g.hosts[0], transports))
        collector._burst = Recording()  # the collector's accumulator, keeping each tick's timing too
        try:
            await asyncio.sleep(0.5)  # the injector's fixed-width rewrite first
            deadline = time.monotonic() + 30
            while (proc.poll() is None or not peaks) and time.monotonic() < deadline:
                state = await sched.poll(key, collector)
                assert state.state == "ok", state.last_error
                samples = parse_exposition(sched.store.render().decode())
                peaks.append(one(samples, "fabric_roce_nic_burst_peak_ratio", device="mlx5_0",
                                 signal="pfc_rx_pause_time") if matching(samples, "fabric_roce_nic_burst_peak_ratio")
                             else None)
                await asyncio.sleep(1.0)
            await asyncio.sleep(0.6)
            state = await sched.poll(key, collector)
            samples = parse_exposition(sched.store.render().decode())
            return collector._burst, samples
        finally:
            await collector.close()
            await transports.close()

    acc, samples = asyncio.run(scenario())
    truth = finish(proc, log, 30)
    result = score(acc.events, truth)
    print(f"\nssh: hits {result['hits']}, ticks {acc.ticks}, missed {acc.missed}, lateness mean "
          f"{acc.lateness_sum / max(1, acc.lateness_count) * 1e3:.2f} ms, max bucket {acc.lateness_buckets}")
    check_recall(result, on_time(acc, truth))
    totals = acc.totals()
    assert totals["eth/ens1f0np0/rx_prio3_pause_duration"] == truth["added"]["rx_prio3_pause_duration"]
    assert totals["hw/mlx5_0/1/np_cnp_sent"] == truth["added"]["np_cnp_sent"]
    assert totals["eth/ens2f0np0/rx_prio3_pause_duration"] == 0  # the other port stayed idle
    assert max(p for p in peaks if p is not None) >= 0.9
    labels = dict(PAUSE)
    del labels["host"]
    # the published count is the sampler's own: one per run it saw (a burst the loaded machine split
    # in two is two here, and the events say so)
    events = [e for e in acc.events if e.signal_labels == PAUSE]
    assert one(samples, "fabric_roce_nic_bursts_total", **labels) == len(events) >= len(truth["bursts"])
    assert one(samples, "fabric_roce_nic_burst_seconds_total", **labels) == pytest.approx(
        sum(e - s for s, e in truth["bursts"]), abs=0.1 * len(truth["bursts"]) + 0.3)
    assert one(samples, "fabric_burst_sampler_ticks_total", host="gpu-001") >= 80
    assert one(samples, "fabric_roce_nic_burst_window_ratio_count", **labels) >= 80


def test_stream_parser_fuzz_returns_only_what_the_line_says():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    token = st.one_of(st.from_regex(r"[0-9]{1,3}:[0-9]{1,6}", fullmatch=True), st.text(max_size=8))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(token, max_size=6), st.integers(0, 10**7), st.integers(0, 10**6))
    def fuzz(items, elapsed, late):
        line = " ".join(["w", "3", str(elapsed), str(late), *items])
        try:
            seq, e, lt, deltas = burst_stream.parse_window(line, 500)
        except ParseError:
            return
        assert (seq, e, lt) == (3, elapsed / 1e6, late / 1e6)
        assert sorted(f"{k}:{v}" for k, v in deltas.items()) == sorted(
            f"{int(i.split(':')[0])}:{int(i.split(':')[1])}" for i in line.split()[4:])

    fuzz()


LOCAL_POLLS = r"""
import asyncio, json, sys, time
from tests.harness.configs import parse_config
from fabric_exporter.collectors.base import PollContext
from fabric_exporter.collectors.roce_nic import RoceNicCollector
from fabric_exporter.scheduler import Scheduler
from fabric_exporter.serving.store import SnapshotStore
from fabric_exporter.transport.factory import Transports

ethtool_dir, until = sys.argv[1], float(sys.argv[2])
cfg = parse_config({"targets": [{"name": "node", "fabric": "f1", "collector": "roce_nic", "transport": "local",
                                 "interval": "1s", "timeout": "900ms",
                                 "hosts": [{"name": "gpu-001", "address": "localhost"}],
                                 "options": {"burst": {"window": "100ms", "ethtool_stats_dir": ethtool_dir}}}]})
async def main():
    transports = Transports()
    sched = Scheduler(transports, SnapshotStore())
    sched.apply(cfg, start_tasks=False)
    g = cfg.targets[0]
    collector = RoceNicCollector(PollContext(g, g.hosts[0], transports))
    try:
        while time.monotonic() < until:
            state = await sched.poll(("node", "gpu-001"), collector)
            assert state.state == "ok", state.last_error
            await asyncio.sleep(1.0)
        state = await sched.poll(("node", "gpu-001"), collector)
        print("#TOTALS " + json.dumps(collector._burst.totals()))
        sys.stdout.write(sched.store.render().decode())
    finally:
        await collector.close()
asyncio.run(main())
"""


def test_local_transport_collector_samples_between_polls(tmp_path):
    """transport: local through the scheduler and the collector, as the NIC DaemonSet runs it: the
    poll's script and the sampler read /sys/class (the lab tree, bind-mounted in a private mount
    namespace), the sampler keeps running between polls; bursts and counts match the injector's."""
    sysfs, ethtool_dir, _ = fake_port(tmp_path)
    start = time.monotonic() + 1.5
    proc, log = start_injector(tmp_path, sysfs / "class", ethtool_dir, "--duration", "5", "--start-at", repr(start),
                               "--lengths-ms", "300,200,400", "--seed", "5")
    write_fake_tools(tmp_path / "bin", tmp_path / "data")  # the poll's ethtool -S (the sampler reads the files)
    inner = (f"mount --bind {shlex.quote(str(sysfs / 'class'))} /sys/class && "
             f"PATH={shlex.quote(str(tmp_path / 'bin'))}:$PATH exec {shlex.quote(sys.executable)} "
             f"-c {shlex.quote(LOCAL_POLLS)} {shlex.quote(str(ethtool_dir))} {start + 6.0!r}")
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", inner], capture_output=True,
                       text=True, timeout=60, env=ENV)
    truth = finish(proc, log, 30)
    assert r.returncode == 0, r.stderr[-3000:]
    first, _, rest = r.stdout.partition("\n")
    totals = json.loads(first[len("#TOTALS "):])
    samples = parse_exposition(rest)
    assert totals["eth/ens1f0np0/rx_prio3_pause_duration"] == truth["added"]["rx_prio3_pause_duration"]
    assert totals["hw/mlx5_0/1/np_ecn_marked_roce_packets"] == truth["added"]["np_ecn_marked_roce_packets"]
    labels = dict(PAUSE)
    # one per injected burst (or more, where this loaded machine held the writer or the sampler up mid-burst)
    assert len(truth["bursts"]) == 3
    assert one(samples, "fabric_roce_nic_bursts_total", **labels) >= 3
    assert one(samples, "fabric_roce_nic_bursts_total", **{**labels, "signal": "cnp_sent"}) >= 3
    assert one(samples, "fabric_burst_sampler_ticks_total", host="gpu-001") >= 50


def test_a_counter_file_that_goes_bad_stops_the_local_sampler_with_its_reason(tmp_path):
    """A counter that stops being a number: the sampler stops with the reason (the next poll reports it
    and starts it again), never a silent dead task."""
    sysfs, _, _ = fake_port(tmp_path)
    path = sysfs / "class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent"
    f = InPlace(path, 5)
    o = burst.BurstOptions(window=0.02, sysfs_root=str(sysfs))

    async def run():
        runner = burst.LocalRunner([col("hw/mlx5_0/1/np_cnp_sent", "cnp_sent", 1.0, 1000.0)], o,
                                   burst.BurstAccumulator())
        runner.start()
        await asyncio.sleep(0.1)
        assert not runner.done()
        os.pwrite(f.fd, b"garbage!garbage!garbage\n", 0)
        for _ in range(100):
            if runner.done():
                break
            await asyncio.sleep(0.02)
        return runner

    runner = asyncio.run(run())
    assert runner.done() and "unreadable counter" in runner.error
