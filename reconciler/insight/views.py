"""The insight documents of the API (pure): a member cluster's capacity, allocatable,
requested and used, per node pool and tier, with its failover state; a project's quota per
tier, limit against what it requests and uses, across clusters."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from pincompile.contract import TIERS, format_quantity
from reconciler.clock import iso_time
from reconciler.insight.records import OTHER, Amounts, PodRecord, Reading, add
from reconciler.model import Obj

EVERY_TIER = (*TIERS, OTHER)


def quantities(values: Mapping[str, Decimal] | None) -> dict[str, str] | None:
    if values is None:
        return None
    return {r: format_quantity(v, r) for r, v in sorted(values.items())}


def _used(pods: Iterable[PodRecord], usage: Mapping[tuple[str, str], Amounts] | None
          ) -> Amounts | None:
    """What ``pods`` use (None: the metrics API could not be read)."""
    if usage is None:
        return None
    total: Amounts = {}
    for pod in pods:
        add(total, usage.get((pod.namespace, pod.name), {}))
    return total


def _requested(pods: Iterable[PodRecord]) -> Amounts:
    total: Amounts = {}
    for pod in pods:
        add(total, pod.requests)
    return total


def cluster_view(cr: Obj, reading: Reading | None) -> dict[str, Any]:
    """One member cluster: its spec (region, zone, capacity), the reconciler's failover
    state, and as read: nodes, allocatable, what the pods on them request and use, per node
    pool and tier (pods not yet on a node are ``pending``)."""
    spec = cr.get("spec") or {}
    failover = (cr.get("status") or {}).get("failover") or {}
    name = str((cr.get("metadata") or {}).get("name") or "")
    out: dict[str, Any] = {
        "name": name, "region": spec.get("region"), "zone": spec.get("zone"),
        "capacity": dict(spec.get("capacity") or {}),
        "failover": {"phase": failover.get("phase") or "Reachable",
                     "reason": failover.get("reason") or "", "since": failover.get("since")},
    }
    if reading is None or reading.error is not None:
        return {**out, "reachable": False,
                "problem": reading.error if reading else "not read yet"}
    on_node = [p for p in reading.pods if p.node]
    pools: dict[str, list[Any]] = {}
    for node in reading.nodes:
        pools.setdefault(node.pool, []).append(node)
    where = {n.name: n.pool for n in reading.nodes}
    return {
        **out, "reachable": True, "problem": reading.metrics_error or "",
        "readAt": iso_time(reading.at),
        "nodes": {"total": len(reading.nodes), "ready": sum(n.ready for n in reading.nodes)},
        **_amounts_of(reading.nodes, on_node, reading.usage),
        "pending": quantities(_requested(p for p in reading.pods if not p.node)),
        "pools": [{"name": pool, "nodes": len(nodes), "ready": sum(n.ready for n in nodes),
                   "tiers": sorted({t for n in nodes for t in n.tiers}, key=TIERS.index),
                   **_amounts_of(nodes, [p for p in on_node if where.get(p.node) == pool],
                                 reading.usage)}
                  for pool, nodes in sorted(pools.items())],
    }


def _amounts_of(nodes: Iterable[Any], pods: list[PodRecord],
                usage: Mapping[tuple[str, str], Amounts] | None) -> dict[str, Any]:
    allocatable: Amounts = {}
    for node in nodes:
        add(allocatable, node.allocatable)
    by_tier = {t: [p for p in pods if p.tier == t] for t in EVERY_TIER}
    return {"allocatable": quantities(allocatable), "requested": quantities(_requested(pods)),
            "used": quantities(_used(pods, usage)),
            "requestedByTier": {t: quantities(_requested(p)) for t, p in by_tier.items() if p},
            "usedByTier": {t: quantities(_used(p, usage)) for t, p in by_tier.items() if p}}


def project_view(cr: Obj, readings: Mapping[str, Reading]) -> dict[str, Any]:
    """One project: per tier its quota (``limit``, fleet-wide; a tier the Project does not
    list allows nothing: ``null``), what its pods request and use across the clusters, and
    per cluster the tier's ResourceQuota (``hard``) beside them. ``unreadable``: clusters
    that could not be read (not counted)."""
    spec = cr.get("spec") or {}
    name = str((cr.get("metadata") or {}).get("name") or "")
    namespace = str(spec.get("namespace") or name)
    quota = spec.get("quota") or {}
    tiers: dict[str, Any] = {}
    for tier in TIERS:
        clusters: dict[str, Any] = {}
        for cluster, reading in sorted(readings.items()):
            if reading.error is not None:
                continue
            pods = [p for p in reading.pods if p.namespace == namespace and p.tier == tier]
            hard = next((q.hard for q in reading.quotas
                         if q.namespace == namespace and q.tier == tier), None)
            if pods or hard is not None:
                clusters[cluster] = {"hard": quantities(hard),
                                     "requested": _requested(pods),
                                     "used": _used(pods, reading.usage)}
        tiers[tier] = _tier_totals(quota.get(tier), clusters)
    return {"name": name, "namespace": namespace, "owners": list(spec.get("owners") or []),
            "tiers": tiers,
            "unreadable": sorted(c for c, r in readings.items() if r.error is not None)}


def _tier_totals(limit: Mapping[str, Any] | None, clusters: dict[str, Any]) -> dict[str, Any]:
    requested: Amounts = {}
    used: Amounts | None = {}
    for view in clusters.values():
        add(requested, view["requested"])
        if view["used"] is None or used is None:
            used = None
        else:
            add(used, view["used"])
        view["requested"], view["used"] = quantities(view["requested"]), quantities(view["used"])
    return {"limit": dict(limit) if limit is not None else None,
            "requested": quantities(requested), "used": quantities(used),
            "clusters": clusters}
