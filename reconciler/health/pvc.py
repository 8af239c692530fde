"""core/PersistentVolumeClaim: Bound is Healthy (Progressing while a resize is under
way), Pending is Progressing, Lost (its volume is gone) is Degraded."""

from __future__ import annotations

from reconciler.health.fields import condition, is_true, spec, status
from reconciler.model import Health, Obj, Phase

RESIZING = ("Resizing", "FileSystemResizePending")
RESIZE_ERRORS = ("ControllerResizeError", "NodeResizeError")


def health(obj: Obj) -> Health:
    phase = status(obj).get("phase") or "Pending"
    if phase == "Lost":
        volume = spec(obj).get("volumeName") or "its volume"
        return Health(Phase.DEGRADED, f"claim lost: {volume} no longer exists")
    if phase == "Pending":
        return Health(Phase.PROGRESSING, "waiting for a volume to be bound")
    if phase != "Bound":
        return Health(Phase.UNKNOWN, f"claim phase {phase}")
    for kind in RESIZE_ERRORS:
        cond = condition(obj, kind)
        if is_true(cond) and cond:
            return Health(Phase.DEGRADED, cond.get("message") or kind)
    for kind in RESIZING:
        cond = condition(obj, kind)
        if is_true(cond) and cond:
            return Health(Phase.PROGRESSING, cond.get("message") or "volume resize in progress")
    return Health(Phase.HEALTHY)
