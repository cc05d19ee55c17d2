"""fabric_ib_node_host_info on recorded topologies (pure: no tools): every CA gets the host its name
says, by the default first-word rule, a configured regex or the node-name-map; and the switch port
facing an HCA names it as ``peer_node_name``, so a rule reaches the host from both ends of the link."""

from __future__ import annotations

import re

import pytest

from fabric_exporter.collectors.infiniband import FabricState, join_sweeps, samples_from_sweep
from fabric_exporter.collectors.infiniband.counters import latched_counters
from fabric_exporter.collectors.infiniband.options import DEFAULT_HOST_RULE, parse_options
from fabric_exporter.hostnames import NameRule, template_problem
from fabric_exporter.parsers import ib_netdiscover, ib_nodenamemap, ib_queryerrors
from fabric_exporter.parsers.ib_common import guid_str
from fabric_exporter.serving.store import build_snapshot

from tests.harness import paths

FIX = paths.FIXTURES


def _host_info(topology_text: str, rule: NameRule = DEFAULT_HOST_RULE, name_map: str | None = None):
    state = FabricState(forget_missing_after=3600.0)
    topo = ib_netdiscover.parse(topology_text)
    state.apply_topology(topo)
    if name_map is not None:
        state.name_map = ib_nodenamemap.parse(name_map)
    problems: list[str] = []
    samples = samples_from_sweep({}, {}, state, {}, 1.0, problems, rule)
    info = {s.labels["node_guid"]: s.labels for s in samples if s.name == "fabric_ib_node_host_info"}
    # no sweep here: every port is "missing from the sweep"; keep the host map's own problems
    return topo, info, [p for p in problems if "fabric_ib_node_host_info" in p], samples


@pytest.mark.parametrize("capture, hosts", [
    # jabl/ibtopotool tests/2.topo (IBM support page): "compute-00-01 HCA-1"
    ("ibnetdiscover_ibtopotool_2.topo", {"0x0002c902002789ac": "compute-00-01", "0x0002c9030002847c": "compute-00-00"}),
    # jabl/ibtopotool tests/4.topo (Oracle docs, Sun DCS 36): "nsn33-43 HCA-1"
    ("ibnetdiscover_ibtopotool_4.topo", {"0x0003ba000100e388": "nsn33-43"}),
])
def test_real_captures_every_ca_gets_the_first_word_of_its_description(capture, hosts):
    topo, info, problems, samples = _host_info((FIX / "real" / capture).read_text())
    assert problems == []
    assert {g: labels["host"] for g, labels in info.items()} == hosts
    cas = {guid_str(n.guid): n.description for n in topo.nodes.values() if n.type == "ca"}
    assert {g: labels["node_name"] for g, labels in info.items()} == cas  # one per CA, none for switches
    build_snapshot("f", samples, 60)  # in the catalog, with its label set


def test_real_capture_with_six_hosts():
    # jabl/ibtopotool tests/3.topo (NVIDIA support HowTo): six HCAs "r-ufm111 HCA-1", "r-ufm216 HCA-2", ...
    topo, info, problems, _ = _host_info((FIX / "real" / "ibnetdiscover_ibtopotool_3.topo").read_text())
    cas = [n for n in topo.nodes.values() if n.type == "ca"]
    assert len(cas) == 6 and problems == []
    assert {guid_str(n.guid): n.description.split()[0] for n in cas} == {g: v["host"] for g, v in info.items()}
    assert all(re.fullmatch(r"r-ufm\d+", v["host"]) for v in info.values())


def test_vendor_default_descriptions_need_the_node_name_map():
    """jabl/ibtopotool tests/1.topo (man ibnetdiscover): HCAs that never had their NodeDescription set
    print "MT23108 InfiniHost Mellanox Technologies". The first word names no host; the node-name-map
    does, and wins over the description."""
    text = (FIX / "real" / "ibnetdiscover_ibtopotool_1.topo").read_text()
    _topo, info, _problems, _ = _host_info(text)
    assert {v["host"] for v in info.values()} == {"MT23108"}  # what the description says, nothing guessed
    guids = sorted(info)
    name_map = "".join(f'{g} "node{i:02d}.cluster HCA-1"\n' for i, g in enumerate(guids, 1))
    _topo, info, problems, _ = _host_info(text, NameRule(re.compile(r"^([^.]+)")), name_map)
    assert problems == []
    assert {g: v["host"] for g, v in info.items()} == {g: f"node{i:02d}" for i, g in enumerate(guids, 1)}
    assert {v["node_name"] for v in info.values()} == {f"node{i:02d}.cluster HCA-1" for i in range(1, 5)}


