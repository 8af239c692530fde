"""What expansion knows about one spec in one cluster: names, namespace, labels and
annotations, template values, and where to report problems.

Every generated object gets its metadata from :meth:`Target.metadata`, so ownership labels
and the source/revision annotations are the same everywhere (docs/concepts.md, section 5).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar

from pincompile.catalog import Catalog, Entry
from pincompile.diagnostics import Diagnostic
from pincompile.expand.templates import Renderer
from pincompile.manifest import (
    ANNOTATION_REVISION,
    ANNOTATION_SOURCE,
    LABEL_APP,
    LABEL_CLUSTER,
    LABEL_KIND,
    LABEL_PROJECT,
    LABEL_TIER,
    MANAGED_BY,
    MANAGED_BY_VALUE,
)
from pincompile.models import Cluster, PinScaler, Project, Resource, RuntimeProfile, Workload
from pincompile.placement import Decision, Plan, Shard

Obj = dict[str, Any]
"""One Kubernetes object (or a part of one) as plain data."""


#: The ``pincompute.io/project`` label of fleet-wide objects no project owns (PriorityClasses,
#: managed sidecar DaemonSets). A dot cannot occur in a project name, so it never collides.
PLATFORM_PROJECT = "pincompute.platform"
#: Native sidecars (initContainers with restartPolicy Always) are on by default from 1.29.
NATIVE_SIDECARS_SINCE = (1, 29)


def priority_class(tier: str) -> str:
    """The PriorityClass every pod of ``tier`` runs with."""
    return f"pincompute-{tier}"


W = TypeVar("W", bound=Resource)
R = TypeVar("R", bound=Resource)
Key = tuple[str, str, str]
Where = tuple[Entry[Any], tuple[str | int, ...]]
"""A spec and a field path in it: located lazily, only when something is wrong there."""


# --- one expansion, one workload in one cluster-----------------------------------------------

@dataclass
class Expansion:
    """One expansion: the state shared by one ``expand_all`` call."""

    catalog: Catalog
    plan: Plan
    revision: str
    diagnostics: list[Diagnostic] = field(default_factory=list)

    _seen: set[Diagnostic] = field(default_factory=set, repr=False)

    @cached_property
    def renderer(self) -> Renderer:
        return Renderer(self.report)

    def report(self, diagnostic: Diagnostic) -> None:
        """Record a problem once (the same spec is expanded for many clusters and pods)."""
        if diagnostic not in self._seen:
            self._seen.add(diagnostic)
            self.diagnostics.append(diagnostic)

    def error(self, where: Where, code: str, message: str, hint: str | None = None) -> None:
        entry, path = where
        self.report(entry.at(*path).error(code, message, hint))

    @property
    def clusters(self) -> Mapping[str, Entry[Cluster]]:
        return self.catalog.clusters

    @property
    def projects(self) -> Mapping[str, Entry[Project]]:
        return self.catalog.projects

    @property
    def runtime(self) -> Entry[RuntimeProfile] | None:
        return self.catalog.runtime

    @cached_property
    def platform_values(self) -> dict[str, Any]:
        return plain(self.runtime.resource.spec.values) if self.runtime is not None else {}

    @property
    def workloads(self) -> Mapping[Key, Entry[Workload]]:
        return self.catalog.workloads_by_key

    @property
    def scalers(self) -> Mapping[Key, Entry[PinScaler]]:
        return self.catalog.scalers_by_key

    def scaled(self, scaler: PinScaler) -> Entry[Workload] | None:
        """The PinApp/PinterestService a scaler targets (as placement resolved it)."""
        key = self.plan.scaler_targets.get(scaler.key)
        return self.workloads.get(key) if key is not None else None

    def namespace_of(self, project: str) -> str:
        entry = self.projects.get(project)
        return entry.resource.namespace if entry is not None else project


@dataclass
class Target(Generic[W]):
    """One spec expanded into one member cluster (a workload, a scaler, or a platform spec
    such as a Project)."""

    run: Expansion
    entry: Entry[W]
    cluster: Entry[Cluster]
    project: str
    namespace: str
    tier: str | None
    """``None`` for objects of no tier (Namespace)."""

    @property
    def resource(self) -> W:
        return self.entry.resource

    @property
    def name(self) -> str:
        return self.entry.resource.name

    @property
    def kind(self) -> str:
        return self.entry.resource.kind

    @property
    def cluster_name(self) -> str:
        return self.cluster.resource.name

    @cached_property
    def native_sidecars(self) -> bool:
        """Whether the cluster runs native sidecars (Kubernetes 1.29 or newer)."""
        return kube_version(self.cluster.resource) >= NATIVE_SIDECARS_SINCE

    def labels(self) -> dict[str, str]:
        """Ownership labels (which win over the spec's own ``metadata.labels``)."""
        labels = {
            **self.resource.metadata.labels,
            MANAGED_BY: MANAGED_BY_VALUE,
            LABEL_PROJECT: self.project,
            LABEL_APP: self.name,
            LABEL_KIND: self.kind,
            LABEL_CLUSTER: self.cluster_name,
        }
        if self.tier is not None:
            labels[LABEL_TIER] = self.tier
        return labels

    def selector(self) -> dict[str, str]:
        """The immutable pod selector of controllers: app and kind within the namespace."""
        return {LABEL_APP: self.name, LABEL_KIND: self.kind}

    def annotations(self) -> dict[str, str]:
        return {
            **self.resource.metadata.annotations,
            ANNOTATION_SOURCE: self.entry.file,
            ANNOTATION_REVISION: self.run.revision,
        }

    def metadata(self, name: str, *, namespaced: bool = True,
                 labels: Mapping[str, str] | None = None,
                 annotations: Mapping[str, str] | None = None) -> Obj:
        """Metadata of one generated object: ownership labels, source and revision."""
        meta: Obj = {
            "name": name,
            "labels": {**self.labels(), **(labels or {})},
            "annotations": {**self.annotations(), **(annotations or {})},
        }
        if namespaced:
            meta["namespace"] = self.namespace
        return meta

    def obj(self, api_version: str, kind: str, name: str, spec: Obj | None = None,
            **meta: Any) -> Obj:
        """A complete object: apiVersion, kind, metadata (see :meth:`metadata`) and spec."""
        out: Obj = {"apiVersion": api_version, "kind": kind,
                    "metadata": self.metadata(name, **meta)}
        if spec is not None:
            out["spec"] = spec
        return out

    def template_values(self, **extra: Any) -> dict[str, Any]:
        """What templates see: ``app``, ``cluster``, ``platform`` (and e.g. ``job``)."""
        cluster = self.cluster.resource
        return {
            "app": {
                "name": self.name, "project": self.project, "kind": self.kind,
                "namespace": self.namespace, "labels": dict(self.resource.metadata.labels),
            },
            "cluster": {
                "name": cluster.name, "region": cluster.spec.region, "zone": cluster.spec.zone,
                "labels": dict(cluster.spec.labels),
            },
            "platform": self.run.platform_values,
            **extra,
        }

    def error(self, where: Where, code: str, message: str, hint: str | None = None) -> None:
        self.run.error(where, code, message, hint)


@dataclass
class WorkloadTarget(Target[W]):
    """A workload (or scaler) in one of the clusters the plan chose for it."""

    shard: Shard
    decision: Decision

    @property
    def template_path(self) -> tuple[str | int, ...]:
        """Where the pod template sits in the spec (PinPod's spec *is* the template)."""
        return ("spec",) if self.kind == "PinPod" else ("spec", "template")


def kube_version(cluster: Cluster) -> tuple[int, int]:
    """``"1.33"`` → ``(1, 33)``."""
    major, _, minor = cluster.spec.kubernetes_version.partition(".")
    return int(major), int(minor)


def child_name(base: str, suffix: str) -> str:
    """``<base>-<suffix>``: names of objects that belong to an app (``search-api-config``).

    Spec names are at most 52 characters, which leaves room for short suffixes; a longer
    result is shortened with a stable hash so it stays a DNS-1123 label.
    """
    name = f"{base}-{suffix}"
    if len(name) <= 63:
        return name
    import hashlib

    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:54].rstrip('-')}-{digest}"


def plain(value: Any) -> Any:
    """Plain dicts, lists and scalars (the loader's ruamel types would leak into output)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value
