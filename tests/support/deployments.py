"""Deployments in a zone-by-zone rollout, as desired and as a member cluster reports them."""

from __future__ import annotations

from typing import Any

from reconciler import rollout


def deploy(image: str, timeout: str = "30s") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "web", "namespace": "shop", "annotations": {
            rollout.STRATEGY_ANNOTATION: "zone-by-zone",
            rollout.HEALTH_TIMEOUT_ANNOTATION: timeout}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"image": image}]}}}}


def live_of(obj: dict[str, Any], *, ready: bool = True, generation: int = 1) -> dict[str, Any]:
    out = rollout.stamp(obj)
    out["metadata"]["generation"] = generation
    n = 2 if ready else 0
    out["status"] = {"observedGeneration": generation, "replicas": 2, "updatedReplicas": 2,
                     "availableReplicas": n}
    return out
