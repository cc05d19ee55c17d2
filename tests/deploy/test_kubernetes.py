"""Kubernetes manifests: every overlay rendered by the real kustomize (kubectl kustomize), every object
validated against the Kubernetes OpenAPI schemas (kubernetes-validate, strict: unknown fields fail)
and the ServiceMonitor/PrometheusRule CRD schemas, and the facts that matter checked directly:
non-root, read-only root, no privilege, no capabilities, read-only /sys, references that resolve,
shard count consistent, configs accepted by the real config loader."""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import subprocess
from functools import cache
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from .conftest import DEPLOY, deploy_tool

K8S = DEPLOY / "kubernetes"
OVERLAYS = sorted(p.name for p in (K8S / "overlays").iterdir() if (p / "kustomization.yaml").exists())
# The oldest version the manifests promise (pod-index label for the shards, GA sidecar-free features)
# and the newest schema kubernetes-validate ships.
K8S_VERSIONS = ("1.28.0", kubernetes_validate.utils.latest_version())
CRD_SCHEMAS = {("monitoring.coreos.com/v1", "ServiceMonitor"): "servicemonitor-v1.json",
               ("monitoring.coreos.com/v1", "PrometheusRule"): "prometheusrule-v1.json"}
WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet")
CREDENTIALS_SECRET = "fabric-exporter-credentials"  # created by the operator, never shipped
IMAGE = "ghcr.io/fabric-exporter/fabric-exporter"


@cache
def render(directory: str) -> tuple[dict, ...]:
    kubectl = deploy_tool("kubectl")
    result = subprocess.run([kubectl, "kustomize", str(K8S / directory)], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "KUBECONFIG": os.devnull})
    assert result.returncode == 0, result.stderr
    # Deprecation warnings would mean a field that a later kustomize drops.
    assert "warning" not in result.stderr.lower(), result.stderr
    return tuple(d for d in yaml.safe_load_all(result.stdout) if d)


def objects(overlay: str, kind: str | None = None) -> list[dict]:
    return [o for o in render(f"overlays/{overlay}") if kind is None or o["kind"] == kind]


def strict_crd_schema(schema: dict) -> dict:
    """Structural CRD schemas let the API server prune unknown fields silently; like
    `kubectl apply --validate=strict`, refuse them instead."""
    schema = copy.deepcopy(schema)

    def close(node):
        if isinstance(node, dict):
            if (node.get("type") == "object" and "properties" in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")
                    and "additionalProperties" not in node):
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(schema)
    # metadata is validated by the API server's own ObjectMeta rules, not by the CRD schema.
    schema["properties"]["metadata"] = {"type": "object"}
    return schema


@cache
def crd_validator(name: str) -> jsonschema.Draft7Validator:
    schema = json.loads((Path(__file__).parent / "crd_schemas" / name).read_text())
    schema.pop("$comment", None)
    return jsonschema.Draft7Validator(strict_crd_schema(schema))


def pod_specs(overlay: str):
    for o in objects(overlay):
        if o["kind"] in WORKLOAD_KINDS:
            yield o, o["spec"]["template"]["spec"]


def all_containers(spec: dict) -> list[dict]:
    return spec.get("initContainers", []) + spec["containers"]


# ---------------------------------------------------------------------------------------------


