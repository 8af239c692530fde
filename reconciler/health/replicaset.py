"""apps/ReplicaSet: every desired replica available; a pod-creation failure is Degraded."""

from __future__ import annotations

from reconciler.health.fields import condition, count, is_true, spec, status, unobserved
from reconciler.model import Health, Obj, Phase


def health(obj: Obj) -> Health:
    waiting = unobserved(obj)
    if waiting:
        return Health(Phase.PROGRESSING, waiting)
    failure = condition(obj, "ReplicaFailure")
    if is_true(failure) and failure:
        return Health(Phase.DEGRADED, failure.get("message") or "cannot create pods")
    desired = count(spec(obj).get("replicas", 1))
    available = count(status(obj).get("availableReplicas"))
    if available < desired:
        return Health(Phase.PROGRESSING, f"{available} of {desired} replicas available")
    return Health(Phase.HEALTHY)
