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
from fabric_exporter.samples import LabelSet

from tests.harness import paths

FIX = paths.FIXTURES / "switch" / "gnmi"
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



def test_sonic_counters_are_read_up_to_uint64_max_and_skipped_one_past_it():
    skipped: list = []
    blob = p.parse_sonic_blob(b'{"Ethernet0": {"SAI_PORT_STAT_IF_IN_OCTETS": "18446744073709551615",'
                              b' "SAI_PORT_STAT_IF_OUT_OCTETS": "18446744073709551616"}}', skipped=skipped)
    assert blob.numbers == {"Ethernet0": {"SAI_PORT_STAT_IF_IN_OCTETS": (1 << 64) - 1}}
    assert [s.source for s in skipped] == ["gnmi_sonic"]
    # an OpenConfig uint64 sent as a JSON string: the same bound
    leaf = "/interfaces/interface[name=swp1]/state/counters/in-octets"
    skipped = []
    records = p.oc_records([(leaf, "18446744073709551615"), (leaf, "18446744073709551616")], skipped=skipped)
    assert [r.value for r in records] == [(1 << 64) - 1]
    assert [s.text for s in skipped] == [f"{leaf}=18446744073709551616"]


def test_openconfig_leaves_skipped_are_counted_under_the_source_the_skip_series_names():
    """``fabric_parse_skipped_lines_total{source="gnmi_openconfig"}``: the label value is the contract."""
    skipped: list = []
    assert p.oc_records([("/system/state/boot-time", 1)], skipped=skipped) == []
    assert [(s.source, s.text) for s in skipped] == [("gnmi_openconfig", "/system/state/boot-time=1")]

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
        if dialect.name == "sonic":
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
    # OcEmit keeps each series' labels across polls and the renderer keys lines on them: immutable
    assert all(type(s.labels) is LabelSet for s in first + ref)
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


# -- decode (collectors/gnmi_switch/decode.py): each rule pinned (mutation kill tests) -----------------

def _g():
    from gnmi_pb import gnmi_pb2 as g
    return g


@pytest.mark.parametrize("field, value, expected", [
    ("uint_val", 18446744073709551615, 18446744073709551615), ("int_val", -5, -5), ("string_val", "UP", "UP"),
    ("double_val", 2.5, 2.5), ("bool_val", True, True), ("bool_val", False, False),
    ("json_ietf_val", b'{"a": {"b": 1}}', {"a": {"b": 1}}), ("json_val", b"[1, 2]", [1, 2]),
    ("json_ietf_val", b"{not json", None), ("json_val", b"", None), ("bytes_val", b"\x01", None),
    ("ascii_val", "text", None),
])
def test_typed_value_reads_each_kind_and_nothing_else(field, value, expected):
    from fabric_exporter.collectors.gnmi_switch import typed_value

    assert typed_value(_g().TypedValue(**{field: value})) == expected


def test_typed_value_float_and_decimal():
    from fabric_exporter.collectors.gnmi_switch import typed_value

    g = _g()
    assert typed_value(g.TypedValue(float_val=0.5)) == 0.5
    assert typed_value(g.TypedValue(decimal_val=g.Decimal64(digits=12345, precision=2))) == pytest.approx(123.45)
    assert typed_value(g.TypedValue(decimal_val=g.Decimal64(digits=7, precision=0))) == 7
    assert typed_value(g.TypedValue()) is None


@pytest.mark.parametrize("path, expected", [
    ("COUNTERS/Ethernet*", ("ports", "")), ("COUNTERS/Ethernet68", ("ports", "Ethernet68")),
    ("COUNTERS/Ethernet*/Queues", ("queues", "")), ("COUNTERS/Ethernet*/Pfcwd", ("pfcwd", "")),
    ("PERIODIC_WATERMARKS/Ethernet*/PriorityGroups", ("pg_watermarks", "")),
    ("COUNTERS", None), ("COUNTERS/Ethernet*/Other", None), ("PERIODIC_WATERMARKS/Ethernet*/Queues", None),
    ("PERIODIC_WATERMARKS/Ethernet*", None), ("RATES/Ethernet*", None), ("RATES/Ethernet*/Queues", None),
    ("COUNTERS/Ethernet*/Queues/x", None), ("X/Ethernet*/PriorityGroups", None),
])
def test_sonic_table_of_each_path(path, expected):
    assert SonicState().table_of(tuple((n, {}) for n in path.split("/"))) == expected


def _update(path: str, **val):
    g = _g()
    return g.Update(path=g.Path(elem=[g.PathElem(name=n) for n in path.split("/")]), val=g.TypedValue(**val))


