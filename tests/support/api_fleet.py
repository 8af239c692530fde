"""What the API's and the console's end-to-end modules share on the fleet: the host cluster
(with pincompile's CRDs), tenants as ServiceAccounts with a Role in a project and a token
for it, an app's resource on the host, an app's pod running in a member cluster, and an
ASGI app served by uvicorn on a port of 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn
import yaml
from kubernetes import client as k8s
from kubernetes import watch

from pincompile import crds
from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT, MANAGED_BY, MANAGED_BY_VALUE
from reconciler.clients.connect import Connection
from reconciler.fleet import fleet as fleet_mod
from reconciler.host import ensure_crds
from reconciler.model import AppKey
from tests.support.wait import wait_for

TOKEN_SECONDS = 3600
TENANT_ROLES = Path(__file__).resolve().parents[2] / "contrib/api/rbac-tenant.yaml"
"""The documented tenant roles: ``pincompute-app-debugger`` and ``pincompute-app-operator``."""


@contextlib.contextmanager
def host_cluster(fleet: fleet_mod.FleetState) -> Iterator[Connection]:
    """A connection to the fleet's host cluster, pincompile's CRDs installed."""
    conn = Connection("host", "host", str(fleet.kubeconfig))
    try:
        ensure_crds(conn)
        yield conn
    finally:
        conn.close()


def create_namespaces(host: Connection, *names: str) -> None:
    core = k8s.CoreV1Api(host.api)
    for name in names:
        core.create_namespace({"metadata": {"name": name}})


def tenant_rules(*roles: str) -> list[dict[str, Any]]:
    """The rules of the ClusterRoles ``roles`` of :data:`TENANT_ROLES`."""
    found = {doc["metadata"]["name"]: doc["rules"]
             for doc in yaml.safe_load_all(TENANT_ROLES.read_text())
             if doc and doc.get("kind") == "ClusterRole"}
    return [rule for role in roles for rule in found[role]]


def tenant_token(host: Connection, tenants: str, user: str, project: str,
                 rules: list[dict[str, Any]]) -> str:
    """A ServiceAccount ``user`` in namespace ``tenants`` bound to a Role of ``rules`` in
    ``project``; a token of it (an hour)."""
    core, rbac = k8s.CoreV1Api(host.api), k8s.RbacAuthorizationV1Api(host.api)
    with contextlib.suppress(k8s.ApiException):  # a second project's grant: it exists
        core.create_namespaced_service_account(tenants, {"metadata": {"name": user}})
    rbac.create_namespaced_role(project, {"metadata": {"name": f"{user}-role"},
                                          "rules": rules})
    rbac.create_namespaced_role_binding(project, {
        "metadata": {"name": f"{user}-binding"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": f"{user}-role"},
        "subjects": [{"kind": "ServiceAccount", "name": user, "namespace": tenants}]})
    request = core.create_namespaced_service_account_token(
        user, tenants, {"spec": {"expirationSeconds": TOKEN_SECONDS}})
    return str(request.status.token)


def pin_app(project: str, name: str, *, replicas: int = 1,
            labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A PinApp's resource on the host as a pass writes it (one container ``main``)."""
    cr = crds.custom_resource({
        "apiVersion": "pincompute.io/v1", "kind": "PinApp",
        "metadata": {"name": name, "project": project, "labels": dict(labels or {})},
        "spec": {"replicas": replicas, "template": {"containers": [
            {"name": "main", "image": "example/app:1"}]}}})
    cr["metadata"]["labels"][MANAGED_BY] = MANAGED_BY_VALUE
    return cr


def run_app_pod(fleet: fleet_mod.FleetState, context: str, app: AppKey,
                containers: list[dict[str, Any]], timeout: int = 90) -> None:
    """A Deployment of one pod of ``app`` in member ``context`` (its namespace created),
    labelled as pincompile labels an app's pods; returns once the pod runs (watched)."""
    kind, project, name = app
    member = Connection(context, context, str(fleet.kubeconfig))
    try:
        core = k8s.CoreV1Api(member.api)
        with contextlib.suppress(k8s.ApiException):  # another app's pod made it
            core.create_namespace({"metadata": {"name": project}})
        labels = {LABEL_APP: name, LABEL_KIND: kind, LABEL_PROJECT: project}
        k8s.AppsV1Api(member.api).create_namespaced_deployment(project, {
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": containers}}}})
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        stream = watch.Watch()
        for event in stream.stream(core.list_namespaced_pod, project, label_selector=selector,
                                   timeout_seconds=timeout):
            if event["object"].status.phase == "Running":
                stream.stop()
                return
        raise AssertionError(f"no Running pod of {'/'.join(app)} in {context} "
                             f"after {timeout}s")
    finally:
        member.close()


@contextlib.contextmanager
def served_locally(app: Any, start_timeout: float = 10.0) -> Iterator[str]:
    """``app`` (ASGI) on uvicorn in a thread, on a free port of 127.0.0.1; its URL."""
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])),
                              daemon=True, name="uvicorn-e2e")
    thread.start()
    try:
        def started() -> bool:
            assert thread.is_alive(), "uvicorn ended before it started"
            return bool(server.started)

        wait_for(started, start_timeout, "uvicorn to start", interval=0.05)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()

