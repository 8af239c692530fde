"""Quota per project and tier: what placed workloads count, the check, and the per-cluster
ResourceQuota sizes.

What counts: replicas x the pod's effective requests (injected sidecars and init containers
included), with

- PinApp/PinterestService: ``replicas``, or the PinScaler's ``maxReplicas`` when one targets
  it (``stopped`` does not matter: stopping is temporary);
- PinterestJobSet: the pods that run at once (``parallelism``, at most ``completions``);
- PinterestTrainingJob: every replica of every role;
- PinPod, PinterestCronJob: one pod;
- PinterestDaemon: one pod per cluster (the compiler does not know node counts: a lower
  bound).

On top of that, each workload counts the extra pods it runs at once while it changes (its
*surge*): a PinApp/PinterestService's ``rollout.maxSurge`` of each cluster's share (of
``maxReplicas`` when scaled), rounded up as the Deployment controller rounds it; a
PinterestCronJob whose ``concurrencyPolicy`` is not ``Forbid`` one more run (the next run
starts while the last is still running or terminating). The per-cluster ResourceQuotas are
sized to leave that room, so a rollout of a project that is full at steady state completes.

Besides the requests, ``pods`` counts pods and ``storage`` sums the sizes of ``ebs``
volumes and volume claim templates per pod. ``cpu``, ``memory`` and ``nvidia.com/gpu`` are
always limited (missing from a tier = 0); ``pods``, ``storage`` and ``ephemeral-storage``
only when the tier lists them. A tier missing from the project's quota allows nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

from pincompile.catalog import Entry
from pincompile.diagnostics import Diagnostic
from pincompile.injection import GPU
from pincompile.models import TIERS, PinterestJobSet, Project, Workload
from pincompile.models.types import format_quantity, parse_quantity

Key = tuple[str, str, str]
ALWAYS_LIMITED = ("cpu", "memory", GPU)
TOP_CONSUMERS = 3


def pod_vector(workload: Workload, requests: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """What one pod counts against quota and capacity: requests, ``pods`` and ``storage``."""
    out = {k: v for k, v in requests.items() if v}
    out["pods"] = Decimal(1)
    storage = Decimal(0)
    for vol in workload.pod_template.volumes:
        if vol.type == "ebs" and vol.size is not None:
            storage += parse_quantity(vol.size)
    if isinstance(workload, PinterestJobSet):
        for claim in workload.spec.volume_claim_templates:
            storage += parse_quantity(claim.size)
    if storage:
        out["storage"] = storage
    return out


@dataclass
class Usage:
    """What one project's workloads count in one tier, per cluster and per workload."""

    per_cluster: dict[str, dict[str, Decimal]] = field(default_factory=dict)
    per_workload: dict[Key, dict[str, Decimal]] = field(default_factory=dict)
    entries: dict[Key, Entry[Workload]] = field(default_factory=dict)
    surge: dict[str, Decimal] = field(default_factory=dict)
    """What the surge pods (included above) add, per resource."""
    surge_pods: dict[Key, int] = field(default_factory=dict)

    def add(self, entry: Entry[Workload], cluster: str, vector: Mapping[str, Decimal],
            pods: int, surge: int = 0) -> None:
        key = entry.resource.key
        self.entries[key] = entry
        here = self.per_cluster.setdefault(cluster, {})
        mine = self.per_workload.setdefault(key, {})
        for res, amount in vector.items():
            here[res] = here.get(res, Decimal(0)) + amount * (pods + surge)
            mine[res] = mine.get(res, Decimal(0)) + amount * (pods + surge)
            if surge:
                self.surge[res] = self.surge.get(res, Decimal(0)) + amount * surge
        if surge:
            self.surge_pods[key] = self.surge_pods.get(key, 0) + surge

    def surge_note(self, resource: str) -> str:
        """``; N surge pods add ...`` naming the workloads, or '' without surge."""
        extra = self.surge.get(resource, Decimal(0))
        if not extra:
            return ""
        names = ", ".join(f"{k[0]} {k[2]} {n}" for k, n in sorted(self.surge_pods.items())[:3])
        return (f" (including {format_quantity(extra, resource)} for the extra pods a rollout "
                f"or overlapping run creates: {names})")

    def total(self) -> dict[str, Decimal]:
        out: dict[str, Decimal] = {}
        for values in self.per_cluster.values():
            for res, amount in values.items():
                out[res] = out.get(res, Decimal(0)) + amount
        return dict(sorted(out.items()))

    def consumers(self, resource: str) -> list[tuple[Key, Decimal]]:
        items = [(k, v.get(resource, Decimal(0))) for k, v in self.per_workload.items()]
        items = [(k, v) for k, v in items if v > 0]
        return sorted(items, key=lambda kv: (-kv[1], kv[0]))


def tier_limits(project: Project, tier: str) -> dict[str, Decimal] | None:
    """The tier's quota as numbers (None: the tier is missing, so nothing is allowed)."""
    raw = getattr(project.spec.quota, tier)
    if raw is None:
        return None
    return {k: parse_quantity(v) for k, v in raw.items()}


