"""Which rule judges which kind: one table keyed by (API group, kind), and ``health_of``."""

from __future__ import annotations

from collections.abc import Callable

from reconciler.health import (
    cronjob,
    daemonset,
    deployment,
    hpa,
    job,
    networking,
    pdb,
    pod,
    pvc,
    replicaset,
    statefulset,
    training,
)
from reconciler.model import Health, Obj, Phase

Rule = Callable[[Obj], Health]

RULES: dict[tuple[str, str], Rule] = {
    ("apps", "Deployment"): deployment.health,
    ("apps", "StatefulSet"): statefulset.health,
    ("apps", "DaemonSet"): daemonset.health,
    ("apps", "ReplicaSet"): replicaset.health,
    ("", "Pod"): pod.health,
    ("", "PersistentVolumeClaim"): pvc.health,
    ("", "Service"): networking.service,
    ("networking.k8s.io", "Ingress"): networking.ingress,
    ("extensions", "Ingress"): networking.ingress,
    ("batch", "Job"): job.health,
    ("batch", "CronJob"): cronjob.health,
    ("autoscaling", "HorizontalPodAutoscaler"): hpa.health,
    ("policy", "PodDisruptionBudget"): pdb.health,
    **{("kubeflow.org", kind): training.health for kind in training.KINDS},
}
"""(API group, kind) -> rule; the core group is ""."""


def group_of(api_version: str) -> str:
    """The API group of an apiVersion: ``apps/v1`` -> ``apps``, ``v1`` -> ``""``."""
    return api_version.rpartition("/")[0]


def has_rule(api_version: str, kind: str) -> bool:
    """Whether :func:`health_of` has an opinion on objects of this apiVersion and kind."""
    return (group_of(api_version), kind) in RULES


def health_of(obj: Obj) -> Health | None:
    """The health of one live object, or None for kinds without a rule (no opinion:
    callers treat those as Healthy once they exist).

    An object being deleted is Progressing, whatever its kind; a rule that cannot read the
    object (a field of an unexpected type) gives Unknown with the error instead of raising.
    """
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return Health(Phase.PROGRESSING, "pending deletion")
    rule = RULES.get((group_of(str(obj.get("apiVersion", ""))), str(obj.get("kind", ""))))
    if rule is None:
        return None
    try:
        return rule(obj)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        return Health(Phase.UNKNOWN, f"cannot assess health: {type(exc).__name__}: {exc}")


def assess(obj: Obj | None) -> Health:
    """Health of a desired object given its live state: Missing when there is none,
    Healthy when its kind has no rule, else :func:`health_of`."""
    if obj is None:
        return Health(Phase.MISSING, "not found")
    return health_of(obj) or Health(Phase.HEALTHY)
