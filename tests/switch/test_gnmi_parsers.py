"""gNMI decoding on real payloads: sonic-net/sonic-gnmi's testdata (COUNTERS, Queues, Pfcwd,
PERIODIC_WATERMARKS, alias variants) and Cumulus leaves on the documented paths
(tests/fixtures/switch/gnmi/README.md), plus the status -> reason table and fuzzing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric_exporter.collectors.gnmi_switch import (DIALECTS, SonicState, error_from_status, oc_samples,
                                                    sonic_samples)
from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import gnmi as p

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "switch" / "gnmi"
SONIC = FIX / "sonic"
PAYLOADS = sorted(f.name for f in SONIC.glob("*.txt") if f.name.startswith(("COUNTERS+", "PERIODIC_WATERMARKS+")))


def numeric_fields(obj) -> int:
    """Independent count: decimal strings anywhere in the JSON."""
    if isinstance(obj, dict):
        return sum(numeric_fields(v) for v in obj.values())
    return 1 if isinstance(obj, str) and obj.isdigit() else 0


def test_every_sonic_payload_is_copied():
    names = {n.split("_")[0] for n in PAYLOADS}
    assert len(PAYLOADS) == 32 and {"COUNTERS+Ethernet68+Queues", "COUNTERS+Ethernet68+Pfcwd"} <= {
        n.rsplit("_", 1)[0].removesuffix(".txt") for n in PAYLOADS} | names


@pytest.mark.parametrize("name", PAYLOADS)
def test_sonic_payload_every_number_decoded_none_skipped(name):
    raw = (SONIC / name).read_bytes()
    skipped: list = []
    blob = p.parse_sonic_blob(raw, "Ethernet68", skipped=skipped)
    assert skipped == []
    assert sum(len(v) for v in blob.numbers.values()) == numeric_fields(json.loads(raw))
    # the only text values are the documented ones (PFC watchdog status/action, pause status)
    assert {f for v in blob.text.values() for f in v} <= p.SONIC_TEXT_FIELDS


def test_sonic_single_port_payload_values():
    blob = p.parse_sonic_blob((SONIC / "COUNTERS+Ethernet68.txt").read_bytes(), "Ethernet68")
    state = SonicState()
    state.entries = {("ports", k): (v, {}) for k, v in blob.numbers.items()}
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in sonic_samples(state, "sw", lambda _: True)}
    assert samples[("fabric_roce_pfc_rx_pause_frames_total",
                    (("interface", "Ethernet68"), ("priority", "7"), ("switch", "sw")))] == 2
    assert samples[("fabric_roce_rx_bytes_total", (("interface", "Ethernet68"), ("switch", "sw")))] == 0
    assert len([k for k in samples if k[0] == "fabric_roce_pfc_tx_pause_frames_total"]) == 8


def _state(*payloads: tuple[str, str], aliases: bool = False) -> SonicState:
    state = SonicState()
    if aliases:
        state.alias_to_name = p.parse_sonic_port_aliases((SONIC / "COUNTERS_PORT_ALIAS_MAP.txt").read_bytes())
    for word, name in payloads:
        blob = p.parse_sonic_blob((SONIC / name).read_bytes(), "")
        state.entries.update({(word, k): (v, blob.text.get(k, {})) for k, v in blob.numbers.items()})
    return state


def _series(state: SonicState) -> dict:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for s in sonic_samples(state, "sw", lambda _: True)}


@pytest.mark.parametrize("word, plain, alias", [
    ("queues", "COUNTERS+Ethernet68+Queues_expected.txt", "COUNTERS+Ethernet68+Queues_alias_expected.txt"),
    ("queues", "COUNTERS+Ethernet7+Queues_expected.txt", "COUNTERS+Ethernet7+Queues_alias_expected.txt"),
    ("pfcwd", "COUNTERS+Ethernet68+Pfcwd.txt", "COUNTERS+Ethernet68+Pfcwd_alias.txt"),
    ("ports", "COUNTERS+Ethernet_wildcard_expected.txt", "COUNTERS+Ethernet_wildcard_alias_expected.txt"),
    ("ports", "COUNTERS+Ethernet_wildcard_PFC_7_RX.txt", "COUNTERS+Ethernet_wildcard_PFC_7_RX_alias.txt"),
    ("pg_watermarks", "PERIODIC_WATERMARKS+Ethernet16+PriorityGroups.txt",
     "PERIODIC_WATERMARKS+Ethernet16+PriorityGroups_alias.txt"),
])
def test_alias_payloads_give_the_same_series_as_sonic_names(word, plain, alias):
    """sonic-gnmi in alias mode keys ports by vendor alias (Ethernet68/1); through CONFIG_DB PORT's
    alias map the series carry the SONiC name, as SNMP's ifName and the CLI do."""
    by_name = _series(_state((word, plain)))
    by_alias = _series(_state((word, alias), aliases=True))
    assert by_name and by_name == by_alias
    assert all(dict(k[1])["interface"].startswith("Ethernet") and "/" not in dict(k[1])["interface"] for k in by_alias)


