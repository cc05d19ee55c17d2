"""gnmi_switch against the lab's gNMI target (lab/gnmi_target.py) on 127.0.0.1.

Three protocols, one truth: one simulated switch served over SNMP (snmpsim), the SONiC CLI (fake
``show`` over a real sshd) and gNMI (sonic and cumulus dialects); every series the gNMI collector
shares with the SNMP or CLI collector must be equal. Then SONiC's own payloads replayed through the
target, stream mode, and the faults: a stalled stream, a sample interval below 1 s, TLS with the
wrong CA, bad credentials, a killed and restarted target.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fabric_exporter.lab.gnmi_target import GnmiTarget, free_tcp_port
from fabric_exporter.lab.snmp import SimulatedSwitch, SnmpSim
from fabric_exporter.lab.sonic_cli import install_fake_show, write_outputs

from tests.harness import paths
from tests.harness.sshd import SSHD
from tests.harness.switch import make_config, run
from tests.harness.polling import Poller, parse_exposition

FIX = paths.FIXTURES / "switch" / "gnmi" / "sonic"
PORTS, QUEUES = 32, 8


def gnmi_group(port: int, name: str = "gnmi", host: str = "leaf1", interval: str = "10s", timeout: str = "8s",
               stale_after: str | None = None, **options) -> dict:
    options.setdefault("insecure", True)
    g = {"name": name, "fabric": "lab", "collector": "gnmi_switch", "transport": "gnmi",
         "hosts": [{"name": host, "address": "127.0.0.1", "port": port}], "interval": interval, "timeout": timeout,
         "options": options}
    if stale_after:
        g["stale_after"] = stale_after
    return g


async def poll_groups(cfg):
    p = Poller(cfg)
    try:
        states = await p.poll_states()
        snaps = {key[0]: p.store.get(key) for key in states}
        return states, snaps
    finally:
        await p.close()


def series_of(snap) -> dict:
    out = {}
    if snap is None:
        return out
    for chunk in snap.chunks.values():
        out.update(parse_exposition(chunk))
    return out


# -- three protocols, one truth --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lab_switch(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the sshd harness needs root (mount namespace)")
    base = tmp_path_factory.mktemp("gnmi-lab")
    sw = SimulatedSwitch("leaf1", "sonic", ports=PORTS, queues=QUEUES, seed=5)
    sw.advance(3)
    sw.storm(2, 3)  # one stormed watchdog queue, so storm_active is 1 somewhere
    data, bin_dir = base / "data", base / "bin"
    write_outputs(sw, data)
    install_fake_show(bin_dir, data)
    with SSHD(base, path_dirs=[bin_dir]) as sshd, SnmpSim([sw], workdir=base / "sim") as sim, \
            GnmiTarget(sw, "sonic") as sonic, GnmiTarget(sw, "cumulus") as cumulus:
        yield sw, sshd, sim, sonic, cumulus


def test_gnmi_series_equal_snmp_and_cli_series_for_every_shared_counter(lab_switch, tmp_path):
    sw, sshd, sim, sonic, cumulus = lab_switch
    cfg = make_config(tmp_path, [
        {"name": "cli", "fabric": "lab", "collector": "switch_cli", "transport": "ssh", "credentials": "ssh",
         "hosts": [{"name": "leaf1", "address": "127.0.0.1", "port": sshd.port}], "interval": "30s", "timeout": "20s"},
        {"name": "snmp", "fabric": "lab", "collector": "snmp_switch", "transport": "snmp", "credentials": "snmp",
         "hosts": [{"name": "leaf1", "address": "127.0.0.1", "port": sim.port}], "interval": "30s", "timeout": "20s",
         "options": {"modules": ["if_mib", "cisco_pfc", "cisco_qos"], "snmp_timeout": "5s"}},
        gnmi_group(sonic.port, "gnmi_sonic", dialect="sonic"),
        gnmi_group(cumulus.port, "gnmi_cumulus", dialect="cumulus", mode="poll"),
    ], {"ssh": sshd.credential(), "snmp": {"type": "snmp", "version": "2c", "community": "leaf1"}})
    states, snaps = run(poll_groups(cfg))
    assert all(s.state == "ok" for s in states.values()), {k: s.last_error for k, s in states.items()}
    reference = {**series_of(snaps["snmp"]), **series_of(snaps["cli"])}
    report = {}
    for group in ("gnmi_sonic", "gnmi_cumulus"):
        got = series_of(snaps[group])
        shared = [k for k in got if k in reference]
        mismatches = [(k, got[k], reference[k]) for k in shared if got[k] != reference[k]]
        ports = {dict(k[1])["interface"] for k in shared}
        report[group] = (len(shared), len(mismatches), len(ports))
        assert mismatches == [], mismatches[:5]
        assert len(ports) == PORTS
    sonic_shared, _, _ = report["gnmi_sonic"]
    cumulus_shared, _, _ = report["gnmi_cumulus"]
    # SONiC over gNMI: 8 interface + 16 PFC + 16 queues x 4 + 8 x 4 WRED/ECN + 2 x 5 watchdog = 130 per port
    assert sonic_shared == 130 * PORTS, report
    # Cumulus over gNMI: 8 interface + oper status + 16 PFC + 8 unicast queues x 5 = 65 per port
    assert cumulus_shared == 65 * PORTS, report
    print(f"\nagreement: {report} (shared series, mismatches, ports)")


# -- SONiC's own payloads through the target -----------------------------------------------------------------

REPLAYS = {  # (table option, gNMI path the collector subscribes) -> payload files served there
    ("ports", "COUNTERS/Ethernet*"): ["COUNTERS+Ethernet_wildcard.txt", "COUNTERS+Ethernet_wildcard_expected.txt",
                                      "COUNTERS+Ethernet_wildcard_alias.txt",
                                      "COUNTERS+Ethernet_wildcard_alias_expected.txt",
                                      "COUNTERS+Ethernet_wildcard_PFC_7_RX.txt",
                                      "COUNTERS+Ethernet_wildcard_PFC_7_RX_alias.txt"],
    ("queues", "COUNTERS/Ethernet*/Queues"): ["COUNTERS+Ethernet_wildcard_Queues.txt",
                                              "COUNTERS+Ethernet_wildcard_Queues_alias.txt",
                                              "COUNTERS+Ethernet_wildcard_Queues_expected.txt",
                                              "COUNTERS+Ethernet_wildcard_Queues_alias_expected.txt",
                                              "COUNTERS+Ethernet68+Queues.txt", "COUNTERS+Ethernet68+Queues_alias.txt",
                                              "COUNTERS+Ethernet7+Queues.txt", "COUNTERS+Ethernet7+Queues_alias.txt"],
    ("pfcwd", "COUNTERS/Ethernet*/Pfcwd"): ["COUNTERS+Ethernet68+Pfcwd.txt", "COUNTERS+Ethernet68+Pfcwd_alias.txt",
                                            "COUNTERS+Ethernet_wildcard_Pfcwd_alias.txt",
                                            "COUNTERS+Ethernet_wildcard_Pfcwd_alias_expected.txt"],
    ("pg_watermarks", "PERIODIC_WATERMARKS/Ethernet*/PriorityGroups"): [
        "PERIODIC_WATERMARKS+Ethernet16+PriorityGroups.txt", "PERIODIC_WATERMARKS+Ethernet16+PriorityGroups_alias.txt",
        "PERIODIC_WATERMARKS+Ethernet_wildcard+PriorityGroups_alias.txt",
        "PERIODIC_WATERMARKS+Ethernet_wildcard+PriorityGroups_alias_expected.txt"],
}


def test_sonic_testdata_replayed_through_the_target_zero_numeric_fields_skipped(tmp_path):
    """Each sonic-gnmi payload is served at the path the collector subscribes (with CONFIG_DB PORT =
    sonic-gnmi's alias map and its COUNTERS_QUEUE_NAME_MAP): the poll is ok, nothing is skipped,
    every series names a SONiC port, and each mapped field of the payload is one series."""
    aliases = json.loads((FIX / "COUNTERS_PORT_ALIAS_MAP.txt").read_text())
    alias_map = json.dumps({k.split("|", 1)[1]: v for k, v in aliases.items()}).encode()
    totals = {"payloads": 0, "series": 0}
    for (table, path), files in REPLAYS.items():
        for name in files:
            raw = (FIX / name).read_bytes()
            replay = {("COUNTERS_DB", path): raw, ("CONFIG_DB", "PORT"): alias_map,
                      ("COUNTERS_DB", "COUNTERS_QUEUE_NAME_MAP"): (FIX / "COUNTERS_QUEUE_NAME_MAP.txt").read_bytes()}
            with GnmiTarget(None, "sonic", replay=replay) as target:
                cfg = make_config(tmp_path, [gnmi_group(target.port, tables=[table])])
                p = Poller(cfg)

                async def once():
                    try:
                        return await p.poll()
                    finally:
                        await p.close()

                states, samples = run(once())
            (state,) = states.values()
            assert state.state == "ok", (name, state.last_error)
            assert sum(state.skipped_lines.values()) == 0, (name, state.skipped_lines)
            mine = {k: v for k, v in samples.items() if k[0].startswith("fabric_roce")}
            assert all("/" not in dict(k[1]).get("interface", "") for k in mine), name
            expected = _expected_series(table, json.loads(raw))
            assert len(mine) == expected, (name, len(mine), expected)
            totals["payloads"] += 1
            totals["series"] += len(mine)
    assert totals["payloads"] == 22
    print(f"\nreplayed {totals}")


def _expected_series(table: str, payload: dict) -> int:
    """Independent count of the series a payload must give, from the catalog's rows (not the
    collector's compiled tables): a row's field present is a series; rows of one metric and labels
    are one series, a sum, when all are present; a text field only when it holds a known value."""
    from fabric_exporter.catalog import gnmi_paths
    from fabric_exporter.collectors.gnmi_switch import TEXT_ENUMS
    from fabric_exporter.mapping import RawTable

    container = next(c for c in gnmi_paths.CONTAINERS if c.vendor == "sonic" and c.word == table)
    rows = RawTable.for_source(container.source)
    n = 0
    for fields in payload.values():
        present: dict[tuple, int] = {}
        for field, value in fields.items():
            for _order, metric, row, captures in rows.matches(field):
                if metric not in TEXT_ENUMS or value in TEXT_ENUMS[metric]:
                    key = (metric, captures, row.labels)
                    present[key] = present.get(key, 0) + 1
        for (metric, _captures, labels), count in present.items():
            n += count == sum(1 for m, row in rows.rows if m == metric and row.labels == labels)
    return n


# -- stream mode and its faults -------------------------------------------------------------------------------

def test_stream_mode_follows_the_switch_and_counts_updates(tmp_path):
    sw = SimulatedSwitch("leaf1", "sonic", ports=4, queues=4, seed=2)
    with GnmiTarget(sw, "cumulus", advance_each_sample=True) as target:
        cfg = make_config(tmp_path, [gnmi_group(target.port, dialect="cumulus", mode="stream", sample_interval="1s",
                                                interval="2s", timeout="1.5s")])

        async def go():
            p = Poller(cfg)
            try:
                s1, first = await p.poll()
                await asyncio.sleep(2.2)
                s2, second = await p.poll()
                return s1, first, s2, second
            finally:
                await p.close()

        s1, first, s2, second = run(go())
    assert list(s1.values())[0].state == "ok" and list(s2.values())[0].state == "ok"
    key = ("fabric_roce_rx_bytes_total", frozenset({("fabric", "lab"), ("switch", "leaf1"), ("interface", "Ethernet0")}))
    assert second[key] > first[key]  # SAMPLE updates arrived between the polls
    upd = ("fabric_roce_switch_gnmi_stream_updates", frozenset({("fabric", "lab"), ("switch", "leaf1")}))
    assert second[upd] > first[upd]
    assert target.subscribes == 1  # one long-lived stream, not a subscribe per poll



def test_a_stream_publishes_one_snapshot_per_poll_whatever_it_receives(tmp_path):
    """Notifications only update the switch's state; the store gets a snapshot per poll: samples
    (dozens of notifications each) arriving between two polls publish nothing, the next poll
    publishes their latest values once."""
    sw = SimulatedSwitch("leaf1", "sonic", ports=4, queues=4, seed=4)
    with GnmiTarget(sw, "cumulus", advance_each_sample=True) as target:
        cfg = make_config(tmp_path, [gnmi_group(target.port, dialect="cumulus", mode="stream", sample_interval="1s",
                                                interval="10s", timeout="5s")])

        async def go():
            p = Poller(cfg)
            try:
                await p.poll_states()
                (key,), (collector,) = p.collectors.keys(), p.collectors.values()
                published, received = p.store.get(key), collector.updates
                await asyncio.sleep(2.5)  # two or three samples of the switch
                between = (p.store.get(key) is published, collector.updates - received, received)
                await p.poll_states()
                return published, between, p.store.get(key), collector.updates
            finally:
                await p.close()

        published, (unchanged, arrived, received), latest, updates = run(go())
    assert unchanged and arrived >= received > 0  # at least a whole sample's notifications (the first sync's count)
    assert latest is not published
    gauge = ("fabric_roce_switch_gnmi_stream_updates", frozenset({("fabric", "lab"), ("switch", "leaf1")}))
    assert series_of(latest)[gauge] == updates and series_of(latest)[gauge] > series_of(published)[gauge]


def test_a_stream_poll_with_nothing_new_hands_out_the_very_same_samples(tmp_path):
    """A poll that finds no notification since the last one (a 10 s sample interval, polls moments
    apart) returns the last poll's sample objects, so the store renders and compresses nothing again;
    the next sample's notifications make new ones."""
    sw = SimulatedSwitch("leaf1", "sonic", ports=2, queues=2, seed=6)
    with GnmiTarget(sw, "cumulus", advance_each_sample=True) as target:
        cfg = make_config(tmp_path, [gnmi_group(target.port, dialect="cumulus", mode="stream",
                                                sample_interval="10s", interval="20s", timeout="5s")])

        async def go():
            p = Poller(cfg)
            try:
                await p.poll_states()  # subscribes and waits for the first sync
                (collector,) = p.collectors.values()
                loop = asyncio.get_running_loop()

                async def poll():
                    collector.ctx.begin_poll(loop.time())
                    try:
                        return (await collector.poll()).samples, collector.updates
                    finally:
                        collector.ctx.end_poll()

                first, second = await poll(), await poll()
                return first, second
            finally:
                await p.close()

        (first, updates1), (second, updates2) = run(go())
    assert updates1 == updates2 > 0  # nothing arrived between the two polls
    assert len(first) == len(second) > 20 and all(a is b for a, b in zip(first, second))
    assert first is not second  # a list of its own: the scheduler may keep or change it


def test_sonic_stream_of_one_notification_per_entry_equals_the_merged_object(tmp_path):
    """sonic-gnmi sends a wildcard path's entries as one JSON object per SAMPLE, but one per changed
    entry ({key: fields}) for ON_CHANGE; the collector's series are the same either way (and the
    streaming benchmark measures both shapes)."""
    sw = SimulatedSwitch("leaf1", "sonic", ports=4, queues=4, seed=3)
    sw.advance(2)
    with GnmiTarget(sw, "sonic") as merged, GnmiTarget(sw, "sonic", notification_per_key=True) as per_key:
        groups = [gnmi_group(t.port, name=name, host=f"leaf-{name}", dialect="sonic", mode="stream",
                             sample_interval="1s", interval="2s", timeout="1.5s", tables=["ports", "queues", "pfcwd"])
                  for name, t in (("merged", merged), ("per_key", per_key))]
        cfg = make_config(tmp_path, groups)
        states, snaps = run(poll_groups(cfg))
    assert all(s.state == "ok" for s in states.values()), states

    def by_identity(group: str) -> dict:
        out = {}
        for (name, labels), v in series_of(snaps[group]).items():
            if name.startswith("fabric_roce_switch_gnmi_"):
                continue  # the stream's own counters (notifications differ by design)
            out[(name, frozenset((k, x) for k, x in labels if k != "switch"))] = v
        return out

    def notifications(group: str) -> float:
        return next(v for (name, _), v in series_of(snaps[group]).items()
                    if name == "fabric_roce_switch_gnmi_stream_updates")

    # one per table and sample, against one per entry: 4 ports, 8 queues each, 4 watchdog queues
    assert notifications("per_key") >= 10 * notifications("merged") > 0
    merged_series, per_key_series = by_identity("merged"), by_identity("per_key")
    assert len(merged_series) > 4 * 30  # ports, PFC, queues and watchdog series of 4 ports
    assert per_key_series == merged_series


def test_cumulus_stream_of_one_notification_per_leaf_equals_one_per_container(tmp_path):
    """Targets group OpenConfig leaves differently: one notification per keyed container (NVOS,
    cEOS 4.34's batches) or one per leaf with the whole path and no prefix (EOS in aristanetworks/
    openmgmt's recorded interface_state.json). The lab target serves both; the collector's series
    are the same either way (and the streaming benchmark measures both shapes)."""
    sw = SimulatedSwitch("leaf1", "sonic", ports=4, queues=4, seed=5)
    sw.advance(2)
    with GnmiTarget(sw, "cumulus") as container, GnmiTarget(sw, "cumulus", oc_grouping="leaf") as leaf:
        groups = [gnmi_group(t.port, name=name, host=f"leaf-{name}", dialect="cumulus", mode="stream",
                             sample_interval="1s", interval="2s", timeout="1.5s")
                  for name, t in (("container", container), ("leaf", leaf))]
        cfg = make_config(tmp_path, groups)
        states, snaps = run(poll_groups(cfg))
    assert all(s.state == "ok" for s in states.values()), states

    def by_identity(group: str) -> dict:
        return {(name, frozenset((k, x) for k, x in labels if k != "switch")): v
                for (name, labels), v in series_of(snaps[group]).items()
                if not name.startswith("fabric_roce_switch_gnmi_")}

    def notifications(group: str) -> float:
        return next(v for (name, _), v in series_of(snaps[group]).items()
                    if name == "fabric_roce_switch_gnmi_stream_updates")

    assert notifications("leaf") >= 2 * notifications("container") > 0  # 2.4 x with 4 ports, 4 queues
    container_series, leaf_series = by_identity("container"), by_identity("leaf")
    assert len(container_series) > 4 * 40  # interface, queue, pause and watermark series of 4 ports
    assert leaf_series == container_series


def test_lab_target_refuses_an_unknown_grouping():
    with pytest.raises(ValueError):
        GnmiTarget(SimulatedSwitch("leaf1", "sonic", ports=1, queues=1), "cumulus", oc_grouping="interface")


def test_stalled_stream_is_detected_within_three_intervals_and_resubscribed(tmp_path):
    """SONiC's bug: the stream stays open but updates stop. The watchdog resubscribes within 3 sample
    intervals; a target that also answers no new subscription fails the polls (timeout) until it
    recovers, so the series go stale instead of freezing."""
    sw = SimulatedSwitch("leaf1", "sonic", ports=2, queues=2, seed=2)
    with GnmiTarget(sw, "cumulus") as target:
        cfg = make_config(tmp_path, [gnmi_group(target.port, dialect="cumulus", mode="stream", sample_interval="1s",
                                                interval="2s", timeout="1.5s")])

        async def go():
            p = Poller(cfg)
            try:
                ok, _ = await p.poll()
                (collector,) = p.collectors.values()
                target.stall()
                stalled_at = time.monotonic()
                resubscribed = None
                while time.monotonic() - stalled_at < 8 and resubscribed is None:
                    await asyncio.sleep(0.1)
                    if collector.resubscribes:
                        resubscribed = time.monotonic() - stalled_at
                after_resubscribe, _ = await p.poll()
                target.stall(False)
                # wedged: no updates and no answer to a new subscription
                target.stall(hang_new=True)
                wedged_at = time.monotonic()
                failed = None
                while time.monotonic() - wedged_at < 10 and failed is None:
                    await asyncio.sleep(0.25)
                    states, _ = await p.poll()
                    (st,) = states.values()
                    if st.state == "failed":
                        failed = (time.monotonic() - wedged_at, st.last_error, dict(st.errors))
                target.stall(False)
                back = None
                for _ in range(20):
                    await asyncio.sleep(0.5)
                    states, samples = await p.poll()
                    if list(states.values())[0].state == "ok":
                        back = samples
                        break
                return ok, resubscribed, after_resubscribe, failed, back
            finally:
                await p.close()

        ok, resubscribed, after_resubscribe, failed, back = run(go())
    assert list(ok.values())[0].state == "ok"
    assert resubscribed is not None and resubscribed <= 3 * 1.0 + 0.5, resubscribed
    assert list(after_resubscribe.values())[0].state == "ok"  # the new subscription synced: fresh values
    assert failed is not None and failed[0] <= 3 * 1.0 + 1.5 + 0.5, failed  # 3 intervals + the poll's deadline
    assert failed[2].get("timeout", 0) >= 1, failed
    assert back is not None, "the resubscribed stream never came back"
    resub = ("fabric_roce_switch_gnmi_resubscribes_total", frozenset({("fabric", "lab"), ("switch", "leaf1")}))
    assert back[resub] >= 2 and target.subscribes >= 3


def test_sample_interval_below_one_second_is_refused(tmp_path):
    """The target refuses < 1 s with INVALID_ARGUMENT, as SONiC does; the config refuses it too;
    a target with a higher minimum makes the poll fail with reason config."""
    import grpc
    from gnmi_pb import gnmi_pb2 as g, gnmi_pb2_grpc as gg

    from fabric_exporter.config.model import ConfigError

    sw = SimulatedSwitch("leaf1", "sonic", ports=2, queues=2, seed=2)
    with GnmiTarget(sw, "cumulus") as target:
        async def raw():
            async with grpc.aio.insecure_channel(f"127.0.0.1:{target.port}") as ch:
                req = g.SubscribeRequest(subscribe=g.SubscriptionList(mode=g.SubscriptionList.STREAM, subscription=[
                    g.Subscription(path=g.Path(elem=[g.PathElem(name="interfaces")]), mode=g.SAMPLE,
                                   sample_interval=500_000_000)]))
                call = gg.gNMIStub(ch).Subscribe(iter([req]), timeout=5)
                try:
                    async for _ in call:
                        pass
                except grpc.aio.AioRpcError as e:
                    return e.code(), e.details()
            return None

        code, details = run(raw())
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "cannot be less than 1s" in details
    with pytest.raises(ConfigError, match="sample_interval"):
        make_config(tmp_path, [gnmi_group(1, dialect="cumulus", mode="stream", sample_interval="500ms")])
    with GnmiTarget(sw, "cumulus", min_sample_interval=5.0) as strict:
        cfg = make_config(tmp_path, [gnmi_group(strict.port, dialect="cumulus", mode="stream", sample_interval="1s",
                                                interval="2s", timeout="1.5s")])
        states, _ = run(poll_groups(cfg))
    (st,) = states.values()
    assert st.state == "failed" and st.errors["config"] == 1, st.last_error
    assert "INVALID_ARGUMENT" in st.last_error


# -- security -------------------------------------------------------------------------------------------------

def _ca(dirpath: Path, name: str) -> tuple[Path, Path]:
    key, crt = dirpath / f"{name}-ca.key", dirpath / f"{name}-ca.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(crt),
                    "-days", "2", "-subj", f"/CN={name} test CA"], check=True, capture_output=True, timeout=60)
    return key, crt


