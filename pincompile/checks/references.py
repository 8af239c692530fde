"""Reference rules: every project, scaler target, sidecar, cluster, region, zone and
GPU type a spec names exists."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pincompile.catalog import Entry
from pincompile.checks.specs import (
    FIX_FIRST,
    SCALABLE_KINDS,
    LazyLocation,
    Specs,
    by_position,
    did_you_mean,
    pods,
    where,
)
from pincompile.diagnostics import Diagnostic
from pincompile.models import (
    Cluster,
    PinScaler,
    PinterestSideCar,
    Project,
    Workload,
)
from pincompile.models.workloads import AppSpec


def workload_projects(specs: Specs) -> Iterator[Diagnostic]:
    """Every workload and PinScaler belongs to an existing Project."""
    projects = specs.projects
    for entry in specs.entries:
        res = entry.resource
        if not isinstance(res, Workload | PinScaler) or res.project in projects:
            continue
        failed = specs.failed([Project.KIND], res.project)
        if failed is not None:
            yield entry.at("metadata", "project").error("unknown-project", failed, FIX_FIRST)
            continue
        yield entry.at("metadata", "project").error(
            "unknown-project", f"project '{res.project}' does not exist",
            did_you_mean(res.project, projects, "projects"))


def scaler_targets(specs: Specs) -> Iterator[Diagnostic]:
    """A PinScaler targets a PinApp or PinterestService of its own project, at most one
    PinScaler per target."""
    by_key = {(e.resource.project, e.resource.name): e for e in specs.workloads}
    scaled: dict[tuple[str, str], Entry[Any]] = {}
    for entry in by_position(specs.scalers):
        scaler: PinScaler = entry.resource  # type: ignore[assignment]
        if scaler.project not in specs.projects:
            continue  # reported by workload_projects
        target = scaler.spec.target
        loc = LazyLocation(entry, ("spec", "target"))
        found = by_key.get((scaler.project, target))
        failed = specs.failed(SCALABLE_KINDS, target, scaler.project)
        if found is None and failed is not None:
            yield loc.error("unknown-target", failed, FIX_FIRST)
            continue
        if found is None:
            elsewhere = sorted(p for (p, n), e in by_key.items()
                               if n == target and e.resource.kind in SCALABLE_KINDS)
            hint = (f"'{target}' is in project '{elsewhere[0]}'; a PinScaler must be in the "
                    "project of its target") if elsewhere else did_you_mean(
                target, [n for (p, n), e in by_key.items()
                         if p == scaler.project and e.resource.kind in SCALABLE_KINDS],
                f"PinApps and PinterestServices in project '{scaler.project}'")
            yield loc.error("unknown-target",
                            f"target '{target}' is not a PinApp or PinterestService in project "
                            f"'{scaler.project}'", hint)
            continue
        if found.resource.kind not in SCALABLE_KINDS:
            yield loc.error("invalid-target",
                            f"target '{target}' is a {found.resource.kind}; a PinScaler scales "
                            "a PinApp or PinterestService")
            continue
        other = scaled.setdefault((scaler.project, target), entry)
        if other is not entry:
            yield loc.error("duplicate-scaler",
                            f"{found.resource.kind} '{target}' is already scaled by PinScaler "
                            f"'{other.resource.name}' at {where(other)}",
                            "a workload has at most one PinScaler; merge their metrics")
            continue
        app = found.resource.spec
        assert isinstance(app, AppSpec)  # a PinApp's or PinterestService's (checked above)
        low, high = scaler.spec.min_replicas, scaler.spec.max_replicas
        if "replicas" in app.model_fields_set and not low <= app.replicas <= high:
            yield found.at("spec", "replicas").error(
                "replicas-outside-scaler",
                f"replicas {app.replicas} is outside the bounds of PinScaler "
                f"'{scaler.name}' at {where(entry)} (minReplicas {low}, maxReplicas {high})",
                "the autoscaler owns the replica count: set replicas within the bounds "
                "or leave it out")


def sidecar_references(specs: Specs) -> Iterator[Diagnostic]:
    """``sidecars: [...]`` names managed sidecars that exist, run in pods (mode: sidecar) and
    apply to the workload's kind. Listing an ``inject: always`` sidecar is allowed."""
    sidecars = specs.sidecars
    for pod in pods(specs):
        seen: set[str] = set()
        for i, name in enumerate(pod.template.sidecars):
            loc = LazyLocation(pod.entry, (*pod.path, "sidecars", i))
            if name in seen:
                yield loc.error("duplicate-sidecar", f"sidecar '{name}' is listed twice")
                continue
            seen.add(name)
            found = sidecars.get(name)
            failed = specs.failed([PinterestSideCar.KIND], name)
            if found is None and failed is not None:
                yield loc.error("unknown-sidecar", failed, FIX_FIRST)
                continue
            if found is None:
                yield loc.error("unknown-sidecar", f"sidecar '{name}' does not exist",
                                did_you_mean(name, [n for n, e in sidecars.items()
                                                    if e.resource.spec.mode == "sidecar"],
                                             "sidecars"))
                continue
            spec = found.resource.spec
            if spec.mode != "sidecar":
                yield loc.error("invalid-sidecar",
                                f"sidecar '{name}' has mode: {spec.mode} (one per node, defined "
                                f"at {where(found)}); only mode: sidecar can be added to a pod",
                                "daemon sidecars run on every node without being listed")
            elif pod.kind not in spec.applies_to:
                yield loc.error("invalid-sidecar",
                                f"sidecar '{name}' does not apply to {pod.kind} (appliesTo: "
                                f"{', '.join(spec.applies_to)})")


