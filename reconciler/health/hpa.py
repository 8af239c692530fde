"""autoscaling/HorizontalPodAutoscaler, from the HPA controller's conditions.

``AbleToScale`` False (cannot read or update the target's scale) and ``ScalingActive``
False for any reason but ``ScalingDisabled`` (metrics cannot be fetched or computed, an
invalid selector or metric source) are Degraded, with the controller's message. All of
Argo CD's degraded cases are among them; unlike Argo CD every condition is looked at, so a
True ``AbleToScale`` listed first does not hide a metrics failure. ``ScalingDisabled``
(the target is scaled to zero, so the HPA stands aside) is Suspended. An HPA the
controller has not assessed yet is Progressing; otherwise Healthy, with the
``ScalingLimited`` message when the desired count is clamped to min/max replicas.

autoscaling/v1 objects carry the same conditions in an annotation; both are read.
"""

from __future__ import annotations

import json
from typing import Any

from reconciler.health.fields import status
from reconciler.model import Health, Obj, Phase

V1_CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
#: AbleToScale False reasons older controllers used for scale-change backoff, not faults
BACKOFF = frozenset({"BackoffBoth", "BackoffDownscale", "BackoffUpscale"})


def _conditions(obj: Obj) -> dict[str, dict[str, Any]]:
    conditions = status(obj).get("conditions")
    if conditions is None:
        annotation = ((obj.get("metadata") or {}).get("annotations") or {}).get(V1_CONDITIONS)
        conditions = json.loads(annotation) if annotation else []
    return {c.get("type", ""): c for c in conditions}


def _text(cond: dict[str, Any]) -> str:
    return cond.get("message") or cond.get("reason") or cond.get("type", "")


def health(obj: Obj) -> Health:
    conditions = _conditions(obj)
    able = conditions.get("AbleToScale")
    if able and able.get("status") == "False" and able.get("reason") not in BACKOFF:
        return Health(Phase.DEGRADED, _text(able))
    active = conditions.get("ScalingActive")
    if active and active.get("status") == "False":
        if active.get("reason") == "ScalingDisabled":
            return Health(Phase.SUSPENDED, _text(active))
        return Health(Phase.DEGRADED, _text(active))
    if not able or not active:
        return Health(Phase.PROGRESSING, "waiting for the autoscaler's first assessment")
    limited = conditions.get("ScalingLimited")
    if limited and limited.get("status") == "True":
        return Health(Phase.HEALTHY, _text(limited))
    return Health(Phase.HEALTHY)