def _server_cert(dirpath: Path, ca_key: Path, ca_crt: Path) -> tuple[Path, Path]:
    key, csr, crt, ext = (dirpath / n for n in ("server.key", "server.csr", "server.crt", "ext.cnf"))
    ext.write_text("subjectAltName=DNS:leaf1.lab,IP:127.0.0.1\n")
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
                    "-subj", "/CN=leaf1.lab"], check=True, capture_output=True, timeout=60)
    subprocess.run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key),
                    "-CAcreateserial", "-out", str(crt), "-days", "2", "-extfile", str(ext)],
                   check=True, capture_output=True, timeout=60)
    return crt, key


def test_tls_with_the_right_ca_works_and_a_wrong_ca_is_an_auth_failure(tmp_path):
    ca_key, ca_crt = _ca(tmp_path, "lab")
    _, other_crt = _ca(tmp_path, "other")
    crt, key = _server_cert(tmp_path, ca_key, ca_crt)
    (tmp_path / "user").write_text("admin\n")
    (tmp_path / "password").write_text("s3cret\n")
    (tmp_path / "wrong").write_text("guess\n")
    sw = SimulatedSwitch("leaf1", "sonic", ports=2, queues=2, seed=2)
    with GnmiTarget(sw, "sonic", tls=(str(crt), str(key)), credentials=("admin", "s3cret")) as target:
        common = dict(insecure=False, tls_server_name="leaf1.lab", username_file=str(tmp_path / "user"))
        cfg = make_config(tmp_path, [
            gnmi_group(target.port, "good", ca_file=str(ca_crt), password_file=str(tmp_path / "password"), **common),
            gnmi_group(target.port, "wrong_ca", ca_file=str(other_crt), password_file=str(tmp_path / "password"),
                       **common),
            gnmi_group(target.port, "bad_password", ca_file=str(ca_crt), password_file=str(tmp_path / "wrong"),
                       **common),
            gnmi_group(target.port, "plaintext", insecure=True),
        ])
        states, _ = run(poll_groups(cfg))
    by = {k[0]: s for k, s in states.items()}
    assert by["good"].state == "ok", by["good"].last_error
    assert by["wrong_ca"].state == "failed" and by["wrong_ca"].errors["auth"] == 1, by["wrong_ca"].last_error
    assert by["bad_password"].state == "failed" and by["bad_password"].errors["auth"] == 1, (
        by["bad_password"].errors, by["bad_password"].last_error)
    assert "UNAUTHENTICATED" in by["bad_password"].last_error
    # a plaintext client against a TLS target never gets through; never published as fresh
    assert by["plaintext"].state == "failed" and by["plaintext"].errors["connect"] == 1, by["plaintext"].last_error


