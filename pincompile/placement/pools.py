"""A cluster's capacity pools and what the tiers placed there ask of them: the one rule
that the compile's capacity check (``cluster-over-capacity``) and the zone-loss
simulation (:mod:`pincompile.capacity`) both apply.

A cluster with ``reservedCapacity`` has two pools: the reserved pool (the resources it
lists, for reserved workloads only) and the capacity outside it (everything else, for
ondemand workloads, and for reserved ones where the reserved pool does not list the
resource). Without ``reservedCapacity``, reserved and ondemand share the whole capacity.
Preemptible workloads are never counted: they run in what is spare.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from decimal import Decimal

from pincompile.models import Cluster
from pincompile.placement.context import pool_capacity

#: The tiers whose workloads the compile counts against a cluster's pools.
COUNTED = frozenset({"reserved", "ondemand"})


@dataclass(frozen=True)
class PoolUse:
    """One resource of one pool of a cluster: what the counted tiers ask, what it has."""

    cluster: str
    pool: str
    """``reserved pool``, ``capacity`` or ``capacity outside the reserved pool``."""
    field: tuple[str, ...]
    """Where the pool's size is written in the Cluster spec."""
    resource: str
    need: Decimal
    have: Decimal
    tiers: frozenset[str]
    """The tiers counted here."""

    @property
    def over(self) -> Decimal:
        return self.need - self.have

    @property
    def free(self) -> Decimal:
        return self.have - self.need


def pool_uses(cluster: Cluster, by_tier: Mapping[str, Mapping[str, Decimal]],
              counted: Collection[str] = COUNTED) -> list[PoolUse]:
    """Every resource of every pool of ``cluster`` that a tier of ``counted`` uses, with
    what the workloads of those tiers placed there ask (``by_tier``: tier → resource →
    amount)."""
    reserved_pool = set(cluster.spec.reserved_capacity)
    name = cluster.metadata.name

    def asked(tiers: set[str], res: str) -> Decimal:
        return sum((by_tier.get(t, {}).get(res, Decimal(0)) for t in tiers), Decimal(0))

    out = []
    if "reserved" in counted:
        for res, have in sorted(pool_capacity(cluster, "reserved").items()):
            if res in reserved_pool:
                out.append(PoolUse(name, "reserved pool", ("spec", "reservedCapacity", res),
                                   res, asked({"reserved"}, res), have,
                                   frozenset({"reserved"})))
    shared = "capacity" if not reserved_pool else "capacity outside the reserved pool"
    for res, have in sorted(pool_capacity(cluster, "ondemand").items()):
        tiers = {"ondemand"} if res in reserved_pool else {"reserved", "ondemand"}
        tiers &= set(counted)
        if tiers:
            out.append(PoolUse(name, shared, ("spec", "capacity", res), res,
                               asked(tiers, res), have, frozenset(tiers)))
    return out

