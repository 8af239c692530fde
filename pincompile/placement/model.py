"""What placement decides: shards per cluster, the reasons behind them, and quota per cluster.

These dataclasses are the contract between placement and expansion (and ``explain``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pincompile.models.types import format_quantity

Key = tuple[str, str, str]


@dataclass(frozen=True)
class Shard:
    """The part of one workload that runs in one member cluster."""

    cluster: str
    """Cluster ``metadata.name``."""
    region: str
    zone: str
    replicas: int
    """PinApp/PinterestService: replicas here; PinterestJobSet: completions here;
    PinPod/PinterestTrainingJob/PinterestCronJob: 1; PinterestDaemon: 0."""
    index_offset: int = 0
    """PinterestJobSet: the first completion index run in this cluster."""
    min_replicas: int | None = None
    """Set when a PinScaler targets the app: the HPA bounds for this cluster."""
    max_replicas: int | None = None
    parallelism: int | None = None
    """PinterestJobSet: pods that run at once in this cluster (sums to the job's
    parallelism, capped by completions)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cluster": self.cluster, "region": self.region,
                               "zone": self.zone, "replicas": self.replicas}
        if self.index_offset:
            out["indexOffset"] = self.index_offset
        if self.min_replicas is not None:
            out["minReplicas"] = self.min_replicas
        if self.max_replicas is not None:
            out["maxReplicas"] = self.max_replicas
        if self.parallelism is not None:
            out["parallelism"] = self.parallelism
        return out


@dataclass
class Decision:
    """Where one workload runs, and why."""

    kind: str
    project: str
    name: str
    eligible: list[str]
    """Clusters that passed every filter, sorted by name."""
    filtered: dict[str, str]
    """Cluster → ``"<filter-name>: <reason>"`` for every cluster a filter removed."""
    scores: dict[str, dict[str, float]]
    """Eligible cluster → {score-name: value, ..., "total": value}."""
    shards: list[Shard]
    """Chosen clusters, sorted by cluster name."""
    order: list[str] = field(default_factory=list)
    """Eligible clusters in preference order (the order clusters are chosen in)."""
    notes: list[str] = field(default_factory=list)
    """Human-readable remarks about the division (e.g. a zone that was full)."""
    tier: str = "ondemand"
    pod_requests: dict[str, Decimal] = field(default_factory=dict)
    """Effective requests of one pod, injected containers included."""

    @property
    def key(self) -> Key:
        return (self.kind, self.project, self.name)

    @property
    def clusters(self) -> list[str]:
        return [s.cluster for s in self.shards]

    def shard(self, cluster: str) -> Shard | None:
        return next((s for s in self.shards if s.cluster == cluster), None)

    def replicas_by_zone(self) -> dict[str, int]:
        zones: dict[str, int] = {}
        for s in self.shards:
            zones[s.zone] = zones.get(s.zone, 0) + s.replicas
        return dict(sorted(zones.items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "project": self.project, "name": self.name, "tier": self.tier,
            "podRequests": _quantities(self.pod_requests),
            "eligible": list(self.eligible),
            "order": list(self.order),
            "filtered": dict(sorted(self.filtered.items())),
            "scores": {c: {k: _score(v) for k, v in sorted(s.items())}
                       for c, s in sorted(self.scores.items())},
            "shards": [s.to_json() for s in self.shards],
            "replicasByZone": self.replicas_by_zone(),
            "notes": list(self.notes),
        }


@dataclass
class Plan:
    """The placement of every workload, the per-cluster quotas and the sidecar daemons."""

    decisions: dict[Key, Decision] = field(default_factory=dict)
    quotas: dict[tuple[str, str, str], dict[str, Decimal]] = field(default_factory=dict)
    """(project, tier, cluster) → hard limits of that cluster's ResourceQuota for the tier.
    One entry per tier for every (project, cluster) where the project has anything placed;
    keys are quota resource names (``cpu``, ``memory``, ``nvidia.com/gpu``, ``pods``, ...)."""
    sidecar_daemons: dict[str, list[str]] = field(default_factory=dict)
    """Daemon-mode PinterestSideCar name → clusters that get its DaemonSet."""
    scaler_targets: dict[Key, Key] = field(default_factory=dict)
    """PinScaler key → key of the PinApp/PinterestService it scales (resolved ones only)."""
    cluster_requests: dict[str, dict[str, Decimal]] = field(default_factory=dict)
    """Cluster → the sum of what is placed there (HPA maximum for scaled apps)."""
    placed: dict[Key, Any] = field(default_factory=dict, repr=False, compare=False)
    """Key → ``placement.sums.Placed``: what each workload counts (for incremental
    compiles; not part of ``placement.json``)."""

    def decision(self, key: Key) -> Decision | None:
        return self.decisions.get(tuple(key))  # type: ignore[arg-type]

    def quota(self, project: str, cluster: str) -> dict[str, dict[str, Decimal]]:
        """Tier → hard limits for one project's namespace in one cluster."""
        return {t: q for (p, t, c), q in sorted(self.quotas.items())
                if p == project and c == cluster}

    def to_json(self) -> dict[str, Any]:
        """The content of ``placement.json``: deterministic, sorted keys."""
        quotas: dict[str, dict[str, dict[str, dict[str, str]]]] = {}
        for (project, tier, cluster), hard in sorted(self.quotas.items()):
            quotas.setdefault(project, {}).setdefault(cluster, {})[tier] = _quantities(hard)
        return {
            "workloads": {"/".join(k): d.to_json() for k, d in sorted(self.decisions.items())},
            "scalers": {"/".join(k): "/".join(v) for k, v in sorted(self.scaler_targets.items())},
            "quotas": quotas,
            "sidecarDaemons": {k: list(v) for k, v in sorted(self.sidecar_daemons.items())},
            "clusterRequests": {c: _quantities(r)
                                for c, r in sorted(self.cluster_requests.items())},
        }


def _score(value: float) -> float | None:
    """Rounded for reading; None for the infinite (absurd capacities) that JSON lacks."""
    return round(value, 4) if math.isfinite(value) else None


def _quantities(values: dict[str, Decimal]) -> dict[str, str]:
    return {k: format_quantity(v, k) for k, v in sorted(values.items())}