def test_pfcwd_payload_series():
    series = _series(_state(("pfcwd", "COUNTERS+Ethernet68+Pfcwd.txt")))
    key = (("interface", "Ethernet68"), ("queue", "UC3"), ("switch", "sw"))
    assert series[("fabric_roce_switch_pfcwd_storm_active", key)] == 0.0
    assert series[("fabric_roce_switch_pfcwd_storms_detected_total", key)] == 0
    assert len([k for k in series if k[0] == "fabric_roce_switch_pfcwd_storm_active"]) == 2


def test_queue_cast_from_the_name_and_type_maps_or_q_when_unknown():
    state = _state(("queues", "COUNTERS+Ethernet68+Queues_expected.txt"))
    assert {dict(k[1])["queue"] for k in _series(state)} == {"Q1", "Q3", "Q4"}  # no type map: Q<n>
    state.queue_oid = {"Ethernet68:1": "oid:a", "Ethernet68:3": "oid:b", "Ethernet68:4": "oid:c"}
    state.queue_type = {"oid:a": "SAI_QUEUE_TYPE_UNICAST", "oid:b": "SAI_QUEUE_TYPE_UNICAST",
                        "oid:c": "SAI_QUEUE_TYPE_MULTICAST"}
    assert {dict(k[1])["queue"] for k in _series(state)} == {"UC1", "UC3", "MC4"}


def test_pg_watermarks_regions():
    series = _series(_state(("pg_watermarks", "PERIODIC_WATERMARKS+Ethernet16+PriorityGroups.txt")))
    assert set(series) == {("fabric_roce_switch_pg_watermark_bytes",
                            (("interface", "Ethernet16"), ("pg", "5"), ("region", r), ("switch", "sw")))
                           for r in ("shared", "headroom")}


def test_non_numeric_counter_is_skipped_and_counted_never_guessed():
    skipped: list = []
    blob = p.parse_sonic_blob(b'{"Ethernet0": {"SAI_PORT_STAT_IF_IN_OCTETS": "N/A", "SAI_PORT_STAT_IF_OUT_OCTETS": "7",'
                              b' "SAI_PORT_STAT_IF_IN_ERRORS": "", "X": "99999999999999999999999"}, "Ethernet4": "oops"}',
                              skipped=skipped)
    assert blob.numbers == {"Ethernet0": {"SAI_PORT_STAT_IF_OUT_OCTETS": 7}}
    assert len(skipped) == 4 and all(s.source == p.SOURCE_SONIC for s in skipped)


def test_sonic_blob_that_is_not_an_object_is_a_parse_error():
    for bad in (b"[1, 2]", b"not json", b'"x"'):
        with pytest.raises(ParseError):
            p.parse_sonic_blob(bad)


# -- OpenConfig / Cumulus ---------------------------------------------------------------------------

def cumulus_leaves():
    doc = json.loads((FIX / "cumulus" / "notifications.json").read_text())
    for n in doc["notifications"]:
        for u in n["updates"]:
            value = u.get("uint_val", u.get("string_val"))
            yield f"{n['prefix']}/{u['path']}", value


