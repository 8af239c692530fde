"""core/Pod, as Argo CD judges pods.

A long-running pod (``restartPolicy: Always``) is Degraded when a container is stuck in a
restart or image-pull loop (waiting reason ``CrashLoopBackOff``, ``ImagePullBackOff``,
``ErrImagePull``, ``CreateContainerConfigError``, ...) or is not Ready after having
terminated; Healthy when Ready. A run-to-completion pod (``OnFailure``/``Never``) is
Progressing until it Succeeded (Completed) or Failed (Failed): its transient waiting states
are not judged, since the pod (or its Job) may still get past them.
"""

from __future__ import annotations

from typing import Any

from reconciler.health.fields import condition, is_false, is_true, spec, status
from reconciler.model import Health, Obj, Phase


def _stuck(waiting_reason: str) -> bool:
    return (waiting_reason.startswith("Err") or waiting_reason.endswith("Error")
            or waiting_reason.endswith("BackOff"))


def _containers(obj: Obj) -> list[dict[str, Any]]:
    st = status(obj)
    return list(st.get("initContainerStatuses") or []) + list(st.get("containerStatuses") or [])


def _stuck_containers(obj: Obj) -> list[str]:
    found = []
    for ctr in _containers(obj):
        waiting = (ctr.get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason") or ""
        if _stuck(reason):
            text = f"container {ctr.get('name')}: {reason}"
            found.append(f"{text}: {waiting['message']}" if waiting.get("message") else text)
    return found


def _failure(obj: Obj) -> str:
    if status(obj).get("message"):
        return str(status(obj)["message"])
    for ctr in _containers(obj):
        ended = (ctr.get("state") or {}).get("terminated") or {}
        if ended.get("message"):
            return f"container {ctr.get('name')}: {ended['message']}"
        if ended.get("reason") == "OOMKilled":
            return f"container {ctr.get('name')} was OOMKilled"
        if ended.get("exitCode"):
            return f"container {ctr.get('name')} failed with exit code {ended['exitCode']}"
    return status(obj).get("reason") or "the pod failed"


def _pending(obj: Obj) -> str:
    scheduled = condition(obj, "PodScheduled")
    if is_false(scheduled) and scheduled:
        return scheduled.get("message") or scheduled.get("reason") or "not scheduled"
    return status(obj).get("message") or "waiting to start"


def health(obj: Obj) -> Health:
    st = status(obj)
    long_running = spec(obj).get("restartPolicy", "Always") == "Always"
    phase = st.get("phase") or "Pending"
    if long_running and phase in ("Pending", "Running"):
        stuck = _stuck_containers(obj)
        if stuck:
            return Health(Phase.DEGRADED, "; ".join(stuck))
    if phase == "Succeeded":
        return Health(Phase.COMPLETED, st.get("message") or "")
    if phase == "Failed":
        return Health(Phase.FAILED, _failure(obj))
    if phase == "Pending":
        return Health(Phase.PROGRESSING, _pending(obj))
    if phase != "Running":
        return Health(Phase.UNKNOWN, st.get("message") or f"pod phase {phase}")
    if not long_running:
        return Health(Phase.PROGRESSING, "running to completion")
    ready = condition(obj, "Ready")
    if is_true(ready):
        return Health(Phase.HEALTHY)
    why = (ready or {}).get("message") or "not ready"
    restarted = [c.get("name") for c in st.get("containerStatuses") or []
                 if ((c.get("lastState") or {}).get("terminated"))]
    if restarted:
        return Health(Phase.DEGRADED, f"{why}; restarted: {', '.join(map(str, restarted))}")
    return Health(Phase.PROGRESSING, why)
