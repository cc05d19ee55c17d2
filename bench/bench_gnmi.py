"""gNMI decoding cost: CPU per value for SONiC JSON blobs and per OpenConfig leaf, and a lab run of
switches streaming to the collector.

1. Decode (no network): the bytes a target sends, decoded the way gnmi_switch does, into catalog
   samples.
   * SONiC: one ``COUNTERS/Ethernet*`` json_ietf_val of ``--ports`` ports, each with the 108 fields
     of sonic-gnmi's own ``testdata/COUNTERS:Ethernet68.txt`` (values made distinct), plus a
     ``.../Queues`` blob (20 queues x 5 fields per port). Measured: the protobuf message parsed,
     ``SonicState.apply`` (JSON + number parsing) and ``sonic_samples``; per value = per numeric
     field in the blob. Baseline in the same run: ``json.loads`` of the same bytes alone.
   * OpenConfig: the lab target's Cumulus notifications for ``--ports`` ports (one notification per
     keyed container, one typed leaf per update). Measured: ``SubscribeResponse.FromString``,
     ``OcState.apply_notification`` (path -> value) and ``OcEmit.samples``; per value = per leaf.
     Two samples of the switch (counters moved between them) are decoded in turn, so a sample kept
     while its value did not move is not what is measured. Baseline: the protobuf parse alone.
2. Streaming (``--switches N``, 0 to skip): N lab gNMI targets (in a child process, whose CPU is
   not counted) each streaming ``--ports`` ports every ``--sample-interval`` to gnmi_switch
   collectors in stream mode, polled by the Scheduler into the store as the daemon does; the
   exporter side's CPU over ``--seconds``, per value and per notification, scaled to the issue's
   sizing (100 x 64 x 40 values every 10 s). ``--dialects sonic,cumulus``: each dialect in turn,
   ``--stream-runs`` times. SONiC: one JSON object per subscribed path and sample (every port in
   it, as sonic-gnmi's dbTableKeySubscribe sends), values = its numeric fields; Cumulus: one
   notification per keyed container, values = leaves; ``cumulus-per-leaf``: one notification per
   leaf (Arista EOS's recorded shape, the worst case); ``sonic-per-key``: one per COUNTERS_DB
   entry. Both counted from the target's notifications; the CPU is divided by the notifications
   the collectors received.
   ``--readers``: the same Cumulus streams read with nothing of ours (protobuf parse only) by
   grpc.aio, by a synchronous reader thread per stream and by grpc's single-threaded unary-stream
   reader, alternated: grpc-python's own CPU per message.
3. Scrapes (``--scrape-p99`` with ``--switches N``): the real daemon with the N switches as
   gnmi_switch targets, /metrics scraped ``--scrapes`` times on one kept-alive connection; p50/p99
   wall time with the N streams updating every second (mode stream, polled every 2 s) against the
   baseline of the same run: the same daemon, targets and series read once and then quiet (mode
   poll, interval 600 s), and the streaming daemon without its GC freeze. ``--scrape-runs`` rounds,
   the modes alternated (the machine's load drifts); the p99s of every run with the load average
   and the interfaces published (each run waits until all are), their min and median, and the
   ratios to quiet, per round. ``--scrape-sample-interval``, ``--targets-nice`` (the lab targets
   stand for remote switches), ``--scrape-polled``, ``--scrape-no-freeze``: see --help.

Issue 24's budgets: <= 1 us CPU per SONiC value, <= 3 us per OpenConfig leaf; 100 switches x 64
ports x 40 values every 10 s <= 0.15 core. The machine is shared and noisy: the figures are
medians of ``--repeat`` runs; compare the ratios to the baselines.

    PYTHONPATH=exporter:. python bench/bench_gnmi.py   # decode only, 64 ports (the others need tests/ too)
    python bench/bench_gnmi.py --no-decode --switches 4 --seconds 8 --stream-runs 5   # both dialects
    python bench/bench_gnmi.py --no-decode --switches 4 --seconds 6 --stream-runs 5 --readers --dialects ""
    python bench/bench_gnmi.py --no-decode --switches 100 --ports 8 --seconds 0 --scrape-p99 --scrape-runs 3 \
        --scrapes 400 --scrape-sample-interval 2 --targets-nice 19   # /metrics p99 with 100 streams
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "exporter"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cputime import self_cpu  # noqa: E402

FIELDS = ROOT / "tests" / "fixtures" / "switch" / "gnmi" / "sonic" / "COUNTERS+Ethernet68.txt"


def sonic_blobs(ports: int) -> tuple[bytes, bytes, int]:
    fields = list(json.loads(FIELDS.read_text()))
    counters = {f"Ethernet{4 * i}": {f: str(1_000_000_007 * (i + 1) + k) for k, f in enumerate(fields)}
                for i in range(ports)}
    queue_fields = ("SAI_QUEUE_STAT_PACKETS", "SAI_QUEUE_STAT_BYTES", "SAI_QUEUE_STAT_DROPPED_PACKETS",
                    "SAI_QUEUE_STAT_DROPPED_BYTES", "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES")
    queues = {f"Ethernet{4 * i}:{q}": {f: str(98765 * q + k + i) for k, f in enumerate(queue_fields)}
              for i in range(ports) for q in range(20)}
    values = ports * (len(fields) + 20 * len(queue_fields))
    return json.dumps(counters).encode(), json.dumps(queues).encode(), values


def bench_sonic(ports: int, repeat: int) -> dict:
    from gnmi_pb import gnmi_pb2 as g

    from fabric_exporter.collectors.gnmi_switch import SonicState, sonic_samples

    counters, queues, values = sonic_blobs(ports)
    wire = []
    for path, blob in (("COUNTERS/Ethernet*", counters), ("COUNTERS/Ethernet*/Queues", queues)):
        elems = [g.PathElem(name=n) for n in path.split("/")]
        n = g.Notification(timestamp=1, prefix=g.Path(target="COUNTERS_DB"),
                           update=[g.Update(path=g.Path(elem=elems), val=g.TypedValue(json_ietf_val=blob))])
        wire.append(g.SubscribeResponse(update=n).SerializeToString())

    def decode() -> int:
        state = SonicState()
        for raw in wire:
            r = g.SubscribeResponse.FromString(raw)
            for u in r.update.update:
                state.apply((), u, [])
        return len(sonic_samples(state, "leaf1", lambda _: True))

    def baseline() -> int:
        return len(json.loads(counters)) + len(json.loads(queues))

    samples = decode()
    ours = _per_value(decode, values, repeat)
    base = _per_value(baseline, values, repeat)
    return {"values": values, "samples": samples, "us_per_value": ours, "json_loads_us_per_value": base,
            "ratio_to_json_loads": ours / base}


def bench_openconfig(ports: int, repeat: int) -> dict:
    from gnmi_pb import gnmi_pb2 as g

    from fabric_exporter.collectors.gnmi_switch import DIALECTS, OcEmit, OcShapes, OcState, to_path
    from fabric_exporter.lab.gnmi_target import GnmiTarget
    from fabric_exporter.lab.snmp import SimulatedSwitch

    sw = SimulatedSwitch("leaf1", "sonic", ports=ports, queues=8, seed=1)
    target = GnmiTarget(sw, "cumulus")
    wires = []  # two samples of the switch, its counters moved between them, decoded in turn
    for ts in (1, 2):
        wire, leaves = [], 0
        for xpath in [gp.xpath for gp in DIALECTS["cumulus"].paths.values()]:
            for n in target._notifications(g, "", to_path(g, xpath), ts):
                leaves += len(n.update)
                wire.append(g.SubscribeResponse(update=n).SerializeToString())
        wires.append(wire)
        sw.advance()
    turn = [0]

    emit = OcEmit(DIALECTS["cumulus"], "leaf1", lambda _: True)
    shapes = OcShapes(emit.compile)  # the collector keeps what each path is across polls

    def decode() -> int:
        state = OcState(shapes)
        turn[0] += 1
        for raw in wires[turn[0] % 2]:
            r = g.SubscribeResponse.FromString(raw)
            state.apply_notification(r.update.prefix, r.update.update, [])
        return len(emit.samples(state))

    def baseline() -> int:
        return sum(len(g.SubscribeResponse.FromString(raw).update.update) for raw in wire)

    samples = decode()
    ours = _per_value(decode, leaves, repeat)
    base = _per_value(baseline, leaves, repeat)
    return {"leaves": leaves, "samples": samples, "us_per_value": ours, "protobuf_parse_us_per_value": base,
            "ratio_to_protobuf_parse": ours / base}


def _per_value(fn, values: int, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t0 = self_cpu()
        fn()
        runs.append((self_cpu() - t0) / values * 1e6)
    return statistics.median(runs)


# -- streaming -------------------------------------------------------------------------------------------

TARGETS_SCRIPT = """
import asyncio, sys
from fabric_exporter.lab.gnmi_target import GnmiTarget
from fabric_exporter.lab.snmp import SimulatedSwitch
ports, n = int(sys.argv[1]), int(sys.argv[2])
dialect = sys.argv[3] if len(sys.argv) > 3 else "cumulus"
every = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0  # > 0: the switches move on a timer, not per sample
async def main():
    ts = []
    for i in range(n):
        t = GnmiTarget(SimulatedSwitch(f"leaf{i}", "sonic", ports=ports, queues=4, seed=i + 1),
                       dialect.removesuffix("-per-key").removesuffix("-per-leaf"), advance_each_sample=not every,
                       advance_every=every or None,
                       notification_per_key=dialect.endswith("-per-key"),
                       oc_grouping="leaf" if dialect.endswith("-per-leaf") else "container")
        await t.serve()
        ts.append(t)
    print("ready " + ",".join(str(t.port) for t in ts), flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""

# the tables each dialect streams in the benchmark (SONiC: what sonic-gnmi sends as one JSON object per
# subscribed path and sample, every port in it; Cumulus: one notification per keyed container)
# "sonic-per-key": the lab target sends one notification per COUNTERS_DB entry instead (what sonic-gnmi
# does for ON_CHANGE), the collector is the same
# "cumulus-per-leaf": the lab target sends every leaf as a notification of its own (Arista EOS's shape in
# aristanetworks/openmgmt outputs/interface_state.json: the worst case), the collector is the same
STREAM_TABLES = {"cumulus": ["interfaces", "queues"], "cumulus-per-leaf": ["interfaces", "queues"],
                 "sonic": ["ports", "queues"], "sonic-per-key": ["ports", "queues"]}


def base_dialect(shape: str) -> str:
    """The collector's dialect of a benchmark shape (``sonic-per-key`` -> ``sonic``)."""
    return shape.removesuffix("-per-key").removesuffix("-per-leaf")


def _start_targets(ports: int, switches: int, dialect: str, nice: int = 0,
                   advance_every: float = 0.0) -> tuple[subprocess.Popen, list[int]]:
    """The lab targets in a child process; ``nice`` > 0 lowers its CPU priority (it stands for
    switches, whose CPU is not the exporter host's: on a shared machine it then takes the CPU the
    exporter leaves, instead of competing with it as an equal)."""
    import os

    proc = subprocess.Popen([sys.executable, "-c", TARGETS_SCRIPT, str(ports), str(switches), dialect,
                             str(advance_every)],
                            stdout=subprocess.PIPE, text=True, env={"PYTHONPATH": str(ROOT / "exporter")},
                            preexec_fn=(lambda: os.nice(nice)) if nice else None)
    word, _, listed = proc.stdout.readline().strip().partition(" ")
    if word != "ready":
        proc.terminate()
        raise SystemExit(f"lab gNMI targets did not start: {word!r}")
    return proc, [int(x) for x in listed.split(",")]


def values_per_sample(dialect: str, ports: int) -> tuple[int, int]:
    """(values, notifications) one lab switch of the benchmark sends per sample interval: OpenConfig
    leaves, or SONiC numeric JSON fields (every entry of every blob), counted from the target's own
    notifications."""
    from gnmi_pb import gnmi_pb2 as g

    from fabric_exporter.collectors.gnmi_switch import DIALECTS, to_path
    from fabric_exporter.lab.gnmi_target import GnmiTarget
    from fabric_exporter.lab.snmp import SimulatedSwitch

    target = GnmiTarget(SimulatedSwitch("leaf0", "sonic", ports=ports, queues=4, seed=1),
                        base_dialect(dialect), notification_per_key=dialect.endswith("-per-key"),
                        oc_grouping="leaf" if dialect.endswith("-per-leaf") else "container")
    values = notifications = 0
    for table in STREAM_TABLES[dialect]:
        gp = DIALECTS[base_dialect(dialect)].paths[table]
        for n in target._notifications(g, gp.target, to_path(g, gp.xpath), 1):
            notifications += 1
            for u in n.update:
                if u.val.WhichOneof("value") == "json_ietf_val":
                    blob = json.loads(u.val.json_ietf_val)
                    values += sum(1 for fields in blob.values() for v in fields.values() if v.isdigit())
                else:
                    values += 1
    return values, notifications


def bench_streaming(switches: int, ports: int, seconds: float, sample_interval: float,
                    dialect: str = "cumulus") -> dict:
    from fabric_exporter.collectors import PollContext
    from fabric_exporter.scheduler import Scheduler
    from fabric_exporter.serving.store import SnapshotStore
    from fabric_exporter.transport.factory import Transports
    from tests.harness.configs import parse_config

    proc, target_ports = _start_targets(ports, switches, dialect)
    try:
        interval = max(2.0, sample_interval * 2)
        cfg = parse_config({"targets": [{
            "name": "gnmi", "fabric": "bench", "collector": "gnmi_switch", "transport": "gnmi",
            "hosts": [{"name": f"leaf{i}", "address": "127.0.0.1", "port": port} for i, port in enumerate(target_ports)],
            "interval": f"{interval}s", "timeout": f"{interval * 0.75}s",
            "options": {"dialect": base_dialect(dialect), "mode": "stream", "insecure": True,
                        "sample_interval": f"{sample_interval}s", "tables": STREAM_TABLES[dialect]}}]})

        async def run() -> dict:
            transports, store = Transports(), SnapshotStore()
            sched = Scheduler(transports, store)
            sched.apply(cfg, start_tasks=False)
            collectors = {k: cls(PollContext(group, host, transports))
                          for k, (group, host, cls) in sched.targets(sched.config).items()}
            await asyncio.gather(*(sched.poll(k, c) for k, c in collectors.items()))  # subscribe and sync
            updates0 = sum(c.updates for c in collectors.values())
            t0, wall0 = self_cpu(), time.monotonic()
            while time.monotonic() - wall0 < seconds:
                await asyncio.sleep(interval)
                states = await asyncio.gather(*(sched.poll(k, c) for k, c in collectors.items()))
                store.render()
            cpu, wall = self_cpu() - t0, time.monotonic() - wall0
            ok = sum(s.state == "ok" for s in states)
            samples = sum(s.samples for s in states)
            updates = sum(c.updates for c in collectors.values()) - updates0
            for c in collectors.values():
                await c.close()
            await transports.close()
            return {"cpu_s": cpu, "wall_s": wall, "targets_ok": ok, "samples_per_poll": samples, "notifications": updates}

        r = asyncio.run(run())
    finally:
        proc.terminate()
        proc.wait(10)
    values, notifications = values_per_sample(dialect, ports)
    core = r["cpu_s"] / r["wall_s"]
    # per notification the collector really read (a saturated reader falls behind the targets' rate;
    # the nominal rate would then understate the cost), each carrying the shape's mean values
    received = max(1, r["notifications"])
    us_per_notification = r["cpu_s"] / received * 1e6
    us_per_value = us_per_notification * notifications / values
    issue = 100 * 64 * 40 / 10  # 100 switches x 64 ports x 40 values every 10 s
    return {**r, "dialect": dialect, "switches": switches, "ports": ports, "values_per_switch_sample": values,
            "notifications_per_switch_sample": notifications, "values_per_notification": values / notifications,
            "values_per_s": received * values / notifications / r["wall_s"],
            "received_of_sent": received / (switches * notifications * r["wall_s"] / sample_interval),
            "core": core, "us_per_value": us_per_value, "us_per_notification": us_per_notification,
            "issue_sizing_core_estimate": issue * us_per_value / 1e6}


# -- grpc-python's own cost per message: the ways it can read a stream ---------------------------------------

def _reader_aio(target_ports: list[int], request, settle: float, seconds: float) -> tuple[float, int, float]:
    import grpc
    from gnmi_pb import gnmi_pb2_grpc as gg

    async def run() -> tuple[float, int, float]:
        chans = [grpc.aio.insecure_channel(f"127.0.0.1:{p}") for p in target_ports]
        count = [0]

        async def one(ch) -> None:
            call = gg.gNMIStub(ch).Subscribe()
            await call.write(request)
            while True:
                if await call.read() is grpc.aio.EOF:
                    return
                count[0] += 1

        tasks = [asyncio.create_task(one(c)) for c in chans]
        await asyncio.sleep(settle)
        c0, w0, n0 = self_cpu(), time.monotonic(), count[0]
        await asyncio.sleep(seconds)
        out = self_cpu() - c0, count[0] - n0, time.monotonic() - w0
        for t in tasks:
            t.cancel()
        for c in chans:
            await c.close()
        return out

    return asyncio.run(run())


def _reader_threads(target_ports: list[int], request, settle: float, seconds: float,
                    unary_stream: bool) -> tuple[float, int, float]:
    """One thread per stream on the synchronous API, raw bytes parsed in the thread. ``unary_stream``:
    the request stream half-closed after the subscription (gNMI targets keep a STREAM subscription
    then: sonic-gnmi's client_subscribe.go says so) and grpc's single-threaded unary-stream reader,
    whose thread polls its own completion queue (no channel spin thread)."""
    import threading

    import grpc
    import grpc.experimental
    from gnmi_pb import gnmi_pb2 as g

    opts = [(grpc.experimental.ChannelOptions.SingleThreadedUnaryStream, 1)] if unary_stream else []
    chans = [grpc.insecure_channel(f"127.0.0.1:{p}", options=opts) for p in target_ports]
    count, stop, calls = [0], threading.Event(), []

    def requests():
        yield request
        stop.wait()

    def read(ch) -> None:
        if unary_stream:
            call = ch.unary_stream("/gnmi.gNMI/Subscribe", request_serializer=g.SubscribeRequest.SerializeToString,
                                   response_deserializer=None)(request)
        else:
            call = ch.stream_stream("/gnmi.gNMI/Subscribe", request_serializer=g.SubscribeRequest.SerializeToString,
                                    response_deserializer=None)(requests())
        calls.append(call)
        try:
            for raw in call:
                g.SubscribeResponse.FromString(raw)
                count[0] += 1
        except grpc.RpcError:
            pass

    threads = [threading.Thread(target=read, args=(c,), daemon=True) for c in chans]
    for t in threads:
        t.start()
    time.sleep(settle)
    c0, w0, n0 = self_cpu(), time.monotonic(), count[0]
    time.sleep(seconds)
    out = self_cpu() - c0, count[0] - n0, time.monotonic() - w0
    stop.set()
    for c in calls:
        c.cancel()
    for t in threads:
        t.join(5)
    for c in chans:
        c.close()
    return out


def bench_readers(switches: int, ports: int, seconds: float, runs: int) -> dict:
    """CPU per gRPC message of the lab's Cumulus streams read without any decoding of ours, three
    ways, alternated in one run: grpc.aio (what gnmi_switch does), a synchronous reader thread per
    stream (raw bytes, protobuf parsed in the thread), and grpc's single-threaded unary-stream reader."""
    from gnmi_pb import gnmi_pb2 as g

    from fabric_exporter.collectors.gnmi_switch import DIALECTS, to_path

    subs = [g.Subscription(path=to_path(g, DIALECTS["cumulus"].paths[t].xpath), mode=g.SAMPLE,
                           sample_interval=1_000_000_000) for t in STREAM_TABLES["cumulus"]]
    request = g.SubscribeRequest(subscribe=g.SubscriptionList(subscription=subs, mode=g.SubscriptionList.STREAM,
                                                              encoding=g.JSON_IETF))
    proc, target_ports = _start_targets(ports, switches, "cumulus")
    ways = {"grpc_aio": lambda: _reader_aio(target_ports, request, 2.5, seconds),
            "sync_thread_per_stream": lambda: _reader_threads(target_ports, request, 2.5, seconds, False),
            "sync_unary_stream_single_threaded": lambda: _reader_threads(target_ports, request, 2.5, seconds, True)}
    by_way: dict[str, list[float]] = {k: [] for k in ways}
    try:
        for _ in range(runs):
            for k, fn in ways.items():
                cpu, messages, _wall = fn()
                by_way[k].append(cpu / max(1, messages) * 1e6)
    finally:
        proc.terminate()
        proc.wait(10)
    out: dict = {"switches": switches, "ports": ports, "runs": runs}
    for k, v in by_way.items():
        out[k] = {"us_per_message_by_run": [round(x, 1) for x in v], "min": min(v), "median": statistics.median(v)}
    for k in ways:
        out[k]["median_ratio_to_grpc_aio"] = out[k]["median"] / out["grpc_aio"]["median"]
    return out


# the daemon as ``python -m fabric_exporter`` does, without its GC freeze (the "before" of the freeze)
NO_FREEZE = ("import fabric_exporter.daemon as d; d.freeze_long_lived = lambda: 0; "
             "from fabric_exporter.cli import main; raise SystemExit(main())")


def _scrape_timeout(mode: str, interval: str, sample_interval: float) -> str:
    """The poll deadline: the quiet daemon's one read may take long on a loaded machine; a
    polling or streaming daemon's must stay below its interval."""
    every = float(interval.rstrip("s"))
    if mode == "poll" and every >= 60:
        return "30s"
    return f"{min(max(1.5, every * 0.75), 8):g}s"


def _published(conn) -> int:
    """Interfaces in a /metrics scrape (their rx bytes series)."""
    import gzip

    conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
    r = conn.getresponse()
    text = gzip.decompress(r.read()).decode()
    return sum(1 for line in text.splitlines() if line.startswith("fabric_roce_rx_bytes_total{"))


def _scrape_run(target_ports: list[int], mode: str, scrapes: int, settle: float, interval: str = "2s",
                freeze: bool = True, sample_interval: float = 1.0, ports: int = 8) -> dict:
    import http.client
    import os
    import socket
    import tempfile

    import yaml

    tmp = Path(tempfile.mkdtemp(prefix="bench-gnmi-"))
    options = {"dialect": "cumulus", "mode": mode, "insecure": True, "tables": ["interfaces", "queues"]}
    if mode == "stream":
        options["sample_interval"] = f"{sample_interval:g}s"
    config = {"limits": {"max_concurrent_polls": 256, "per_transport": {"gnmi": 256}},
              "targets": [{"name": "gnmi", "fabric": "bench", "collector": "gnmi_switch", "transport": "gnmi",
                           "interval": interval, "timeout": _scrape_timeout(mode, interval, sample_interval),
                           "stale_after": "3600s", "options": options,
                           "hosts": [{"name": f"leaf{i}", "address": "127.0.0.1", "port": p}
                                     for i, p in enumerate(target_ports)]}]}
    (tmp / "fabric.yaml").write_text(yaml.safe_dump(config))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = open(tmp / "daemon.log", "wb")
    command = ["-m", "fabric_exporter"] if freeze else ["-c", NO_FREEZE]
    daemon = subprocess.Popen([sys.executable, *command, "run", "--config", str(tmp / "fabric.yaml"),
                               "--web.listen-address", f"127.0.0.1:{port}", "--log.level", "error"],
                              env={**os.environ, "PYTHONPATH": str(ROOT / "exporter")}, stdout=log,
                              stderr=subprocess.STDOUT, cwd=tmp)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        end = time.monotonic() + 120
        while True:
            try:
                conn.request("GET", "/ready")
                r = conn.getresponse()
                r.read()
                if r.status == 200:
                    break
            except OSError:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            if time.monotonic() > end or daemon.poll() is not None:
                raise SystemExit(f"daemon not ready: {(tmp / 'daemon.log').read_text()[-2000:]}")
            time.sleep(0.3)
        time.sleep(settle)
        # the baseline must hold the same series: wait (bounded) until every interface is published
        # (a loaded machine makes the lab targets slow to answer the quiet daemon's one read)
        want, end = len(target_ports) * ports, time.monotonic() + 120
        while _published(conn) < want and time.monotonic() < end and daemon.poll() is None:
            time.sleep(1.0)
        walls, size, body = [], 0, b""
        for _ in range(scrapes):
            t0 = time.perf_counter()
            conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
            r = conn.getresponse()
            body = r.read()
            size = len(body)
            walls.append(time.perf_counter() - t0)
            time.sleep(0.02)
        # what the last scrape held: switches published (fresh) and whether the values moved during
        # the run (a starved lab target process sends little: then the run measured less than asked)
        import gzip

        text = gzip.decompress(body).decode()
        published = sum(1 for line in text.splitlines() if line.startswith("fabric_roce_rx_bytes_total{"))
        walls.sort()
        return {"mode": mode, "interval": interval, "scrapes": scrapes, "bytes_gzip": size, "p50_ms": walls[len(walls) // 2] * 1e3,
                "p99_ms": walls[min(len(walls) - 1, int(len(walls) * 0.99))] * 1e3,
                "load_average": round(os.getloadavg()[0], 2), "interfaces_published": published}
    finally:
        daemon.terminate()
        try:
            daemon.wait(15)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(15)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def bench_scrapes(switches: int, ports: int, scrapes: int, runs: int, sample_interval: float = 1.0,
                  no_freeze: bool = True, targets_nice: int = 0, polled: bool = False) -> dict:
    """``runs`` rounds, each: the daemon with the targets read once and then quiet (the baseline:
    the same series, nothing updating), the daemon with the targets streaming every
    ``sample_interval`` (polled every 2 sample intervals), and (``no_freeze``) the same without the
    daemon's GC freeze. The targets serve all the same way; only the collector's mode differs.
    p99s by run with the load average at the end of each run, their min and median, and the
    per-round ratios streaming / quiet (the two runs of a round are seconds apart: the fairest pair
    on a shared machine). ``targets_nice``: the lab targets' process at that niceness. ``polled``:
    also the daemon reading the same targets by Subscribe ONCE every 2 sample intervals (its
    snapshots change as often as the streaming daemon's, without a stream): what any updating
    costs a scrape, apart from what streaming adds."""
    # the switches move every sample interval on a timer of their own, so that a polling daemon
    # (``polled``) reads moving values too (with advance_each_sample only streams would)
    proc, target_ports = _start_targets(ports, switches, "cumulus", nice=targets_nice, advance_every=sample_interval)
    modes = ["quiet", "streaming"] + (["polled"] if polled else []) + (["streaming_no_gc_freeze"] if no_freeze else [])
    by_mode: dict[str, list[dict]] = {m: [] for m in modes}
    poll = f"{2 * sample_interval:g}s"
    try:
        for _ in range(runs):
            by_mode["quiet"].append(_scrape_run(target_ports, "poll", scrapes, settle=4.0, interval="600s",
                                                ports=ports))
            by_mode["streaming"].append(_scrape_run(target_ports, "stream", scrapes, settle=4.0, interval=poll,
                                                    sample_interval=sample_interval, ports=ports))
            if polled:
                by_mode["polled"].append(_scrape_run(target_ports, "poll", scrapes, settle=4.0, interval=poll,
                                                     ports=ports))
            if no_freeze:
                by_mode["streaming_no_gc_freeze"].append(_scrape_run(target_ports, "stream", scrapes, settle=4.0,
                                                                     interval=poll, freeze=False,
                                                                     sample_interval=sample_interval, ports=ports))
    finally:
        proc.terminate()
        proc.wait(10)
    out: dict = {"switches": switches, "ports": ports, "runs": runs, "sample_interval_s": sample_interval,
                 "targets_nice": targets_nice}
    for mode, rs in by_mode.items():
        p99 = [r["p99_ms"] for r in rs]
        out[mode] = {"p99_ms_by_run": [round(x, 2) for x in p99], "p99_ms_min": min(p99),
                     "p99_ms_median": statistics.median(p99),
                     "p50_ms_by_run": [round(r["p50_ms"], 2) for r in rs],
                     "p50_ms_median": statistics.median(r["p50_ms"] for r in rs), "bytes_gzip": rs[-1]["bytes_gzip"],
                     "load_average_by_run": [r["load_average"] for r in rs],
                     "interfaces_published_by_run": [r["interfaces_published"] for r in rs]}
    pairs = [s["p99_ms"] / q["p99_ms"] for q, s in zip(by_mode["quiet"], by_mode["streaming"])]
    out["p99_ratio_by_round"] = [round(x, 2) for x in pairs]
    out["p99_ratio_of_round_median"] = statistics.median(pairs)
    out["p99_ratio_median"] = out["streaming"]["p99_ms_median"] / out["quiet"]["p99_ms_median"]
    out["p99_ratio_min"] = out["streaming"]["p99_ms_min"] / out["quiet"]["p99_ms_min"]
    out["p50_ratio_median"] = out["streaming"]["p50_ms_median"] / out["quiet"]["p50_ms_median"]
    if polled:
        out["polled_p99_ratio_of_round_median"] = statistics.median(
            p["p99_ms"] / q["p99_ms"] for q, p in zip(by_mode["quiet"], by_mode["polled"]))
    if no_freeze:
        out["no_gc_freeze_p99_ratio_median"] = (out["streaming_no_gc_freeze"]["p99_ms_median"]
                                                / out["quiet"]["p99_ms_median"])
        out["no_gc_freeze_p99_ratio_min"] = out["streaming_no_gc_freeze"]["p99_ms_min"] / out["quiet"]["p99_ms_min"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ports", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--switches", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--sample-interval", type=float, default=1.0)
    ap.add_argument("--scrape-p99", action="store_true")
    ap.add_argument("--scrapes", type=int, default=300)
    ap.add_argument("--scrape-runs", type=int, default=5)
    ap.add_argument("--scrape-sample-interval", type=float, default=1.0,
                    help="the streams' SAMPLE interval in the scrape benchmark (polled every 2 of them)")
    ap.add_argument("--targets-nice", type=int, default=0,
                    help="niceness of the lab targets' process in the scrape benchmark (19: they take only "
                         "the CPU the daemon leaves, as remote switches would)")
    ap.add_argument("--scrape-polled", action="store_true",
                    help="also the daemon polling the targets (ONCE) as often as the streaming one publishes")
    ap.add_argument("--scrape-no-freeze", action="store_true",
                    help="also run the streaming daemon without its GC freeze in the scrape benchmark")
    ap.add_argument("--dialects", default="sonic,cumulus", help="the dialects streamed, comma-separated")
    ap.add_argument("--stream-runs", type=int, default=1, help="streaming runs per dialect, alternated")
    ap.add_argument("--readers", action="store_true", help="grpc.aio against synchronous readers (--switches)")
    ap.add_argument("--no-decode", action="store_true", help="skip the decode benchmarks")
    args = ap.parse_args()
    out: dict = {}
    if not args.no_decode:
        out = {"sonic": bench_sonic(args.ports, args.repeat), "openconfig": bench_openconfig(args.ports, args.repeat)}
    if args.switches and args.seconds > 0:
        dialects = [d.strip() for d in args.dialects.split(",") if d.strip()]
        runs: dict[str, list[dict]] = {d: [] for d in dialects}
        for _ in range(args.stream_runs):
            for d in dialects:
                runs[d].append(bench_streaming(args.switches, args.ports, args.seconds, args.sample_interval, d))
        out["streaming"] = {d: {"runs": rs, **{k: statistics.median(r[k] for r in rs) for k in
                                              ("us_per_value", "us_per_notification", "core",
                                               "issue_sizing_core_estimate")},
                                "issue_sizing_core_min": min(r["issue_sizing_core_estimate"] for r in rs)}
                            for d, rs in runs.items()}
    if args.switches and args.readers:
        out["readers"] = bench_readers(args.switches, args.ports, args.seconds, args.stream_runs)
    if args.switches and args.scrape_p99:
        out["scrapes"] = bench_scrapes(args.switches, args.ports, args.scrapes, args.scrape_runs,
                                       args.scrape_sample_interval, args.scrape_no_freeze, args.targets_nice,
                                       args.scrape_polled)
    print(json.dumps(out, indent=2))
    for d, r in out.get("streaming", {}).items():
        print(f"stream {d}: {r['us_per_value']:.2f} us/value, {r['us_per_notification']:.1f} us/notification "
              f"(median of {len(r['runs'])}); 100 x 64 x 40 every 10 s -> {r['issue_sizing_core_estimate']:.3f} "
              f"core (budget 0.15)")
    if "sonic" not in out:
        return
    ok = out["sonic"]["us_per_value"] <= 1.0 and out["openconfig"]["us_per_value"] <= 3.0
    print(f"SONiC {out['sonic']['us_per_value']:.2f} us/value (budget 1), "
          f"OpenConfig {out['openconfig']['us_per_value']:.2f} us/leaf (budget 3): {'OK' if ok else 'OVER'}")


if __name__ == "__main__":
    main()
