"""A member cluster in memory for the remediation and rotation controllers' unit tests:
nodes, the pods of Deployments, PodDisruptionBudgets that refuse an eviction the way the
API server's Eviction API does, a scheduler and a machine provider — and the I/O
functions of :mod:`reconciler.remediation.drain` and :mod:`reconciler.rotation.apps`
answered from it (``install``)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from reconciler.clock import iso_time, parse_time
from reconciler.remediation import drain
from reconciler.remediation.controller import Member
from reconciler.remediation.nodes import POOL_LABEL, POOL_VERSION_LABEL, ZONE_LABEL, lean_node
from reconciler.rotation import apps

STAMP = "2027-01-15T08:00:00Z"


class Clock:
    """A clock a test moves: ``after`` seconds past :data:`STAMP` at first."""

    def __init__(self, after: float) -> None:
        self.now = (parse_time(STAMP) or 0.0) + after

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeWatch:
    """What a Member reads of its node watch."""

    objects: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    synced: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Recorded:
    """What a Recorder was told."""

    nodes: list[tuple[str, str, str]] = field(default_factory=list)
    """(node, reason, message)"""
    clusters: list[tuple[str, str]] = field(default_factory=list)
    moves: list[tuple[str, str, str]] = field(default_factory=list)
    """(node, pod, why)"""

    def node(self, _conn: Any, _cluster: str, node: str, reason: str, message: str,
             **_: Any) -> None:
        self.nodes.append((node, reason, message))

    def cluster(self, _cluster: str, reason: str, message: str, **_: Any) -> None:
        self.clusters.append((reason, message))

    def moved(self, _cluster: str, node: str, pod: Mapping[str, Any], why: str) -> None:
        self.moves.append((node, pod["metadata"]["name"], why))

    def reasons(self, node: str | None = None) -> list[str]:
        return [r for n, r, _ in self.nodes if node is None or n == node]


class FakeCluster:
    """Nodes (``node-i``), the pods of Deployments spread over them (``crowd``: all on
    ``node-0``), budgets of
    ``maxUnavailable`` per app, a scheduler that places a replaced pod on the least busy
    schedulable node and makes it Ready at the next :meth:`settle`, and a provider that
    brings up a node of the same pool for each one deleted (``replace``)."""

    def __init__(self, nodes: int, apps: Mapping[str, int], *, zone: str = "z",
                 budget: int = 1, version: str = "v2", crowd: bool = False,
                 clock: Callable[[], float] | None = None) -> None:
        self.clock = clock
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.budget, self.version, self.zone = budget, version, zone
        self.deleted: list[str] = []
        self.replace = True
        self.evictions = 0
        self._names = itertools.count(1)
        for index in range(nodes):
            self.add_node(f"node-{index}")
        names = sorted(self.nodes)
        for app, replicas in apps.items():
            for index in range(replicas):
                self._pod(app, names[0 if crowd else index % len(names)], ready=True)
        self.watch = FakeWatch()
        self.watch.synced.set()
        self.sync()
        self.member = Member("c1", conn=None, nodes=self.watch)  # type: ignore[arg-type]

    # -- the cluster ------------------------------------------------------------------------
    def add_node(self, name: str, version: str = "v1") -> None:
        self.nodes[name] = {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "uid": f"uid-{name}", "resourceVersion": "1",
            "creationTimestamp": iso_time(self.clock()) if self.clock else STAMP,
            "labels": {ZONE_LABEL: self.zone, POOL_LABEL: "general",
                       POOL_VERSION_LABEL: version}, "annotations": {}},
            "spec": {}, "status": {"conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": STAMP}]}}

    def condition(self, name: str, kind: str, status: str, since: str = STAMP) -> None:
        conditions = [c for c in self.nodes[name]["status"]["conditions"] if c["type"] != kind]
        self.nodes[name]["status"]["conditions"] = [
            *conditions, {"type": kind, "status": status, "lastTransitionTime": since}]
        self.sync()

    def _pod(self, app: str, node: str, ready: bool) -> None:
        name = f"{app}-{next(self._names)}"
        self.pods[name] = {"metadata": {
            "name": name, "namespace": "shop", "labels": {
                "pincompute.io/app": app, "pincompute.io/kind": "PinApp",
                "pincompute.io/project": "shop", "pod-template-hash": "abc"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": f"{app}-abc"}]},
            "spec": {"nodeName": node}, "status": {"phase": "Running", "ready": ready}}

    def ready(self, app: str) -> int:
        return sum(1 for p in self.pods.values() if p["metadata"]["labels"]["pincompute.io/app"]
                   == app and p["status"]["ready"] and "deletionTimestamp" not in p["metadata"])

    def on(self, node: str) -> list[str]:
        return sorted(n for n, p in self.pods.items() if p["spec"]["nodeName"] == node)

    def settle(self) -> None:
        """Terminating pods go; a new pod of their app starts on the least busy schedulable
        node (Ready now); replacements of deleted nodes come up."""
        for name, pod in list(self.pods.items()):
            if "deletionTimestamp" in pod["metadata"]:
                del self.pods[name]
                app = pod["metadata"]["labels"]["pincompute.io/app"]
                open_nodes = [n for n, o in self.nodes.items() if not o["spec"].get(
                    "unschedulable")]
                target = min(open_nodes, key=lambda n: (len(self.on(n)), n))
                self._pod(app, target, ready=True)
        self.sync()

    def sync(self) -> None:
        with self.watch.lock:
            self.watch.objects = {("Node", "", n): lean_node(o) for n, o in self.nodes.items()}

    # -- what drain and apps ask ------------------------------------------------------------
    def pods_on(self, _conn: Any, node: str) -> list[Any]:
        return [self.pods[n] for n in self.on(node)]

    def patch(self, _conn: Any, node: str, *, unschedulable: bool | None = None,
              annotations: Mapping[str, str | None] | None = None) -> dict[str, Any]:
        obj = self.nodes[node]
        if unschedulable is not None:
            obj["spec"]["unschedulable"] = bool(unschedulable)
        for key, value in (annotations or {}).items():
            if value is None:
                obj["metadata"]["annotations"].pop(key, None)
            else:
                obj["metadata"]["annotations"][key] = value
        version = int(obj["metadata"]["resourceVersion"]) + 1
        obj["metadata"]["resourceVersion"] = str(version)
        return obj

    def cordon(self, conn: Any, node: str, annotations: Mapping[str, str | None]
               ) -> dict[str, Any]:
        return self.patch(conn, node, unschedulable=True, annotations=annotations)

    def evict(self, _conn: Any, pod: Mapping[str, Any]) -> str | None:
        app = pod["metadata"]["labels"]["pincompute.io/app"]
        replicas = sum(1 for p in self.pods.values()
                       if p["metadata"]["labels"]["pincompute.io/app"] == app)
        if replicas - self.ready(app) >= self.budget:
            return "Cannot evict pod as it would violate the pod's disruption budget."
        self.pods[pod["metadata"]["name"]]["metadata"]["deletionTimestamp"] = STAMP
        self.evictions += 1
        return None

    def delete_node(self, _conn: Any, node: str) -> bool:
        if self.nodes.pop(node, None) is None:
            return False
        self.deleted.append(node)
        if self.replace:
            self.add_node(f"node-{self.version}-{next(self._names)}", self.version)
        self.sync()
        return True

    def budgets(self, _conn: Any) -> list[Any]:
        apps_ = {p["metadata"]["labels"]["pincompute.io/app"] for p in self.pods.values()}
        found = []
        for app in sorted(apps_):
            replicas = sum(1 for p in self.pods.values()
                           if p["metadata"]["labels"]["pincompute.io/app"] == app)
            allowed = max(0, self.budget - (replicas - self.ready(app)))
            found.append({"metadata": {"name": app, "namespace": "shop"},
                          "spec": {"selector": {"matchLabels": {"pincompute.io/app": app}}},
                          "status": {"disruptionsAllowed": allowed,
                                     "currentHealthy": self.ready(app),
                                     "desiredHealthy": replicas - self.budget}})
        return found

    def not_back(self, _conn: Any, affected: Any) -> list[str]:
        waiting = []
        for ref in sorted(set(affected)):
            app = ref.rsplit("/", 1)[1]
            replicas = sum(1 for p in self.pods.values()
                           if p["metadata"]["labels"]["pincompute.io/app"] == app)
            if self.ready(app) < replicas:
                waiting.append(f"{ref} {self.ready(app)}/{replicas} Ready")
        return waiting

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
        for name in ("pods_on", "patch", "cordon", "evict", "delete_node"):
            monkeypatch.setattr(drain, name, getattr(self, name))
        monkeypatch.setattr(apps, "budgets", self.budgets)
        monkeypatch.setattr(apps, "not_back", self.not_back)
        return self
