"""apps/Deployment: the rollout is done when the controller has observed the latest spec
and every desired replica is updated and available (as ``kubectl rollout status``)."""

from __future__ import annotations

from reconciler.health.fields import condition, count, is_true, spec, status, unobserved
from reconciler.model import Health, Obj, Phase


def health(obj: Obj) -> Health:
    if spec(obj).get("paused"):
        return Health(Phase.SUSPENDED, "rollout is paused")
    waiting = unobserved(obj)
    if waiting:
        return Health(Phase.PROGRESSING, waiting)
    st = status(obj)
    progressing = condition(obj, "Progressing")
    failure = condition(obj, "ReplicaFailure")
    failure_text = failure.get("message", "") if is_true(failure) and failure else ""
    if progressing and progressing.get("reason") == "ProgressDeadlineExceeded":
        message = progressing.get("message") or "the rollout exceeded its progress deadline"
        if failure_text:
            message = f"{message} ({failure_text})"
        return Health(Phase.DEGRADED, message)
    desired = count(spec(obj).get("replicas", 1))
    updated, total = count(st.get("updatedReplicas")), count(st.get("replicas"))
    available = count(st.get("availableReplicas"))
    if updated < desired:
        message = f"{updated} of {desired} replicas updated"
    elif total > updated:
        message = f"{total - updated} old replicas pending termination"
    elif available < updated:
        message = f"{available} of {updated} updated replicas available"
    else:
        return Health(Phase.HEALTHY)
    if failure_text:
        message = f"{message}; {failure_text}"
    return Health(Phase.PROGRESSING, message)