def test_sonic_state_reads_the_maps_and_skips_what_is_not_a_table():
    s, skipped = SonicState(), []
    s.apply((), _update("PORT", json_ietf_val=b'{"Ethernet0": {"alias": "etp1"}}'), skipped)
    s.apply((), _update("COUNTERS_QUEUE_NAME_MAP", json_ietf_val=b'{"Ethernet0:3": "oid:0x15"}'), skipped)
    s.apply((), _update("COUNTERS_QUEUE_TYPE_MAP", json_ietf_val=b'{"oid:0x15": "SAI_QUEUE_TYPE_UNICAST"}'), skipped)
    assert (s.alias_to_name, s.queue_oid, s.queue_type) == (
        {"etp1": "Ethernet0"}, {"Ethernet0:3": "oid:0x15"}, {"oid:0x15": "SAI_QUEUE_TYPE_UNICAST"})
    assert skipped == [] and s.entries == {}
    # a map's name sent as a string, a table path with no JSON, a path of no table: skipped, counted
    s.apply((), _update("PORT", string_val="x"), skipped)
    s.apply((), _update("COUNTERS/Ethernet*", string_val="1"), skipped)
    s.apply((), _update("RATES/Ethernet*", json_ietf_val=b'{"Ethernet0": {"RX_BPS": "1"}}'), skipped)
    assert len(skipped) == 3 and s.entries == {} and s.alias_to_name == {"etp1": "Ethernet0"}
    assert all(x.source == p.SOURCE_SONIC and x.line_no == 0 for x in skipped)  # a notification has no lines
    # the prefix's elements come first: COUNTERS_DB prefix + COUNTERS/Ethernet4 is the port entry
    s.apply((("COUNTERS", {}),), _update("Ethernet4", json_val=b'{"SAI_PORT_STAT_IF_IN_OCTETS": "9", '
                                                           b'"PFC_WD_STATUS": "stormed"}'), skipped)
    assert s.entries == {("ports", "Ethernet4"): ({"SAI_PORT_STAT_IF_IN_OCTETS": 9}, {"PFC_WD_STATUS": "stormed"})}
    assert s.port("etp1") == "Ethernet0" and s.port("Ethernet4") == "Ethernet4"


def test_sonic_queue_label_needs_both_maps():
    s = SonicState()
    s.queue_oid = {"Ethernet0:3": "oid:a", "Ethernet0:11": "oid:b", "Ethernet0:5": "oid:c", "Ethernet0:6": "oid:d"}
    s.queue_type = {"oid:a": "SAI_QUEUE_TYPE_UNICAST", "oid:b": "SAI_QUEUE_TYPE_MULTICAST", "oid:c": "SAI_QUEUE_TYPE_ALL",
                    "oid:d": "SAI_QUEUE_TYPE_SOMETHING"}
    assert [s.queue_label("Ethernet0", i) for i in (3, 11, 5, 6, 7)] == ["UC3", "MC11", "ALL5", "Q6", "Q7"]
    assert s.queue_label("Ethernet4", 3) == "Q3"


def _oc(prefix: str, *updates, shapes=None, state=None):
    from fabric_exporter.collectors.gnmi_switch import OcState, to_path

    g = _g()
    state = state if state is not None else OcState(shapes)
    skipped: list = []
    state.apply_notification(to_path(g, prefix) if prefix else g.Path(),
                             [g.Update(path=to_path(g, path), val=g.TypedValue(**val)) for path, val in updates], skipped)
    return state, skipped


def test_oc_state_values_and_what_is_skipped():
    intf = "/interfaces/interface[name=swp1]/state"
    state, skipped = _oc(intf, ("counters/in-octets", {"uint_val": 10}), ("counters/in-errors", {"int_val": 2}),
                         ("counters/out-octets", {"string_val": "77"}),  # uint64 as a string: a number
                         ("oper-status", {"string_val": "UP"}),  # a text leaf
                         ("counters/out-errors", {"string_val": "n/a"}),  # text where a number belongs
                         ("counters/in-discards", {"bool_val": True}))  # neither number nor text
    leaves = {r.leaf: r.value for r in state.leaves.values()}
    assert leaves == {"counters/in-octets": 10, "counters/in-errors": 2, "counters/out-octets": 77, "oper-status": "UP"}
    assert sorted(x.text for x in skipped) == [
        "interfaces/interface/state/counters/in-discards=True", "interfaces/interface/state/counters/out-errors=n/a"]
    assert all(x.source == p.SOURCE_OPENCONFIG and x.line_no == 0 for x in skipped)  # a notification has no lines
    # a subtree we do not read: skipped and counted
    state, skipped = _oc("/system/state", ("boot-time", {"uint_val": 1}), shapes=state.shapes, state=state)
    assert [x.text for x in skipped] == ["system/state/boot-time=1"] and len(state.values) == 4
    # the same paths again (known shapes): values replaced, the same skips counted again
    state, skipped = _oc(intf, ("counters/in-octets", {"uint_val": 11}), ("counters/out-errors", {"string_val": "n/a"}),
                         shapes=state.shapes, state=state)
    state, more = _oc("/system/state", ("boot-time", {"uint_val": 1}), shapes=state.shapes, state=state)
    assert {r.leaf: r.value for r in state.leaves.values()}["counters/in-octets"] == 11
    assert len(skipped) == 1 and len(more) == 1 and len(state.values) == 4


