"""policy/PodDisruptionBudget.

Healthy once the disruption controller has observed the budget and at least
``desiredHealthy`` of the matched pods are healthy (with a note when the budget allows no
voluntary disruption at all, which blocks node drains). Fewer healthy pods than the budget
requires is Progressing, not Degraded as Argo CD has it: the pods belong to a workload
whose own rule says why they are missing (and turns Degraded at its progress deadline),
while every new app would otherwise be Degraded until its first pods are ready. A budget
the controller cannot evaluate (``SyncFailed``) is Degraded.
"""

from __future__ import annotations

from reconciler.health.fields import condition, count, is_false, status, unobserved
from reconciler.model import Health, Obj, Phase


def health(obj: Obj) -> Health:
    waiting = unobserved(obj)
    if waiting:
        return Health(Phase.PROGRESSING, waiting)
    allowed = condition(obj, "DisruptionAllowed")
    if is_false(allowed) and allowed and allowed.get("reason") == "SyncFailed":
        return Health(Phase.DEGRADED, allowed.get("message") or "the budget cannot be evaluated")
    st = status(obj)
    healthy, desired = count(st.get("currentHealthy")), count(st.get("desiredHealthy"))
    if healthy < desired:
        return Health(Phase.PROGRESSING,
                      f"{healthy} of the {desired} pods the budget requires are healthy")
    if count(st.get("expectedPods")) and not count(st.get("disruptionsAllowed")):
        return Health(Phase.HEALTHY, "no voluntary disruption allowed: node drains will wait")
    return Health(Phase.HEALTHY)
