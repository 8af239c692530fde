"""``pincompile capacity --live``: the member clusters as read now (``/api/v1/clusters``),
allocatable against requested per cluster, node pool and tier."""

from __future__ import annotations

from decimal import Decimal

from pincompile.capacity.render import amount
from pincompile.models.types import parse_quantity
from reconciler.api.insight_models import ClusterInsight, NodePool, Quantities

SHOWN = (("cpu", "CPU"), ("memory", "MEMORY"), ("nvidia.com/gpu", "GPU"))
TIER_ORDER = ("reserved", "ondemand", "preemptible", "other")


def _q(values: Quantities | None, resource: str) -> Decimal | None:
    if values is None or resource not in values:
        return None
    return parse_quantity(values[resource])


def requested_of(requested: Quantities | None, allocatable: Quantities | None,
                 resource: str) -> str:
    """``REQUESTED of ALLOCATABLE (SHARE)``, or what is known of it."""
    asked, have = _q(requested, resource), _q(allocatable, resource)
    if have is None or have == 0:
        return "-" if not asked else amount(asked, resource)
    asked = asked or Decimal(0)
    return (f"{amount(asked, resource)} of {amount(have, resource)} "
            f"({float(asked / have):.0%})")


def used_of(used: Quantities | None, resource: str) -> str:
    """What is used (``?``: the metrics API could not be read)."""
    value = _q(used, resource)
    return "?" if used is None else "-" if value is None else amount(value, resource)


def live_rows(clusters: list[ClusterInsight]) -> list[list[str]]:
    """Header first; per cluster and node pool a row of every tier (requested of
    allocatable, used), then a row per tier with pods there (what it requests)."""
    shown = [(r, h) for r, h in SHOWN if any(
        _q(p.allocatable, r) for c in clusters for p in c.pools)]
    header = ["CLUSTER", "FAILOVER", "POOL", "NODES", "TIER",
              *(f"{h} REQUESTED" for _, h in shown), *(f"{h} USED" for _, h in shown[:2])]
    rows = [header]
    for c in clusters:
        if not c.reachable:
            rows.append([c.name, c.failover.phase, "-", "-", "-",
                         *(["-"] * (len(header) - 6)), f"unreachable: {c.problem}"])
            continue
        for pool in c.pools:
            rows += _pool_rows(c, pool, shown)
    return rows


def _pool_rows(c: ClusterInsight, pool: NodePool, shown: list[tuple[str, str]]
               ) -> list[list[str]]:
    out = [[c.name, c.failover.phase, pool.name, f"{pool.ready}/{pool.nodes}", "all",
            *(requested_of(pool.requested, pool.allocatable, r) for r, _ in shown),
            *(used_of(pool.used, r) for r, _ in shown[:2])]]
    for tier in TIER_ORDER:
        asked = pool.requestedByTier.get(tier)
        if asked:
            out.append([c.name, c.failover.phase, pool.name, "", tier,
                        *(requested_of(asked, None, r) for r, _ in shown),
                        *(used_of(pool.usedByTier.get(tier), r) for r, _ in shown[:2])])
    return out
