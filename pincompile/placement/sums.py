"""What placement counts per workload (:class:`Placed`) and the fleet-wide sums over placed
workloads (:class:`Sums`) that quota, capacity and sidecar daemons check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pincompile.catalog import Entry
from pincompile.models import Workload
from pincompile.placement.model import Decision


@dataclass
class Placed:
    """A decision plus what it counts per cluster (pods) for quota and capacity: all that
    the fleet-wide steps (quota, capacity, sidecar daemons) need of one workload."""

    entry: Entry[Workload]
    """The workload (an incremental compile passes a stand-in that only locates it)."""
    decision: Decision
    pods: dict[str, int]
    vector: dict[str, Decimal]
    surge: dict[str, int] = field(default_factory=dict)
    """Cluster → extra pods while the workload changes (rollout surge, overlapping run)."""
    sidecars: tuple[str, ...] = ()
    """Managed sidecars the pod template lists by name."""



def _add(into: dict[str, Decimal], values: Mapping[str, Decimal], times: int = 1) -> None:
    for res, amount in values.items():
        into[res] = into.get(res, Decimal(0)) + amount * times


@dataclass
class Sums:
    """What the fleet-wide steps (quota sizes, capacity, sidecar daemons) sum over placed
    workloads. Sums of sums are the same numbers, to the digit (exact Decimal additions), so
    an incremental compile keeps them for groups of unchanged workloads."""

    usage: dict[tuple[str, str], dict[str, dict[str, Decimal]]] = field(default_factory=dict)
    """(project, tier) → cluster → resource → amount (surge included)."""
    surge: dict[tuple[str, str], dict[str, Decimal]] = field(default_factory=dict)
    where: dict[str, set[str]] = field(default_factory=dict)
    """Project → clusters where it has pods or shards."""
    totals: dict[str, dict[str, Decimal]] = field(default_factory=dict)
    by_tier: dict[tuple[str, str], dict[str, Decimal]] = field(default_factory=dict)
    sidecars: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    """(workload kind, sidecar name) → clusters of its shards."""

    def add(self, p: Placed) -> None:
        self.add_counts(counts(p))

    def add_counts(self, c: tuple[Any, ...]) -> None:
        """Add one workload's :func:`counts`."""
        kind, project, tier, clusters, pods, vector, surge, sidecars = c
        usage = self.usage.setdefault((project, tier), {})
        where = self.where.setdefault(project, set())
        for cluster, n_pods in pods.items():
            n = n_pods + surge.get(cluster, 0)
            _add(usage.setdefault(cluster, {}), vector, n)
            _add(self.totals.setdefault(cluster, {}), vector, n)
            _add(self.by_tier.setdefault((cluster, tier), {}), vector, n)
            if surge.get(cluster, 0):
                _add(self.surge.setdefault((project, tier), {}), vector, surge[cluster])
            where.add(cluster)
        where.update(clusters)
        for name in sidecars:
            self.sidecars.setdefault((kind, name), set()).update(clusters)

    def merge(self, other: Sums) -> None:
        for key, per_cluster in other.usage.items():
            mine = self.usage.setdefault(key, {})
            for cluster, values in per_cluster.items():
                _add(mine.setdefault(cluster, {}), values)
        for key2, values in other.surge.items():
            _add(self.surge.setdefault(key2, {}), values)
        for project, clusters in other.where.items():
            self.where.setdefault(project, set()).update(clusters)
        for cluster, values in other.totals.items():
            _add(self.totals.setdefault(cluster, {}), values)
        for key3, values in other.by_tier.items():
            _add(self.by_tier.setdefault(key3, {}), values)
        for key4, clusters in other.sidecars.items():
            self.sidecars.setdefault(key4, set()).update(clusters)


def counts(p: Placed) -> tuple[Any, ...]:
    """All that :class:`Sums` needs of one placed workload, as plain data: (kind, project,
    tier, shard clusters, pods, vector, surge, sidecars)."""
    d = p.decision
    return (d.kind, d.project, d.tier, tuple(s.cluster for s in d.shards), dict(p.pods),
            dict(p.vector), dict(p.surge), tuple(p.sidecars))
