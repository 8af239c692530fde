"""Which managed sidecars a pod gets, and what a pod requests once everything is injected.

Shared by placement (capacity fit, quota) and expansion (pod building), so both agree.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from pincompile.catalog import Catalog, Entry
from pincompile.models import PinterestSideCar, PodTemplate
from pincompile.models.pod import Resources
from pincompile.models.types import parse_quantity

GPU = "nvidia.com/gpu"
Requests = dict[str, Decimal]


def managed_sidecars(kind: str, template: PodTemplate, catalog: Catalog
                     ) -> list[Entry[PinterestSideCar]]:
    """Managed sidecars (mode: sidecar) injected into a pod of ``kind``: those with
    ``inject: always`` that apply to the kind, plus the opt-in ones the template lists.
    Sorted by (order, name) so output is stable; unknown names are skipped (validation
    reports them)."""
    chosen = []
    for name, entry in catalog.sidecars.items():
        spec = entry.resource.spec
        if spec.mode != "sidecar" or kind not in spec.applies_to:
            continue
        if spec.inject == "always" or name in template.sidecars:
            chosen.append(entry)
    return sorted(chosen, key=lambda e: (e.resource.spec.order != "before-main", e.resource.name))


def requested(res: Resources) -> dict[str, str]:
    """One container's ``resources`` as written, keyed by Kubernetes resource name."""
    out = {name: value for name, value in (
        ("cpu", res.cpu), ("memory", res.memory), ("ephemeral-storage", res.ephemeral_storage),
    ) if value is not None}
    if res.gpu:
        out[GPU] = str(res.gpu)
    return out


def resource_requests(res: Resources) -> Requests:
    """Requests of one container's ``resources``, as numbers."""
    return {name: parse_quantity(value) for name, value in requested(res).items()}


def _add(into: Requests, more: Requests) -> None:
    for k, v in more.items():
        into[k] = into.get(k, Decimal(0)) + v


def pod_requests(kind: str, template: PodTemplate, catalog: Catalog) -> Requests:
    """Effective requests of one pod as the Kubernetes scheduler counts them: the sum of
    long-running containers (user containers, user and managed sidecars) or, if larger per
    resource, the largest init container of the runtime profile."""
    running: Requests = defaultdict(Decimal)
    for c in template.containers:
        _add(running, resource_requests(c.resources))
    for sc in managed_sidecars(kind, template, catalog):
        _add(running, resource_requests(sc.resource.spec.container.resources))
    runtime = catalog.runtime
    if runtime is not None:
        for init in runtime.resource.spec.init_containers:
            for k, v in resource_requests(init.resources).items():
                running[k] = max(running.get(k, Decimal(0)), v)
    return dict(running)