def limited_resources(limits: Mapping[str, Decimal] | None) -> list[str]:
    return sorted(set(ALWAYS_LIMITED) | set(limits or {}))


def _consumer_list(usage: Usage, resource: str) -> str:
    parts = []
    for key, amount in usage.consumers(resource)[:TOP_CONSUMERS]:
        entry = usage.entries[key]
        where = entry.at("metadata", "name")
        parts.append(f"{key[0]} {key[2]} {format_quantity(amount, resource)} "
                     f"({where.file}:{where.line})")
    return ", ".join(parts)


def check(project: Entry[Project], tier: str, usage: Usage) -> list[Diagnostic]:
    """Diagnostics for every resource over the project's quota in ``tier``."""
    name = project.resource.name
    limits = tier_limits(project.resource, tier)
    total = usage.total()
    if limits is None:
        used = sorted((r for r in total if total[r] > 0),
                      key=lambda r: (r not in ALWAYS_LIMITED, r))
        if not used:
            return []
        needs = ", ".join(f"{r} {format_quantity(total[r], r)}" for r in used)
        return [project.at("spec", "quota", tier).error(
            "quota-exceeded",
            f"project '{name}' has no {tier} quota (a missing tier allows nothing), but its "
            f"{tier} workloads request {needs}; largest {used[0]} consumers: "
            f"{_consumer_list(usage, used[0])}",
            f"add spec.quota.{tier} to project '{name}', or move the workloads to a tier "
            "the project has quota for")]
    out = []
    for res in limited_resources(limits):
        allowed = limits.get(res, Decimal(0))
        need = total.get(res, Decimal(0))
        if need <= allowed:
            continue
        over = need - allowed
        field_note = "" if res in limits else " (not listed, so 0)"
        steady = need - usage.surge.get(res, Decimal(0))
        hint = (f"raise spec.quota.{tier}.{res} of project '{name}' or lower replicas or "
                "requests (an app with a PinScaler counts its maxReplicas)")
        if steady <= allowed:
            hint = (f"the steady state fits, but a rollout could not: raise "
                    f"spec.quota.{tier}.{res} of project '{name}' by "
                    f"{format_quantity(over, res)}, or lower rollout.maxSurge")
        out.append(project.at("spec", "quota", tier, res).error(
            "quota-exceeded",
            f"project '{name}' is over its {tier} quota for {res} by "
            f"{format_quantity(over, res)}: its {tier} workloads request "
            f"{format_quantity(need, res)}{usage.surge_note(res)}, the quota is "
            f"{format_quantity(allowed, res)}{field_note}; largest {res} consumers: "
            f"{_consumer_list(usage, res)}", hint))
    return out


#: Granularity of per-cluster quota shares: millicores, MiB, whole counts.
_STEP = {"cpu": Decimal("0.001"), "memory": Decimal(2**20), "storage": Decimal(2**20),
         "ephemeral-storage": Decimal(2**20)}


def _units(value: Decimal, step: Decimal, *, up: bool) -> int:
    return int((value / step).to_integral_value(rounding=ROUND_CEILING if up else ROUND_FLOOR))


def apportion(total: int, weights: Mapping[str, int]) -> dict[str, int]:
    """Largest-remainder split of an integer ``total`` in proportion to integer ``weights``
    (names break ties); all 0 when every weight is 0."""
    names = sorted(weights)
    wsum = sum(weights.values())
    if wsum <= 0 or total <= 0:
        return {n: 0 for n in names}
    base = {n: total * weights[n] // wsum for n in names}
    rest = total - sum(base.values())
    by_remainder = sorted(names, key=lambda n: (-(total * weights[n] % wsum), n))
    for n in by_remainder[:rest]:
        base[n] += 1
    return base


def size(project: Project, tier: str, usage: Usage, clusters: Iterable[str]
         ) -> dict[str, dict[str, Decimal]]:
    """Cluster → hard limits for ``tier``: the project's quota split over ``clusters`` in
    proportion to what its ``tier`` workloads use in each (per resource). Shares add up to
    the quota exactly and, when the quota is met, each is at least what the cluster uses."""
    names = sorted(set(clusters))
    limits = tier_limits(project, tier)
    out: dict[str, dict[str, Decimal]] = {c: {} for c in names}
    for res in limited_resources(limits):
        allowed = (limits or {}).get(res, Decimal(0))
        used = {c: usage.per_cluster.get(c, {}).get(res, Decimal(0)) for c in names}
        shares = _split(allowed, used, _STEP.get(res, Decimal(1)))
        if sum(used.values()) <= allowed and any(shares[c] < used[c] for c in names):
            shares = _split(allowed, used, Decimal(1) if res != "cpu" else _STEP["cpu"])
        for c in names:
            out[c][res] = shares[c]
    return out


def _split(allowed: Decimal, used: Mapping[str, Decimal], step: Decimal) -> dict[str, Decimal]:
    weights = {c: _units(u, step, up=True) for c, u in used.items()}
    shares = apportion(_units(allowed, step, up=False), weights)
    return {c: n * step for c, n in shares.items()}

__all__ = ["ALWAYS_LIMITED", "TIERS", "Usage", "apportion", "check", "pod_vector", "size"]
