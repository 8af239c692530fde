"""A member cluster's Node as remediation and rotation read it, and the marks they leave
on it.

A node remediation acts on carries :data:`REMEDIATION_ANNOTATION` (JSON: the action,
how far it got, when and why), so the next leader knows what is under way and which
nodes it may make schedulable again; a node a rotation replaces carries
:data:`ROTATION_ANNOTATION` (the rotation's id), and remediation leaves it alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.clock import parse_time

REMEDIATION_ANNOTATION = "pincompute.io/remediation"
ROTATION_ANNOTATION = "pincompute.io/rotation"
ZONE_LABEL = "topology.kubernetes.io/zone"
POOL_LABEL = "pincompute.io/node-pool"
POOL_VERSION_LABEL = "pincompute.io/pool-version"
EVERY_NODE = "kubernetes.io/os"
"""A label every kubelet sets: the node watch's selector (a watch must name one)."""
STRENGTH = {"": 0, "cordon": 1, "drain": 2, "terminate": 3}
"""Actions in escalating order: a stronger signal takes a node further."""


@dataclass(frozen=True)
class Mark:
    """What remediation did to a node (its :data:`REMEDIATION_ANNOTATION`)."""

    action: str
    """cordon, drain or terminate."""
    phase: str
    """cordoned, draining or drained."""
    at: float
    """When the action started (epoch seconds)."""
    signal: str = ""
    was_unschedulable: bool = False
    """Cordoned by someone else before: never made schedulable again by remediation."""

    def to_json(self) -> str:
        return json.dumps({"action": self.action, "phase": self.phase, "at": self.at,
                           "signal": self.signal, "wasUnschedulable": self.was_unschedulable},
                          sort_keys=True)


def parse_mark(text: str | None) -> Mark | None:
    """The mark in an annotation's value (None: none, or not one remediation wrote)."""
    if not text:
        return None
    try:
        data = json.loads(text)
        return Mark(action=str(data["action"]), phase=str(data["phase"]),
                    at=float(data["at"]), signal=str(data.get("signal") or ""),
                    was_unschedulable=bool(data.get("wasUnschedulable")))
    except (ValueError, TypeError, KeyError):
        return None


@dataclass(frozen=True)
class NodeView:
    """What the decisions read of a Node."""

    name: str
    zone: str = ""
    pool: str = ""
    unschedulable: bool = False
    conditions: Mapping[str, tuple[str, float | None]] = field(default_factory=dict)
    """Condition type → (status, lastTransitionTime in epoch seconds)."""
    annotations: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    uid: str = ""
    created: float | None = None

    @property
    def mark(self) -> Mark | None:
        return parse_mark(self.annotations.get(REMEDIATION_ANNOTATION))

    @property
    def rotation(self) -> str | None:
        return self.annotations.get(ROTATION_ANNOTATION) or None

    @property
    def ready(self) -> bool:
        return self.conditions.get("Ready", ("Unknown", None))[0] == "True"


def node_view(node: Mapping[str, Any]) -> NodeView:
    """The view of a Node object (as the API server sends it)."""
    meta = node.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    conditions = {
        str(c.get("type")): (str(c.get("status") or "Unknown"),
                             parse_time(c.get("lastTransitionTime")))
        for c in (node.get("status") or {}).get("conditions") or [] if c.get("type")}
    return NodeView(
        name=str(meta.get("name") or ""), zone=labels.get(ZONE_LABEL, ""),
        pool=labels.get(POOL_LABEL, ""),
        unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
        conditions=conditions,
        annotations={str(k): str(v) for k, v in (meta.get("annotations") or {}).items()},
        labels=labels, uid=str(meta.get("uid") or ""),
        created=parse_time(meta.get("creationTimestamp")))


def lean_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """What a node watch keeps of a Node (no images, no addresses, no managed fields)."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {k: meta[k] for k in ("name", "uid", "labels", "annotations",
                                              "creationTimestamp", "resourceVersion")
                         if k in meta},
            "spec": {k: v for k, v in (node.get("spec") or {}).items()
                     if k in ("unschedulable", "taints")},
            "status": {"conditions": [
                {k: c.get(k) for k in ("type", "status", "lastTransitionTime", "reason",
                                       "message")}
                for c in status.get("conditions") or []]}}
