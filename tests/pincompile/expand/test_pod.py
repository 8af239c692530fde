"""The shared pod builder: runtime profile, sidecars native/legacy, resources, network,
probes, and located errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pincompile.diagnostics import Diagnostic
from tests.support.expand import PLATFORM, expand, load_apps, one, write_repo

APP = """\
apiVersion: pincompute.io/v1
kind: PinApp
metadata: {name: web, project: search}
spec:
  replicas: 2
  template:
    containers:
      - name: main
        image: registry.internal/web:1.0.0
        resources: {cpu: 500m, memory: 1Gi}
      - name: helper
        image: registry.internal/helper:1.0.0
        lifecycle: sidecar
    sidecars: [logging]
"""


def build(tmp_path: Path, text: str, cluster: str = "east-133", platform: Path = PLATFORM,
          **shard: Any) -> tuple[dict[str, Any], list[Diagnostic]]:
    """The pod spec of the one workload in ``text`` placed in ``cluster``."""
    catalog = load_apps(tmp_path / "repo", {"apps/search/app.yaml": text}, platform)
    workload = catalog.workloads[0].resource
    manifests, problems = expand(catalog, {"/".join(workload.key): [
        {"cluster": cluster, "replicas": 1, **shard}]})
    obj = one(manifests, {"PinApp": "Deployment", "PinPod": "Pod",
                          "PinterestCronJob": "CronJob"}[workload.kind])
    spec = obj["spec"]
    if obj["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return (spec["template"] if "template" in spec else {"metadata": obj["metadata"],
                                                          "spec": spec}), problems


def names(containers: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(c["name"], c.get("restartPolicy")) for c in containers]


def test_native_sidecars_from_1_29(tmp_path: Path) -> None:
    pod, problems = build(tmp_path, APP, "east-133")
    assert not problems
    assert names(pod["spec"]["initContainers"]) == [
        ("traffic", "Always"), ("config-sync", None), ("helper", "Always"), ("logging", "Always")]
    assert names(pod["spec"]["containers"]) == [("main", None)]


def test_legacy_sidecars_before_1_29(tmp_path: Path) -> None:
    pod, problems = build(tmp_path, APP, "west-128")
    assert not problems
    assert names(pod["spec"]["initContainers"]) == [("config-sync", None)]
    assert names(pod["spec"]["containers"]) == [
        ("traffic", None), ("main", None), ("helper", None), ("logging", None)]


def test_runtime_profile_everywhere(tmp_path: Path) -> None:
    pod, _ = build(tmp_path, APP)
    spec = pod["spec"]
    for c in [*spec["containers"], *spec["initContainers"]]:
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["PINCOMPUTE_PROJECT"] == "search" and env["PINCOMPUTE_APP"] == "web"
        assert env["PINCOMPUTE_ZONE"] == "us-east-1a"
        assert {"name": "logs", "mountPath": "/var/log/app"} in c["volumeMounts"]
    assert {"name": "logs", "emptyDir": {}} in spec["volumes"]
    assert pod["metadata"]["labels"]["cost-center"] == "search"
    assert pod["metadata"]["annotations"]["pincompute.io/region"] == "us-east-1"
    sync = next(c for c in spec["initContainers"] if c["name"] == "config-sync")
    assert sync["args"] == ["--app=web", "--cluster=east-133", "--once"]
    assert {"name": "CONFIG_ENDPOINT", "value": "https://config.internal"} in sync["env"]
    assert spec["priorityClassName"] == "pincompute-ondemand"


def test_resources_gpu_arch(tmp_path: Path) -> None:
    text = APP.replace("resources: {cpu: 500m, memory: 1Gi}",
                       "resources: {cpu: 500m, memory: 1Gi, gpu: 2, limits: {memory: 2Gi}}")
    text = text.replace("    sidecars: [logging]\n",
                        "    sidecars: [logging]\n    gpuType: A10G\n    arch: arm64\n")
    pod, _ = build(tmp_path, text, "gpu-133")
    main = one_container(pod, "main")
    assert main["resources"] == {
        "requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "2"},
        "limits": {"cpu": "500m", "memory": "2Gi", "nvidia.com/gpu": "2"}}
    # no requests of its own: the RuntimeProfile's defaultResources are written in
    assert one_container(pod, "helper")["resources"] == {
        "requests": {"cpu": "100m", "memory": "128Mi"},
        "limits": {"cpu": "100m", "memory": "256Mi"}}
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/arch": "arm64",
                                           "pincompute.io/gpu-type": "A10G"}
    assert pod["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def one_container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    spec = pod["spec"]
    return next(c for c in [*spec["containers"], *spec.get("initContainers", [])]
                if c["name"] == name)


@pytest.mark.parametrize(("network", "fields"), [
    ("bridge", {}),
    ("routable", {}),
    ("dedicated-eni", {}),
    ("host", {"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet"}),
])
def test_network_modes(tmp_path: Path, network: str, fields: dict[str, Any]) -> None:
    pod, _ = build(tmp_path, APP + f"    network: {network}\n")
    assert pod["metadata"]["labels"]["pincompute.io/network"] == network
    assert {k: pod["spec"][k] for k in ("hostNetwork", "dnsPolicy")
            if k in pod["spec"]} == fields


def test_probes(tmp_path: Path) -> None:
    text = APP.replace("        resources: {cpu: 500m, memory: 1Gi}\n", """\
        resources: {cpu: 500m, memory: 1Gi}
        ports: [{name: grpc, containerPort: 9090}]
        probes:
          readiness: {http: /ready, port: 8080, initialDelay: 1500ms, period: 10s}
          liveness: {grpc: true, port: grpc, timeout: 500ms, failureThreshold: 3}
          startup: {exec: [cat, /tmp/ok], successThreshold: 1}
