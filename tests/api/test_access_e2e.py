"""The gateway against the fleet's real host API server: a service account's token is
checked with TokenReview, every call with SubjectAccessReview under the host's RBAC, and
app status comes from a watch, so warm reads make no request."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kubernetes import client as k8s

from pincompile import crds
from pincompile.manifest import MANAGED_BY, MANAGED_BY_VALUE
from reconciler.api.access import HostAccess, RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.sources import HostApps
from reconciler.clients.connect import Connection
from reconciler.fleet import fleet as fleet_mod
from reconciler.host import ensure_crds, write_status
from reconciler.store import Store

pytestmark = pytest.mark.e2e
TENANTS = "api-e2e-tenants"


def pin_app(project: str, name: str) -> dict[str, Any]:
    cr = crds.custom_resource({
        "apiVersion": "pincompute.io/v1", "kind": "PinApp",
        "metadata": {"name": name, "project": project},
        "spec": {"replicas": 1, "template": {"containers": [{"name": "main",
                                                             "image": "example/app:1"}]}}})
    cr["metadata"]["labels"][MANAGED_BY] = MANAGED_BY_VALUE
    return cr


def ready(phase: str) -> dict[str, Any]:
    return {"phase": phase, "ready": "1/1", "replicas": 1, "readyReplicas": 1,
            "clusters": [{"name": "east", "phase": phase, "replicas": 1, "readyReplicas": 1}]}


@pytest.fixture(scope="module")
def host(fleet: fleet_mod.FleetState) -> Iterator[Connection]:
    conn = Connection("host", "host", str(fleet.kubeconfig))
    ensure_crds(conn)
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def alice_token(host: Connection) -> str:
    """Service account ``alice`` may get and list PinApps in project ``api-shop`` only."""
    core, rbac = k8s.CoreV1Api(host.api), k8s.RbacAuthorizationV1Api(host.api)
    for ns in (TENANTS, "api-shop", "api-ads"):
        core.create_namespace({"metadata": {"name": ns}})
    core.create_namespaced_service_account(TENANTS, {"metadata": {"name": "alice"}})
    rbac.create_namespaced_role("api-shop", {
        "metadata": {"name": "app-reader"},
        "rules": [{"apiGroups": ["pincompute.io"], "resources": ["pinapps"],
                   "verbs": ["get", "list"]}]})
    rbac.create_namespaced_role_binding("api-shop", {
        "metadata": {"name": "alice-reads"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "app-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "alice", "namespace": TENANTS}]})
    request = core.create_namespaced_service_account_token(
        "alice", TENANTS, {"spec": {"expirationSeconds": 3600}})
    return str(request.status.token)


def test_a_tenant_sees_and_reads_only_its_project_from_a_warm_cache(
        host: Connection, alice_token: str, tmp_path: Path) -> None:
    custom = k8s.CustomObjectsApi(host.api)
    for project, name in (("api-shop", "web"), ("api-ads", "secret")):
        custom.create_namespaced_custom_object("pincompute.io", "v1", project, "pinapps",
                                               pin_app(project, name))
        write_status(host, ("PinApp", project, name), ready("Healthy"))
    apps = HostApps(host)
    store = Store.open(f"sqlite:///{tmp_path / 'insight.db'}")
    try:
        apps.wait_synced()
        client = TestClient(create_app(Gateway(apps=apps, store=store,
                                               access=HostAccess(host, ttl=30),
                                               limits=RateLimits(100, 100))))
        auth = {"Authorization": f"Bearer {alice_token}"}
        listed = client.get("/api/v1/apps", headers=auth).json()["items"]
        assert [(a["project"], a["name"]) for a in listed if a["project"].startswith("api-")] \
            == [("api-shop", "web")]
        assert client.get("/api/v1/apps/PinApp/api-ads/secret", headers=auth).status_code == 403
        assert client.get("/api/v1/apps", headers={"Authorization": "Bearer forged"}
                          ).status_code == 401

        write_status(host, ("PinApp", "api-shop", "web"), ready("Degraded"))
        deadline = time.monotonic() + 10
        while client.get("/api/v1/apps/PinApp/api-shop/web", headers=auth
                         ).json()["phase"] != "Degraded":
            assert time.monotonic() < deadline, "the watch did not bring the new status"
            time.sleep(0.2)

        before = sum(host.stats.by_verb.values())
        for _ in range(20):
            assert client.get("/api/v1/apps/PinApp/api-shop/web", headers=auth
                              ).status_code == 200
        assert sum(host.stats.by_verb.values()) == before, "warm reads went to the host"
    finally:
        apps.close()
        store.close()
