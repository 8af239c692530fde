"""What the insight views read of a member cluster: its nodes, its running pods, its
pincompile ResourceQuotas and (from the metrics API) what the pods use, each reduced to
what is read (a watch holds the reduced copy: :func:`lean_node`, :func:`lean_pod`).

A pod's request is what the scheduler reserves for it: the sum of its containers and
native sidecars, or its largest init container with the sidecars started before it,
whichever is more, plus its overhead. Its tier is its PriorityClass
(``pincompute-<tier>``), else its ``pincompute.io/tier`` label; a pod of neither is
``other`` (system pods, pods pincompile does not make).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pincompile.contract import LABEL_APP, LABEL_KIND, LABEL_PROJECT, TIERS, parse_quantity
from pincompile.manifest import LABEL_TIER
from reconciler.model import AppKey, Obj

OTHER = "other"
"""The tier of a pod pincompile's tiers do not name."""
TIER_LABEL = "pincompute.io/tier-"
"""A node serves tier T when it carries ``pincompute.io/tier-T: "true"``."""
POOL_LABELS = ("pincompute.io/node-pool", "karpenter.sh/nodepool",
               "eks.amazonaws.com/nodegroup", "cloud.google.com/gke-nodepool",
               "node.kubernetes.io/instance-type")
"""Where a node's pool is named, first found first; none: ``default``."""
RESOURCES = ("cpu", "memory", "nvidia.com/gpu", "pods")
"""What the views count (a pod counts 1 of ``pods``)."""

Amounts = dict[str, Decimal]


def _amounts(values: Mapping[str, Any] | None, names: Iterable[str] = RESOURCES) -> Amounts:
    out: Amounts = {}
    for name in names:
        raw = (values or {}).get(name)
        if raw is None:
            continue
        try:
            out[name] = parse_quantity(str(raw))
        except ValueError:
            continue  # a value no API server writes: left out, never a crash
    return out


def add(into: Amounts, more: Mapping[str, Decimal], times: Decimal | int = 1) -> None:
    for res, amount in more.items():
        into[res] = into.get(res, Decimal(0)) + amount * times


@dataclass(frozen=True)
class NodeRecord:
    name: str
    pool: str
    tiers: tuple[str, ...]
    ready: bool
    schedulable: bool
    capacity: Amounts
    allocatable: Amounts


@dataclass(frozen=True)
class PodRecord:
    namespace: str
    name: str
    node: str
    tier: str
    project: str
    app: AppKey | None
    requests: Amounts


@dataclass(frozen=True)
class QuotaRecord:
    namespace: str
    project: str
    tier: str
    hard: Amounts
    used: Amounts


@dataclass
class Reading:
    """One member cluster as read at ``at`` (epoch seconds); ``error``: why it could not
    be (its lists are then empty); ``usage``: each pod's usage, None when the metrics API
    could not be read (``metrics_error`` says why)."""

    cluster: str
    at: float
    nodes: list[NodeRecord] = field(default_factory=list)
    pods: list[PodRecord] = field(default_factory=list)
    quotas: list[QuotaRecord] = field(default_factory=list)
    usage: dict[tuple[str, str], Amounts] | None = None
    error: str | None = None
    metrics_error: str | None = None


# --- what a watch keeps ---------------------------------------------------------------------

def lean_node(node: Obj) -> Obj:
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": meta.get("name"), "labels": meta.get("labels") or {}},
            "spec": {"unschedulable": bool((node.get("spec") or {}).get("unschedulable"))},
            "status": {"capacity": status.get("capacity") or {},
                       "allocatable": status.get("allocatable") or {},
                       "conditions": [c for c in status.get("conditions") or []
                                      if c.get("type") == "Ready"]}}