def test_cumulus_leaves_become_catalog_series():
    skipped: list = []
    records = p.oc_records(list(cumulus_leaves()), skipped=skipped)
    # a counter sent as text and a leaf outside the subtrees we read: skipped and counted
    assert sorted(s.text.rsplit("=", 1)[0].rsplit("/", 1)[-1] for s in skipped) == ["carrier-transitions", "up-time"]
    series = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for s in oc_samples(DIALECTS["cumulus"], records, "leaf1", lambda _: True)}
    intf = (("interface", "swp1"), ("switch", "leaf1"))
    prio = (("interface", "swp1"), ("priority", "3"), ("switch", "leaf1"))
    queue = (("interface", "swp1"), ("queue", "UC3"), ("switch", "leaf1"))
    assert series[("fabric_roce_switch_pfc_rx_pause_seconds_total", prio)] == pytest.approx(1.25)
    assert series[("fabric_roce_switch_pfc_tx_pause_seconds_total", prio)] == pytest.approx(0.018)
    assert series[("fabric_roce_pfc_rx_pause_frames_total", prio)] == 5120
    assert series[("fabric_roce_pfc_tx_pause_frames_total", prio)] == 64
    assert series[("fabric_roce_switch_if_tx_wait_byte_times_total", intf)] == 4096000
    assert series[("fabric_roce_rx_packets_total", intf)] == 1200000 + 3400 + 12
    assert series[("fabric_roce_tx_packets_total", intf)] == 1100000 + 2100 + 7
    assert series[("fabric_roce_switch_if_oper_status", intf)] == 1
    assert series[("fabric_roce_switch_queue_tx_packets_total", queue)] == 1000000
    assert series[("fabric_roce_switch_queue_dropped_packets_total", queue)] == 9
    assert series[("fabric_roce_ecn_marked_packets_total", queue)] == 2500
    assert series[("fabric_roce_switch_queue_occupancy_bytes", queue)] == 20480
    assert series[("fabric_roce_switch_queue_watermark_bytes", (("interface", "swp1"), ("kind", "periodic"), ("queue", "UC3"), ("switch", "leaf1")))] == 311296
    assert series[("fabric_roce_switch_pg_watermark_bytes",
                   (("interface", "swp1"), ("pg", "3"), ("region", "shared"), ("switch", "leaf1")))] == 147456
    # LLDP facts are read (records) but not published here: the neighbour map has its own owner
    assert {r.leaf for r in records if r.kind == "lldp"} == {"system-name", "port-id"}


def test_a_partial_packet_sum_is_not_published():
    leaves = [("/interfaces/interface[name=swp2]/state/counters/in-unicast-pkts", 5),
              ("/interfaces/interface[name=swp2]/state/counters/in-multicast-pkts", 1)]
    out = oc_samples(DIALECTS["openconfig"], p.oc_records(leaves), "s", lambda _: True)
    assert out == []


def test_openconfig_dialect_reads_the_standard_drop_leaf_not_cumulus_ones():
    leaves = [("/qos/interfaces/interface[interface-id=Ethernet0]/output/queues/queue[name=2]/state/dropped-pkts", 4),
              ("/qos/interfaces/interface[interface-id=Ethernet0]/output/queues/queue[name=2]/state/"
               "no-buffer-uc-dropped-pkts", 9)]
    recs = p.oc_records(leaves)
    oc = oc_samples(DIALECTS["openconfig"], recs, "s", lambda _: True)
    cu = oc_samples(DIALECTS["cumulus"], recs, "s", lambda _: True)
    assert [s.value for s in oc] == [4] and [s.value for s in cu] == [9]


def test_xpath_keys_may_hold_slashes():
    assert p.parse_xpath("/interfaces/interface[name=Ethernet0/1]/state") == (
        ("interfaces", {}), ("interface", {"name": "Ethernet0/1"}), ("state", {}))
    with pytest.raises(ParseError):
        p.parse_xpath("/a/b[k=v")


@pytest.mark.parametrize("code, details, reason", [
    ("UNAVAILABLE", "failed to connect to all addresses; connection refused", "connect"),
    ("UNAVAILABLE", "Ssl handshake failed: SSL_ERROR_SSL: CERTIFICATE_VERIFY_FAILED", "auth"),
    ("UNAUTHENTICATED", "bad username or password", "auth"),
    ("PERMISSION_DENIED", "", "auth"),
    ("DEADLINE_EXCEEDED", "Deadline Exceeded", "timeout"),
    ("INVALID_ARGUMENT", "invalid interval: 500ms", "config"),
    ("NOT_FOUND", "no such path", "config"),
    ("INTERNAL", "boom", "command_failed"),
])
def test_grpc_status_becomes_our_reason(code, details, reason):
    assert error_from_status(code, details, "127.0.0.1:9339").reason == reason


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_value = st.one_of(st.integers(-5, 2**70), st.floats(allow_nan=True), st.text(max_size=12), st.booleans(), st.none())
_elem = st.tuples(st.sampled_from(["interfaces", "interface", "state", "counters", "qos", "output", "queues", "queue",
                                   "switch-priority", "input", "priority-group", "lldp", "neighbors", "neighbor",
                                   "in-octets", "oper-status", "x"]),
                  st.dictionaries(st.sampled_from(["name", "interface-id", "priority", "pg-id", "id"]),
                                  st.text(max_size=6), max_size=2))