def _placements(specs: Specs) -> Iterator[tuple[Entry[Any], Any]]:
    """(entry, placement) of every workload and project."""
    for entry in specs.entries:
        res = entry.resource
        if isinstance(res, Workload | Project):
            yield entry, res.spec.placement


def cluster_references(specs: Specs) -> Iterator[Diagnostic]:
    """Clusters named in any placement exist."""
    clusters = specs.clusters
    for entry, placement in _placements(specs):
        if not isinstance(placement.clusters, list):
            continue  # PinterestDaemon's `clusters: all`
        for i, name in enumerate(placement.clusters):
            if name in clusters:
                continue
            failed = specs.failed([Cluster.KIND], name)
            if failed is not None:
                yield entry.at("spec", "placement", "clusters", i).error(
                    "unknown-cluster", failed, FIX_FIRST)
                continue
            hint = did_you_mean(name, clusters, "clusters")
            if name == "all":
                hint = "only a PinterestDaemon accepts 'clusters: all' (written without a list)"
            yield entry.at("spec", "placement", "clusters", i).error(
                "unknown-cluster", f"cluster '{name}' does not exist", hint)


def region_zone_references(specs: Specs) -> Iterator[Diagnostic]:
    """Regions and zones named in any placement have at least one cluster."""
    regions = {c.resource.spec.region for c in specs.clusters.values()}
    zones = {c.resource.spec.zone for c in specs.clusters.values()}
    for entry, placement in _placements(specs):
        for field, known, what in (("regions", regions, "region"), ("zones", zones, "zone")):
            for i, name in enumerate(getattr(placement, field)):
                if name not in known:
                    yield entry.at("spec", "placement", field, i).error(
                        f"unknown-{what}", f"no cluster is in {what} '{name}'",
                        did_you_mean(name, known, f"{what}s with clusters"))


def gpu_types(specs: Specs) -> Iterator[Diagnostic]:
    """A pod's ``gpuType`` is offered by at least one cluster."""
    offered = {t for c in specs.clusters.values() for t in c.resource.spec.gpu_types}
    for pod in pods(specs):
        gpu = pod.template.gpu_type
        if gpu is not None and gpu not in offered:
            yield pod.at("gpuType").error(
                "unknown-gpu-type", f"no cluster offers GPU type '{gpu}'",
                did_you_mean(gpu, offered, "GPU types offered"))
