"""Shared pieces of every kind: the strict base model, the envelope and placement."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from pincompile.models.types import LabelKey, LabelValue, Name

API_VERSION = "pincompute.io/v1"

Tier = Literal["reserved", "ondemand", "preemptible"]
TIERS: tuple[Tier, ...] = ("reserved", "ondemand", "preemptible")
Arch = Literal["amd64", "arm64"]


class Strict(BaseModel):
    """Base of every spec model: camelCase fields, unknown fields are errors."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=False,
        # the docstrings under fields become descriptions only when a schema is rendered
        # (pincompile.models.docs): reading every model's source at import would slow every
        # compile (bench/RESULTS.md, "Tuning")
        # validators are built on a model's first use, not at import: a warm compile that
        # parses one file builds only the models that file needs
        defer_build=True,
    )


class Metadata(Strict):
    """Metadata of platform kinds (no project)."""

    name: Name
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    """Copied onto every generated object."""
    annotations: dict[str, str] = Field(default_factory=dict)
    """Copied onto every generated object."""


class WorkloadMetadata(Metadata):
    """Metadata of workload kinds: every workload belongs to exactly one Project."""

    project: Name
    """The tenant this workload belongs to (a Project's name)."""


class Placement(Strict):
    """Filters that limit which member clusters a workload may run in."""

    regions: list[str] = Field(default_factory=list)
    zones: list[str] = Field(default_factory=list)
    clusters: list[str] = Field(default_factory=list)
    cluster_labels: dict[str, str] = Field(default_factory=dict)
    """Only clusters carrying all these labels."""


class ServicePlacement(Placement):
    """Placement of PinApp and PinterestService."""

    spread: Literal["zone", "cluster", "none"] = "zone"
    """zone: each zone's replica count differs by at most one; cluster: even per cluster."""
    max_clusters: int | None = Field(default=None, ge=1)
    """Use at most this many clusters."""


class JobSetPlacement(Placement):
    """Placement of PinterestJobSet."""

    divide: bool = False
    """true lets shards be divided across clusters (contiguous index ranges)."""


class DaemonPlacement(Strict):
    """Placement of PinterestDaemon: ``clusters: all`` (the default) or a list."""

    regions: list[str] = Field(default_factory=list)
    zones: list[str] = Field(default_factory=list)
    clusters: list[str] | Literal["all"] = "all"
    cluster_labels: dict[str, str] = Field(default_factory=dict)


class Resource(Strict):
    """The envelope every document shares."""

    KIND: ClassVar[str] = ""
    api_version: Literal["pincompute.io/v1"] = Field(alias="apiVersion")
    kind: str
    metadata: Metadata
    spec: Any

    @model_validator(mode="before")
    @classmethod
    def _default_spec(cls, data: Any) -> Any:
        if isinstance(data, dict) and "spec" not in data:
            data = {**data, "spec": {}}
        return data

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def key(self) -> tuple[str, str, str]:
        """Identity: (kind, project, name); project is '' for platform kinds."""
        return (self.kind, getattr(self.metadata, "project", ""), self.metadata.name)