def test_oc_state_reads_a_leaf_without_prefix_and_a_json_subtree():
    state, skipped = _oc("", ("/interfaces/interface[name=swp2]/state/counters/in-octets", {"uint_val": 5}))
    assert [(r.interface, r.leaf, r.value) for r in state.leaves.values()] == [("swp2", "counters/in-octets", 5)]
    blob = json.dumps({"openconfig-interfaces:counters": {"in-octets": "6", "out-octets": 7}}).encode()
    state, skipped = _oc("/interfaces/interface[name=swp3]", ("state", {"json_ietf_val": blob}), state=state,
                         shapes=state.shapes)
    got = {(r.interface, r.leaf): r.value for r in state.leaves.values()}
    assert got == {("swp2", "counters/in-octets"): 5, ("swp3", "counters/in-octets"): 6,
                   ("swp3", "counters/out-octets"): 7} and skipped == []


def test_oc_state_delete_drops_only_what_is_below_the_path():
    from fabric_exporter.collectors.gnmi_switch import elems_of, to_path

    g = _g()
    state, _ = _oc("", *[(f"/interfaces/interface[name={i}]/state/counters/{leaf}", {"uint_val": 1})
                         for i in ("swp1", "swp2") for leaf in ("in-octets", "out-octets")])
    state.delete(elems_of(to_path(g, "/interfaces/interface[name=swp1]")), to_path(g, "state/counters/in-octets"))
    assert sorted((r.interface, r.leaf) for r in state.leaves.values()) == [
        ("swp1", "counters/out-octets"), ("swp2", "counters/in-octets"), ("swp2", "counters/out-octets")]
    state.delete((), to_path(g, "/interfaces/interface[name=swp2]"))
    assert sorted((r.interface, r.leaf) for r in state.leaves.values()) == [("swp1", "counters/out-octets")]


def test_oc_shapes_start_over_when_full_and_old_slots_are_skipped(monkeypatch):
    from fabric_exporter.collectors.gnmi_switch import OcShapes

    monkeypatch.setattr(OcShapes, "MAX_SHAPES", 2)
    shapes = OcShapes(lambda fields: ("emit", fields[3]))
    intf = "/interfaces/interface[name=swp1]/state/counters"
    state, _ = _oc(intf, ("in-octets", {"uint_val": 1}), ("out-octets", {"uint_val": 2}), shapes=shapes)
    assert [s[4] for s in shapes.by_slot.values()] == [("emit", "counters/in-octets"), ("emit", "counters/out-octets")]
    assert [s[3] for s in shapes.by_slot.values()] == [False, False]
    state, _ = _oc(intf, ("in-errors", {"uint_val": 3}), shapes=shapes, state=state)  # the third shape: start over
    assert list(shapes.by_slot) == [2] and list(shapes.by_key) == [shapes.by_slot[2][1]]
    assert {r.leaf: r.value for r in state.leaves.values()} == {"counters/in-errors": 3}  # old slots skipped
    state, _ = _oc(intf, ("in-octets", {"uint_val": 4}), shapes=shapes, state=state)  # a new slot, not a reused one
    assert sorted(shapes.by_slot) == [2, 3] and state.values[3] == 4
    assert {r.leaf: r.value for r in state.leaves.values()} == {"counters/in-errors": 3, "counters/in-octets": 4}
    # the per-container memo starts over too, and keeps working
    shapes.remember(b"a", b"b", None)  # full (2 remembered): start over, then remember
    shapes.remember(b"a", b"c", None)
    assert shapes.by_prefix == {b"a": {b"b": None, b"c": None}}
    shapes.remember(b"d", b"e", None)
    assert shapes.by_prefix == {b"d": {b"e": None}}
    oper = OcShapes().shape((("interfaces", {}), ("interface", {"name": "x"}), ("state", {}), ("oper-status", {})))
    assert oper[0] == 0 and oper[3] is True and oper[4] is None  # a text leaf; no compile: no emit
    assert OcShapes().shape((("system", {}), ("state", {}), ("boot-time", {}))) is None


def test_oc_key_sorts_keys_and_keeps_names():
    from fabric_exporter.collectors.gnmi_switch import _key

    assert _key((("a", {"y": "2", "x": "1"}), ("b", {}))) == (("a", (("x", "1"), ("y", "2"))), ("b", ()))


def test_oc_state_leaves_are_keyed_by_their_path_and_long_skipped_values_cut_at_60():
    from fabric_exporter.collectors.gnmi_switch import _key, elems_of, to_path

    g = _g()
    path = "/interfaces/interface[name=swp9]/state/counters/in-octets"
    state, skipped = _oc("", (path, {"uint_val": 1}), ("/interfaces/interface[name=swp9]/state/counters/out-errors",
                                                       {"string_val": "x" * 100}))
    assert list(state.leaves) == [_key(elems_of(to_path(g, path)))]
    assert [x.text for x in skipped] == ["interfaces/interface/state/counters/out-errors=" + "x" * 60]

