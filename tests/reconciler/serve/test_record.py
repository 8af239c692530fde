"""Requests in RBAC terms (what PINCOMPILE_RECORD_REQUESTS records) and the matcher the RBAC
e2e test checks them with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rbac_rules import allowed, grants

from reconciler.clients.record import RECORD_ENV, AccessRequest, access_request, read_requests
from tests.support.serve import REPO_ROOT

BASE = "https://127.0.0.1:6443"


@pytest.mark.parametrize(("method", "url", "want"), [
    ("GET", "/apis/apps/v1/namespaces/shop/deployments?labelSelector=x",
     AccessRequest("c", "list", "apps", "deployments", namespace="shop")),
    ("GET", "/apis/apps/v1/deployments?watch=true&resourceVersion=5",
     AccessRequest("c", "watch", "apps", "deployments")),
    ("GET", "/api/v1/namespaces/shop/pods/p1",
     AccessRequest("c", "get", "", "pods", namespace="shop", name="p1")),
    ("PATCH", "/apis/apps/v1/namespaces/shop/deployments/api?dryRun=All&fieldManager=p",
     AccessRequest("c", "patch", "apps", "deployments", namespace="shop", name="api",
                   dry_run=True)),
    ("PATCH", "/apis/pincompute.io/v1/namespaces/shop/pinapps/api/status",
     AccessRequest("c", "patch", "pincompute.io", "pinapps", "status", "shop", "api")),
    ("POST", "/api/v1/namespaces/shop/events",
     AccessRequest("c", "create", "", "events", namespace="shop")),
    ("DELETE", "/api/v1/namespaces/shop/configmaps",
     AccessRequest("c", "deletecollection", "", "configmaps", namespace="shop")),
    ("PATCH", "/api/v1/namespaces/shop",
     AccessRequest("c", "patch", "", "namespaces", namespace="shop", name="shop")),
    ("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
     AccessRequest("c", "update", "coordination.k8s.io", "leases", namespace="ns", name="l")),
    ("GET", "/apis/apps/v1", AccessRequest("c", "get", path="/apis/apps/v1")),
    ("GET", "/version", AccessRequest("c", "get", path="/version")),
])
def test_requests_are_described_as_the_authorizer_sees_them(
        method: str, url: str, want: AccessRequest) -> None:
    assert access_request("c", method, BASE + url) == want


def test_recording_appends_one_json_line_per_request(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes import client

    from reconciler.clients.record import record_requests

    target = tmp_path / "requests.jsonl"
    monkeypatch.setenv(RECORD_ENV, str(target))
    api = client.ApiClient()
    api.rest_client.request = lambda method, url, *a, **k: (method, url)  # type: ignore
    record_requests(api, "host")
    assert api.rest_client.request("GET", BASE + "/api/v1/namespaces") == (
        "GET", BASE + "/api/v1/namespaces")
    assert read_requests(str(target)) == [AccessRequest("host", "list", "", "namespaces")]
    assert json.loads(target.read_text())["cluster"] == "host"


def test_the_shipped_rbac_allows_what_serve_needs_and_nothing_broader() -> None:
    host, member = grants("rbac-host.yaml"), grants("rbac-member.yaml")
    lease = AccessRequest("host", "patch", "coordination.k8s.io", "leases",
                          namespace="pincompile-serve", name="pincompile-serve")
    assert allowed(host, lease)
    assert not allowed(host, AccessRequest("host", "patch", "coordination.k8s.io", "leases",
                                           namespace="kube-system", name="kube-scheduler"))
    status = AccessRequest("host", "patch", "pincompute.io", "pinapps", "status", "shop", "a")
    assert allowed(host, status)
    assert not allowed(host, AccessRequest("host", "delete", "", "namespaces", name="shop",
                                           namespace="shop"))
    assert not allowed(host, AccessRequest("host", "list", "", "secrets"))
    for verb in ("get", "list", "watch", "create", "patch", "delete"):  # no kind makes one
        assert not allowed(member, AccessRequest("rt-a", verb, "", "secrets", namespace="shop"))
    assert allowed(member, AccessRequest("rt-a", "watch", "apps", "deployments"))
    assert allowed(member, AccessRequest("rt-a", "bind", "rbac.authorization.k8s.io",
                                         "clusterroles", name="view"))
    assert not allowed(member, AccessRequest("rt-a", "bind", "rbac.authorization.k8s.io",
                                             "clusterroles", name="cluster-admin"))
    assert not allowed(member, AccessRequest("rt-a", "delete", "", "namespaces", name="shop",
                                             namespace="shop"))
    # the API's exec sessions and port-forwards (GET .../exec, .../portforward); attaching
    # is not granted
    for subresource in ("exec", "portforward"):
        assert allowed(member, AccessRequest("rt-a", "create", "", "pods", subresource,
                                             "shop", "p"))
    assert not allowed(member, AccessRequest("rt-a", "create", "", "pods", "attach",
                                             "shop", "p"))
    assert allowed(member, AccessRequest("rt-a", "get", path="/apis/apps/v1"))
    # the app of a ReplicaSet an Event names, by its labels: read one, never list them
    assert allowed(member, AccessRequest("rt-a", "get", "apps", "replicasets",
                                         namespace="shop", name="web-7d9"))
    for verb in ("list", "watch", "patch", "delete"):
        assert not allowed(member, AccessRequest("rt-a", verb, "apps", "replicasets",
                                                 namespace="shop"))


def _plural(kind: str) -> str:
    lower = kind.lower()
    return lower + "es" if lower.endswith("s") else (
        lower[:-1] + "ies" if lower.endswith("y") else lower + "s")


def test_the_member_role_grants_exactly_the_kinds_the_compiler_produces() -> None:
    """A kind no spec produces is neither managed (watched, listed, pruned) nor granted:
    no Secrets, ServiceAccounts, Roles or StatefulSets."""
    from pincompile.compiler import compile_path
    from reconciler.kinds import MANAGED_KINDS

    result = compile_path(REPO_ROOT / "examples")
    assert result.ok
    produced = {(m.obj["apiVersion"].rpartition("/")[0], m.obj["kind"])
                for m in result.manifests}
    managed = {(k.group, k.kind) for k in MANAGED_KINDS}
    assert managed == produced
    member = grants("rbac-member.yaml")
    granted = {(group, resource) for g in member if "watch" in g.rule["verbs"]
               for group in g.rule["apiGroups"] for resource in g.rule["resources"]}
    # and the Events of the apps' objects, which the API's insight store keeps, and the
    # nodes, whose capacity the API reports (read only)
    assert granted == {(group, _plural(kind)) for group, kind in managed} | {
        ("", "events"), ("", "nodes")}
    for group, resource in (("", "secrets"), ("", "serviceaccounts"),
                            ("rbac.authorization.k8s.io", "roles"), ("apps", "statefulsets")):
        assert not allowed(member, AccessRequest("rt-a", "list", group, resource))
