"""Member-cluster objects as the API server returns them, and a fixed insight source."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reconciler.insight.records import Reading, lean_node, lean_pod, reading_of
from reconciler.model import Obj


def node(name: str, cpu: str = "8", memory: str = "32Gi", *, pool: str = "general",
         tiers: Iterable[str] = ("reserved", "ondemand", "preemptible"),
         ready: bool = True) -> Obj:
    labels = {"pincompute.io/node-pool": pool, **{f"pincompute.io/tier-{t}": "true"
                                                   for t in tiers}}
    amounts = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "managedFields": ["noise"]},
            "status": {"capacity": amounts, "allocatable": amounts,
                       "conditions": [{"type": "Ready", "status": str(ready)},
                                      {"type": "MemoryPressure", "status": "False"}]}}


def pod(name: str, namespace: str, *, cpu: str = "1", memory: str = "1Gi", node: str = "n1",
        tier: str | None = "reserved", app: str | None = "web", phase: str = "Running",
        init: list[dict[str, Any]] | None = None) -> Obj:
    labels = ({"pincompute.io/kind": "PinApp", "pincompute.io/project": namespace,
               "pincompute.io/app": app} if app else {})
    spec: dict[str, Any] = {"nodeName": node, "containers": [
        {"name": "main", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if tier:
        spec["priorityClassName"] = f"pincompute-{tier}"
    if init:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec, "status": {"phase": phase}}


def quota(namespace: str, tier: str, hard_cpu: str, used_cpu: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": f"pincompute-{tier}", "namespace": namespace,
                         "labels": {"pincompute.io/project": namespace}},
            "spec": {"hard": {"requests.cpu": hard_cpu, "pods": "100"}},
            "status": {"used": {"requests.cpu": used_cpu, "pods": "2"}}}


def metrics(namespace: str, name: str, cpu: str, memory: str) -> Obj:
    return {"metadata": {"namespace": namespace, "name": name},
            "containers": [{"name": "main", "usage": {"cpu": cpu, "memory": memory}}]}


def reading(cluster: str, nodes: list[Obj], pods: list[Obj], quotas: tuple[Obj, ...] = (),
            usage: list[Obj] | None = None, at: float = 1_800_000_000.0) -> Reading:
    lean = [kept for p in pods if (kept := lean_pod(p)) is not None]
    return reading_of(cluster, at, [lean_node(n) for n in nodes], lean, quotas, usage)


def cluster_cr(name: str, zone: str = "za", failover: dict[str, Any] | None = None) -> Obj:
    return {"apiVersion": "pincompute.io/v1", "kind": "Cluster",
            "metadata": {"name": name},
            "spec": {"region": "r1", "zone": zone, "capacity": {"cpu": "16", "memory": "64Gi"}},
            "status": {"failover": failover} if failover else {}}


def project_cr(name: str, quota: dict[str, Any], namespace: str | None = None) -> Obj:
    spec: dict[str, Any] = {"owners": [f"team-{name}"], "quota": quota}
    if namespace:
        spec["namespace"] = namespace
    return {"apiVersion": "pincompute.io/v1", "kind": "Project", "metadata": {"name": name},
            "spec": spec}


class FixedInsight:
    """Projects, clusters and readings given; counts the readings asked for."""

    def __init__(self, projects: list[Obj], clusters: list[Obj],
                 readings: dict[str, Reading]) -> None:
        self._projects, self._clusters, self._readings = projects, clusters, readings
        self.asked: list[str] = []

    def projects(self) -> list[Obj]:
        return self._projects

    def clusters(self) -> list[Obj]:
        return self._clusters

    def readings(self, names: Iterable[str]) -> dict[str, Reading]:
        wanted = list(names)
        self.asked += wanted
        return {n: self._readings[n] for n in wanted if n in self._readings}