def test_base_renders_and_overlays_exist():
    assert {"deployment-fabric", "daemonset-nic", "full", "sharded"} <= set(OVERLAYS)
    kinds = {o["kind"] for o in render("base")}
    assert {"Namespace", "ServiceAccount", "ConfigMap", "Service", "ServiceMonitor", "PrometheusRule"} <= kinds


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_object_is_schema_valid(overlay: str, version: str):
    problems = []
    for o in objects(overlay):
        ident = f"{o['kind']}/{o['metadata']['name']}"
        crd = CRD_SCHEMAS.get((o["apiVersion"], o["kind"]))
        if crd:
            problems += [f"{ident}: {'.'.join(map(str, e.absolute_path))}: {e.message}"
                         for e in crd_validator(crd).iter_errors(o)]
            continue
        try:
            kubernetes_validate.validate(o, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            problems.append(f"{ident}: {e.path}: {e.message}" if hasattr(e, "path") else f"{ident}: {e}")
    assert not problems, "\n".join(problems)


def test_crd_validation_is_not_vacuous():
    """The vendored CRD schemas reject what the API server would: a wrong type, an unknown field."""
    monitor = next(o for o in objects("full", "ServiceMonitor"))
    bad = copy.deepcopy(monitor)
    bad["spec"]["endpoints"][0]["interval"] = 30  # must be a duration string
    assert list(crd_validator("servicemonitor-v1.json").iter_errors(bad))
    bad = copy.deepcopy(monitor)
    bad["spec"]["endpoints"][0]["scrapeInterval"] = "30s"  # no such field
    assert list(crd_validator("servicemonitor-v1.json").iter_errors(bad))
    rule = next(o for o in objects("full", "PrometheusRule"))
    bad = copy.deepcopy(rule)
    bad["spec"]["groups"] = [{"name": "x", "rules": [{"alert": "A"}]}]  # a rule needs expr
    assert list(crd_validator("prometheusrule-v1.json").iter_errors(bad))


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pods_run_unprivileged(overlay: str):
    found = 0
    for workload, spec in pod_specs(overlay):
        found += 1
        ident = f"{workload['kind']}/{workload['metadata']['name']}"
        assert spec["securityContext"]["runAsNonRoot"] is True, ident
        assert spec["securityContext"]["runAsUser"] != 0, ident
        assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", ident
        assert spec["automountServiceAccountToken"] is False, ident
        assert not spec.get("hostPID") and not spec.get("hostIPC"), ident
        assert spec.get("hostNetwork", False) is (workload["kind"] == "DaemonSet"), ident
        for c in all_containers(spec):
            sc = c["securityContext"]
            where = f"{ident} container {c['name']}"
            assert sc.get("privileged", False) is False, where
            assert sc["allowPrivilegeEscalation"] is False, where
            assert sc["readOnlyRootFilesystem"] is True, where
            assert sc["capabilities"]["drop"] == ["ALL"] and not sc["capabilities"].get("add"), where
            assert c["image"].startswith(IMAGE + ":"), where
            assert "memory" in c["resources"]["limits"], where
        host_paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
        if workload["kind"] == "DaemonSet":
            assert host_paths == {"sys": "/sys"}, ident
            mounts = [m for c in all_containers(spec) for m in c.get("volumeMounts", []) if m["name"] == "sys"]
            assert mounts and all(m["readOnly"] is True for m in mounts), ident
        else:
            assert not host_paths, ident
    assert found, f"overlay {overlay} has no workload"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_references_resolve(overlay: str):
    objs = objects(overlay)
    configmaps = {o["metadata"]["name"] for o in objs if o["kind"] == "ConfigMap"}
    services = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Service"}
    (monitor,) = [o for o in objs if o["kind"] == "ServiceMonitor"]
    namespace = {o["metadata"].get("namespace") for o in objs if o["kind"] != "Namespace"}
    assert namespace == {"fabric-exporter"}
    scraped = [s for s in services.values()
               if all(s["metadata"]["labels"].get(k) == v for k, v in monitor["spec"]["selector"]["matchLabels"].items())]
    assert len(scraped) == 1, "the ServiceMonitor must select exactly one Service (else pods are scraped twice)"
    (service,) = scraped
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= {p["name"] for p in service["spec"]["ports"]}
    for workload, spec in pod_specs(overlay):
        labels = workload["spec"]["template"]["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in workload["spec"]["selector"]["matchLabels"].items())
        assert all(labels.get(k) == v for k, v in service["spec"]["selector"].items()), \
            f"{workload['metadata']['name']} is not behind the scraped Service"
        assert spec["serviceAccountName"] in {o["metadata"]["name"] for o in objs if o["kind"] == "ServiceAccount"}
        (main,) = [c for c in spec["containers"] if c["name"] == "fabric-exporter"]
        assert {"name": "metrics", "containerPort": 9315, "protocol": "TCP"}.items() <= main["ports"][0].items()
        for volume in spec["volumes"]:
            sources = volume.get("projected", {}).get("sources", [volume])
            for source in sources:
                if "configMap" in source:
                    assert source["configMap"]["name"] in configmaps, f"{volume['name']}: unresolved ConfigMap"
                if "secret" in source:
                    assert source["secret"]["name"] == CREDENTIALS_SECRET
        if workload["kind"] == "StatefulSet":
            assert workload["spec"]["serviceName"] == service["metadata"]["name"]
            assert service["spec"].get("clusterIP") == "None"


def test_dashboards_and_rules_are_the_generated_ones():
    from fabric_exporter.deploy_k8s import render as generate

    from .conftest import ROOT

    generated = generate(ROOT)
    rule_docs = [d for d in yaml.safe_load_all(next(t for p, t in generated.items() if "prometheusrule" in p.name)) if d]
    rendered = objects("full", "PrometheusRule")
    assert [o["spec"] for o in rendered] == [d["spec"] for d in rule_docs]
    dash_docs = [d for d in yaml.safe_load_all(next(t for p, t in generated.items() if "dashboards" in p.name)) if d]
    rendered_maps = {o["metadata"]["name"]: o for o in objects("full", "ConfigMap")}
    for d in dash_docs:
        got = rendered_maps[d["metadata"]["name"]]
        assert got["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert got["data"] == d["data"]


def test_sharded_replicas_match_shard_count():
    from fabric_exporter.cli import build_parser

    (shards,) = objects("sharded", "StatefulSet")
    (container,) = shards["spec"]["template"]["spec"]["containers"]
    (shard_arg,) = [a for a in container["args"] if a.startswith("--shard=")]
    m = re.fullmatch(r"--shard=\$\(POD_INDEX\)/(\d+)", shard_arg)
    assert m, shard_arg
    assert int(m.group(1)) == shards["spec"]["replicas"] == 4
    (env,) = [e for e in container["env"] if e["name"] == "POD_INDEX"]
    assert env["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['apps.kubernetes.io/pod-index']"
    assert shards["spec"]["podManagementPolicy"] == "Parallel"
    # Kubernetes expands $(POD_INDEX) before exec; the CLI must accept what the last pod gets.
    argv = [a.replace("$(POD_INDEX)", str(shards["spec"]["replicas"] - 1)) for a in container["args"]]
    parser = build_parser()
    run_parser = parser._subparsers._group_actions[0].choices["run"]  # noqa: SLF001 - argparse has no accessor
    if not any("--shard" in a.option_strings for a in run_parser._actions):  # noqa: SLF001
        if os.environ.get("CI"):
            pytest.fail("fabric-exporter run has no --shard option yet (the sharded overlay needs it)")
        pytest.skip("fabric-exporter run has no --shard option yet")
    parser.parse_args(argv)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_container_args_are_accepted_by_the_cli(overlay: str):
    from fabric_exporter.cli import build_parser

    for workload, spec in pod_specs(overlay):
        if workload["kind"] == "StatefulSet":
            continue  # --shard: test_sharded_replicas_match_shard_count
        (main,) = [c for c in spec["containers"] if c["name"] == "fabric-exporter"]
        args = build_parser().parse_args(main["args"])
        assert args.command == "run" and args.config == "/etc/fabric-exporter/config.yaml"


# ---------------------------------------------------------------------------------------------
# The shipped configs, materialised the way the pods see them, through the real config loader.


def _check_config(config_path: Path) -> None:
    from fabric_exporter.collectors import registry
    from fabric_exporter.config import ConfigError
    from tests.harness.configs import parse_config

    raw = yaml.safe_load(config_path.read_text())
    known = registry()
    missing = sorted({t["collector"] for t in raw["targets"] if t["collector"] not in known})
    raw["targets"] = [t for t in raw["targets"] if t["collector"] in known]
    try:
        config = parse_config(raw, base_dir=config_path.parent, source=str(config_path))
    except ConfigError as e:
        pytest.fail(f"{config_path.name} rejected:\n" + "\n".join(e.problems))
    assert len(config.targets) == len(raw["targets"])
    if missing:
        message = f"collectors not registered yet, their groups were not checked: {', '.join(missing)}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def test_fabric_config_is_accepted_with_the_files_the_pod_gets(tmp_path: Path):
    """config.yaml + known_hosts from the ConfigMap and secrets/* from the Secret's projected items,
    laid out as the Deployment's projected volume lays them out."""
    (deployment,) = objects("deployment-fabric", "Deployment")
    (volume,) = [v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "config"]
    maps = {o["metadata"]["name"]: o for o in objects("deployment-fabric", "ConfigMap")}
    for source in volume["projected"]["sources"]:
        if "configMap" in source:
            for key, text in maps[source["configMap"]["name"]]["data"].items():
                (tmp_path / key).write_text(text)
        else:
            for item in source["secret"]["items"]:
                (tmp_path / item["path"]).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / item["path"]).write_text("placeholder secret\n")
    _check_config(tmp_path / "config.yaml")


def test_nic_init_container_renders_a_valid_config(tmp_path: Path):
    """Run the DaemonSet's real init command (paths moved under tmp) and load what it writes."""
    (daemonset,) = objects("daemonset-nic", "DaemonSet")
    spec = daemonset["spec"]["template"]["spec"]
    (init,) = spec["initContainers"]
    mounts = {m["name"]: m["mountPath"] for m in init["volumeMounts"]}
    (template_volume,) = [v for v in spec["volumes"] if v["name"] == "config-template"]
    template_dir, config_dir = tmp_path / "template", tmp_path / "config"
    template_dir.mkdir()
    config_dir.mkdir()
    data = next(o for o in objects("daemonset-nic", "ConfigMap")
                if o["metadata"]["name"] == template_volume["configMap"]["name"])["data"]
    for key, text in data.items():
        (template_dir / key).write_text(text)
    script = init["command"][2]
    script = script.replace(mounts["config-template"], str(template_dir)).replace(mounts["config"], str(config_dir))
    assert init["command"][:2] == ["/bin/sh", "-c"]
    subprocess.run(["/bin/sh", "-c", script], env={"NODE_NAME": "gpu-node-17", "PATH": os.environ["PATH"]},
                   check=True, timeout=10)
    rendered = (config_dir / "config.yaml").read_text()
    assert "__NODE_NAME__" not in rendered
    assert yaml.safe_load(rendered)["targets"][0]["hosts"] == [{"name": "gpu-node-17"}]
    assert shlex.split(script)  # one well-formed shell command
    _check_config(config_dir / "config.yaml")
