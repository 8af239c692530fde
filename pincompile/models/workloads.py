"""Workload kinds, owned by application teams."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from pincompile.models.base import (
    DaemonPlacement,
    JobSetPlacement,
    Placement,
    Resource,
    ServicePlacement,
    Strict,
    Tier,
    WorkloadMetadata,
)
from pincompile.models.pod import PodTemplate, Volume
from pincompile.models.types import (
    Cron,
    Duration,
    IntOrPercent,
    Label63,
    Name,
    Port,
    PortName,
    Quantity,
    TimeZone,
    located_error,
)

#: Upper bound of any pod count (Kubernetes caps Indexed Job completions at 100,000).
MAX_PODS = 100_000
MAX_RETRIES = 1_000

class WorkloadSpec(Strict):
    """Fields every workload has at spec level."""

    tier: Tier = "ondemand"
    """reserved | ondemand | preemptible."""
    placement: Placement = Field(default_factory=Placement)


class Workload(Resource):
    metadata: WorkloadMetadata
    spec: WorkloadSpec

    @property
    def project(self) -> str:
        return self.metadata.project

    @property
    def pod_template(self) -> PodTemplate:
        return self.spec.template  # type: ignore[no-any-return,attr-defined]


# --- PinPod ---------------------------------------------------------------------------------
class PinPodSpec(PodTemplate, WorkloadSpec):
    restart_policy: Literal["Always", "OnFailure", "Never"] = "Always"
    failover: bool = True
    """Recreate it (on another cluster if its own is lost)."""


class PinPod(Workload):
    """A single managed pod (notebooks, general compute)."""

    KIND: ClassVar[str] = "PinPod"
    kind: Literal["PinPod"]
    spec: PinPodSpec

    @property
    def pod_template(self) -> PodTemplate:
        return self.spec


# --- PinApp / PinterestService --------------------------------------------------------------
class Rollout(Strict):
    strategy: Literal["zone-by-zone", "all-at-once"] = "zone-by-zone"
    max_surge: IntOrPercent = "25%"
    max_unavailable: IntOrPercent = 0
    health_timeout: Duration = "10m"
    """A zone that is not healthy by then halts the rollout."""


class ServicePort(Strict):
    name: PortName
    port: Port
    target_port: Port | PortName | None = None
    """Default: the same as port."""
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"


class Ingress(Strict):
    host: str
    path: str = "/"
    port: PortName | Port | None = None
    """Service port to route to (default: the first)."""
    tls_secret: str | None = None
    class_name: str | None = None


class ServiceSpec(Strict):
    ports: list[ServicePort] = Field(min_length=1)
    ingress: Ingress | None = None


class DisruptionBudget(Strict):
    max_unavailable: IntOrPercent | None = None
    min_available: IntOrPercent | None = None

    @model_validator(mode="after")
    def _one(self) -> DisruptionBudget:
        if (self.max_unavailable is None) == (self.min_available is None):
            raise ValueError("disruptionBudget needs exactly one of maxUnavailable, minAvailable")
        return self


class AppSpec(WorkloadSpec):
    replicas: int = Field(default=1, ge=0, le=MAX_PODS)
    template: PodTemplate
    placement: ServicePlacement = Field(default_factory=ServicePlacement)
    rollout: Rollout = Field(default_factory=Rollout)
    service: ServiceSpec | None = None
    disruption_budget: DisruptionBudget | None = None
    paused: bool = False
    """true: stop rolling out new versions, keep what runs."""
    stopped: bool = False
    """true: scale to zero everywhere, keep everything else."""

    @model_validator(mode="after")
    def _routable_with_service(self) -> AppSpec:
        if self.service is not None:
            self.template.accepts_traffic()
        return self


class PinApp(Workload):
    """A long-running service."""

    KIND: ClassVar[str] = "PinApp"
    kind: Literal["PinApp"]
    spec: AppSpec


class PinterestService(Workload):
    """The earlier service bundle: the same as PinApp."""

    KIND: ClassVar[str] = "PinterestService"
    kind: Literal["PinterestService"]
    spec: AppSpec


# --- PinScaler ------------------------------------------------------------------------------
class ResourceMetric(Strict):
    type: Literal["cpu", "memory"]
    target_utilization: int = Field(ge=1, le=1000)
    """Percent of requests."""


class CustomMetric(Strict):
    type: Literal["custom"]
    query: str
    target_per_replica: Quantity
    name: Label63 | None = None
    """Metric name (default: derived from the scaler's name)."""


Metric = Annotated[ResourceMetric | CustomMetric, Field(discriminator="type")]


class ScaleSchedule(Strict):
    """Raise the floor during a window."""

    cron: Cron
    duration: Duration
    timezone: TimeZone = "Etc/UTC"
    min_replicas: int = Field(ge=1, le=MAX_PODS)


class Cooldown(Strict):
    scale_up: Duration | None = None
    scale_down: Duration | None = None


class ScalerSpec(Strict):
    target: Name
    """A PinApp or PinterestService of the same project."""
    min_replicas: int = Field(default=1, ge=1, le=MAX_PODS)
    max_replicas: int = Field(ge=1, le=MAX_PODS)
    metrics: list[Metric] = Field(default_factory=list)
    schedules: list[ScaleSchedule] = Field(default_factory=list)
    cooldown: Cooldown = Field(default_factory=Cooldown)

    @model_validator(mode="after")
    def _bounds(self) -> ScalerSpec:
        if self.max_replicas < self.min_replicas:
            raise located_error(
                f"maxReplicas ({self.max_replicas}) is below minReplicas ({self.min_replicas})",
                "maxReplicas")
        for i, s in enumerate(self.schedules):
            if s.min_replicas > self.max_replicas:
                raise located_error(
                    f"schedule minReplicas ({s.min_replicas}) exceeds maxReplicas "
                    f"({self.max_replicas})", "schedules", i, "minReplicas")
        return self


class PinScaler(Resource):
    """Autoscaling for a PinApp or PinterestService."""

    KIND: ClassVar[str] = "PinScaler"
    kind: Literal["PinScaler"]
    metadata: WorkloadMetadata
    spec: ScalerSpec

    @property
    def project(self) -> str:
        return self.metadata.project


# --- PinterestJobSet ------------------------------------------------------------------------
class VolumeClaimTemplate(Strict):
    name: Label63
    size: Quantity
    type: Literal["ebs", "efs"] = "ebs"
    mount_path: str
    storage_class: str | None = None


class JobSetSpec(WorkloadSpec):
    completions: int = Field(ge=1, le=MAX_PODS)
    """Shards; each pod gets PINCOMPUTE_SHARD_INDEX and the total."""
    parallelism: int | None = Field(default=None, ge=1, le=MAX_PODS)
    template: PodTemplate
    backoff_limit_per_shard: int = Field(default=3, ge=0, le=MAX_RETRIES)
    ttl_after_finished: Duration | None = None
    config_templates: dict[str, str] = Field(default_factory=dict)
    """Rendered per job; templates also see ``job`` (completions, parallelism, ...)."""
    volume_claim_templates: list[VolumeClaimTemplate] = Field(default_factory=list)
    placement: JobSetPlacement = Field(default_factory=JobSetPlacement)


class PinterestJobSet(Workload):
    """Run-to-finish parallel work."""

    KIND: ClassVar[str] = "PinterestJobSet"
    kind: Literal["PinterestJobSet"]
    spec: JobSetSpec


# --- PinterestTrainingJob -------------------------------------------------------------------
FRAMEWORK_ROLES: dict[str, tuple[str, ...]] = {
    "pytorch": ("master", "worker"),
    "tensorflow": ("chief", "worker", "ps", "evaluator"),
}


class RunPolicy(Strict):
    backoff_limit: int | None = Field(default=None, ge=0, le=MAX_RETRIES)
    ttl_after_finished: Duration | None = None
    clean_pod_policy: Literal["Running", "All", "None"] = "Running"
    active_deadline: Duration | None = None


class TrainingJobSpec(WorkloadSpec):
    framework: Literal["pytorch", "tensorflow"]
    replicas: dict[str, Annotated[int, Field(ge=0, le=MAX_PODS)]]
    """pytorch: master / worker; tensorflow: chief / worker / ps."""
    template: PodTemplate
    run_policy: RunPolicy = Field(default_factory=RunPolicy)

    @model_validator(mode="after")
    def _roles(self) -> TrainingJobSpec:
        allowed = FRAMEWORK_ROLES[self.framework]
        for role, count in self.replicas.items():
            if role not in allowed:
                raise located_error(
                    f"replica role '{role}' is not a {self.framework} role; "
                    f"use {', '.join(allowed)}", "replicas", role)
            if count < 0:
                raise located_error(f"replicas.{role} must not be negative", "replicas", role)
        if not any(self.replicas.values()):
            raise located_error("replicas needs at least one replica", "replicas")
        return self


class PinterestTrainingJob(Workload):
    """Distributed training (Kubeflow TFJob / PyTorchJob); never divided."""

    KIND: ClassVar[str] = "PinterestTrainingJob"
    kind: Literal["PinterestTrainingJob"]
    spec: TrainingJobSpec


# --- PinterestCronJob -----------------------------------------------------------------------
class CronJobSpec(WorkloadSpec):
    schedule: Cron
    timezone: TimeZone = "Etc/UTC"
    concurrency_policy: Literal["Allow", "Forbid", "Replace"] = "Allow"
    template: PodTemplate
    suspend: bool = False
    backoff_limit: int | None = Field(default=None, ge=0, le=MAX_RETRIES)
    starting_deadline: Duration | None = None
    restart_policy: Literal["OnFailure", "Never"] = "OnFailure"


class PinterestCronJob(Workload):
    """Scheduled work; runs in exactly one cluster."""

    KIND: ClassVar[str] = "PinterestCronJob"
    kind: Literal["PinterestCronJob"]
    spec: CronJobSpec


# --- PinterestDaemon ------------------------------------------------------------------------
class Toleration(Strict):
    key: str | None = None
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None


class DaemonSpec(WorkloadSpec):
    template: PodTemplate
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: Literal["all", "none"] | list[Toleration] = "none"
    placement: DaemonPlacement = Field(default_factory=DaemonPlacement)  # type: ignore[assignment]


class PinterestDaemon(Workload):
    """An infrastructure daemon on every node."""

    KIND: ClassVar[str] = "PinterestDaemon"
    kind: Literal["PinterestDaemon"]
    spec: DaemonSpec


__all__ = [
    "FRAMEWORK_ROLES", "PinApp", "PinPod", "PinScaler", "PinterestCronJob", "PinterestDaemon",
    "PinterestJobSet", "PinterestService", "PinterestTrainingJob", "Volume", "Workload",
]
