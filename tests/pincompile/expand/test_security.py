"""The security contexts pincompile writes: the RuntimeProfile's secure defaults in every
container (the workload's own, user and managed sidecars, init containers, the platform's
own pods), what a container asks for on top, the writable /tmp of a read-only root
filesystem, service-account tokens, and each namespace's Pod Security level."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pincompile.compiler import compile_path
from pincompile.manifest import Manifest
from tests.support.expand import PLATFORM, REPO, expand, load_apps, objects, one, validate

RESTRICTED = {"runAsNonRoot": True, "allowPrivilegeEscalation": False,
              "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
APP = """\
apiVersion: pincompute.io/v1
kind: PinApp
metadata: {name: web, project: search}
spec:
  replicas: 1
  template:
    containers:
      - {name: main, image: registry.internal/web:1.0.0}
      - {name: helper, image: registry.internal/helper:1.0.0, lifecycle: sidecar}
    sidecars: [logging]
"""
POLICY = "  policy: {allowHostNetwork: true, allowDaemons: true}\n"


def platform(tmp: Path, security: str | None = None, policy: str | None = None) -> Path:
    """The golden fleet, its RuntimeProfile given ``security`` and project infra's policy
    replaced by ``policy`` (both YAML flow mappings)."""
    root = tmp / "platform-copy"
    shutil.copytree(PLATFORM, root)
    if security is not None:
        runtime = root / "platform" / "runtime.yaml"
        runtime.write_text(runtime.read_text().replace(
            "spec:\n", f"spec:\n  security: {security}\n", 1))
    if policy is not None:
        projects = root / "platform" / "projects.yaml"
        assert POLICY in projects.read_text()
        projects.write_text(projects.read_text().replace(POLICY, f"  policy: {policy}\n"))
    return root


def compiled(tmp: Path, text: str, *, platform_root: Path = PLATFORM, cluster: str = "east-133",
             **plan: Any) -> list[Manifest]:
    catalog = load_apps(tmp / "repo", {"apps/x/app.yaml": text}, platform_root)
    spec = {"/".join(e.resource.key): [{"cluster": cluster, "replicas": 1}]
            for e in catalog.workloads}
    manifests, problems = expand(catalog, {**spec, **plan})
    assert not problems, problems
    for m in manifests:
        assert validate(m.obj, "1.33") == [], m.obj
    return manifests


def pod_of(manifests: list[Manifest], kind: str = "Deployment") -> dict[str, Any]:
    obj = one(manifests, kind)
    return obj["spec"] if kind == "Pod" else obj["spec"]["template"]["spec"]


def containers(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in [*pod.get("initContainers", []), *pod["containers"]]}


def test_every_container_gets_the_restricted_defaults(tmp_path: Path) -> None:
    pod = pod_of(compiled(tmp_path, APP))
    # the workload's own, its user sidecar, an always and an opt-in managed sidecar and the
    # RuntimeProfile's init container
    assert sorted(containers(pod)) == ["config-sync", "helper", "logging", "main", "traffic"]
    for name, c in containers(pod).items():
        assert c["securityContext"] == RESTRICTED, name
    assert pod["securityContext"] == {"runAsNonRoot": True,
                                      "seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["automountServiceAccountToken"] is False


def test_legacy_clusters_and_every_kind_get_them_too(tmp_path: Path) -> None:
    pod = pod_of(compiled(tmp_path, APP, cluster="west-128"))
    assert "initContainers" in pod  # config-sync
    assert all(c["securityContext"] == RESTRICTED for c in containers(pod).values())
    job = APP.replace("kind: PinApp", "kind: PinterestCronJob").replace(
        "  replicas: 1\n", '  schedule: "0 * * * *"\n')
    cron = one(compiled(tmp_path / "cron", job), "CronJob")
    spec = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert all(c["securityContext"] == RESTRICTED for c in containers(spec).values())


def test_a_container_asks_for_a_user_a_group_and_a_capability(tmp_path: Path) -> None:
    text = APP.replace(
        "{name: main, image: registry.internal/web:1.0.0}",
        "{name: main, image: registry.internal/web:1.0.0, runAsUser: 1000, runAsGroup: 2000,"
        " capabilities: [NET_BIND_SERVICE]}")
    main = containers(pod_of(compiled(tmp_path, text)))["main"]
    assert main["securityContext"] == {
        **RESTRICTED, "runAsUser": 1000, "runAsGroup": 2000,
        "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}


def test_root_and_privileged_are_written_as_asked(tmp_path: Path) -> None:
    text = APP.replace("{name: main, image: registry.internal/web:1.0.0}",
                       "{name: main, image: registry.internal/web:1.0.0, runAsUser: 0}").replace(
        "lifecycle: sidecar}", "lifecycle: sidecar, privileged: true}")
    pod = pod_of(compiled(tmp_path, text))
    main, helper = containers(pod)["main"], containers(pod)["helper"]
    assert main["securityContext"]["runAsNonRoot"] is False
    assert main["securityContext"]["runAsUser"] == 0
    # the API server refuses privileged: true with allowPrivilegeEscalation: false
    assert helper["securityContext"]["privileged"] is True
    assert "allowPrivilegeEscalation" not in helper["securityContext"]


def test_the_platform_sets_user_group_and_fs_group(tmp_path: Path) -> None:
    root = platform(tmp_path, "{runAsUser: 10001, runAsGroup: 10002, fsGroup: 10003}")
    text = APP.replace("lifecycle: sidecar}", "lifecycle: sidecar, runAsUser: 20000}")
    pod = pod_of(compiled(tmp_path, text, platform_root=root))
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 10001,
                                      "runAsGroup": 10002, "fsGroup": 10003,
                                      "seccompProfile": {"type": "RuntimeDefault"}}
    by_name = containers(pod)
    assert by_name["main"]["securityContext"] == {**RESTRICTED, "runAsUser": 10001,
                                                  "runAsGroup": 10002}
    assert by_name["helper"]["securityContext"]["runAsUser"] == 20000
    assert by_name["helper"]["securityContext"]["runAsGroup"] == 10002


def test_a_read_only_root_filesystem_gets_a_writable_tmp(tmp_path: Path) -> None:
    root = platform(tmp_path, "{readOnlyRootFilesystem: true}")
    text = APP.replace("lifecycle: sidecar}", "lifecycle: sidecar, readOnlyRootFilesystem: false}")
    pod = pod_of(compiled(tmp_path, text, platform_root=root))
    assert pod["volumes"].count({"name": "pincompute-tmp", "emptyDir": {}}) == 1
    for name, c in containers(pod).items():
        tmp = [m for m in c["volumeMounts"] if m["mountPath"] == "/tmp"]
        if name == "helper":  # it opted out: its root filesystem is writable
            assert "readOnlyRootFilesystem" not in c["securityContext"] and not tmp
        else:
            assert c["securityContext"]["readOnlyRootFilesystem"] is True, name
            assert tmp == [{"name": "pincompute-tmp", "mountPath": "/tmp"}], name


def test_a_volume_of_its_own_at_tmp_is_kept(tmp_path: Path) -> None:
    root = platform(tmp_path, "{readOnlyRootFilesystem: true}")
    text = APP.replace("    sidecars: [logging]\n", "    volumes: [{name: scratch, type: emptyDir,"
                       " mountPath: /tmp/, size: 1Gi}]\n")
    pod = pod_of(compiled(tmp_path, text, platform_root=root))
    by_name = containers(pod)
    # the user's containers write to their own volume; the injected ones get the platform's
    assert [m["name"] for m in by_name["main"]["volumeMounts"] if m["mountPath"].startswith(
        "/tmp")] == ["scratch"]
    assert {"name": "pincompute-tmp", "mountPath": "/tmp"} in by_name["traffic"]["volumeMounts"]


def test_no_tmp_volume_without_a_read_only_container(tmp_path: Path) -> None:
    pod = pod_of(compiled(tmp_path, APP))
    assert "pincompute-tmp" not in {v["name"] for v in pod["volumes"]}


@pytest.mark.parametrize(("template", "automount"), [
    ("", False),
    ("    serviceAccount: web-reader\n", None),  # the service account's own setting decides
    ("    serviceAccount: web-reader\n    serviceAccountToken: false\n", False),
    ("    serviceAccountToken: true\n", True),
])
def test_the_token_is_mounted_only_where_asked(tmp_path: Path, template: str,
                                               automount: bool | None) -> None:
    pod = pod_of(compiled(tmp_path, APP + template))
    assert pod.get("automountServiceAccountToken") is automount


def test_secret_env_and_secret_files_stay(tmp_path: Path) -> None:
    text = APP.replace(
        "{name: main, image: registry.internal/web:1.0.0}",
        "{name: main, image: registry.internal/web:1.0.0,"
        " env: [{name: DB_PASSWORD, secretRef: {name: db, key: password}}]}").replace(
        "    sidecars: [logging]\n",
        "    volumes: [{name: tls, type: secret, secretName: web-tls, mountPath: /etc/tls,"
        " readOnly: true}]\n")
    pod = pod_of(compiled(tmp_path, text))
    main = containers(pod)["main"]
    secret_key = {"secretKeyRef": {"name": "db", "key": "password"}}
    assert {"name": "DB_PASSWORD", "valueFrom": secret_key} in main["env"]
    assert {"name": "tls", "secret": {"secretName": "web-tls"}} in pod["volumes"]
    assert {"name": "tls", "mountPath": "/etc/tls", "readOnly": True} in main["volumeMounts"]


def namespace_levels(manifests: list[Manifest]) -> dict[str, dict[str, str]]:
    return {o["metadata"]["name"]: {k.split("/")[1]: v for k, v in o["metadata"]["labels"].items()
                                    if k.startswith("pod-security.kubernetes.io/")}
            for o in objects(manifests, "Namespace")}


def test_project_namespaces_enforce_restricted(tmp_path: Path) -> None:
    levels = namespace_levels(compiled(tmp_path, APP.replace("project: search", "project: infra")
                                       + "---\n" + APP))
    assert levels["search"] == {"enforce": "restricted", "audit": "restricted",
                                "warn": "restricted", "enforce-version": "latest"}
    assert levels["infra-system"]["enforce"] == "privileged"  # allowHostNetwork


@pytest.mark.parametrize(("policy", "level"), [
    ("{}", "restricted"),
    ("{allowDaemons: true}", "restricted"),
    ("{allowCapabilities: [NET_BIND_SERVICE]}", "restricted"),
    ("{allowCapabilities: [NET_BIND_SERVICE, CHOWN]}", "baseline"),
    ("{allowRunAsRoot: true}", "baseline"),
    ("{allowCapabilities: [NET_ADMIN]}", "privileged"),
    ("{allowPrivileged: true}", "privileged"),
    ("{allowHostPath: true}", "privileged"),
])
def test_a_policy_earns_the_level_of_what_it_allows(tmp_path: Path, policy: str,
                                                    level: str) -> None:
    root = platform(tmp_path, policy=policy)
    text = APP.replace("project: search", "project: infra")
    assert namespace_levels(compiled(tmp_path, text, platform_root=root))[
        "infra-system"]["enforce"] == level


@pytest.mark.parametrize(("security", "level"), [
    ("{runAsNonRoot: false}", "baseline"),
    ("{allowPrivilegeEscalation: true}", "baseline"),
    ("{dropAllCapabilities: false}", "baseline"),
    ("{seccompProfile: Unconfined}", "privileged"),
])
def test_a_relaxed_profile_lowers_every_namespace(tmp_path: Path, security: str,
                                                  level: str) -> None:
    root = platform(tmp_path, security)
    manifests = compiled(tmp_path, APP, platform_root=root)
    assert namespace_levels(manifests)["search"]["enforce"] == level
    main = containers(pod_of(manifests))["main"]["securityContext"]
    key = re.sub(r"[{}]|:.*", "", security)
    written = {"runAsNonRoot": "runAsNonRoot", "allowPrivilegeEscalation":
               "allowPrivilegeEscalation", "dropAllCapabilities": "capabilities"}.get(key)
    if written is not None:  # relaxed: left to Kubernetes' (and the image's) defaults
        assert written not in main
    else:
        assert main["seccompProfile"] == {"type": "Unconfined"}


def test_the_platform_pods_and_namespaces(tmp_path: Path) -> None:
    root = platform(tmp_path)
    clusters = root / "platform" / "clusters.yaml"
    text = clusters.read_text()
    clusters.write_text(text.replace("spec:\n", "spec:\n  buffer: {replicas: 2, cpu: 500m, "
                                     "memory: 1Gi}\n", 1))
    manifests = compiled(tmp_path, APP, platform_root=root,
                         sidecarDaemons={"node-agent": ["east-133"]})
    levels = namespace_levels(manifests)
    assert levels["pincompute-buffer"]["enforce"] == "restricted"
    assert levels["pincompute-sidecars"]["enforce"] == "privileged"  # node-agent: host network
    for name in ("buffer", "node-agent"):
        obj = next(o for o in [*objects(manifests, "Deployment"),
                               *objects(manifests, "DaemonSet")] if o["metadata"]["name"] == name)
        pod = obj["spec"]["template"]["spec"]
        assert pod["automountServiceAccountToken"] is False
        assert pod["containers"][0]["securityContext"] == RESTRICTED, name


def test_the_examples_namespaces() -> None:
    result = compile_path(REPO / "examples", revision="test")
    assert result.ok
    levels = {o["metadata"]["name"]: o["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
              for o in (m.obj for m in result.manifests) if o["kind"] == "Namespace"}
    # platform-system's daemons run on the host network; every other project is restricted
    assert levels == {"ads": "restricted", "ml": "restricted", "search": "restricted",
                      "pincompute-system": "privileged", "pincompute-sidecars": "restricted",
                      "pincompute-buffer": "restricted"}