""")
    pod, problems = build(tmp_path, text)
    assert not problems
    main = one_container(pod, "main")
    assert main["readinessProbe"] == {"httpGet": {"path": "/ready", "port": 8080},
                                      "initialDelaySeconds": 2, "periodSeconds": 10}
    assert main["livenessProbe"] == {"grpc": {"port": 9090}, "timeoutSeconds": 1,
                                     "failureThreshold": 3}
    assert main["startupProbe"] == {"exec": {"command": ["cat", "/tmp/ok"]},
                                     "successThreshold": 1}


def test_grpc_probe_needs_a_known_port(tmp_path: Path) -> None:
    text = APP.replace("        resources: {cpu: 500m, memory: 1Gi}\n",
                       "        probes: {liveness: {grpc: true, port: nope}}\n")
    _, problems = build(tmp_path, text)
    assert [(d.file, d.line, d.code) for d in problems] == [
        ("apps/search/app.yaml", 10, "probe-port")]


def test_env_may_not_shadow_platform_identity(tmp_path: Path) -> None:
    text = APP.replace("        resources: {cpu: 500m, memory: 1Gi}\n",
                       "        env: [{name: PINCOMPUTE_APP, value: other}]\n")
    pod, problems = build(tmp_path, text)
    assert [(d.file, d.line, d.column, d.code) for d in problems] == [
        ("apps/search/app.yaml", 10, 22, "duplicate-env")]
    env = one_container(pod, "main")["env"]
    assert [e["value"] for e in env if e["name"] == "PINCOMPUTE_APP"] == ["web"]


def test_volume_and_container_names_must_not_collide(tmp_path: Path) -> None:
    text = APP.replace("    sidecars: [logging]\n", """\
    sidecars: [logging]
    volumes: [{name: logs, type: emptyDir, mountPath: /logs}]
""").replace("name: helper", "name: traffic")
    _, problems = build(tmp_path, text)
    assert sorted((d.line, d.code) for d in problems) == [
        (11, "duplicate-container"), (15, "duplicate-volume")]


def test_config_volume_name_is_reserved(tmp_path: Path) -> None:
    text = APP.replace("    sidecars: [logging]\n", """\
    config: {a.conf: x}
    volumes: [{name: pincompute-config, type: emptyDir, mountPath: /x}]
