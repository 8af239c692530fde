"""The baseline of bench/api_bench.py: the fleet's host kube-apiserver answering GET of one
app custom resource, the best a Kubernetes API server does for "GET one object".

Starts a fleet of its own (the host and one member cluster: tests/e2e/fixtures/single,
the smallest the fleet starts), installs pincompile's CRDs, writes one resource per app
(the examples' spec of its kind, the bench's synthetic status through the status
subresource, as serve writes it), and gives a ServiceAccount token bound to cluster-admin
to the load generator. Taken down again at the end.
"""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from pincompile import crds
from pincompile.compiler import compile_path
from reconciler import host
from reconciler.clients import write
from reconciler.clients.connect import Connection
from reconciler.fleet import build
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.state import HOST

REPO = Path(__file__).resolve().parents[1]
CLUSTERS = REPO / "tests" / "e2e" / "fixtures" / "single"
ACCOUNT = "api-bench"


@dataclass
class HostServer:
    base: str
    headers: dict[str, str]
    pids: dict[str, int]
    """The processes that answer a GET: the host's kube-apiserver and etcd."""


def templates() -> dict[str, dict[str, Any]]:
    """One app resource of each kind, as serve writes it for the examples."""
    result = compile_path(REPO / "examples", revision="bench")
    out: dict[str, dict[str, Any]] = {}
    for cr in host.desired_objects(result.catalog, "bench"):
        out.setdefault(cr["kind"], cr)
    return out


def resource(template: Mapping[str, Any], key: tuple[str, str, str]) -> dict[str, Any]:
    _, project, name = key
    cr = copy.deepcopy(dict(template))
    meta = cr["metadata"]
    meta["name"], meta["namespace"] = name, project
    meta["labels"][crds.PROJECT_LABEL] = project
    return cr


def write_apps(conn: Connection, statuses: Mapping[tuple[str, str, str], Any]) -> None:
    """One resource per app, with its status."""
    kinds = templates()
    for project in sorted({key[1] for key in statuses}):
        write.apply(conn, {"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": project}})

    def one(item: tuple[tuple[str, str, str], Any]) -> None:
        key, status = item
        write.apply(conn, resource(kinds[key[0]], key))
        host.write_status(conn, key, dict(status))

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, statuses.items()))


def token(conn: Connection) -> str:
    """A bearer token of a ServiceAccount that may do anything (RBAC still evaluated)."""
    core = k8s.CoreV1Api(conn.api)
    core.create_namespaced_service_account("default", {"metadata": {"name": ACCOUNT}})
    k8s.RbacAuthorizationV1Api(conn.api).create_cluster_role_binding({
        "metadata": {"name": ACCOUNT},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": "default"}]})
    answer = core.create_namespaced_service_account_token(
        ACCOUNT, "default", {"spec": {"expirationSeconds": 3600}})
    return str(answer.status.token)


def path_of(key: tuple[str, str, str]) -> str:
    kind, project, name = key
    return (f"/apis/{crds.GROUP}/{crds.VERSION}/namespaces/{project}/"
            f"{crds.kind_info(kind).plural}/{name}")


@contextlib.contextmanager
def host_server(statuses: Mapping[tuple[str, str, str], Any]) -> Iterator[HostServer]:
    """A fleet's host kube-apiserver serving one resource per app of ``statuses``."""
    directory = build.cache_root() / f"fleet-apibench-{os.getpid()}"
    state = fleet_mod.up(CLUSTERS, directory, echo=lambda _m: None)
    try:
        runtime = next(c for c in state.clusters if c.name == HOST)
        conn = Connection(HOST, runtime.context, str(state.kubeconfig), qps=1000, burst=1000)
        host.ensure_crds(conn)
        write_apps(conn, statuses)
        pids = {p.name: p.pid for p in state.procs
                if p.name in (f"kube-apiserver[{HOST}]", "etcd")}
        yield HostServer(f"https://127.0.0.1:{runtime.port}",
                         {"Authorization": f"Bearer {token(conn)}"}, pids)
        conn.close()
    finally:
        fleet_mod.down(directory, echo=lambda _m: None)
        shutil.rmtree(directory, ignore_errors=True)
