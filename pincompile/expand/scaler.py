"""PinScaler → an autoscaling/v2 HorizontalPodAutoscaler in every cluster of its target.

Bounds come from the plan (each shard's ``minReplicas``/``maxReplicas``). ``cpu``/``memory``
are Resource metrics (average utilization); ``custom`` is an External metric named
``<name>`` (default ``<scaler>-<index>``) with the cluster's selector, and its query goes in
the annotation ``metrics.pincompute.io/<name>`` for the platform's metrics adapter (scoped
to the cluster, so each cluster's HPA divides its own load by its own replicas).
``cooldown`` becomes the ``behavior`` stabilization windows.

``schedules`` are recorded in the annotation ``pincompute.io/scale-schedules`` as JSON (cron,
timezone, duration and this cluster's share of the floor), which the reconciler applies by
raising ``minReplicas`` during the window. A KEDA ScaledObject with cron triggers was
considered for clusters with the ``keda`` addon and not used: KEDA needs an *end* cron
expression (a window crossing midnight or a weekday boundary has none in general), it
replaces the HPA (two owners of one Deployment while clusters migrate), and a custom query
would need a Prometheus address the spec does not have. One object kind everywhere keeps
the fleet uniform.
"""

from __future__ import annotations

import json

from pincompile.expand.context import (
    LABEL_APP,
    LABEL_CLUSTER,
    LABEL_PROJECT,
    Obj,
    WorkloadTarget,
)
from pincompile.manifest import ANNOTATION_SCALE_SCHEDULES as ANNOTATION_SCHEDULES
from pincompile.models import PinApp, PinScaler, PinterestService
from pincompile.models.types import duration_seconds
from pincompile.models.workloads import ResourceMetric
from pincompile.placement.quota import apportion

METRIC_QUERY_PREFIX = "metrics.pincompute.io/"
MAX_STABILIZATION_SECONDS = 3600


def expand(t: WorkloadTarget[PinScaler]) -> list[Obj]:
    spec = t.resource.spec
    target = t.run.scaled(t.resource)
    app = target.resource if target is not None else None
    shard = t.shard
    if (not isinstance(app, PinApp | PinterestService) or app.spec.stopped
            or shard.min_replicas is None or shard.max_replicas is None):
        return []  # a stopped app runs no pods to scale; an unknown target is reported
    low = max(1, shard.min_replicas)
    body: Obj = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": spec.target},
        "minReplicas": low,
        "maxReplicas": max(low, shard.max_replicas),
    }
    metrics, annotations = _metrics(t)
    if metrics:
        body["metrics"] = metrics
    behavior = _behavior(t)
    if behavior:
        body["behavior"] = behavior
    if spec.schedules:
        annotations[ANNOTATION_SCHEDULES] = json.dumps(_schedules(t), sort_keys=True,
                                                       separators=(",", ":"))
    return [t.obj("autoscaling/v2", "HorizontalPodAutoscaler", t.name, body,
                  annotations=annotations)]


def _metrics(t: WorkloadTarget[PinScaler]) -> tuple[list[Obj], dict[str, str]]:
    spec = t.resource.spec
    metrics: list[Obj] = []
    queries: dict[str, str] = {}
    for i, m in enumerate(spec.metrics):
        if isinstance(m, ResourceMetric):
            metrics.append({"type": "Resource", "resource": {"name": m.type, "target": {
                "type": "Utilization", "averageUtilization": m.target_utilization}}})
            continue
        name = m.name or f"{t.name}-{i}"
        selector = {LABEL_PROJECT: t.project, LABEL_APP: spec.target,
                    LABEL_CLUSTER: t.cluster_name}
        metrics.append({"type": "External", "external": {
            "metric": {"name": name, "selector": {"matchLabels": selector}},
            "target": {"type": "AverageValue", "averageValue": m.target_per_replica}}})
        queries[METRIC_QUERY_PREFIX + name] = m.query
    return metrics, queries


def _behavior(t: WorkloadTarget[PinScaler]) -> Obj:
    out: Obj = {}
    cooldown = t.resource.spec.cooldown
    for field, key in (("scale_up", "scaleUp"), ("scale_down", "scaleDown")):
        value = getattr(cooldown, field)
        if value is None:
            continue
        seconds = int(duration_seconds(value))
        if seconds > MAX_STABILIZATION_SECONDS:
            t.error((t.entry, ("spec", "cooldown", key)), "cooldown-too-long",
                    f"cooldown.{key} is {value}; Kubernetes allows at most 1h",
                    "use a cooldown of 1h or less")
            seconds = MAX_STABILIZATION_SECONDS
        out[key] = {"stabilizationWindowSeconds": seconds}
    return out


def _schedules(t: WorkloadTarget[PinScaler]) -> list[Obj]:
    """Each schedule with this cluster's share of its floor (split like maxReplicas, and
    within this cluster's bounds)."""
    shard = t.shard
    weights = {s.cluster: s.max_replicas or 0 for s in t.decision.shards}
    out = []
    for s in t.resource.spec.schedules:
        share = apportion(s.min_replicas, weights).get(shard.cluster, 0)
        floor = min(max(share, shard.min_replicas or 1), shard.max_replicas or share)
        out.append({"cron": s.cron, "timezone": s.timezone, "duration": s.duration,
                    "minReplicas": floor})
    return out
