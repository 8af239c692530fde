"""Platform kinds (owned by the platform team): Cluster, Project, PinterestSideCar,
RuntimeProfile."""

from __future__ import annotations

import typing
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from pincompile.models.base import TIERS, Arch, Metadata, Placement, Resource, Strict, Tier
from pincompile.models.nodes import RemediationPolicy, RotationPolicy
from pincompile.models.pod import ContainerFields, EnvVar, Limits, Resources, Volume
from pincompile.models.pricing import Prices
from pincompile.models.security import Capability, ContainerSecurity, SecurityDefaults
from pincompile.models.types import (
    Image,
    KubernetesVersion,
    Label63,
    LabelKey,
    LabelValue,
    Quantity,
)

WorkloadKind = Literal[
    "PinPod", "PinApp", "PinterestService", "PinterestJobSet", "PinterestTrainingJob",
    "PinterestCronJob", "PinterestDaemon",
]
WORKLOAD_KINDS: tuple[WorkloadKind, ...] = typing.get_args(WorkloadKind)
QuotaResource = Literal["cpu", "memory", "nvidia.com/gpu", "ephemeral-storage", "storage", "pods"]
CapacityResource = Literal["cpu", "memory", "nvidia.com/gpu", "ephemeral-storage", "storage",
                           "pods", "vpc.amazonaws.com/pod-eni"]
#: The Cluster addon that offers pods a dedicated network interface (``network:
#: dedicated-eni``), and the extended resource such a pod requests.
POD_ENI_ADDON = "pod-eni"
POD_ENI = "vpc.amazonaws.com/pod-eni"


class BufferSpec(Strict):
    """Burst room kept free in a cluster: placeholder pods that any real pod preempts."""

    replicas: int = Field(ge=0, le=10_000)
    """How many placeholder pods."""
    cpu: Quantity
    """CPU each placeholder holds."""
    memory: Quantity
    """Memory each placeholder holds."""


class ClusterSpec(Strict):
    region: str
    zone: str
    context: str | None = None
    """kubeconfig context the reconciler uses (default: the cluster's name)."""
    kubernetes_version: KubernetesVersion = "1.33"
    """Decides e.g. native sidecars (>= 1.29)."""
    capacity: dict[CapacityResource, Quantity] = Field(default_factory=dict)
    reserved_capacity: dict[QuotaResource, Quantity] = Field(default_factory=dict)
    """The part of ``capacity`` set aside for the reserved tier (nodes labelled
    ``pincompute.io/tier-reserved``); only reserved workloads use it. Empty: reserved and
    ondemand share the whole capacity."""
    buffer: BufferSpec | None = None
    """Placeholder pods at a negative priority that keep burst room free."""
    gpu_types: list[str] = Field(default_factory=list)
    arch: list[Arch] = Field(default_factory=lambda: list[Arch](["amd64"]))
    tiers: list[Tier] = Field(default_factory=lambda: list(TIERS))
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    schedulable: bool = True
    """false = cordoned: nothing new is placed here."""
    addons: list[str] = Field(default_factory=list)
    """Optional operators present, e.g. kubeflow-training, keda, pod-eni."""
    remediation: RemediationPolicy | None = None
    """When a node counts as unhealthy and what ``serve`` does about it (none: nothing)."""
    rotation: RotationPolicy = Field(default_factory=RotationPolicy)
    """How ``pincompile rotate`` replaces the cluster's nodes."""
    prices: Prices | None = None
    """What an hour of a core, a GiB of memory and a GPU costs per tier (``pincompile
    cost``); none: the cluster's usage is not priced."""


class Cluster(Resource):
    """One member cluster of the fleet."""

    KIND: ClassVar[str] = "Cluster"
    kind: Literal["Cluster"]
    metadata: Metadata
    spec: ClusterSpec

    @property
    def context(self) -> str:
        return self.spec.context or self.metadata.name


class ProjectQuota(Strict):
    """Quota per tier; a missing tier means 0 allowed."""

    reserved: dict[QuotaResource, Quantity] | None = None
    ondemand: dict[QuotaResource, Quantity] | None = None
    preemptible: dict[QuotaResource, Quantity] | None = None