def test_a_bad_password_is_an_auth_failure_even_when_the_request_write_loses_the_race(tmp_path):
    """The target refuses before reading the Subscribe request; grpc-python then often reports its own
    INTERNAL instead of UNAUTHENTICATED (grpc/grpc#36066: 10-30 % of calls on a warm channel here).
    Sixty polls over one channel make the race near-certain; every one must still count as auth."""
    (tmp_path / "user").write_text("admin\n")
    (tmp_path / "wrong").write_text("guess\n")
    sw = SimulatedSwitch("leaf1", "sonic", ports=2, queues=2, seed=2)
    reasons = {}

    async def polls(cfg):
        p = Poller(cfg)
        try:
            for _ in range(60):
                (st,) = (await p.poll_states()).values()
                reasons[st.last_error] = reasons.get(st.last_error, 0) + 1
            return st, p.store.get(st.key)
        finally:
            await p.close()

    with GnmiTarget(sw, "sonic", credentials=("admin", "s3cret")) as target:
        cfg = make_config(tmp_path, [gnmi_group(target.port, username_file=str(tmp_path / "user"),
                                                password_file=str(tmp_path / "wrong"))])
        st, snap = run(polls(cfg))
    assert st.state == "failed" and dict(st.errors) == {"auth": 60}, (st.errors, reasons)
    assert all("UNAUTHENTICATED" in e for e in reasons), reasons
    assert not series_of(snap)