@FUZZ
@given(st.lists(st.tuples(st.lists(_elem, max_size=9).map(tuple), _value), max_size=20))
def test_oc_records_fuzzed_never_crash_and_publish_only_numbers(leaves):
    skipped: list = []
    records = p.oc_records(leaves, skipped=skipped)
    assert len(records) + len(skipped) == len(leaves)
    for dialect in DIALECTS.values():
        if dialect.interface_leaves is None:
            continue
        for s in oc_samples(dialect, records, "s", lambda _: True):
            assert isinstance(s.value, float)


@FUZZ
@given(st.dictionaries(st.text(max_size=8), st.one_of(
    _value, st.dictionaries(st.text(max_size=8), _value, max_size=4)), max_size=6))
def test_sonic_blob_fuzzed_never_crashes(obj):
    skipped: list = []
    try:
        blob = p.parse_sonic_blob(json.dumps(obj), "k", skipped=skipped)
    except ParseError:
        return
    for fields in blob.numbers.values():
        assert all(isinstance(v, (int, float)) and v == v for v in fields.values())


# -- the collector's compiled OpenConfig path agrees with the reference oc_samples ------------------

def _oc_wire(sw, xpaths, ts: int) -> list:
    from gnmi_pb import gnmi_pb2 as g

    from fabric_exporter.collectors.gnmi_switch import to_path
    from fabric_exporter.lab.gnmi_target import GnmiTarget

    target = GnmiTarget(sw, "cumulus")
    out = [n for x in xpaths for n in target._notifications(g, "", to_path(g, x), ts)]
    # the published Cumulus leaves too: text values, a counter sent as text, leaves we do not read
    doc = json.loads((FIX / "cumulus" / "notifications.json").read_text())
    for n in doc["notifications"]:
        out.append(g.Notification(timestamp=ts, prefix=to_path(g, n["prefix"]), update=[
            g.Update(path=to_path(g, u["path"]), val=g.TypedValue(uint_val=u["uint_val"]) if "uint_val" in u
                     else g.TypedValue(string_val=u["string_val"])) for u in n["updates"]]))
    return out


@pytest.mark.parametrize("dialect", ["cumulus", "openconfig"])
def test_compiled_openconfig_samples_equal_the_reference_and_keep_unmoved_samples(dialect):
    from fabric_exporter.collectors.gnmi_switch import OcEmit, OcShapes, OcState
    from fabric_exporter.lab.snmp import SimulatedSwitch

    sw = SimulatedSwitch("leaf1", "sonic", ports=6, queues=4, seed=2)
    xpaths = [gp.xpath for gp in DIALECTS["cumulus"].paths.values()]

    def wanted(intf: str) -> bool:
        return intf != "Ethernet8"

    emit = OcEmit(DIALECTS[dialect], "leaf1", wanted)
    shapes = OcShapes(emit.compile)

    def both(ts: int) -> tuple[list, list, list]:
        state, skipped = OcState(shapes), []
        for n in _oc_wire(sw, xpaths, ts):
            state.apply_notification(n.prefix, n.update, skipped)
        fast = emit.samples(state)
        ref = oc_samples(DIALECTS[dialect], list(state.leaves.values()), "leaf1", wanted)
        return fast, ref, skipped

    def key(s):
        return s.name, tuple(sorted(s.labels.items())), s.value

    first, ref, skipped = both(1)
    assert len(first) > 100 and sorted(map(key, first)) == sorted(map(key, ref))
    assert not any(s.labels.get("interface") == "Ethernet8" for s in first)
    assert len(skipped) == 2  # the published counter sent as text and up-time, as oc_records counts them
    sw.advance()
    second, ref, _ = both(2)
    assert sorted(map(key, second)) == sorted(map(key, ref))
    was = {key(s)[:2]: s for s in first}
    kept = [s for s in second if was.get(key(s)[:2]) is s]
    moved = [s for s in second if key(s)[:2] in was and was[key(s)[:2]].value != s.value]
    # a value that did not move is handed out again as the same object (rendered once); moved ones are new
    assert kept and moved and all(was[key(s)[:2]] is not s for s in moved)
    assert all(s.value == was[key(s)[:2]].value for s in kept)
