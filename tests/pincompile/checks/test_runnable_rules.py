"""Rules that keep validated specs runnable: requests every container needs, network modes,
and what the platform compiles for them (defaults, LimitRange, policies, tier affinity)."""

from __future__ import annotations

from typing import Any

from tests.support.specs import compile_all, files, triples, validate

RUNTIME = "platform/runtime.yaml"
APP = "apps/shop/extra.yaml"


def _app(template: str, service: str = "") -> str:
    lines = ["apiVersion: pincompute.io/v1", "kind: PinApp",
             "metadata: {name: extra, project: shop}", "spec:", "  replicas: 2",
             "  template:", template]
    return "\n".join([*lines, service, ""]) if service else "\n".join([*lines, ""])


NO_RESOURCES = "    containers: [{name: main, image: \"registry.internal/x:1.0\"}]"


def _without_defaults() -> dict[str, Any]:
    tree = files({APP: _app(NO_RESOURCES)})
    text = tree[RUNTIME]
    assert isinstance(text, str)
    tree[RUNTIME] = text.replace("  defaultResources: {cpu: 100m, memory: 128Mi}\n", "")
    return tree


def test_a_container_without_requests_and_no_default_is_located() -> None:
    found = [d for d in validate(_without_defaults())
             if d.code == "missing-resources" and d.file == APP]
    assert triples(found)[-1] == (
        f"{APP}:7:25", "missing-resources",
        "container 'main' has no cpu and memory request and no default applies")
    assert found[-1].hint is not None and "defaultResources" in found[-1].hint


def test_defaults_are_written_into_the_container_and_a_limit_range() -> None:
    result = compile_all(files({APP: _app(NO_RESOURCES)}))
    assert result.ok, triples(result.diagnostics)
    deploy = next(m.obj for m in result.manifests
                  if m.kind == "Deployment" and m.name == "extra")
    main = next(c for c in deploy["spec"]["template"]["spec"]["containers"]
                if c["name"] == "main")
    assert main["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"},
                                 "limits": {"cpu": "100m", "memory": "128Mi"}}
    ranges = [m.obj for m in result.manifests if m.kind == "LimitRange"]
    assert ranges and ranges[0]["spec"]["limits"][0]["defaultRequest"] == {
        "cpu": "100m", "memory": "128Mi"}


def test_bridge_with_ports_or_a_service_is_an_error_at_each_place() -> None:
    template = ("    network: bridge\n    containers: [{name: main, image: \"r/x:1.0\", "
                "ports: [{name: http, containerPort: 80}]}]")
    service = "  service: {ports: [{name: http, port: 80}], ingress: {host: x.internal}}"
    found = [d for d in validate(files({APP: _app(template, service)}))
             if d.code == "bridge-inbound"]
    assert [(d.file, d.line) for d in found] == [(APP, 8), (APP, 9), (APP, 9)]
    assert [d.message.split(",")[0] for d in found] == [
        "container 'main' declares ports", "PinApp 'extra' has a service",
        "PinApp 'extra' has an ingress"]


def test_an_app_with_a_service_defaults_to_routable() -> None:
    result = compile_all(files({APP: _app(
        "    containers: [{name: main, image: \"r/x:1.0\"}]",
        "  service: {ports: [{name: http, port: 80}]}")}))
    assert result.ok, triples(result.diagnostics)
    deploy = next(m.obj for m in result.manifests if m.kind == "Deployment"
                  and m.name == "extra")
    assert deploy["spec"]["template"]["metadata"]["labels"]["pincompute.io/network"] == (
        "routable")


def test_dedicated_eni_needs_a_cluster_with_the_addon() -> None:
    template = "    network: dedicated-eni\n    containers: [{name: main, image: \"r/x:1.0\"}]"
    found = [d for d in validate(files({APP: _app(template)}))
             if d.code == "network-unavailable"]
    assert [d.location() for d in found] == [f"{APP}:7:14"]


def test_project_namespace_gets_tenancy_and_pods_tier_affinity() -> None:
    result = compile_all(files())
    assert result.ok, triples(result.diagnostics)
    by_kind: dict[str, list[Any]] = {}
    for m in result.manifests:
        if m.namespace == "shop" or m.name == "shop":
            by_kind.setdefault(m.kind, []).append(m.obj)
    ns = by_kind["Namespace"][0]
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    policies = {p["metadata"]["name"]: p["spec"] for p in by_kind["NetworkPolicy"]}
    assert policies["pincompute-bridge-deny-ingress"] == {
        "podSelector": {"matchLabels": {"pincompute.io/network": "bridge"}},
        "policyTypes": ["Ingress"]}
    peers = policies["pincompute-tenant-ingress"]["ingress"][0]["from"]
    assert peers[0]["namespaceSelector"]["matchExpressions"][0]["values"] == [
        "pincompute.platform", "shop"]
    binding = by_kind["RoleBinding"][0]
    assert binding["roleRef"]["name"] == "view"
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                    "name": "team-shop"}]
    web = next(d for d in by_kind["Deployment"] if d["metadata"]["name"] == "web")
    term = web["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term == {"matchExpressions": [{"key": "pincompute.io/tier-reserved",
                                          "operator": "In", "values": ["true"]}]}
