"""An app's objects in every member cluster it is placed in, each with its health (the
reconciler's rules), read when asked: one LIST per kind an app may be made of and
cluster, with the app's labels as selector, in the project's namespace (objects a
controller made, such as a Deployment's pods, are the pods route's)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

from kubernetes.dynamic.exceptions import ResourceNotFoundError

from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT
from reconciler.clients.access import ClusterAccess
from reconciler.clients.connect import Connection
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.health import assess
from reconciler.host import API_VERSION
from reconciler.kinds import MANAGED_KINDS, KindInfo
from reconciler.model import AppKey, Obj

from .models import AppObject, ClusterProblem, ObjectList

PLATFORM_KINDS = frozenset({"ResourceQuota", "LimitRange", "NetworkPolicy", "RoleBinding"})
"""A project's objects, no app's."""
APP_OBJECT_KINDS = tuple((k.api_version, k.kind) for k in MANAGED_KINDS
                         if k.namespaced and k.kind not in PLATFORM_KINDS)
"""The kinds an app's objects may be of."""
TRAINING_GROUP = "kubeflow.org/"

Members = Callable[[Iterable[str]], Mapping[str, Connection | str]]


def project_namespace(host: ClusterAccess, project: str) -> str:
    """The namespace of ``project``'s objects in the member clusters: its Project's
    ``spec.namespace``, the project's name by default (or when the host cannot say)."""
    try:
        found = host.get({"apiVersion": API_VERSION, "kind": "Project",
                          "metadata": {"name": project}})
    except CLUSTER_ERRORS:
        found = None
    return str(((found or {}).get("spec") or {}).get("namespace") or project)


def list_in(conn: ClusterAccess, api_version: str, kind: str, namespace: str, *,
            label_selector: str | None = None, field_selector: str | None = None,
            limit: int | None = None) -> list[Obj]:
    """One LIST in ``namespace``, the items as plain dicts with their kind."""
    return conn.list(KindInfo(api_version, kind), namespace=namespace,
                     label_selector=label_selector, field_selector=field_selector,
                     limit=limit)["items"]


def app_objects(members: Members, app: AppKey, clusters: Iterable[str], namespace: str
                ) -> ObjectList:
    """``app``'s objects in ``clusters``, sorted by cluster, kind and name, each with its
    health; the clusters that could not be read."""
    selector = f"{LABEL_KIND}={app[0]},{LABEL_PROJECT}={app[1]},{LABEL_APP}={app[2]}"
    found = members(sorted(set(clusters)))
    reads = [(cluster, api_version, kind) for cluster, conn in found.items()
             if not isinstance(conn, str) for api_version, kind in kinds_of(app[0])]

    def one(read: tuple[str, str, str]) -> list[AppObject] | str:
        cluster, api_version, kind = read
        conn = found[cluster]
        assert not isinstance(conn, str)
        try:
            items = list_in(conn, api_version, kind, namespace, label_selector=selector)
        except ResourceNotFoundError:
            return []  # a kind this cluster does not serve (the kubeflow kinds)
        except CLUSTER_ERRORS as exc:
            return explain(exc)
        return [object_health(cluster, obj) for obj in items
                if not (obj.get("metadata") or {}).get("ownerReferences")]

    items: list[AppObject] = []
    problems = {c: why for c, why in found.items() if isinstance(why, str)}
    with ThreadPoolExecutor(max_workers=8) as pool:
        for (cluster, _, _), answer in zip(reads, pool.map(one, reads), strict=True):
            if isinstance(answer, str):
                problems.setdefault(cluster, answer)
            else:
                items += answer
    items.sort(key=lambda o: (o.cluster, o.kind, o.name))
    return ObjectList(items=items, unreadable=[ClusterProblem(cluster=c, message=why)
                                               for c, why in sorted(problems.items())])


def kinds_of(app_kind: str) -> list[tuple[str, str]]:
    """The kinds an app of ``app_kind`` may be made of: the training operator's only for a
    training job (a cluster without them answers a lookup with a fresh discovery)."""
    return [(v, k) for v, k in APP_OBJECT_KINDS if not v.startswith(TRAINING_GROUP)
            or app_kind == "PinterestTrainingJob"]


def object_health(cluster: str, obj: Obj) -> AppObject:
    """One object and its health by the reconciler's rule for its kind."""
    meta = obj.get("metadata") or {}
    health = assess(obj)
    return AppObject(cluster=cluster, kind=str(obj.get("kind")),
                     namespace=str(meta.get("namespace") or ""), name=str(meta.get("name")),
                     phase=str(health.phase), message=health.message,
                     created=str(meta.get("creationTimestamp") or ""))
