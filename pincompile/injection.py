"""Which managed sidecars a pod gets, and what a pod requests once everything is injected.

Shared by placement (capacity fit, quota) and expansion (pod building), so both agree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from decimal import Decimal

from pincompile.catalog import Catalog, Entry
from pincompile.models import PinterestSideCar, PodTemplate
from pincompile.models.platform import POD_ENI, DefaultResources
from pincompile.models.pod import Limits, Resources
from pincompile.models.types import parse_quantity

GPU = "nvidia.com/gpu"
#: Requests every pod namespace's ResourceQuota requires of each container.
REQUIRED_REQUESTS = ("cpu", "memory")
Requests = dict[str, Decimal]


def managed_sidecars(kind: str, template: PodTemplate,
                     sidecars: Mapping[str, Entry[PinterestSideCar]]
                     ) -> list[Entry[PinterestSideCar]]:
    """Managed sidecars (mode: sidecar) injected into a pod of ``kind``: those with
    ``inject: always`` that apply to the kind, plus the opt-in ones the template lists.
    Sorted by (order, name) so output is stable; unknown names are skipped (validation
    reports them). ``sidecars``: the catalog's, by name."""
    chosen = []
    for name, entry in sidecars.items():
        spec = entry.resource.spec
        if spec.mode != "sidecar" or kind not in spec.applies_to:
            continue
        if spec.inject == "always" or name in template.sidecars:
            chosen.append(entry)
    return sorted(chosen, key=lambda e: (e.resource.spec.order != "before-main", e.resource.name))


def defaults_of(catalog: Catalog) -> DefaultResources | None:
    """The RuntimeProfile's ``defaultResources`` (None without a profile or defaults)."""
    runtime = catalog.runtime
    return runtime.resource.spec.default_resources if runtime is not None else None


def with_defaults(res: Resources, defaults: DefaultResources | None) -> Resources:
    """A container's resources as it runs: a request it lacks is its own limit (as
    Kubernetes does), else the profile's default (with the default limit, if any)."""
    update: dict[str, object] = {}
    limits = res.limits
    for name in REQUIRED_REQUESTS:
        if getattr(res, name) is not None:
            continue
        own_limit = getattr(limits, name) if limits is not None else None
        if own_limit is not None:
            update[name] = own_limit
            continue
        if defaults is None or getattr(defaults, name) is None:
            continue
        update[name] = getattr(defaults, name)
        default_limit = getattr(defaults.limits, name) if defaults.limits else None
        if default_limit is not None:
            limits = (limits or Limits()).model_copy(update={name: default_limit})
    if not update:
        return res
    if limits is not res.limits:
        update["limits"] = limits
    return res.model_copy(update=update)


def missing_requests(res: Resources, defaults: DefaultResources | None) -> list[str]:
    """Required requests (cpu, memory) a container still lacks after defaults."""
    effective = with_defaults(res, defaults)
    return [name for name in REQUIRED_REQUESTS if getattr(effective, name) is None]


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
    resource, the largest init container of the runtime profile. Containers without their
    own requests count the RuntimeProfile's ``defaultResources``; a ``dedicated-eni`` pod
    counts its one pod ENI."""
    defaults = defaults_of(catalog)
    running: Requests = defaultdict(Decimal)
    for c in template.containers:
        _add(running, resource_requests(with_defaults(c.resources, defaults)))
    for sc in managed_sidecars(kind, template, catalog.sidecars):
        _add(running, resource_requests(with_defaults(sc.resource.spec.container.resources,
                                                      defaults)))
    runtime = catalog.runtime
    if runtime is not None:
        for init in runtime.resource.spec.init_containers:
            for k, v in resource_requests(with_defaults(init.resources, defaults)).items():
                running[k] = max(running.get(k, Decimal(0)), v)
    if template.network == "dedicated-eni":
        running[POD_ENI] = Decimal(1)
    return dict(running)
