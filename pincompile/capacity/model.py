"""What the loss simulation finds: room per cluster, pool and tier; workloads the
survivors cannot hold; pools a loss overfills; one :class:`Loss` per zone (or cluster)."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pincompile.models.types import format_quantity
from pincompile.placement.pools import PoolUse

Key = tuple[str, str, str]

#: Tiers by priority, highest first: a tier's pods preempt every lower tier's.
PRIORITY = ("reserved", "ondemand", "preemptible")


def counted_for(tier: str) -> frozenset[str]:
    """The tiers whose demand a ``tier`` workload must find room beside after a loss: its
    own and those above it (lower tiers are preempted for it; preemptible never counts)."""
    upto = PRIORITY[:PRIORITY.index(tier) + 1]
    return frozenset(t for t in upto if t != "preemptible")


def quantities(values: dict[str, Decimal]) -> dict[str, str]:
    return {r: format_quantity(v, r) for r, v in sorted(values.items())}


def ref(key: Key) -> str:
    return "/".join(key)


@dataclass(frozen=True)
class Room:
    """One resource of the pool a tier's workloads use in one cluster: its size, what is
    requested from it (as placement counts: HPA maxima, rollout surge), what is left."""

    cluster: str
    zone: str
    tier: str
    pool: str
    resource: str
    capacity: Decimal
    requested: Decimal

    @property
    def free(self) -> Decimal:
        return self.capacity - self.requested

    @property
    def share_free(self) -> float:
        return float(self.free / self.capacity) if self.capacity else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "zone": self.zone, "tier": self.tier,
                "pool": self.pool, "resource": self.resource,
                "capacity": format_quantity(self.capacity, self.resource),
                "requested": format_quantity(self.requested, self.resource),
                "free": format_quantity(self.free, self.resource)}


def room_of(use: PoolUse, zone: str, tier: str) -> Room:
    return Room(use.cluster, zone, tier, use.pool, use.resource, use.have, use.need)


@dataclass(frozen=True)
class Short:
    """A workload the surviving clusters cannot hold all of: ``pods`` wanted (HPA maximum
    for a scaled app), ``placed`` held, the resources of the rest in ``missing``."""

    key: Key
    tier: str
    pods: int
    placed: int
    missing: dict[str, Decimal]
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"workload": ref(self.key), "tier": self.tier, "pods": self.pods,
                "placed": self.placed, "shortPods": self.pods - self.placed,
                "missing": quantities(self.missing), "why": self.why}


@dataclass(frozen=True)
class Over:
    """A pool of a surviving cluster that a loss overfills for ``tier``'s workloads, and
    the moved workloads that add to it there (with what each adds, largest first)."""

    use: PoolUse
    tier: str
    movers: tuple[tuple[Key, Decimal], ...]

    def to_json(self) -> dict[str, Any]:
        u = self.use
        return {"cluster": u.cluster, "pool": u.pool, "resource": u.resource,
                "tier": self.tier, "tiersCounted": sorted(u.tiers),
                "requested": format_quantity(u.need, u.resource),
                "capacity": format_quantity(u.have, u.resource),
                "over": format_quantity(u.over, u.resource),
                "movedHere": [{"workload": ref(k), "adds": format_quantity(v, u.resource)}
                              for k, v in self.movers]}


@dataclass
class Loss:
    """One zone (or cluster) lost: what moves, what the survivors cannot hold."""

    domain: str
    """``zone`` or ``cluster``."""
    name: str
    clusters: list[str]
    moved: list[Key] = field(default_factory=list)
    """Workloads that ran there and run elsewhere after the loss."""
    stranded: list[Key] = field(default_factory=list)
    """PinPods with ``failover: false`` that ran there: lost with it, by their choice."""
    short: list[Short] = field(default_factory=list)
    over: list[Over] = field(default_factory=list)
    rooms: list[Room] = field(default_factory=list)
    """The survivors' pools per tier after the loss."""

    def fits(self, tier: str) -> bool:
        return not any(s.tier == tier for s in self.short) and not any(
            o.tier == tier for o in self.over)

    def tightest(self, tier: str) -> Room | None:
        """The survivors' pool for ``tier`` with the smallest share left."""
        rooms = [r for r in self.rooms if r.tier == tier and r.capacity > 0]
        return min(rooms, key=lambda r: (r.share_free, r.cluster, r.resource), default=None)

    def to_json(self) -> dict[str, Any]:
        return {"lose": self.domain, "name": self.name, "clusters": list(self.clusters),
                "moved": [ref(k) for k in self.moved],
                "stranded": [ref(k) for k in self.stranded],
                "fits": {t: self.fits(t) for t in PRIORITY},
                "short": [s.to_json() for s in self.short],
                "over": [o.to_json() for o in self.over],
                "headroom": [r.to_json() for r in self.rooms]}


@dataclass
class Report:
    """Losing each zone (or cluster) in turn, and the fleet's headroom without a loss."""

    lose: str
    required: tuple[str, ...]
    """The tiers that must survive (``pincompile.yaml``'s ``survive.tiers``, or asked)."""
    losses: list[Loss] = field(default_factory=list)
    headroom: list[Room] = field(default_factory=list)

    @property
    def survives(self) -> bool:
        return all(loss.fits(t) for loss in self.losses for t in self.required)

    def to_json(self) -> dict[str, Any]:
        return {"lose": self.lose, "requiredTiers": list(self.required),
                "survives": self.survives,
                "losses": [loss.to_json() for loss in self.losses],
                "headroom": [r.to_json() for r in self.headroom]}