class ProjectPolicy(Strict):
    allow_host_network: bool = False
    """Host network is for system projects only."""
    allow_privileged: bool = False
    allow_daemons: bool = False
    """PinterestDaemon only in projects that allow it."""
    allow_host_path: bool = False
    allow_run_as_root: bool = False
    """Containers may run as root (``runAsUser: 0``); the namespaces enforce Pod Security
    ``baseline``."""
    allow_capabilities: list[Capability] = Field(default_factory=list)
    """Linux capabilities a container (or a managed sidecar injected into its pod) may add.
    ``NET_BIND_SERVICE`` keeps Pod Security ``restricted``; the container runtime's other
    default capabilities need ``baseline``; any other one ``privileged``."""


class ProjectSpec(Strict):
    namespace: Label63 | None = None
    """Default: the project name."""
    owners: list[str] = Field(default_factory=list)
    quota: ProjectQuota = Field(default_factory=ProjectQuota)
    placement: Placement = Field(default_factory=Placement)
    """Optional limits on where this project may run."""
    policy: ProjectPolicy = Field(default_factory=ProjectPolicy)


class Project(Resource):
    """A tenant."""

    KIND: ClassVar[str] = "Project"
    kind: Literal["Project"]
    metadata: Metadata
    spec: ProjectSpec = Field(default_factory=ProjectSpec)

    @property
    def namespace(self) -> str:
        return self.spec.namespace or self.metadata.name


class SidecarContainer(ContainerFields):
    """A managed sidecar's container; string values may use templates."""

    name: Label63 | None = None
    """Default: the sidecar's name."""


class SideCarSpec(Strict):
    mode: Literal["sidecar", "daemon"] = "sidecar"
    """sidecar (in every selected pod) | daemon (one per node, via DaemonSet)."""
    inject: Literal["always", "opt-in"] = "always"
    applies_to: list[WorkloadKind] = Field(default_factory=lambda: list(WORKLOAD_KINDS))
    order: Literal["before-main", "after-main"] = "before-main"
    """before-main: starts first, stops last."""
    container: SidecarContainer
    volumes: list[Volume] = Field(default_factory=list)
    host_network: bool = False
    """Daemon mode only."""
    tolerations: Literal["all", "none"] | list[dict[str, Any]] = "all"
    """Daemon mode only."""


class PinterestSideCar(Resource):
    """A managed infrastructure component."""

    KIND: ClassVar[str] = "PinterestSideCar"
    kind: Literal["PinterestSideCar"]
    metadata: Metadata
    spec: SideCarSpec


class InitContainer(ContainerSecurity):
    name: Label63
    image: Image
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[EnvVar] = Field(default_factory=list)
    resources: Resources = Field(default_factory=Resources)


class NativeVolume(Strict):
    """A Kubernetes volume as written in a pod spec, e.g. ``{name: logs, emptyDir: {}}``."""

    model_config = Strict.model_config | {"extra": "allow"}
    name: Label63

    @model_validator(mode="after")
    def _one_source(self) -> NativeVolume:
        sources = list((self.model_extra or {}).keys())
        if len(sources) != 1:
            raise ValueError(
                f"volume '{self.name}' needs exactly one source such as emptyDir: {{}}")
        return self


class VolumeMount(Strict):
    name: Label63
    mount_path: str
    read_only: bool = False
    sub_path: str | None = None


class DefaultResources(Strict):
    """Requests (and optional limits) every container without its own gets."""

    cpu: Quantity | None = None
    memory: Quantity | None = None
    limits: Limits | None = None


class RuntimeProfileSpec(Strict):
    security: SecurityDefaults = Field(default_factory=SecurityDefaults)
    """The security context of every container pincompile writes."""
    default_resources: DefaultResources | None = None
    """Requests/limits written into every container that does not set its own, and the
    LimitRange of every project namespace (for pods created by others)."""
    init_containers: list[InitContainer] = Field(default_factory=list)
    env: list[EnvVar] = Field(default_factory=list)
    """Identity variables added to every container."""
    volumes: list[NativeVolume] = Field(default_factory=list)
    volume_mounts: list[VolumeMount] = Field(default_factory=list)
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    values: dict[str, Any] = Field(default_factory=dict)
    """Platform values visible to templates as ``platform``."""


class RuntimeProfile(Resource):
    """What every workload pod gets (exactly one per platform)."""

    KIND: ClassVar[str] = "RuntimeProfile"
    kind: Literal["RuntimeProfile"]
    metadata: Metadata
    spec: RuntimeProfileSpec = Field(default_factory=RuntimeProfileSpec)


__all__ = [
    "WORKLOAD_KINDS",
    "Cluster",
    "InitContainer",
    "PinterestSideCar",
    "Project",
    "RuntimeProfile",
    "SidecarContainer",
    "WorkloadKind",
]