def lean_pod(pod: Obj) -> Obj | None:
    """A running (or pending) pod's identity, node, tier and request; None for one that
    ended (it holds nothing)."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return None
    labels = meta.get("labels") or {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"),
                         "labels": {k: labels[k] for k in (LABEL_APP, LABEL_KIND,
                                                           LABEL_PROJECT, LABEL_TIER)
                                    if k in labels}},
            "spec": {"nodeName": spec.get("nodeName") or "",
                     "priorityClassName": spec.get("priorityClassName") or "",
                     "requests": {k: str(v) for k, v in pod_request(spec).items()}}}


# --- records -------------------------------------------------------------------------------

def node_record(node: Obj) -> NodeRecord:
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    labels = meta.get("labels") or {}
    pool = next((str(labels[k]) for k in POOL_LABELS if labels.get(k)), "default")
    tiers = tuple(t for t in TIERS if str(labels.get(TIER_LABEL + t, "")).lower() == "true")
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions") or [])
    return NodeRecord(str(meta.get("name") or ""), pool, tiers, ready,
                      not (node.get("spec") or {}).get("unschedulable"),
                      _amounts(status.get("capacity")), _amounts(status.get("allocatable")))


def pod_tier(priority_class: str, labels: Mapping[str, str]) -> str:
    if priority_class.startswith("pincompute-") and priority_class[11:] in TIERS:
        return priority_class[11:]
    tier = labels.get(LABEL_TIER, "")
    return tier if tier in TIERS else OTHER


def pod_record(pod: Obj) -> PodRecord:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    labels = meta.get("labels") or {}
    app = ((labels[LABEL_KIND], labels[LABEL_PROJECT], labels[LABEL_APP])
           if all(k in labels for k in (LABEL_KIND, LABEL_PROJECT, LABEL_APP)) else None)
    requests = _amounts(spec.get("requests"))
    requests["pods"] = Decimal(1)
    return PodRecord(str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                     str(spec.get("nodeName") or ""),
                     pod_tier(str(spec.get("priorityClassName") or ""), labels),
                     str(labels.get(LABEL_PROJECT) or ""), app, requests)


def pod_request(spec: Mapping[str, Any]) -> Amounts:
    """What the scheduler reserves for a pod with ``spec`` (see the module's docstring)."""
    running: Amounts = {}
    for c in spec.get("containers") or []:
        add(running, _amounts((c.get("resources") or {}).get("requests"), RESOURCES[:3]))
    sidecars: Amounts = {}
    peak: Amounts = {}
    for c in spec.get("initContainers") or []:
        asked = _amounts((c.get("resources") or {}).get("requests"), RESOURCES[:3])
        if c.get("restartPolicy") == "Always":
            add(sidecars, asked)
            continue
        for res, amount in asked.items():
            peak[res] = max(peak.get(res, Decimal(0)), amount + sidecars.get(res, Decimal(0)))
    add(running, sidecars)
    out = {res: max(running.get(res, Decimal(0)), peak.get(res, Decimal(0)))
           for res in {*running, *peak}}
    add(out, _amounts(spec.get("overhead"), RESOURCES[:3]))
    return {k: v for k, v in sorted(out.items()) if v}


def quota_record(quota: Obj) -> QuotaRecord | None:
    """A pincompile ResourceQuota of one tier (``pincompute-<tier>``), else None."""
    meta, status = quota.get("metadata") or {}, quota.get("status") or {}
    name = str(meta.get("name") or "")
    tier = name.removeprefix("pincompute-")
    if tier not in TIERS:
        return None
    keys = {"requests.cpu": "cpu", "requests.memory": "memory",
            "requests.nvidia.com/gpu": "nvidia.com/gpu", "pods": "pods"}

    def renamed(values: Mapping[str, Any] | None) -> Amounts:
        found = _amounts(values, keys)
        return {keys[k]: v for k, v in found.items()}

    labels = meta.get("labels") or {}
    return QuotaRecord(str(meta.get("namespace") or ""),
                       str(labels.get(LABEL_PROJECT) or meta.get("namespace") or ""), tier,
                       renamed((quota.get("spec") or {}).get("hard")),
                       renamed(status.get("used")))


def pod_usage(metrics: Iterable[Obj]) -> dict[tuple[str, str], Amounts]:
    """Each pod's usage (namespace, name) → cpu and memory, from ``PodMetrics``."""
    out: dict[tuple[str, str], Amounts] = {}
    for item in metrics:
        meta = item.get("metadata") or {}
        total: Amounts = {}
        for container in item.get("containers") or []:
            add(total, _amounts(container.get("usage"), ("cpu", "memory")))
        out[(str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = total
    return out


def reading_of(cluster: str, at: float, nodes: Iterable[Obj], pods: Iterable[Obj],
               quotas: Iterable[Obj], metrics: Iterable[Obj] | None,
               metrics_error: str | None = None) -> Reading:
    """A :class:`Reading` from nodes, *lean* pods (:func:`lean_pod`), quotas and pod
    metrics (None: not read)."""
    return Reading(cluster, at, [node_record(n) for n in nodes], [pod_record(p) for p in pods],
                   [q for q in map(quota_record, quotas) if q is not None],
                   None if metrics is None else pod_usage(metrics),
                   metrics_error=metrics_error)
