"""End to end over a real OpenSSH sshd: fake ethtool/rdma on the session PATH, a fake /sys/class
in sshd's mount namespace, the real scheduler, SSH transport and store. The lab host's counters
change between polls and the exposition must follow exactly."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.harness.sshd import SilentServer, free_port

from tests.harness.roce_nic import group, run
from tests.harness.polling import Poller, matching, one


def host_entry(lab, name=None):
    return {"name": name or lab.model.name, "address": "127.0.0.1", "port": lab.sshd.port}


def config(lab, *groups, credentials=None):
    return {"credentials": credentials or {"lab": lab.sshd.credential()}, "targets": list(groups)}


def expected_port_values(port):
    """The catalog values a lab port must publish (mlx5 names)."""
    e, h = port.ethtool, port.hw_counters
    return {
        ("fabric_roce_pfc_rx_pause_frames_total", "3"): e["rx_prio3_pause"],
        ("fabric_roce_nic_pfc_rx_pause_seconds_total", "3"): e["rx_prio3_pause_duration"] / 1e6,
        ("fabric_roce_rx_bytes_total", None): e["rx_bytes_phy"],
        ("fabric_roce_ecn_marked_packets_total", None): h["np_ecn_marked_roce_packets"],
        ("fabric_roce_nic_cnp_sent_total", None): h["np_cnp_sent"],
        ("fabric_roce_nic_local_ack_timeouts_total", None): h["local_ack_timeout_err"],
    }


def check_host(samples, lab):
    for p in lab.model.ports:
        labels = {"fabric": "f1", "host": lab.model.name, "device": p.device, "port": "1", "netdev": p.netdev}
        for (metric, prio), value in expected_port_values(p).items():
            extra = {"priority": prio} if prio else {}
            assert one(samples, metric, **labels, **extra) == pytest.approx(value, rel=1e-12), (metric, p.device)


def test_polls_follow_the_hosts_counters_exactly(lab_factory):
    lab = lab_factory("mlx5", nics=2)
    lab.model.advance(10)
    lab.publish()
    poller = Poller(config(lab, group("gpu", [host_entry(lab)])))

    async def scenario():
        try:
            states, samples = await poller.poll(by_host=True)
            assert states["gpu-001"].state == "ok", states["gpu-001"].last_error
            check_host(samples, lab)
            # exact label sets, incl. priority only where PFC is on
            assert set(matching(samples, "fabric_roce_pfc_rx_pause_frames_total")) == {
                frozenset({"fabric": "f1", "host": "gpu-001", "device": f"mlx5_{i}", "port": "1",
                           "netdev": f"ens{i + 1}f0np0", "priority": "3"}.items()) for i in range(2)}
            assert one(samples, "fabric_roce_nic_port_info", device="mlx5_0", driver="mlx5_core") == 1

            # traffic moves on; one counter gets a precise value
            lab.model.advance(30)
            lab.model.port("mlx5_1").hw_counters["np_cnp_sent"] = 123456789
            lab.publish()
            states, samples = await poller.poll(by_host=True)
            assert states["gpu-001"].state == "ok"
            check_host(samples, lab)
            assert one(samples, "fabric_roce_nic_cnp_sent_total", device="mlx5_1") == 123456789

            # driver reload: counters restart from zero and the raw (lower) values are published as-is
            lab.model.reset()
            lab.model.advance(1)
            lab.publish()
            states, samples = await poller.poll(by_host=True)
            assert states["gpu-001"].state == "ok"
            check_host(samples, lab)
            assert one(samples, "fabric_roce_nic_cnp_sent_total", device="mlx5_1") < 123456789
        finally:
            await poller.close()

    run(scenario())


def test_one_remote_command_per_poll_however_many_nics(lab_factory):
    lab = lab_factory("mlx5", nics=8)
    poller = Poller(config(lab, group("gpu", [host_entry(lab)])))
    calls = []
    real_runner = poller.transports.runner

    class Counting:
        def __init__(self, inner):
            self.inner, self.description = inner, inner.description

        async def run(self, argv, **kw):
            calls.append(argv[0])
            return await self.inner.run(argv, **kw)

        async def close(self):
            await self.inner.close()

    poller.transports.runner = lambda g, h: Counting(real_runner(g, h))

    async def scenario():
        try:
            for _ in range(2):
                states, samples = await poller.poll(by_host=True)
                assert states["gpu-001"].state == "ok", states["gpu-001"].last_error
            assert len(matching(samples, "fabric_roce_nic_cnp_sent_total")) == 8
            assert len(matching(samples, "fabric_roce_rx_bytes_total")) == 8
        finally:
            await poller.close()

    run(scenario())
    assert calls == ["sh", "sh"]  # one round trip per poll for 8 NICs (8 ethtool runs + all sysfs inside)


def test_bnxt_and_irdma_hosts(lab_factory):
    bnxt, intel = lab_factory("bnxt", nics=2, name="gpu-b"), lab_factory("irdma", nics=1, name="gpu-i")
    for lab in (bnxt, intel):
        lab.model.advance(5)
        lab.publish()
    creds = {"b": bnxt.sshd.credential(), "i": intel.sshd.credential()}
    poller = Poller({"credentials": creds, "targets": [
        group("b", [host_entry(bnxt)], credentials="b"), group("i", [host_entry(intel)], credentials="i")]})

    async def scenario():
        try:
            states, samples = await poller.poll(by_host=True)
            assert {h: s.state for h, s in states.items()} == {"gpu-b": "ok", "gpu-i": "ok"}
            p = bnxt.model.port("bnxt_re1")
            lbl = {"host": "gpu-b", "device": "bnxt_re1", "netdev": p.netdev}
            assert one(samples, "fabric_roce_pfc_rx_pause_frames_total", priority="3", **lbl) == p.ethtool["rx_pfc_ena_frames_pri3"]
            assert one(samples, "fabric_roce_nic_pfc_tx_pause_seconds_total", priority="3", **lbl) == pytest.approx(
                p.ethtool["pfc_pri3_tx_duration_us"] / 1e6)
            assert one(samples, "fabric_roce_nic_cnp_received_total", **lbl) == p.hw_counters["rx_cnp_pkts"]
            assert one(samples, "fabric_roce_nic_port_info", driver="bnxt_en", **lbl) == 1
            q = intel.model.port("irdma0")
            lbl = {"host": "gpu-i", "device": "irdma0", "netdev": q.netdev}
            assert one(samples, "fabric_roce_ecn_marked_packets_total", **lbl) == q.hw_counters["RxECNMrkd"]
            assert one(samples, "fabric_roce_nic_cnp_handled_total", **lbl) == q.hw_counters["cnpHandled"]
            assert one(samples, "fabric_roce_pfc_tx_pause_frames_total", priority="3", **lbl) == q.ethtool["tx_priority_3_xoff.nic"]
        finally:
            await poller.close()

    run(scenario())


def test_rdma_tool_mode_over_ssh(lab_factory):
    lab = lab_factory("mlx5", nics=2)
    lab.model.advance(3)
    lab.publish()
    poller = Poller(config(lab, group("gpu", [host_entry(lab)], options={"hw_counters_from": "rdma"})))

    async def scenario():
        try:
            states, samples = await poller.poll(by_host=True)
            assert states["gpu-001"].state == "ok", states["gpu-001"].last_error
            check_host(samples, lab)
        finally:
            await poller.close()

    run(scenario())


def test_devices_option_limits_the_poll_and_reports_missing_ones(lab_factory):
    lab = lab_factory("mlx5", nics=3)
    poller = Poller(config(lab, group("gpu", [host_entry(lab)], options={"devices": ["mlx5_2", "mlx5_7"]})))

    async def scenario():
        try:
            states, samples = await poller.poll(by_host=True)
            assert states["gpu-001"].state == "partial"
            assert states["gpu-001"].last_error == "RDMA devices not found on host: mlx5_7"
            assert {dict(k)["device"] for k in matching(samples, "fabric_roce_nic_cnp_sent_total")} == {"mlx5_2"}
        finally:
            await poller.close()

    run(scenario())


def test_host_key_mismatch_is_refused_unless_the_lab_option_is_set(lab_factory, tmp_path):
    lab = lab_factory("mlx5", nics=1)
    wrong = tmp_path / "known_hosts_wrong"
    other_key = Path(f"{lab.sshd.other_client_key}.pub").read_text().split()[:2]
    wrong.write_text(f"[127.0.0.1]:{lab.sshd.port} {' '.join(other_key)}\n")
    creds = {"strict": lab.sshd.credential(known_hosts_file=str(wrong)),
             "lab": {k: v for k, v in lab.sshd.credential(insecure_ignore_host_key=True).items()
                     if k != "known_hosts_file"}}
    poller = Poller({"credentials": creds, "targets": [
        group("strict", [host_entry(lab, "gpu-strict")], credentials="strict"),
        group("lab", [host_entry(lab, "gpu-lab")], credentials="lab")]})

    async def scenario():
        try:
            states, samples = await poller.poll(by_host=True)
            strict = states["gpu-strict"]
            assert strict.state == "failed" and dict(strict.errors) == {"host_key": 1}
            assert "host key not trusted" in strict.last_error
            assert states["gpu-lab"].state == "ok"
            assert matching(samples, "fabric_roce_nic_cnp_sent_total", host="gpu-lab")
            assert not matching(samples, "fabric_roce_nic_cnp_sent_total", host="gpu-strict")
        finally:
            await poller.close()

    run(scenario())


def test_wrong_key_refused_port_and_hanging_host_fail_alone(lab_factory):
    lab = lab_factory("mlx5", nics=1)
    refused_port = free_port()
    with SilentServer() as silent:
        creds = {"lab": lab.sshd.credential(),
                 "intruder": lab.sshd.credential(private_key_file=str(lab.sshd.other_client_key))}
        poller = Poller({"credentials": creds, "targets": [
            group("good", [host_entry(lab, "gpu-good")], timeout="2s"),
            group("bad", [{"name": "gpu-wrongkey", "address": "127.0.0.1", "port": lab.sshd.port}],
                  credentials="intruder", timeout="2s"),
            group("down", [{"name": "gpu-refused", "address": "127.0.0.1", "port": refused_port},
                           {"name": "gpu-hangs", "address": "127.0.0.1", "port": silent.port}], timeout="2s"),
        ]})

        async def scenario():
            try:
                started = time.monotonic()
                states, samples = await poller.poll(by_host=True)
                return states, samples, time.monotonic() - started
            finally:
                await poller.close()

        states, samples, elapsed = run(scenario())
    assert states["gpu-good"].state == "ok" and states["gpu-good"].last_duration < 1.5
    assert matching(samples, "fabric_roce_nic_cnp_sent_total", host="gpu-good")
    assert dict(states["gpu-wrongkey"].errors) == {"auth": 1}
    assert "authentication failed" in states["gpu-wrongkey"].last_error
    assert dict(states["gpu-refused"].errors) == {"connect": 1}
    assert dict(states["gpu-hangs"].errors) == {"timeout": 1}
    assert 1.8 <= states["gpu-hangs"].last_duration < 3.5
    assert elapsed < 4.5  # the hang costs its own deadline, not the others'


def test_missing_tool_is_partial_and_garbled_output_fails_only_that_host(lab_factory):
    # PATH without the sbin directories: this machine's real ethtool is in /usr/sbin
    no_ethtool = lab_factory("mlx5", nics=1, name="gpu-a", system_path=("/usr/bin", "/bin"))
    garbled = lab_factory("mlx5", nics=1, name="gpu-b")
    (no_ethtool.bin / "ethtool").unlink()
    (garbled.data / "ethtool" / "ens1f0np0").write_text("NIC statistics:\n     rx_packets: 12\n     rx_bytes: 3O\n")
    creds = {"a": no_ethtool.sshd.credential(), "b": garbled.sshd.credential()}
    poller = Poller({"credentials": creds, "targets": [
        group("a", [host_entry(no_ethtool)], credentials="a"), group("b", [host_entry(garbled)], credentials="b")]})

    states, samples = run(poller.poll_once(by_host=True))
    a, b = states["gpu-a"], states["gpu-b"]
    assert a.state == "partial" and "ethtool: command not found" in a.last_error
    assert matching(samples, "fabric_roce_nic_cnp_sent_total", host="gpu-a")  # sysfs counters still published
    assert not matching(samples, "fabric_roce_rx_bytes_total", host="gpu-a")
    assert b.state == "failed" and dict(b.errors) == {"parse": 1}
    # line 2 of what the host sent: its filter left out the unmapped rx_packets line before it
    assert b.last_error == "ens1f0np0: ethtool -S line 2 (rx_bytes): not an unsigned decimal: '3O'"
    assert not matching(samples, "fabric_roce_nic_cnp_sent_total", host="gpu-b")  # nothing guessed or half-published


def test_harness_sessions_use_plain_sh_the_fake_path_and_the_fake_sysfs(lab_factory):
    import subprocess

    lab = lab_factory("mlx5", nics=1)
    r = subprocess.run(lab.sshd.ssh_argv("echo $0; command -v ethtool; cat /sys/class/infiniband/mlx5_0/ports/1/state"),
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["sh", str(lab.bin.resolve() / "ethtool"), "4: ACTIVE"]
    # the tree is visible to sshd's sessions only: this process's /sys/class is the machine's
    (lab.sysfs / "fabric-exporter-test-marker").write_text("1\n")
    r = subprocess.run(lab.sshd.ssh_argv("cat /sys/class/fabric-exporter-test-marker"), capture_output=True, text=True,
                       timeout=20)
    assert r.stdout == "1\n"
    assert not Path("/sys/class/fabric-exporter-test-marker").exists()


def test_exposition_passes_promtool_lint_for_every_vendor(lab_factory):
    import subprocess

    labs = [lab_factory(v, nics=2, name=f"gpu-{v}") for v in ("mlx5", "bnxt", "irdma")]
    creds = {lab.model.name: lab.sshd.credential() for lab in labs}
    poller = Poller({"credentials": creds, "targets": [
        group(lab.model.name, [host_entry(lab)], credentials=lab.model.name, options={"expose_unmapped": True})
        for lab in labs]})

    async def scenario():
        try:
            states, _ = await poller.poll(by_host=True)
            assert all(s.state == "ok" for s in states.values()), {h: s.last_error for h, s in states.items()}
            return poller.store.render().decode()
        finally:
            await poller.close()

    text = run(scenario())
    assert 'fabric_roce_nic_unmapped_value{' in text and 'counter="[0]: rx_ucast_packets"' in text
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_node_name_maps_the_configured_fqdn_to_the_schedulers_name(lab_factory):
    """The host configured by its FQDN publishes its NIC series under the short (Slurm) name; the
    target itself (its state, fabric_up) keeps the configured name, which is its identity."""
    lab = lab_factory("mlx5", nics=2)
    lab.model.advance(5)
    lab.publish()
    fqdn = f"{lab.model.name}.cluster.example"
    poller = Poller(config(lab, group("gpu", [host_entry(lab, fqdn)], options={"node_name": {"regex": r"^([^.]+)\."}})))

    async def scenario():
        try:
            states, samples = await poller.poll(by_host=True)
            assert states[fqdn].state == "ok", states[fqdn].last_error
            check_host(samples, lab)  # host="gpu-001", every value exact
            hosts = {dict(lbls).get("host") for (name, lbls) in samples if name.startswith("fabric_roce_")}
            assert hosts == {lab.model.name}
        finally:
            await poller.close()

    run(scenario())


def test_node_name_option_is_validated():
    from fabric_exporter.collectors.roce_nic import RoceNicCollector

    errors: list = []
    o = RoceNicCollector.parse_options({}, "options", lambda p, m: errors.append(p))
    assert o.node_name is None and o.host_label("gpu-001.x") == "gpu-001.x" and errors == []
    o = RoceNicCollector.parse_options({"node_name": {"regex": r"^(?P<short>[^.]+)", "template": r"\g<short>"}},
                                       "options", lambda p, m: errors.append(p))
    assert (o.host_label("gpu-node-017.cluster.example"), o.host_label("gpu-node-017")) == ("gpu-node-017",) * 2
    assert o.host_label(".") == "."  # no match: the name as configured, never an empty label
    assert errors == []
    for bad, where in (({"regex": "("}, "options.node_name.regex"), ({"template": r"\1"}, "options.node_name.regex"),
                       ({"regex": "^x", "template": r"\1"}, "options.node_name.template"),
                       ({"regex": "^(x)", "templat": "a"}, "options.node_name.templat"),
                       ("^(x)", "options.node_name")):
        errors.clear()
        RoceNicCollector.parse_options({"node_name": bad}, "options", lambda p, m: errors.append(p))
        assert errors == [where], bad


def test_the_host_filter_over_ssh_publishes_the_mapped_series_and_expose_unmapped_gets_everything(lab_factory):
    """The real script over a real sshd, twice against the same host: by default the host's awk
    leaves out the unmapped counters; with expose_unmapped they all come back, and every other
    series is the same."""
    lab = lab_factory("mlx5", nics=2)
    poller = Poller(config(lab, group("mapped", [host_entry(lab)]),
                           group("all", [host_entry(lab, "gpu-all")], options={"expose_unmapped": True})))

    states, samples = run(poller.poll_once(by_host=True))
    assert {s.state for s in states.values()} == {"ok"}
    by_host = {}
    for (name, labels), value in samples.items():
        labels = dict(labels)
        host = labels.pop("host", None)
        if name.startswith("fabric_roce") and host in ("gpu-001", "gpu-all"):
            by_host.setdefault(host, {})[(name, frozenset(labels.items()))] = value
    mapped, everything = by_host["gpu-001"], by_host["gpu-all"]
    unmapped = {k: v for k, v in everything.items() if k[0] == "fabric_roce_nic_unmapped_value"}
    assert not any(k[0] == "fabric_roce_nic_unmapped_value" for k in mapped)
    assert {dict(k[1])["counter"] for k in unmapped} >= {"tx_tso_packets", "rx_write_requests", "rx_cache_reuse"}
    assert {k: v for k, v in everything.items() if k not in unmapped} == mapped
    check_host(samples, lab)
    # what the host sent: the script's own filter ran there (the sshd's awk), or not
    import shlex
    import subprocess

    from fabric_exporter.collectors.roce_nic import REMOTE_SCRIPT

    sent = {}
    for word in ("mapped", "all"):
        command = shlex.join(["sh", "-c", REMOTE_SCRIPT, "fabric-roce", "sysfs", "1", word])
        r = subprocess.run(lab.sshd.ssh_argv(command), capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr
        sent[word] = r.stdout
    assert "tx_tso_packets" in sent["all"] and "@@dropped" not in sent["all"]
    assert "tx_tso_packets" not in sent["mapped"] and "@@dropped ethtool " in sent["mapped"]
    assert "rx_prio3_pause:" in sent["mapped"].replace(" ", "")
