"""PinApp and PinterestService → Deployment + Service (+ Ingress) + PodDisruptionBudget
(+ PersistentVolumeClaims, ConfigMap), in every cluster the plan chose.

Rollout settings the Deployment cannot express (zone-by-zone order, health timeout) are
annotations the reconciler reads; the health timeout is also the Deployment's
``progressDeadlineSeconds``. When a PinScaler targets the app the Deployment leaves
``replicas`` to the HorizontalPodAutoscaler.
"""

from __future__ import annotations

import math

from pincompile.expand.context import Obj, WorkloadTarget
from pincompile.expand.pod import claims, config_map, config_name, pod_template
from pincompile.models import PinApp, PinterestService
from pincompile.models.types import duration_seconds
from pincompile.models.workloads import AppSpec

ANNOTATION_ROLLOUT = "pincompute.io/rollout-strategy"
ANNOTATION_HEALTH_TIMEOUT = "pincompute.io/health-timeout"
DEFAULT_DISRUPTION_BUDGET: Obj = {"maxUnavailable": 1}


def expand(t: WorkloadTarget[PinApp | PinterestService]) -> list[Obj]:
    spec: AppSpec = t.resource.spec
    cm = config_name(t.name)
    out = [deployment(t, spec, cm)]
    if spec.service is not None:
        out.append(service(t, spec))
        if spec.service.ingress is not None:
            out.append(ingress(t, spec))
    out.append(disruption_budget(t, spec))
    return [*out, *claims(t), *config_map(t, cm, spec.template.config)]


def deployment(t: WorkloadTarget[PinApp | PinterestService], spec: AppSpec, cm: str) -> Obj:
    rollout = spec.rollout
    body: Obj = {
        "selector": {"matchLabels": t.selector()},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {
            "maxSurge": rollout.max_surge, "maxUnavailable": rollout.max_unavailable}},
        "progressDeadlineSeconds": math.ceil(duration_seconds(rollout.health_timeout)),
        "template": pod_template(t, config_name=cm, config=spec.template.config),
    }
    if spec.stopped:
        body["replicas"] = 0
    elif t.shard.min_replicas is None:  # with a PinScaler, the HPA owns replicas
        body["replicas"] = t.shard.replicas
    if spec.paused:
        body["paused"] = True
    return t.obj("apps/v1", "Deployment", t.name, body, annotations={
        ANNOTATION_ROLLOUT: rollout.strategy, ANNOTATION_HEALTH_TIMEOUT: rollout.health_timeout})


def service(t: WorkloadTarget[PinApp | PinterestService], spec: AppSpec) -> Obj:
    assert spec.service is not None
    ports = [{"name": p.name, "port": p.port, "protocol": p.protocol,
              "targetPort": p.target_port if p.target_port is not None else p.port}
             for p in spec.service.ports]
    return t.obj("v1", "Service", t.name,
                 {"type": "ClusterIP", "selector": t.selector(), "ports": ports})


def ingress(t: WorkloadTarget[PinApp | PinterestService], spec: AppSpec) -> Obj:
    assert spec.service is not None and spec.service.ingress is not None
    ing = spec.service.ingress
    port = ing.port if ing.port is not None else spec.service.ports[0].name
    backend = {"service": {"name": t.name,
                           "port": {"number": port} if isinstance(port, int) else {"name": port}}}
    body: Obj = {"rules": [{"host": ing.host, "http": {"paths": [
        {"path": ing.path, "pathType": "Prefix", "backend": backend}]}}]}
    if ing.class_name:
        body["ingressClassName"] = ing.class_name
    if ing.tls_secret:
        body["tls"] = [{"hosts": [ing.host], "secretName": ing.tls_secret}]
    return t.obj("networking.k8s.io/v1", "Ingress", t.name, body)


def disruption_budget(t: WorkloadTarget[PinApp | PinterestService], spec: AppSpec) -> Obj:
    """The spec's budget, or at most one pod down at a time by default."""
    budget = spec.disruption_budget
    limits = (DEFAULT_DISRUPTION_BUDGET if budget is None else
              budget.model_dump(by_alias=True, exclude_none=True))
    return t.obj("policy/v1", "PodDisruptionBudget", t.name,
                 {"selector": {"matchLabels": t.selector()}, **limits})
