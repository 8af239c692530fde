"""The pod template: used by PinPod and inside every other workload kind."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from pincompile.models.base import Arch, Strict
from pincompile.models.security import ContainerSecurity
from pincompile.models.types import (
    Duration,
    EnvName,
    Image,
    Label63,
    Name,
    Port,
    PortName,
    Quantity,
    located_error,
)


class SecretRef(Strict):
    name: str
    key: str


class EnvVar(Strict):
    """An environment variable: a literal ``value`` or a ``secretRef``."""

    name: EnvName
    value: str | None = None
    secret_ref: SecretRef | None = None

    @model_validator(mode="after")
    def _one_source(self) -> EnvVar:
        if (self.value is None) == (self.secret_ref is None):
            raise ValueError(f"env '{self.name}' needs exactly one of 'value' or 'secretRef'")
        return self


class ContainerPort(Strict):
    name: PortName
    container_port: Port
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"


class Limits(Strict):
    cpu: Quantity | None = None
    memory: Quantity | None = None


class Resources(Strict):
    """Requests; limits equal requests unless ``limits`` is given."""

    cpu: Quantity | None = None
    memory: Quantity | None = None
    gpu: int | None = Field(default=None, ge=0)
    """Whole GPUs (nvidia.com/gpu)."""
    ephemeral_storage: Quantity | None = None
    limits: Limits | None = None


class Probe(Strict):
    """One health check: exactly one of ``http`` (a path), ``tcp``, ``grpc`` or ``exec``."""

    http: str | None = None
    tcp: bool | None = None
    grpc: bool | None = None
    exec: list[str] | None = None
    port: Port | PortName | None = None
    initial_delay: Duration | None = None
    period: Duration | None = None
    timeout: Duration | None = None
    failure_threshold: int | None = Field(default=None, ge=1)
    success_threshold: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _one_handler(self) -> Probe:
        handlers = [h for h in ("http", "tcp", "grpc", "exec") if getattr(self, h)]
        if len(handlers) != 1:
            raise ValueError("a probe needs exactly one of http, tcp, grpc or exec")
        if handlers[0] in ("http", "tcp", "grpc") and self.port is None:
            raise ValueError(f"a {handlers[0]} probe needs a port")
        if self.http is not None and not self.http.startswith("/"):
            raise ValueError(f"http probe path '{self.http}' must start with '/'")
        return self


class Probes(Strict):
    readiness: Probe | None = None
    liveness: Probe | None = None
    startup: Probe | None = None


class ContainerFields(ContainerSecurity):
    """What every container spec has: user containers and managed sidecars alike."""

    image: Image
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[EnvVar] = Field(default_factory=list)
    ports: list[ContainerPort] = Field(default_factory=list)
    resources: Resources = Field(default_factory=Resources)
    probes: Probes | None = None
    privileged: bool = False
    """Privileged mode; only in projects whose policy allows it."""


class Container(ContainerFields):
    """A user container."""

    name: Label63
    lifecycle: Literal["main", "sidecar"] = "main"
    """main, or sidecar: a user-owned sidecar that lives as long as the mains."""
    working_dir: str | None = None
    """The working directory of the container's process (default: the image's)."""


class Volume(Strict):
    """A volume and where it is mounted in every container of the pod."""

    name: Label63
    type: Literal["emptyDir", "ebs", "efs", "secret", "hostPath"]
    """emptyDir; ebs (block PVC); efs (shared file PVC); secret; hostPath (if allowed)."""
    mount_path: str
    size: Quantity | None = None
    read_only: bool = False
    secret_name: str | None = None
    """For type secret."""
    path: str | None = None
    """For type hostPath."""
    storage_class: str | None = None
    """Override the storage class of ebs/efs volumes."""

    @model_validator(mode="after")
    def _check_type(self) -> Volume:
        if not self.mount_path.startswith("/"):
            raise located_error(f"mountPath '{self.mount_path}' must be absolute", "mountPath")
        if self.type == "ebs" and self.size is None:
            raise ValueError(f"ebs volume '{self.name}' needs a size")
        if self.type == "secret" and not self.secret_name:
            raise ValueError(f"secret volume '{self.name}' needs secretName")
        if self.type == "hostPath" and not self.path:
            raise ValueError(f"hostPath volume '{self.name}' needs path")
        return self


Network = Literal["bridge", "routable", "dedicated-eni", "host"]


class PodTemplate(Strict):
    """What runs: containers plus the pod-level settings."""

    containers: list[Container] = Field(min_length=1)
    sidecars: list[Name] = Field(default_factory=list)
    """Opt-in managed sidecars, by catalog name."""
    network: Network = "bridge"
    """bridge (no inbound traffic) | routable | dedicated-eni | host (system projects only).
    Default: routable when a container declares ports (or the app has a service), else
    bridge."""
    volumes: list[Volume] = Field(default_factory=list)
    config: dict[str, str] = Field(default_factory=dict)
    """Files that become a ConfigMap mounted at /etc/pincompute/config."""
    gpu_type: str | None = None
    """Only clusters offering this GPU type are eligible."""
    arch: Arch | None = None
    termination_grace_period: Duration | None = None
    service_account: str | None = None
    """The pod's Kubernetes ServiceAccount (default: the namespace's ``default``)."""
    service_account_token: bool | None = None
    """Mount the service account's API token into the containers. Default: only when
    ``serviceAccount`` is set (a pod that does not talk to the Kubernetes API has no use
    for a credential)."""

    @model_validator(mode="after")
    def _default_network(self) -> PodTemplate:
        if "network" not in self.model_fields_set and any(c.ports for c in self.containers):
            self.network = "routable"
        return self

    def accepts_traffic(self) -> None:
        """Make an unset ``network`` routable (a workload with a service receives traffic)."""
        if "network" not in self.model_fields_set:
            self.network = "routable"
