"""Identity rules: names, namespaces, contexts and labels that must be unique or are
reserved, and node pools a cluster declares once."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from pincompile.catalog import Entry
from pincompile.checks.pods import quantity
from pincompile.checks.specs import (
    RESERVED_LABEL_PREFIXES,
    RESERVED_NAMESPACES,
    SCALABLE_KINDS,
    LazyLocation,
    Specs,
    by_position,
    in_project,
    where,
)
from pincompile.diagnostics import Diagnostic
from pincompile.models import (
    Cluster,
    PinScaler,
    Project,
    RuntimeProfile,
    Workload,
)


def duplicate_names(specs: Specs) -> Iterator[Diagnostic]:
    """(kind, project, name) is unique; PinApp and PinterestService share names (both become
    a Deployment and a Service). A RuntimeProfile is checked by ``one_runtime_profile``."""
    first: dict[tuple[str, str, str], Entry[Any]] = {}
    for entry in by_position(specs.entries):
        res = entry.resource
        if isinstance(res, RuntimeProfile):
            continue
        kind, project, name = res.key
        group = "app" if kind in SCALABLE_KINDS else kind
        other = first.setdefault((group, project, name), entry)
        if other is entry:
            continue
        if other.resource.kind == kind:
            message = f"{kind} '{name}'{in_project(res)} is already defined at {where(other)}"
        else:
            message = (f"{kind} '{name}'{in_project(res)} has the same name as "
                       f"{other.resource.kind} '{name}' at {where(other)}; both would "
                       "generate the same Deployment and Service")
        yield entry.at("metadata", "name").error(
            "duplicate-name", message, "rename one of them or delete the copy")


def one_runtime_profile(specs: Specs) -> Iterator[Diagnostic]:
    """At most one RuntimeProfile. None at all is allowed: pods then get nothing injected."""
    profiles = by_position(specs.of_kind(RuntimeProfile.KIND))
    for extra in profiles[1:]:
        yield extra.at("metadata", "name").error(
            "duplicate-runtime-profile",
            f"more than one RuntimeProfile: '{extra.resource.name}' here and "
            f"'{profiles[0].resource.name}' at {where(profiles[0])}; a platform has exactly one",
            "merge them into one RuntimeProfile")


def project_namespaces(specs: Specs) -> Iterator[Diagnostic]:
    """Each project has its own namespace, and none of Kubernetes' own."""
    first: dict[str, Entry[Any]] = {}
    for entry in by_position(specs.of_kind(Project.KIND)):
        project: Project = entry.resource  # type: ignore[assignment]
        ns = project.namespace
        loc = LazyLocation(entry, ("spec", "namespace") if project.spec.namespace else (
            "metadata", "name"))
        if ns in RESERVED_NAMESPACES or ns.startswith("kube-"):
            yield loc.error("reserved-namespace",
                            f"namespace '{ns}' is reserved for Kubernetes; a project needs its "
                            "own namespace", "set spec.namespace to the project's own name")
            continue
        other = first.setdefault(ns, entry)
        if other is not entry and other.resource.name != project.name:
            yield loc.error("duplicate-namespace",
                            f"namespace '{ns}' is already used by project "
                            f"'{other.resource.name}' at {where(other)}",
                            "every project needs a namespace of its own")


def cluster_contexts(specs: Specs) -> Iterator[Diagnostic]:
    """Two clusters may not share a kubeconfig context (one would be reconciled twice)."""
    first: dict[str, Entry[Any]] = {}
    for entry in by_position(specs.of_kind(Cluster.KIND)):
        cluster: Cluster = entry.resource  # type: ignore[assignment]
        other = first.setdefault(cluster.context, entry)
        if other is entry or other.resource.name == cluster.name:
            continue
        loc = entry.at("spec", "context") if cluster.spec.context else (
            entry.at("metadata", "name"))
        yield loc.error("duplicate-context",
                        f"context '{cluster.context}' is already used by cluster "
                        f"'{other.resource.name}' at {where(other)}",
                        "each member cluster needs its own kubeconfig context")


def reserved_labels(specs: Specs) -> Iterator[Diagnostic]:
    """Workloads may not set the labels the platform uses for ownership and pruning."""
    for entry in specs.entries:
        if not isinstance(entry.resource, Workload | PinScaler):
            continue
        for key in entry.resource.metadata.labels:
            if key.startswith(RESERVED_LABEL_PREFIXES):
                yield entry.at("metadata", "labels", key, key=True).error(
                    "reserved-label",
                    f"label '{key}' is set by pincompile on every generated object",
                    "choose a label outside pincompute.io/ and app.kubernetes.io/managed-by")


def cluster_pools(specs: Specs) -> Iterator[Diagnostic]:
    """A cluster's reserved pool lies within its capacity and is only set where the reserved
    tier is offered; its buffer fits the capacity outside the reserved pool."""
    for name, entry in specs.clusters.items():
        spec = entry.resource.spec
        capacity = {k: quantity(v) for k, v in spec.capacity.items()}
        reserved = {k: quantity(v) for k, v in spec.reserved_capacity.items()}
        if reserved and "reserved" not in spec.tiers:
            yield entry.at("spec", "reservedCapacity").error(
                "invalid-pool", f"cluster '{name}' has a reservedCapacity but does not offer "
                "the reserved tier", "add reserved to spec.tiers or remove reservedCapacity")
        for res, amount in sorted(reserved.items()):
            if res in capacity and amount > capacity[res]:
                yield entry.at("spec", "reservedCapacity", res).error(
                    "invalid-pool",
                    f"reservedCapacity {res} ({spec.reserved_capacity[res]}) exceeds the "
                    f"cluster's capacity ({spec.capacity[res]})",
                    "the reserved pool is a part of spec.capacity")
        buffer = spec.buffer
        if buffer is None:
            continue
        for res, each in (("cpu", buffer.cpu), ("memory", buffer.memory)):
            total = quantity(each) * buffer.replicas
            room = capacity.get(res)
            if room is not None and total > room - reserved.get(res, Decimal(0)):
                yield entry.at("spec", "buffer", res).error(
                    "invalid-pool",
                    f"the buffer holds {buffer.replicas} x {each} {res}, more than the "
                    "cluster's capacity outside the reserved pool",
                    "lower buffer.replicas or its size")
