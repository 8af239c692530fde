"""networking/Ingress and core/Service: an Ingress, or a Service of type LoadBalancer,
is Healthy once a load balancer address is published in its status; other Services are
Healthy as soon as they exist."""

from __future__ import annotations

from reconciler.health.fields import spec, status
from reconciler.model import Health, Obj, Phase


def _has_address(obj: Obj) -> bool:
    return bool((status(obj).get("loadBalancer") or {}).get("ingress"))


def ingress(obj: Obj) -> Health:
    if _has_address(obj):
        return Health(Phase.HEALTHY)
    return Health(Phase.PROGRESSING, "waiting for the ingress controller to publish an address")


def service(obj: Obj) -> Health:
    if spec(obj).get("type") != "LoadBalancer" or _has_address(obj):
        return Health(Phase.HEALTHY)
    return Health(Phase.PROGRESSING, "waiting for a load balancer address")
