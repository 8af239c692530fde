"""Controllers for the in-memory cluster (:mod:`tests.support.kube_fake`): after each write
of a workload they write its status as the real controllers would once done — a
Deployment rolled out, a Job complete, a Pod running and Ready, a claim bound, an HPA
assessed — unless its image is one that :class:`Controllers` is told never becomes
Ready (then a Deployment's new pods stay unavailable, as on the fleet)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reconciler.model import Obj
from tests.support.kube_fake import FakeCluster

MANAGER = "kube-controller-manager"


def _images(obj: Obj) -> list[str]:
    spec = obj.get("spec") or {}
    pod = (spec.get("template") or {}).get("spec") or spec
    return [str(c.get("image", "")) for c in (pod.get("containers") or [])]


def _condition(kind: str, status: str = "True", reason: str = "", message: str = ""
               ) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason or kind, "message": message}


def _deployment(obj: Obj, ready: bool) -> dict[str, Any]:
    replicas = int((obj.get("spec") or {}).get("replicas", 1))
    available = replicas if ready else 0
    return {"observedGeneration": obj["metadata"].get("generation", 1), "replicas": replicas,
            "updatedReplicas": replicas, "readyReplicas": available,
            "availableReplicas": available,
            "conditions": [_condition("Available", "True" if ready else "False",
                                      "MinimumReplicasAvailable"),
                           _condition("Progressing", reason="NewReplicaSetAvailable"
                                      if ready else "ReplicaSetUpdated")]}


def _job(obj: Obj, ready: bool) -> dict[str, Any]:
    if not ready:
        return {"active": int((obj.get("spec") or {}).get("parallelism", 1))}
    done = int((obj.get("spec") or {}).get("completions", 1))
    return {"succeeded": done, "conditions": [_condition("SuccessCriteriaMet"),
                                              _condition("Complete")]}


def _pod(obj: Obj, ready: bool) -> dict[str, Any]:
    statuses = [{"name": c.get("name"), "image": c.get("image"), "ready": ready,
                 "state": {"running": {}} if ready else {"waiting": {"reason": "Pending"}}}
                for c in (obj.get("spec") or {}).get("containers") or []]
    return {"phase": "Running" if ready else "Pending", "containerStatuses": statuses,
            "conditions": [_condition("Ready", "True" if ready else "False")]}


def _daemonset(obj: Obj, ready: bool) -> dict[str, Any]:
    nodes = 2
    return {"observedGeneration": obj["metadata"].get("generation", 1),
            "desiredNumberScheduled": nodes, "updatedNumberScheduled": nodes,
            "numberAvailable": nodes if ready else 0}


def _hpa(obj: Obj, _ready: bool) -> dict[str, Any]:
    floor = int((obj.get("spec") or {}).get("minReplicas", 1))
    return {"currentReplicas": floor, "desiredReplicas": floor,
            "conditions": [_condition("AbleToScale", reason="ReadyForNewScale"),
                           _condition("ScalingActive", reason="ValidMetricFound")]}


def _pdb(obj: Obj, _ready: bool) -> dict[str, Any]:
    return {"observedGeneration": obj["metadata"].get("generation", 1), "currentHealthy": 1,
            "desiredHealthy": 1, "expectedPods": 1, "disruptionsAllowed": 0}


STATUS: dict[str, Callable[[Obj, bool], dict[str, Any]]] = {
    "Deployment": _deployment, "Job": _job, "Pod": _pod, "DaemonSet": _daemonset,
    "HorizontalPodAutoscaler": _hpa, "PodDisruptionBudget": _pdb,
    "PersistentVolumeClaim": lambda _o, _r: {"phase": "Bound"},
    "Namespace": lambda _o, _r: {"phase": "Active"},
}


@dataclass
class Controllers:
    """Writes each workload's status after a write to it (add with :meth:`install`)."""

    never_ready: set[str] = field(default_factory=set)
    """Image suffixes whose pods never become Ready."""
    paused: bool = False
    """While set, nothing is written (a controller that has not acted yet)."""

    def install(self, cluster: FakeCluster) -> FakeCluster:
        cluster.controllers.append(self)
        return cluster

    def __call__(self, cluster: FakeCluster, obj: Obj) -> None:
        status = STATUS.get(str(obj.get("kind")))
        if status is None or self.paused or obj["metadata"].get("deletionTimestamp"):
            return
        ready = not any(image.endswith(bad) for image in _images(obj)
                        for bad in self.never_ready)
        if obj["kind"] == "Deployment" and (obj.get("spec") or {}).get("paused"):
            return
        cluster.patch(obj, {"status": status(obj, ready)}, manager=MANAGER,
                      subresource="status")