def test_tls_is_the_default_and_insecure_must_be_said(tmp_path):
    from fabric_exporter.config.model import ConfigError
    cfg = make_config(tmp_path, [gnmi_group(1, insecure=False)])
    assert cfg.targets[0].options.insecure is False
    with pytest.raises(ConfigError, match="plaintext"):
        make_config(tmp_path, [gnmi_group(1, insecure=True, ca_file=str(FIX / "COUNTERS_PORT_NAME_MAP.txt"))])


# -- the target killed and restarted -------------------------------------------------------------------------

def _start_target(port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "fabric_exporter.lab.gnmi_target", "--dialect", "cumulus",
                             "--port", str(port), "--ports", "4", "--queues", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    line = proc.stdout.readline()
    assert line.startswith("listening"), line
    return proc


def test_killed_target_goes_stale_and_comes_back_after_restart(tmp_path):
    port = free_tcp_port()
    interval, stale_after = 2.0, 4.0
    proc = _start_target(port)
    try:
        cfg = make_config(tmp_path, [gnmi_group(port, dialect="cumulus", mode="stream", sample_interval="1s",
                                                interval="2s", timeout="1.5s", stale_after="4s")])

        async def go():
            p = Poller(cfg)
            try:
                await p.poll()
                ok_at = time.monotonic()
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
                gone = None
                while time.monotonic() - ok_at < stale_after + 3 * interval:
                    await asyncio.sleep(interval / 2)
                    _, samples = await p.poll()
                    if not any(k[0] == "fabric_roce_rx_bytes_total" for k in samples):
                        gone = time.monotonic() - ok_at
                        break
                restarted = _start_target(port)
                restarted_at = time.monotonic()
                back = None
                still_down = 0.0  # the latest moment a poll saw it not back: when that poll started
                while time.monotonic() - restarted_at < 4 * interval:
                    await asyncio.sleep(interval / 4)
                    started = time.monotonic() - restarted_at
                    states, samples = await p.poll()
                    if list(states.values())[0].state == "ok":
                        back = time.monotonic() - restarted_at
                        break
                    still_down = started
                return gone, back, still_down, restarted
            finally:
                await p.close()

        gone, back, still_down, restarted = run(go())
        try:
            assert gone is not None and gone <= stale_after + interval, gone
            # reconnect backoff is capped at one sample interval: back within 2 intervals + backoff.
            # Judged by the last poll that saw it down (when that poll started), not by when the
            # poll that saw it back returned: that poll's own time under load is not the collector's.
            assert back is not None, "never came back"
            assert still_down <= 2 * interval + 1.0, (still_down, back)
        finally:
            restarted.terminate()
            restarted.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_stream_of_on_change_paths_only_is_not_a_stall(tmp_path):
    """Oper status alone (ON_CHANGE) may say nothing for hours: no watchdog, no resubscribe."""
    sw = SimulatedSwitch("leaf1", "sonic", ports=2, queues=2, seed=2)
    with GnmiTarget(sw, "cumulus") as target:
        cfg = make_config(tmp_path, [gnmi_group(target.port, dialect="cumulus", mode="stream", sample_interval="1s",
                                                interval="2s", timeout="1.5s", tables=["oper_status"])])

        async def go():
            p = Poller(cfg)
            try:
                first, _ = await p.poll()
                await asyncio.sleep(4.0)  # > 3 sample intervals without an update
                sw.interfaces[1].oper_status = 2
                await asyncio.sleep(1.5)
                later, samples = await p.poll()
                (collector,) = p.collectors.values()
                return first, later, samples, collector.resubscribes
            finally:
                await p.close()

        first, later, samples, resubscribes = run(go())
    assert list(first.values())[0].state == "ok" and list(later.values())[0].state == "ok"
    assert resubscribes == 0 and target.subscribes == 1
    key = ("fabric_roce_switch_if_oper_status",
           frozenset({("fabric", "lab"), ("switch", "leaf1"), ("interface", "Ethernet4")}))
    assert samples[key] == 2  # the change arrived ON_CHANGE
