"""Pure division of counts (replicas, completions, HPA bounds) across clusters.

Everything here is a *divisor method* (Sainte-Laguë/Webster) run as a sequential
allocation: each unit goes to the party with the highest ``weight / (2·seats + 1)``, ties to
the party listed first. Divisor methods are house monotone and immune to the new-states
paradox, which is what makes placement stable:

- raising the total never takes a unit away from anyone (so min ≤ replicas ≤ max per
  cluster when they are divided the same way);
- adding a party (a cluster, a zone) never gives any *other* party more — the units the
  new party takes are exactly the units the others lose.

Equal weights make it a round-robin: counts differ by at most one. Priorities are floats:
each is a fixed value, so the order of all units is fixed and the properties above hold
exactly; rounding can only decide a near-tie, and always the same way.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

Spread = Literal["zone", "cluster", "none"]


@dataclass(frozen=True)
class Slot:
    """One cluster a count may be divided into."""

    name: str
    zone: str
    weight: Decimal | int = 1
    """Relative share inside a zone (capacity in pods of the workload)."""
    cap: int | None = None
    """At most this many (None: unlimited)."""


#: Below this many units to hand out, plain sequential allocation is fast enough.
HEAD_START_ABOVE = 256


def webster(total: int, weights: Sequence[Decimal | int | float],
            caps: Sequence[int | None] | None = None,
            floors: Sequence[int] | None = None, *, head_start: bool = True) -> list[int]:
    """Divide ``total`` by the Sainte-Laguë method.

    ``floors`` are given first (even if they add up to more than ``total``); no party gets
    more than its cap. Parties with weight 0 get nothing beyond their floor unless every
    weight is 0, in which case all weigh the same. If the caps add up to less than
    ``total``, the result adds up to less: callers check.

    Large totals first give every party the units whose priority is above a threshold found
    by bisection (exactly the units the sequential allocation would hand out first), then
    allocate the rest one by one; the result is the same as without the head start.
    """
    n = len(weights)
    seats = list(floors) if floors is not None else [0] * n
    limit: list[int | None] = list(caps) if caps is not None else [None] * n
    w = [float(x) for x in weights]
    if w and not any(w):
        w = [1.0] * n
    remaining = total - sum(seats)
    if head_start and remaining > HEAD_START_ABOVE:
        remaining -= _give_above_threshold(remaining, w, limit, seats)
    heap: list[tuple[float, int]] = []
    for i in range(n):
        if w[i] > 0 and (limit[i] is None or seats[i] < limit[i]):  # type: ignore[operator]
            heap.append((-w[i] / (2 * seats[i] + 1), i))
    heapq.heapify(heap)
    while remaining > 0 and heap:
        _, i = heapq.heappop(heap)
        seats[i] += 1
        remaining -= 1
        if limit[i] is None or seats[i] < limit[i]:  # type: ignore[operator]
            heapq.heappush(heap, (-w[i] / (2 * seats[i] + 1), i))
    return seats


def _units_above(w: float, t: float) -> int:
    """How many units ``k = 0, 1, ...`` have priority ``w / (2k + 1) > t`` (the same float
    expression the sequential allocation compares)."""
    if not w / 1 > t:
        return 0
    k = max(1, int((w / t - 1) / 2))
    while w / (2 * k + 1) > t:
        k += 1
    while k > 0 and not w / (2 * (k - 1) + 1) > t:
        k -= 1
    return k


def _give_above_threshold(remaining: int, w: list[float], limit: list[int | None],
                          seats: list[int]) -> int:
    """Give every party its units with priority above the lowest threshold that hands out
    at most ``remaining`` units; returns how many were given."""
    def extra(t: float) -> list[int]:
        out = []
        for i, weight in enumerate(w):
            k = _units_above(weight, t) if weight > 0 else 0
            cap = limit[i]
            if cap is not None:
                k = min(k, cap)
            out.append(max(0, k - seats[i]))
        return out

    top = max(w)
    if top <= 0:
        return 0
    low, high = top / (2 * remaining + 3), top  # extra(high) gives nothing
    if sum(extra(low)) <= remaining:
        high = low
    else:
        for _ in range(200):
            mid = (low + high) / 2
            if mid in (low, high):
                break
            if sum(extra(mid)) <= remaining:
                high = mid
            else:
                low = mid
    given = extra(high)
    for i, k in enumerate(given):
        seats[i] += k
    return sum(given)


def fill(total: int, caps: Sequence[int | None], floors: Sequence[int] | None = None
         ) -> list[int]:
    """Fill parties in order, each up to its cap, after giving every party its floor."""
    seats = list(floors) if floors is not None else [0] * len(caps)
    remaining = total - sum(seats)
    for i, cap in enumerate(caps):
        if remaining <= 0:
            break
        room = remaining if cap is None else max(0, min(remaining, cap - seats[i]))
        seats[i] += room
        remaining -= room
    return seats


def _cap_sum(caps: Sequence[int | None]) -> int | None:
    return None if any(c is None for c in caps) else sum(c for c in caps if c is not None)


def divide(total: int, slots: Sequence[Slot], spread: Spread, zone_order: Sequence[str],
           floor: int = 0) -> dict[str, int]:
    """Divide ``total`` over ``slots`` (given in preference order).

    - ``zone``: zones get equal counts (round-robin in ``zone_order``; differ by at most one
      unless a zone is full), then each zone's count is divided over its clusters in
      proportion to their weight;
    - ``cluster``: clusters get equal counts (round-robin in preference order);
    - ``none``: clusters are filled in preference order.

    Every slot gets at least ``floor`` and at most its cap.
    """
    if not slots:
        return {}
    caps = [s.cap for s in slots]
    floors = [floor] * len(slots)
    if spread == "none":
        counts = fill(total, caps, floors)
        return {s.name: n for s, n in zip(slots, counts, strict=True)}
    if spread == "cluster":
        counts = webster(total, [1] * len(slots), caps, floors)
        return {s.name: n for s, n in zip(slots, counts, strict=True)}
    present = {s.zone for s in slots}
    zones = [z for z in zone_order if z in present]
    zones += sorted(present - set(zones))
    members = {z: [s for s in slots if s.zone == z] for z in zones}
    zone_totals = webster(
        total, [1] * len(zones),
        [_cap_sum([s.cap for s in members[z]]) for z in zones],
        [floor * len(members[z]) for z in zones])
    out: dict[str, int] = {}
    for z, zone_total in zip(zones, zone_totals, strict=True):
        group = members[z]
        counts = webster(zone_total, [s.weight for s in group], [s.cap for s in group],
                         [floor] * len(group))
        out.update({s.name: n for s, n in zip(group, counts, strict=True)})
    return {s.name: out[s.name] for s in slots}


def offsets(counts: Sequence[tuple[str, int]]) -> dict[str, int]:
    """First index of each contiguous range, ranges laid out in the given order."""
    out: dict[str, int] = {}
    start = 0
    for name, n in counts:
        out[name] = start
        start += n
    return out


def bounds_like(total: int, maxima: dict[str, int]) -> dict[str, int]:
    """Divide ``total`` over the clusters of ``maxima`` in proportion to their maxima, at
    least 1 and at most the maximum each (e.g. a scheduled ``minReplicas`` of a PinScaler
    divided like its HPA bounds). Clusters in name order break ties."""
    names = sorted(maxima)
    counts = webster(total, [maxima[n] for n in names], [maxima[n] for n in names],
                     [1] * len(names))
    return dict(zip(names, counts, strict=True))
