"""Types shared by every part of the reconciler (imports nothing else of it).

``Phase``/``Health`` describe one live object or one app; ``ClusterReport``/``PassReport``
describe what one reconcile pass did, per member cluster.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
"""A Kubernetes object as plain data (as the API server returns it)."""
AppKey = tuple[str, str, str]
"""(kind, project, name) of an app: a workload spec, or a PinScaler."""


class Phase(enum.StrEnum):
    """Health of one object or one app, in the manner of Argo CD's health statuses."""

    HEALTHY = "Healthy"
    COMPLETED = "Completed"
    """Ran to completion (a Job, a training job, a pod that ends): done, not running."""
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"
    FAILED = "Failed"
    SUSPENDED = "Suspended"
    MISSING = "Missing"
    UNKNOWN = "Unknown"


@dataclass(frozen=True)
class Health:
    """A phase and, unless Healthy, the reason in words a user can act on."""

    phase: Phase
    message: str = ""


@dataclass(frozen=True)
class ObjectRef:
    """Which object, in which cluster: ``cluster``, ``apiVersion``, ``kind``, ns, name."""

    cluster: str
    api_version: str
    kind: str
    namespace: str | None
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{where}{self.name}"


class Left(enum.StrEnum):
    """Why a pass left something different from the specs (each makes ``apply`` exit 1)."""

    CONFLICT = "conflict"
    """An object we do not manage holds a desired name."""
    REJECTED = "rejected"
    """The API server refused a desired object (it is invalid there)."""
    PRUNE_HELD = "prune held"
    """A prune over ``--max-prune`` was refused: nothing was pruned in that cluster."""
    ROLLOUT_HALTED = "rollout halted"
    """A zone-by-zone rollout halted: this cluster keeps the old template."""


@dataclass(frozen=True)
class Unconverged:
    """One thing a pass left unconverged in one cluster: what, where and why."""

    left: Left
    target: str
    """``Kind/namespace/name`` (or an app, ``PinApp/shop/web``); empty for the cluster."""
    message: str

    def __str__(self) -> str:
        return f"{self.left} {self.target}: {self.message}" if self.target \
            else f"{self.left}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {"reason": str(self.left), "object": self.target, "message": self.message}


@dataclass
class ClusterReport:
    """What one pass did in one member cluster."""

    cluster: str
    created: list[ObjectRef] = field(default_factory=list)
    updated: list[ObjectRef] = field(default_factory=list)
    replaced: list[ObjectRef] = field(default_factory=list)
    pruned: list[ObjectRef] = field(default_factory=list)
    unchanged: int = 0
    recorded: list[ObjectRef] = field(default_factory=list)
    """Unchanged objects applied only to record what pincompile applies (their record was
    stale: see :func:`reconciler.plan.applied.stale`); counted among the unchanged."""
    unconverged: list[Unconverged] = field(default_factory=list)
    """What this pass could not make match the specs (conflicts, rejections, ...)."""
    error: str | None = None
    seconds: float = 0.0

    @property
    def writes(self) -> int:
        return len(self.created) + len(self.updated) + len(self.replaced) + len(self.pruned)


@dataclass
class PassReport:
    """What one reconcile pass did, per member cluster, for one git revision."""

    revision: str
    clusters: dict[str, ClusterReport] = field(default_factory=dict)
    seconds: float = 0.0
    steps: dict[str, float] = field(default_factory=dict)
    """Wall seconds of each step of the pass (host sync, read, plan, apply, publish...)."""
    error: str | None = None
    """Set when the pass did nothing at all (the compile failed, say)."""
    statuses: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    """The status document of each app the pass published ((kind, project, name) → doc)."""

    @property
    def ok(self) -> bool:
        return self.error is None and all(c.error is None for c in self.clusters.values())

    @property
    def writes(self) -> int:
        return sum(c.writes for c in self.clusters.values())

    @property
    def unconverged(self) -> list[tuple[str, Unconverged]]:
        """(cluster, item) for everything a reachable cluster was left different in."""
        return [(name, item) for name, c in sorted(self.clusters.items())
                for item in c.unconverged]

    @property
    def converged(self) -> bool:
        """Every cluster reached and nothing left different from the specs (exit 0)."""
        return self.ok and not self.unconverged
