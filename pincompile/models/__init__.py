"""Typed models of every kind in the spec language."""

from __future__ import annotations

from pincompile.models.base import API_VERSION, TIERS, Resource, Tier
from pincompile.models.platform import (
    WORKLOAD_KINDS,
    Cluster,
    PinterestSideCar,
    Project,
    RuntimeProfile,
)
from pincompile.models.pod import Container, PodTemplate, Volume
from pincompile.models.workloads import (
    PinApp,
    PinPod,
    PinScaler,
    PinterestCronJob,
    PinterestDaemon,
    PinterestJobSet,
    PinterestService,
    PinterestTrainingJob,
    Workload,
)

#: Every kind, by name, in the order documentation lists them.
KINDS: dict[str, type[Resource]] = {
    cls.KIND: cls
    for cls in (
        Cluster, Project, PinterestSideCar, RuntimeProfile, PinPod, PinApp, PinterestService,
        PinScaler, PinterestJobSet, PinterestTrainingJob, PinterestCronJob, PinterestDaemon,
    )
}
PLATFORM_KINDS = ("Cluster", "Project", "PinterestSideCar", "RuntimeProfile")

__all__ = [
    "API_VERSION", "KINDS", "PLATFORM_KINDS", "TIERS", "WORKLOAD_KINDS", "Cluster", "Container",
    "PinApp", "PinPod", "PinScaler", "PinterestCronJob", "PinterestDaemon", "PinterestJobSet",
    "PinterestService", "PinterestSideCar", "PinterestTrainingJob", "PodTemplate", "Project",
    "Resource", "RuntimeProfile", "Tier", "Volume", "Workload",
]