""")
    pod, problems = build(tmp_path, text)
    assert [(d.line, d.code) for d in problems] == [(15, "duplicate-volume")]
    assert {"name": "pincompute-config", "configMap": {"name": "web-config"}} in (
        pod["spec"]["volumes"])


def test_secret_and_host_path_volumes(tmp_path: Path) -> None:
    text = APP.replace("    sidecars: [logging]\n", """\
    volumes:
      - {name: creds, type: secret, secretName: web-creds, mountPath: /creds, readOnly: true}
      - {name: sock, type: hostPath, path: /run/sock, mountPath: /run/sock}
""")
    pod, _ = build(tmp_path, text)
    assert {"name": "creds", "secret": {"secretName": "web-creds"}} in pod["spec"]["volumes"]
    assert {"name": "sock", "hostPath": {"path": "/run/sock"}} in pod["spec"]["volumes"]
    mounts = one_container(pod, "main")["volumeMounts"]
    assert {"name": "creds", "mountPath": "/creds", "readOnly": True} in mounts
    assert not any(m["name"] == "creds" for m in one_container(pod, "traffic")["volumeMounts"])


# --- templates --------------------------------------------------------------------------------

def platform_with(tmp_path: Path, runtime: str) -> Path:
    root = tmp_path / "fleet"
    write_repo(root, {f"platform/{p.name}": p.read_text()
                      for p in (PLATFORM / "platform").iterdir()})
    (root / "platform/runtime.yaml").write_text(runtime)
    return root


RUNTIME = """\
apiVersion: pincompute.io/v1
kind: RuntimeProfile
metadata: {name: default}
spec:
  env:
    - {name: A, value: "{{ app.name }}"}
    - {name: B, value: "%s"}
  labels: {team-label: "%s"}
"""


@pytest.mark.parametrize(("template", "message"), [
    ("{{ app.nmae }}", "has no attribute 'nmae'"),
    ("{{ app.name", "template syntax error"),
    ("{{ app.__class__.__mro__ }}", "unsafe"),
    ("{{ 'x' * 100000000 }}", "larger than the template output budget of 262144 characters"),
    ("{{ 2 ** 100000 }}", "too large"),
    ("{{ range(10**9) | list }}", "more than the template loop budget of 100000"),
    ("{{ 1 / 0 }}", "division by zero"),
    ("{% include 'x' %}", "no loader"),
])
def test_template_errors_are_located(tmp_path: Path, template: str, message: str) -> None:
    fleet = platform_with(tmp_path, RUNTIME % (template.replace('"', '\\"'), "ok"))
    _, problems = build(tmp_path, APP, platform=fleet)
    assert [(d.file, d.line, d.column, d.code) for d in problems] == [
        ("platform/runtime.yaml", 7, 24, "template")], problems
    assert message in problems[0].message


def test_rendered_label_must_be_a_label_value(tmp_path: Path) -> None:
    fleet = platform_with(tmp_path, RUNTIME % ("ok", "{{ app.name }} team"))
    pod, problems = build(tmp_path, APP, platform=fleet)
    assert [(d.line, d.code) for d in problems] == [(8, "label-value")]
    assert "team-label" not in pod["metadata"]["labels"]


def test_template_error_in_block_scalar_points_inside(tmp_path: Path) -> None:
    text = """\
apiVersion: pincompute.io/v1
kind: PinterestJobSet
metadata: {name: batch, project: search}
spec:
  completions: 4
  template:
    containers: [{name: main, image: registry.internal/batch:1.0.0}]
  configTemplates:
    job.conf: |
      shards={{ job.completions }}
      oops={{ job.missing }}
"""
    catalog = load_apps(tmp_path / "repo", {"apps/search/batch.yaml": text})
    _, problems = expand(catalog, {"PinterestJobSet/search/batch": [
        {"cluster": "east-133", "replicas": 4}]})
    assert [(d.file, d.line, d.column, d.code) for d in problems] == [
        ("apps/search/batch.yaml", 11, 7, "template")]
