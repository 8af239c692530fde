"""Score plugins and the preference order of eligible clusters.

Every score depends only on the workload and the cluster it scores (never on other
workloads, never on other clusters), so adding an app or a cluster does not reorder the
clusters another workload prefers:

- ``headroom``: how many pods of this workload the cluster's capacity holds (the binding
  resource decides; 1 when nothing in the capacity constrains the pod).
- ``stability``: a rendezvous hash of (workload, cluster) in [0, 100): fixed for the pair.
- ``total``: weighted rendezvous hashing, ``headroom / -ln(stability/100)``. Over many
  workloads each cluster is preferred in proportion to its headroom (Karmada's "weighted by
  available capacity"), and adding a cluster only ever makes workloads move *to* it.
- ``zone-spread`` (PinApp/PinterestService with ``spread: zone`` or ``cluster``):
  ``100 / (1 + n)`` where ``n`` is how many clusters of the same zone rank above this one;
  clusters are taken zone by zone — every zone's best first, then every zone's second...
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal

HEADROOM = "headroom"
STABILITY = "stability"
ZONE_SPREAD = "zone-spread"
TOTAL = "total"


def rendezvous(*parts: str) -> float:
    """A uniform number in (0, 1) fixed by ``parts`` (sha256; never Python's ``hash``)."""
    digest = hashlib.sha256("\x00".join(parts).encode()).digest()
    bits = int.from_bytes(digest[:7], "big") >> 3  # 53 bits: exact in a float
    return (bits + 0.5) / float(1 << 53)


def headroom(fit: Decimal | None) -> float:
    """Pods of the workload the cluster holds (1 when the capacity does not constrain)."""
    if fit is None:
        return 1.0
    return max(float(fit), 0.0)


def stability(workload_key: str, cluster: str) -> float:
    return rendezvous(workload_key, cluster) * 100


def total(headroom_value: float, stability_value: float) -> float:
    """Weighted rendezvous score: larger is preferred."""
    u = stability_value / 100
    if headroom_value <= 0:
        return 0.0
    return headroom_value / -math.log(u)


def static_scores(workload_key: str, fits: Mapping[str, Decimal | None]
                  ) -> dict[str, dict[str, float]]:
    """headroom, stability and total for every cluster in ``fits``."""
    out: dict[str, dict[str, float]] = {}
    for cluster, fit in sorted(fits.items()):
        h = headroom(fit)
        s = stability(workload_key, cluster)
        out[cluster] = {HEADROOM: h, STABILITY: s, TOTAL: total(h, s)}
    return out


def by_total(scores: Mapping[str, Mapping[str, float]]) -> list[str]:
    """Clusters, best total first (name breaks exact ties)."""
    return sorted(scores, key=lambda c: (-scores[c][TOTAL], c))


def zone_spread(order: Iterable[str], zones: Mapping[str, str]) -> dict[str, float]:
    """``100 / (1 + rank within its zone)`` for clusters given best first."""
    seen: dict[str, int] = {}
    out: dict[str, float] = {}
    for cluster in order:
        rank = seen.get(zones[cluster], 0)
        seen[zones[cluster]] = rank + 1
        out[cluster] = 100.0 / (1 + rank)
    return out


def zone_round_robin(scores: Mapping[str, Mapping[str, float]], zones: Mapping[str, str]
                     ) -> list[str]:
    """Preference order that spreads over zones: all zones' best clusters (by total), then
    all zones' second best, and so on. Adds ``zone-spread`` to ``scores``."""
    ranked = by_total(scores)
    spread = zone_spread(ranked, zones)
    for cluster, value in spread.items():
        scores[cluster][ZONE_SPREAD] = value  # type: ignore[index]
    return sorted(ranked, key=lambda c: (-spread[c], -scores[c][TOTAL], c))


def zone_order(workload_key: str, zones: Iterable[str]) -> list[str]:
    """A fixed per-workload order of zones (rendezvous hash): the zones that get the extra
    replica when they cannot all get the same number. Fixed per (workload, zone), so adding
    a cluster or a zone never reorders the others."""
    return sorted(set(zones), key=lambda z: (-rendezvous(workload_key, "zone", z), z))