def test_a_regex_leaves_out_cas_that_are_not_hosts():
    """ibdiagnet2 2.10 on Quantum-2 (real capture): SHARP Aggregation Nodes are CAs too; a regex that
    does not match them gives them no host (counted in the poll's problems), the HCA keeps its own."""
    text = (FIX / "real" / "ibdiagnet2_2.10_quantum2_cas.ibnetdiscover").read_text()
    errs: list = []
    rule = parse_options({"host_from_node_name": {"regex": r"^(?!Mellanox Technologies)(\S+) HCA-\d+$"}}, "o",
                         lambda p, m: errs.append((p, m))).host_from_node_name
    assert errs == []
    _topo, info, problems, _ = _host_info(text, rule)
    assert {v["host"] for v in info.values()} == {"h4-1-gpu"}
    assert len(problems) == 1 and problems[0].startswith("7 CA node(s)") and "Aggregation Node" in problems[0]


def test_the_switch_port_facing_an_hca_names_it_as_its_peer():
    """ibsim captures (infiniband-diags on ibsim): join every switch port on peer_node_name with the
    host info's node_name, the way the rules do; each HCA-facing switch port lands on its host."""
    state = FabricState(forget_missing_after=3600.0)
    topo = ib_netdiscover.parse((FIX / "infiniband" / "ibsim_ibnetdiscover.txt").read_text())
    state.apply_topology(topo)
    counters = ib_queryerrors.parse((FIX / "infiniband" / "ibsim_ibqueryerrors_counters_report_port.txt").read_text())
    errors = ib_queryerrors.parse((FIX / "infiniband" / "ibsim_ibqueryerrors_errors_zero_threshold.txt").read_text())
    problems: list[str] = []
    joined = join_sweeps(counters, errors, "", state.owners, problems)
    state.sweep_names = joined.sweep_names
    latched = {k: latched_counters(p.entry, p.errors, p.errors_extended, p.qp1_dropped) for k, p in joined.ports.items()}
    state.record_sweep(joined.ports, 1.0)
    samples = samples_from_sweep(joined.ports, latched, state, {}, 1.0, problems)
    host_of_name = {s.labels["node_name"]: s.labels["host"] for s in samples if s.name == "fabric_ib_node_host_info"}
    cas = [n for n in topo.nodes.values() if n.type == "ca"]
    assert cas and len(host_of_name) == len(cas)
    facing = {}
    for s in samples:
        if s.name == "fabric_ib_port_transmit_wait_total" and s.labels["peer_node_name"] in host_of_name:
            facing[(s.labels["node_guid"], s.labels["port"])] = host_of_name[s.labels["peer_node_name"]]
    expected = {(guid_str(n.guid), str(p.port)): ca.description.split()[0]
                for n in topo.nodes.values() if n.type == "switch"
                for p in n.ports.values() if p.peer_type == "ca"
                for ca in [topo.nodes[p.peer_guid]]}
    assert facing == expected and len(expected) == len(cas)


@pytest.mark.parametrize("regex, template, problem", [
    (r"^(\S+)", r"\1", None),
    (r"^(?P<h>\S+)", r"\g<h>", None),
    (r"^(?P<h>\S+)", r"\g<1>", None),
    (r"^(\S+)", r"\2", "refers to group 2, but the regex has 1 group(s)"),
    (r"^\S+", r"\1", "refers to group 1, but the regex has 0 group(s)"),
    (r"^(\S+)", r"\g<host>", "refers to group 'host', which the regex does not have"),
])
def test_template_groups_are_checked(regex, template, problem):
    assert template_problem(re.compile(regex), template) == problem


def test_rule_apply():
    rule = NameRule(re.compile(r"^([^.]+)"))
    assert rule.apply("gpu-node-017.cluster.example") == "gpu-node-017"
    assert rule.apply("gpu-node-017") == "gpu-node-017"
    assert rule.apply(".") is None  # nothing before the dot: no host rather than an empty one
    assert DEFAULT_HOST_RULE.apply("gpu-node-017 mlx5_0") == "gpu-node-017"
    assert DEFAULT_HOST_RULE.apply("") is None


def test_an_empty_host_is_no_host():
    # a regex that can match nothing at all names no host, never host=""
    rule = NameRule(re.compile(r"^(x?)"))
    assert rule.apply("gpu-node-017 mlx5_0") is None


def test_only_channel_adapters_get_a_host():
    """Routers (and switches) are not hosts even when their description starts like one."""
    from fabric_exporter.collectors.infiniband.state import NodeFacts

    state = FabricState(forget_missing_after=3600.0)
    state.nodes = {1: NodeFacts(1, "ca", "gpu-node-001 mlx5_0", 1, None, 0.0),
                   2: NodeFacts(2, "router", "gpu-router-01 rtr", 2, None, 0.0),
                   3: NodeFacts(3, "switch", "leaf-01", 36, None, 0.0)}
    samples = samples_from_sweep({}, {}, state, {}, 1.0, [])
    hosts = [s.labels["host"] for s in samples if s.name == "fabric_ib_node_host_info"]
    assert hosts == ["gpu-node-001"]
