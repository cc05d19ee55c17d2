"""fabric_ib_node_host_info on the real simulated fabric (ibsim + opensm + infiniband-diags): 100 % of
the CAs get their host, from the NodeDescription (default rule) and from a node-name-map, and every
switch port facing an HCA is attributed to that host through its peer_node_name."""

from __future__ import annotations

import pytest

from fabric_exporter.serving.store import build_snapshot

from tests.harness.infiniband import CollectorHarness, group_for, needs_ibsim

pytestmark = needs_ibsim


def _hosts(result) -> dict[str, dict]:
    return {s.labels["node_guid"]: s.labels for s in result.samples if s.name == "fabric_ib_node_host_info"}


def _facing(result, host_of_name: dict[str, str]) -> dict[tuple[str, str], str]:
    """(switch node_guid, port) -> host, joined the way the rules join: peer_node_name = node_name."""
    return {(s.labels["node_guid"], s.labels["port"]): host_of_name[s.labels["peer_node_name"]]
            for s in result.samples
            if s.name == "fabric_ib_port_transmit_wait_total" and s.labels["peer_node_name"] in host_of_name}


def _expected_facing(topo, host_of_nodeid: dict[str, str]) -> dict[tuple[str, str], str]:
    out = {}
    for ca in topo.cas:
        switch, port = topo.peer(ca.nodeid, 1)
        out[(topo.nodes[switch].guid_hex, str(port))] = host_of_nodeid[ca.nodeid]
    return out


def test_every_ca_gets_its_host_from_the_node_description(fabric):
    topo = fabric.topology
    result = CollectorHarness(group_for({"env": fabric.env(), "mad_timeout_ms": 300})).poll()
    assert result.problems == []
    build_snapshot("lab", result.samples, 60)
    hosts = _hosts(result)
    # "gpu-003 mlx5_0" -> gpu-003, for every CA and nothing else (switches have no host)
    expected = {ca.guid_hex: (ca.description, ca.description.split()[0]) for ca in topo.cas}
    assert {g: (v["node_name"], v["host"]) for g, v in hosts.items()} == expected
    assert len(hosts) == len(topo.cas) == 6
    facing = _facing(result, {v["node_name"]: v["host"] for v in hosts.values()})
    assert facing == _expected_facing(topo, {ca.nodeid: ca.description.split()[0] for ca in topo.cas})


def test_every_ca_gets_its_host_from_the_node_name_map(fabric, tmp_path):
    """Names from the map (FQDN + device, unlike the descriptions) and a regex taking the short name."""
    topo = fabric.topology
    mapped = {ca.nodeid: f"node{i:03d}.cluster.example/hca0" for i, ca in enumerate(topo.cas, 17)}
    name_map = tmp_path / "node-name-map"
    name_map.write_text("".join(f'{topo.nodes[n].guid_hex} "{name}"\n' for n, name in mapped.items()))
    result = CollectorHarness(group_for({"env": fabric.env(), "mad_timeout_ms": 300, "node_name_map": str(name_map),
                                         "host_from_node_name": {"regex": r"^([^./]+)"}})).poll()
    assert result.problems == []
    hosts = _hosts(result)
    short = {n: name.split(".")[0] for n, name in mapped.items()}
    assert {g: (v["node_name"], v["host"]) for g, v in hosts.items()} == \
        {topo.nodes[n].guid_hex: (mapped[n], short[n]) for n in mapped}
    facing = _facing(result, {v["node_name"]: v["host"] for v in hosts.values()})
    assert facing == _expected_facing(topo, short)


# The joins docs/collectors/infiniband.md gives, evaluated by a real promtool on this poll's series.
JOIN_BY_NAME = ('max by (fabric, node_guid, port, host) (fabric_ib_port_state_id'
                ' * on(fabric, peer_node_name) group_left(host) max by (fabric, peer_node_name, host) ('
                'label_replace(fabric_ib_node_host_info, "peer_node_name", "$1", "node_name", "(.*)")))')
JOIN_BY_GUID = ('max by (fabric, node_guid, port, host) ((fabric_ib_port_state_id'
                ' * on(fabric, node_guid, port) group_left(peer_node_guid) fabric_ib_port_info)'
                ' * on(fabric, peer_node_guid) group_left(host)'
                ' label_replace(fabric_ib_node_host_info, "peer_node_guid", "$1", "node_guid", "(.*)"))')


def test_promtool_attributes_every_hca_facing_switch_port_to_its_host(fabric, tmp_path):
    import shutil
    import subprocess

    import yaml

    if shutil.which("promtool") is None:
        pytest.fail("promtool is not installed (scripts/setup-deps installs it)")
    topo = fabric.topology
    result = CollectorHarness(group_for({"env": fabric.env(), "mad_timeout_ms": 300})).poll()
    wanted = ("fabric_ib_port_state_id", "fabric_ib_port_info", "fabric_ib_node_host_info")

    def series(s):
        labels = ",".join(f'{k}="{v}"' for k, v in sorted({**s.labels, "fabric": "lab"}.items()))
        return {"series": f"{s.name}{{{labels}}}", "values": f"{s.value:g}x3"}

    expected = [{"labels": f'{{fabric="lab",host="{host}",node_guid="{guid}",port="{port}"}}', "value": 4}
                for (guid, port), host in sorted(_expected_facing(
                    topo, {ca.nodeid: ca.description.split()[0] for ca in topo.cas}).items())]
    tests = {"tests": [{"interval": "1m", "input_series": [series(s) for s in result.samples if s.name in wanted],
                        "promql_expr_test": [{"expr": expr, "eval_time": "2m", "exp_samples": expected}
                                             for expr in (JOIN_BY_NAME, JOIN_BY_GUID)]}]}
    (tmp_path / "join.test.yml").write_text(yaml.safe_dump(tests))
    r = subprocess.run(["promtool", "test", "rules", "join.test.yml"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(expected) == len(topo.cas)
