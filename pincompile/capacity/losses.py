"""Losing each zone (or cluster) in turn, with the reconciler's own failover rules.

For one loss, the workloads that ran in a lost cluster are placed again without the lost
clusters by :func:`pincompile.contract.place_without` (what a reconcile pass does when it
finds clusters lost); every other workload keeps its placement, and a PinPod with
``failover: false`` is lost with its cluster (reconciler/failover). The survivors' pools
are then summed as placement sums them (HPA maxima, rollout surge) and checked tier by
tier: a tier's workloads need room beside their own tier and the tiers above it, since
the Kubernetes scheduler preempts lower tiers for them (:func:`~.model.counted_for`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal

from pincompile.capacity.model import PRIORITY, Key, Loss, Over, Room, Short, counted_for, room_of
from pincompile.catalog import Catalog
from pincompile.contract import place_without
from pincompile.models import Cluster, PinPod, Workload
from pincompile.pipeline import Result
from pincompile.placement.context import cluster_capacity
from pincompile.placement.pools import COUNTED, pool_uses
from pincompile.placement.sums import Placed, Sums

#: Reasons shown for a workload no surviving cluster accepts.
SHOWN_REASONS = 3


def domains(catalog: Catalog, lose: str) -> list[tuple[str, list[str]]]:
    """(name, clusters) of every zone, or every cluster, of the fleet, sorted."""
    if lose == "cluster":
        return [(name, [name]) for name in catalog.clusters]
    zones: dict[str, list[str]] = {}
    for name, entry in catalog.clusters.items():
        zones.setdefault(entry.resource.spec.zone, []).append(name)
    return sorted(zones.items())


def summed(placed: Iterable[Placed]) -> Sums:
    """What placement sums over ``placed``."""
    sums = Sums()
    for p in placed:
        sums.add(p)
    return sums


def lose_one(result: Result, domain: str, name: str, clusters: Sequence[str],
             base: Sums | None = None) -> Loss:
    """What losing ``clusters`` (zone or cluster ``name``) does to ``result``'s fleet
    (``base``: the :func:`summed` placement, when the caller has it)."""
    catalog, placed = result.catalog, result.plan.placed
    lost = set(clusters)
    involved = {k for k, p in placed.items() if lost & {*p.pods, *p.decision.clusters}}
    stranded = {k for k in involved if _stays_put(catalog.workloads_by_key[k].resource)}
    moving = involved - stranded
    why = f"{domain} {name} lost"
    again = place_without(result, {c: why for c in sorted(lost)}, expand=False,
                          only=moving).plan.placed
    after = {k: again.get(k, p) if k in moving else p
             for k, p in placed.items() if k not in stranded}
    by_tier = _changed(base or summed(placed.values()), [placed[k] for k in sorted(involved)],
                       [after[k] for k in sorted(moving)])
    loss = Loss(domain, name, sorted(lost), sorted(moving), sorted(stranded))
    loss.short = [s for k in sorted(moving) if (s := _short(placed[k], after[k], lost))]
    survivors = {n: e.resource for n, e in catalog.clusters.items()
                 if n not in lost and e.resource.spec.schedulable}
    for tier in PRIORITY[:2]:
        counted = counted_for(tier)
        for cluster in survivors.values():
            uses = [u for u in pool_uses(cluster, _tiers(by_tier, cluster, counted), counted)
                    if tier in u.tiers]
            loss.rooms += [room_of(u, cluster.spec.zone, tier) for u in uses
                           if tier in cluster.spec.tiers]
            loss.over += [Over(u, tier, _movers(u.cluster, u.resource, u.tiers, moving,
                                                placed, after))
                          for u in uses if u.need > u.have]
    return loss


def _changed(base: Sums, gone: Sequence[Placed], added: Sequence[Placed]
             ) -> dict[tuple[str, str], dict[str, Decimal]]:
    """``base``'s sums per (cluster, tier) without ``gone`` and with ``added``, as
    :class:`Sums` adds each workload (its pods and surge per cluster)."""
    out = {key: dict(values) for key, values in base.by_tier.items()}
    for sign, placed in ((-1, gone), (1, added)):
        for p in placed:
            for cluster in p.pods:
                into = out.setdefault((cluster, p.decision.tier), {})
                n = sign * _count(p, cluster)
                for res, amount in p.vector.items():
                    into[res] = into.get(res, Decimal(0)) + amount * n
    return out


def _stays_put(workload: Workload) -> bool:
    """A PinPod with ``failover: false``: lost with its cluster, never recreated."""
    return isinstance(workload, PinPod) and not workload.spec.failover


def _tiers(by_tier: Mapping[tuple[str, str], dict[str, Decimal]], cluster: Cluster,
           tiers: Iterable[str]) -> dict[str, dict[str, Decimal]]:
    return {t: by_tier.get((cluster.metadata.name, t), {}) for t in tiers}


def _count(p: Placed, cluster: str) -> int:
    return p.pods.get(cluster, 0) + p.surge.get(cluster, 0)


def _short(before: Placed, after: Placed, lost: set[str]) -> Short | None:
    """The part of a moved workload the survivors cannot hold (daemons run per cluster:
    losing one loses nothing to hold elsewhere)."""
    d = after.decision
    if d.kind == "PinterestDaemon":
        return None
    wanted, held = sum(before.pods.values()), sum(after.pods.values())
    if held >= wanted:
        return None
    missing = {r: v * (wanted - held) for r, v in sorted(before.vector.items()) if v}
    if d.shards:
        why = f"its surviving clusters hold {held} of its {wanted} pods"
    else:
        why = "no surviving cluster accepts it" + _reasons(d.filtered, lost)
    return Short(d.key, d.tier, wanted, held, missing, why)


def _reasons(filtered: Mapping[str, str], lost: set[str]) -> str:
    """``: CLUSTERS: REASON; ...`` for the surviving clusters a filter removed, clusters
    with the same reason together (the first few reasons)."""
    by_reason: dict[str, list[str]] = {}
    for cluster, reason in sorted(filtered.items()):
        if cluster not in lost:
            by_reason.setdefault(reason, []).append(cluster)
    if not by_reason:
        return ": the fleet has no other cluster"
    parts = [f"{', '.join(c)}: {r}" for r, c in list(by_reason.items())[:SHOWN_REASONS]]
    if len(by_reason) > SHOWN_REASONS:
        parts.append(f"{len(by_reason) - SHOWN_REASONS} more reasons")
    return " (" + "; ".join(parts) + ")"


def _movers(cluster: str, resource: str, tiers: frozenset[str], moving: set[Key],
            before: Mapping[Key, Placed], after: Mapping[Key, Placed]
            ) -> tuple[tuple[Key, Decimal], ...]:
    """The moved workloads of ``tiers`` that ask more of ``resource`` in ``cluster`` after
    the loss, with how much more, largest first."""
    out = []
    for key in moving:
        p = after[key]
        if p.decision.tier not in tiers:
            continue
        added = _count(p, cluster) - _count(before[key], cluster)
        amount = p.vector.get(resource, Decimal(0)) * added
        if amount > 0:
            out.append((key, amount))
    return tuple(sorted(out, key=lambda t: (-t[1], t[0])))


def headroom(result: Result, sums: Sums | None = None) -> list[Room]:
    """Every schedulable cluster's room per tier it sells, as the compile counts it:
    reserved and ondemand workloads against the pools (HPA maxima, rollout surge
    included); preemptible against what the whole capacity leaves spare."""
    sums = Sums()
    for p in result.plan.placed.values():
        sums.add(p)
    rooms = []
    for name, entry in result.catalog.clusters.items():
        cluster = entry.resource
        if not cluster.spec.schedulable:
            continue
        uses = pool_uses(cluster, _tiers(sums.by_tier, cluster, COUNTED))
        for tier in PRIORITY:
            if tier not in cluster.spec.tiers:
                continue
            if tier == "preemptible":
                total = sums.totals.get(name, {})
                rooms += [Room(name, cluster.spec.zone, tier, "spare capacity", r, have,
                               total.get(r, Decimal(0)))
                          for r, have in cluster_capacity(cluster).items()]
            else:
                rooms += [room_of(u, cluster.spec.zone, tier) for u in uses if tier in u.tiers]
    return rooms
