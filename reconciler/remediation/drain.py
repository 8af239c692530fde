"""Cordon and drain one node through the Eviction API, one step at a time.

A step lists the pods bound to the node and asks the API server to evict each one that is
not already terminating: the API server refuses (429) an eviction a PodDisruptionBudget
does not allow, and the pod stays; it honours the pod's terminationGracePeriodSeconds.
Nothing here ever deletes a pod. DaemonSet pods (their controller would run them there
again) and mirror pods (the kubelet's) are left, as ``kubectl drain`` leaves them. A drain
is done when no other pod is bound to the node. Steps never wait: the caller takes the
next one on its next tick, so one stuck budget blocks nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes.dynamic.exceptions import DynamicApiError, NotFoundError

from reconciler.clients import read
from reconciler.clients.access import ClusterAccess
from reconciler.kinds import KindInfo
from reconciler.model import Obj

POD = KindInfo("v1", "Pod")
NODE = KindInfo("v1", "Node", namespaced=False)
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


@dataclass
class DrainStep:
    """What one step did and found."""

    evicted: list[Obj] = field(default_factory=list)
    """Pods the API server accepted to evict in this step."""
    blocked: list[str] = field(default_factory=list)
    """``namespace/pod: why`` for each eviction refused (a PodDisruptionBudget)."""
    remaining: int = 0
    """Pods still bound to the node (terminating ones included), DaemonSet pods aside."""

    @property
    def done(self) -> bool:
        return self.remaining == 0


def evictable(pod: Mapping[str, Any]) -> bool:
    """Whether a drain moves this pod: not a DaemonSet's, not a mirror pod, not ended."""
    meta = pod.get("metadata") or {}
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return False
    if any(ref.get("kind") == "DaemonSet" for ref in meta.get("ownerReferences") or []):
        return False
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def pods_on(conn: ClusterAccess, node: str) -> list[Obj]:
    """The pods bound to ``node`` that a drain moves (one LIST)."""
    found, _ = read.list_managed(conn, POD, field_selector=f"spec.nodeName={node}")
    return [pod for pod in found.values() if evictable(pod)]


def cordon(conn: ClusterAccess, node: str, annotations: Mapping[str, str | None]) -> Obj:
    """Mark ``node`` unschedulable, with ``annotations`` (None removes one); the Node."""
    return patch(conn, node, unschedulable=True, annotations=annotations)


def patch(conn: ClusterAccess, node: str, *, unschedulable: bool | None = None,
          annotations: Mapping[str, str | None] | None = None) -> Obj:
    """A merge patch of the Node (``spec.unschedulable``, annotations); the Node after."""
    body: dict[str, Any] = {}
    if unschedulable is not None:
        body["spec"] = {"unschedulable": unschedulable or None}
    if annotations:
        body["metadata"] = {"annotations": dict(annotations)}
    return conn.patch(node_ref(node), body)


def evict(conn: ClusterAccess, pod: Mapping[str, Any]) -> str | None:
    """Ask the API server to evict ``pod``; None when accepted (or gone already), else
    why not (a PodDisruptionBudget: 429)."""
    meta = pod["metadata"]
    body = {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]}}
    try:
        conn.create(body, subresource="eviction", of=POD)
    except NotFoundError:
        return None
    except DynamicApiError as exc:
        if exc.status in (429, 500):  # 500: more than one budget selects the pod
            return str(exc.summary())
        raise
    return None


def drain_step(conn: ClusterAccess, node: str, *, pods: Sequence[Obj] | None = None
               ) -> DrainStep:
    """Evict every pod on ``node`` that is not terminating yet (``pods``: as just
    listed); how far the drain is."""
    step = DrainStep()
    for pod in pods if pods is not None else pods_on(conn, node):
        step.remaining += 1
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            continue
        why = evict(conn, pod)
        if why is None:
            step.evicted.append(pod)
        else:
            step.blocked.append(f"{meta['namespace']}/{meta['name']}: {why}")
    return step


def delete_node(conn: ClusterAccess, node: str) -> bool:
    """Delete the Node (its machine goes back to the provider); False if it was gone."""
    return conn.delete(node_ref(node))


def node_ref(node: str) -> Obj:
    """The Node named ``node``, as the cluster's verbs name an object."""
    return {"apiVersion": NODE.api_version, "kind": NODE.kind, "metadata": {"name": node}}
