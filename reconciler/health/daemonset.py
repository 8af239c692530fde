"""apps/DaemonSet: every scheduled node runs an updated, available pod (``OnDelete``
updates are the user's to make)."""

from __future__ import annotations

from reconciler.health.fields import count, spec, status, unobserved
from reconciler.model import Health, Obj, Phase


def health(obj: Obj) -> Health:
    waiting = unobserved(obj)
    if waiting:
        return Health(Phase.PROGRESSING, waiting)
    st = status(obj)
    desired = count(st.get("desiredNumberScheduled"))
    if (spec(obj).get("updateStrategy") or {}).get("type") != "OnDelete":
        updated = count(st.get("updatedNumberScheduled"))
        if updated < desired:
            return Health(Phase.PROGRESSING, f"{updated} of {desired} nodes run the updated pod")
    available = count(st.get("numberAvailable"))
    if available < desired:
        return Health(Phase.PROGRESSING, f"{available} of {desired} pods available")
    return Health(Phase.HEALTHY)
