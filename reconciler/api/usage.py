"""What an app's pods use now against what they request, from each member cluster's
metrics API (``metrics.k8s.io``, metrics-server's): one LIST of the pods' metrics and one
of the pods (their requests) per cluster the app is placed in, with the app's labels."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes.dynamic.exceptions import ResourceNotFoundError
from kubernetes.utils.quantity import parse_quantity

from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT
from reconciler.clients.connect import Connection
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.model import AppKey, Obj

from .models import ClusterProblem, PodUsage, UsageList
from .objects import Members, list_in

METRICS = ("metrics.k8s.io/v1beta1", "PodMetrics")


def app_usage(members: Members, app: AppKey, clusters: Iterable[str], namespace: str
              ) -> UsageList:
    """Every pod of ``app`` in ``clusters``: its CPU (millicores) and memory (bytes) used
    and requested (every container's, sidecars too); a pod not measured yet has no
    usage. A cluster without a metrics API, or that cannot be read, is named."""
    selector = f"{LABEL_KIND}={app[0]},{LABEL_PROJECT}={app[1]},{LABEL_APP}={app[2]}"
    found = members(sorted(set(clusters)))

    def one(item: tuple[str, Connection | str]) -> list[PodUsage] | str:
        cluster, conn = item
        if isinstance(conn, str):
            return conn
        try:
            pods = list_in(conn, "v1", "Pod", namespace, label_selector=selector)
            used = {str(m["metadata"]["name"]): m for m in
                    list_in(conn, *METRICS, namespace, label_selector=selector)}
        except ResourceNotFoundError:
            return "no metrics API (metrics.k8s.io) in this cluster"
        except CLUSTER_ERRORS as exc:
            return explain(exc)
        return [pod_usage(cluster, pod, used.get(str(pod["metadata"]["name"])))
                for pod in pods]

    items: list[PodUsage] = []
    problems: list[ClusterProblem] = []
    with ThreadPoolExecutor(max_workers=8) as pool:
        for (cluster, _), answer in zip(found.items(), pool.map(one, found.items()),
                                        strict=True):
            if isinstance(answer, str):
                problems.append(ClusterProblem(cluster=cluster, message=answer))
            else:
                items += answer
    items.sort(key=lambda u: (u.cluster, u.name))
    return UsageList(items=items, unreadable=problems)


def pod_usage(cluster: str, pod: Obj, metrics: Mapping[str, Any] | None) -> PodUsage:
    """One pod's usage (``metrics``: its PodMetrics, None when not measured yet) and
    requests."""
    spec = pod.get("spec") or {}
    containers = [*(spec.get("containers") or []), *(c for c in spec.get("initContainers")
                                                      or [] if c.get("restartPolicy")
                                                      == "Always")]
    requests = [(c.get("resources") or {}).get("requests") or {} for c in containers]
    usage = [c.get("usage") or {} for c in (metrics or {}).get("containers") or []]
    return PodUsage(
        cluster=cluster, namespace=str(pod["metadata"].get("namespace") or ""),
        name=str(pod["metadata"]["name"]), measured=metrics is not None,
        cpu=_sum(usage, "cpu", 1000), memory=_sum(usage, "memory", 1),
        cpuRequest=_sum(requests, "cpu", 1000), memoryRequest=_sum(requests, "memory", 1))


def _sum(amounts: Iterable[Mapping[str, Any]], resource: str, scale: int) -> int:
    """The sum of ``resource`` over ``amounts`` (millicores for cpu: ``scale`` 1000)."""
    return int(sum(parse_quantity(a[resource]) * scale for a in amounts if resource in a))
