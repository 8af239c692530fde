"""apps/StatefulSet: every replica ready, and the rolling update done up to its partition
(as ``kubectl rollout status``); ``OnDelete`` updates are the user's to make."""

from __future__ import annotations

from reconciler.health.fields import count, spec, status, unobserved
from reconciler.model import Health, Obj, Phase


def health(obj: Obj) -> Health:
    st = status(obj)
    waiting = unobserved(obj)
    if waiting or "observedGeneration" not in st:
        return Health(Phase.PROGRESSING, waiting or "waiting for the controller")
    desired = count(spec(obj).get("replicas", 1))
    # with minReadySeconds a pod counts once it has been ready that long (available)
    word = "available" if count(spec(obj).get("minReadySeconds")) else "ready"
    ready = count(st.get(f"{word}Replicas"))
    if ready < desired:
        return Health(Phase.PROGRESSING, f"{ready} of {desired} replicas {word}")
    strategy = spec(obj).get("updateStrategy") or {}
    if strategy.get("type") == "OnDelete":
        return Health(Phase.HEALTHY)
    partition = count((strategy.get("rollingUpdate") or {}).get("partition"))
    updated = count(st.get("updatedReplicas"))
    if partition:
        if updated < desired - partition:
            return Health(Phase.PROGRESSING,
                          f"{updated} of {desired - partition} replicas above partition "
                          f"{partition} updated")
        return Health(Phase.HEALTHY)
    if st.get("updateRevision") and st.get("updateRevision") != st.get("currentRevision"):
        return Health(Phase.PROGRESSING, f"rolling update in progress: {updated} of {desired} "
                                         f"replicas at revision {st['updateRevision']}")
    return Health(Phase.HEALTHY)
